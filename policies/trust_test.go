package policies

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// trustFile trusts the workspace's policy file as it is now, as `lite-agent
// policy trust` does.
func trustFile(t *testing.T, store, ws string) {
	t.Helper()
	f, err := LoadWorkspaceFile(ws)
	if err != nil || f == nil {
		t.Fatalf("reading the workspace file to trust it: %v, %v", f, err)
	}
	if _, err := Trust(store, ws, f); err != nil {
		t.Fatal(err)
	}
}

// The attack: under standard, the agent's bash in one session writes
// .lite-agent/policy.toml, and the next session loads it as trusted. With
// the trust store, each loosening entry is refused with its line and the
// command that trusts the file, until the user trusts that exact version.
// (Without the store every case below loaded and loosened: the "before"
// of TestLoadSandboxTightenOnly's standard rows.)
func TestUntrustedWorkspaceFileOnlyTightens(t *testing.T) {
	standard, _ := PresetByName("standard")
	permissive, _ := PresetByName("permissive")
	strict, _ := PresetByName("strict")
	for _, tc := range []struct{ name, text, want string }{
		{"allow rule", "[permissions]\n\nallow = [\"bash(*)\"]\n", ":3: allow rule \"bash(*)\""},
		{"wider network", "[sandbox]\nnetwork = \"unrestricted\"\n", ":2: sandbox.network \"unrestricted\" is wider"},
		{"read path", "[sandbox]\nread = [\"~/.ssh\"]\n", ":2: sandbox.read \""},
		// An agent that wrote this could commit — and plant hooks.
		{"writable git", "[sandbox]\ngit = \"writable\"\n", ":2: sandbox.git \"writable\""},
		{"looser mode", "[permissions]\ndefault_mode = \"acceptEdits\"\n", ":2: default_mode \"acceptEdits\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, store := t.TempDir(), t.TempDir()
			os.MkdirAll(filepath.Join(ws, ".lite-agent"), 0o755)
			wsFile := WorkspaceFile(ws)
			os.WriteFile(wsFile, []byte(tc.text), 0o644)
			opts := &LoadOptions{UserFile: "-", TrustStore: store}
			for _, p := range []Preset{standard, permissive} {
				if tc.name == "wider network" && p.Name == "permissive" {
					continue // its network is already unrestricted: nothing to widen
				}
				_, err := Load(p, ws, opts)
				if err == nil || !strings.Contains(err.Error(), wsFile+tc.want) || !strings.Contains(err.Error(), "not trusted in this version") || !strings.Contains(err.Error(), "`lite-agent policy trust --workspace ") {
					t.Fatalf("%s, untrusted: got %v, want %q and the trust command", p.Name, err, tc.want)
				}
			}
			trustFile(t, store, ws)
			pol, err := Load(standard, ws, opts)
			if err != nil {
				t.Fatalf("after Trust: %v", err)
			}
			if tc.name == "allow rule" && pol.Rules[len(pol.Rules)-1].Text != "bash(*)" {
				t.Errorf("the trusted file's allow rule is not in force: %+v", pol.Rules)
			}
			if tc.name == "writable git" && pol.Sandbox.Git != GitWritable {
				t.Errorf("the trusted file's git is not in force: %q", pol.Sandbox.Git)
			}
			if tc.name == "wider network" && pol.Sandbox.Network != "unrestricted" {
				t.Errorf("the trusted file's network is not in force: %q", pol.Sandbox.Network)
			}
			// Strict is unchanged: it never loosens, trusted or not.
			if _, err := Load(strict, ws, opts); err == nil || !strings.Contains(err.Error(), "the strict preset does not let") {
				t.Errorf("strict with a trusted loosening file: %v", err)
			}
			// The agent's bash changes one byte: untrusted again.
			os.WriteFile(wsFile, []byte(tc.text+"# \n"), 0o644)
			if _, err := Load(standard, ws, opts); err == nil || !strings.Contains(err.Error(), "not trusted in this version") {
				t.Errorf("after the file changed: %v", err)
			}
		})
	}
}

// Trusted hooks may allow; untrusted ones are deny-only, as under strict.
func TestUntrustedWorkspaceHooksDenyOnly(t *testing.T) {
	ws, store := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".lite-agent"), 0o755)
	os.WriteFile(WorkspaceFile(ws), []byte("[[hooks]]\nevent = \"PreToolUse\"\ncommand = \"echo allow\"\n"), 0o644)
	standard, _ := PresetByName("standard")
	opts := &LoadOptions{UserFile: "-", TrustStore: store}
	pol, err := Load(standard, ws, opts)
	if err != nil || len(pol.Hooks) != 1 || !pol.Hooks[0].DenyOnly {
		t.Fatalf("untrusted hook: %+v, %v (want deny-only)", pol, err)
	}
	trustFile(t, store, ws)
	if pol, err = Load(standard, ws, opts); err != nil || pol.Hooks[0].DenyOnly {
		t.Fatalf("trusted hook: %+v, %v (want trusted)", pol, err)
	}
	if ok, err := Untrust(store, ws); !ok || err != nil {
		t.Fatalf("Untrust: %v, %v", ok, err)
	}
	if pol, err = Load(standard, ws, opts); err != nil || !pol.Hooks[0].DenyOnly {
		t.Fatalf("after Untrust: %+v, %v (want deny-only)", pol, err)
	}
	if ok, err := Untrust(store, ws); ok || err != nil {
		t.Errorf("Untrust with no record: %v, %v", ok, err)
	}
}

// A record names one workspace: trusting the same bytes in another
// workspace does not trust this one, nor does a record copied over this
// workspace's name.
func TestTrustIsPerWorkspace(t *testing.T) {
	store := t.TempDir()
	text := []byte("[permissions]\nallow = [\"bash(*)\"]\n")
	a, b := t.TempDir(), t.TempDir()
	for _, ws := range []string{a, b} {
		os.MkdirAll(filepath.Join(ws, ".lite-agent"), 0o755)
		os.WriteFile(WorkspaceFile(ws), text, 0o644)
	}
	trustFile(t, store, a)
	standard, _ := PresetByName("standard")
	opts := &LoadOptions{UserFile: "-", TrustStore: store}
	if _, err := Load(standard, a, opts); err != nil {
		t.Fatalf("trusted workspace a: %v", err)
	}
	if _, err := Load(standard, b, opts); err == nil {
		t.Fatal("workspace b loaded a's trust")
	}
	recA, _, _ := trustRecord(store, a, "")
	recB, _, _ := trustRecord(store, b, "")
	data, _ := os.ReadFile(recA)
	os.WriteFile(recB, data, 0o600)
	if _, err := Load(standard, b, opts); err == nil {
		t.Fatal("a's record copied to b's name trusted b")
	}
	// The store's layout: directory 0700, record 0600.
	if st, err := os.Stat(recA); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("record mode: %v, %v", st, err)
	}
	nested := filepath.Join(t.TempDir(), "state", "trusted-policies")
	trustFile(t, nested, a)
	if st, err := os.Stat(nested); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("store mode: %v, %v", st, err)
	}
}

// A corrupt, oversized, unreadable or non-regular record is "not trusted"
// (the file only tightens), never a crash or a hang.
func TestCorruptTrustRecord(t *testing.T) {
	ws, store := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".lite-agent"), 0o755)
	os.WriteFile(WorkspaceFile(ws), []byte("[permissions]\nallow = [\"bash(*)\"]\n"), 0o644)
	standard, _ := PresetByName("standard")
	opts := &LoadOptions{UserFile: "-", TrustStore: store}
	rec, _, _ := trustRecord(store, ws, "")
	check := func(what string) {
		t.Helper()
		if _, err := Load(standard, ws, opts); err == nil || !strings.Contains(err.Error(), "not trusted in this version") {
			t.Errorf("%s: %v (want not trusted)", what, err)
		}
	}
	for _, junk := range []string{"", "sha256 zz\n", "\x00\xff", strings.Repeat("a", 1<<20)} {
		os.WriteFile(rec, []byte(junk), 0o600)
		check("record " + strings.ToValidUTF8(junk[:min(len(junk), 10)], "?"))
	}
	os.Remove(rec)
	os.Mkdir(rec, 0o700)
	check("record is a directory")
	os.Remove(rec)
	if err := syscall.Mkfifo(rec, 0o600); err != nil {
		t.Fatal(err)
	}
	check("record is a FIFO") // would hang for ever if opened blocking
	os.Remove(rec)
	trustFile(t, store, ws)
	if os.Getuid() != 0 {
		os.Chmod(rec, 0)
		check("unreadable record")
	} else {
		t.Log("running as root: an unreadable record cannot be made; the read error path is the one the directory case takes")
	}
	// A store that is a file, not a directory.
	notDir := filepath.Join(t.TempDir(), "f")
	os.WriteFile(notDir, nil, 0o600)
	if _, err := Load(standard, ws, &LoadOptions{UserFile: "-", TrustStore: notDir}); err == nil {
		t.Error("a store that is a file trusted the workspace")
	}
}

// TestTrustOtherFiles: a record for another workspace file (.mcp.json)
// trusts that file in that version only — not the policy file, not the
// same name in another workspace, not another path — and leaves the
// policy file's record alone.
func TestTrustOtherFiles(t *testing.T) {
	store := t.TempDir()
	a, b := t.TempDir(), t.TempDir()
	v1, v2 := sha256.Sum256([]byte("v1")), sha256.Sum256([]byte("v2"))
	if FileTrusted(store, a, ".mcp.json", v1) {
		t.Fatal("trusted before any record")
	}
	if _, err := TrustFile(store, a, ".mcp.json", v1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		workspace string
		rel       string
		digest    [32]byte
		want      bool
	}{
		{"the trusted version", a, ".mcp.json", v1, true},
		{"the same path spelt differently", a, "./x/../.mcp.json", v1, true},
		{"a changed version", a, ".mcp.json", v2, false},
		{"another workspace", b, ".mcp.json", v1, false},
		{"another file", a, "other.json", v1, false},
		{"the policy file", a, "", v1, false},
	} {
		if got := FileTrusted(store, tc.workspace, tc.rel, tc.digest); got != tc.want {
			t.Errorf("%s: trusted = %v, want %v", tc.name, got, tc.want)
		}
	}
	if _, err := TrustFile(store, a, "../outside.json", v1); err == nil {
		t.Error("a record for a path outside the workspace was written")
	}
	had, err := UntrustFile(store, a, ".mcp.json")
	if err != nil || !had {
		t.Fatalf("untrust: %v %v", had, err)
	}
	if FileTrusted(store, a, ".mcp.json", v1) {
		t.Error("still trusted after untrust")
	}
}
