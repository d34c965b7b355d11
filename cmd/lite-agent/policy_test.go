package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPolicyTrustCommand: under standard a loosening workspace file is
// refused until `policy trust`, which shows its path, size, hash and what
// it loosens; `policy show` says whether it is trusted; `policy untrust`
// takes the trust back.
func TestPolicyTrustCommand(t *testing.T) {
	isolate(t)
	ws := t.TempDir()
	text := "[permissions]\nallow = [\"bash(*)\"]\n\n[sandbox]\nread = [\"/srv\"]\n"
	os.MkdirAll(filepath.Join(ws, ".lite-agent"), 0o755)
	file := filepath.Join(ws, ".lite-agent", "policy.toml")
	os.WriteFile(file, []byte(text), 0o644)
	run := func(args ...string) (int, string, string) {
		var out, errb strings.Builder
		code := runCLI(args, strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, _, errs := run("policy", "show", "standard", "--workspace", ws); code != 1 || !strings.Contains(errs, file+":2: allow rule") || !strings.Contains(errs, "lite-agent policy trust --workspace") {
		t.Fatalf("show, untrusted: exit %d: %s", code, errs)
	}
	code, out, errs := run("policy", "trust", "--workspace", ws)
	sum := sha256.Sum256([]byte(text))
	for _, want := range []string{file, "size    " + strconv.Itoa(len(text)) + " bytes", hex.EncodeToString(sum[:]), "allow bash(*)", "sandbox.read /srv", "trusted in this version"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("policy trust: exit %d, lacks %q:\n%s%s", code, want, out, errs)
		}
	}
	if code, out, errs := run("policy", "show", "standard", "--workspace", ws); code != 0 || !strings.Contains(out, "workspace policy file  trusted in this version") {
		t.Errorf("show, trusted: exit %d:\n%s%s", code, out, errs)
	}
	if code, out, _ := run("policy", "untrust", "--workspace", ws); code != 0 || !strings.Contains(out, "no longer trusted") {
		t.Errorf("untrust: exit %d: %s", code, out)
	}
	if code, _, errs := run("policy", "show", "standard", "--workspace", ws); code != 1 || !strings.Contains(errs, "not trusted in this version") {
		t.Errorf("show after untrust: exit %d: %s", code, errs)
	}
	// A file that only tightens: show says how it is read.
	os.WriteFile(file, []byte("[permissions]\ndeny = [\"bash(curl:*)\"]\n"), 0o644)
	if code, out, _ := run("policy", "show", "standard", "--workspace", ws); code != 0 || !strings.Contains(out, "not trusted in this version") || !strings.Contains(out, "`lite-agent policy trust`") {
		t.Errorf("show standard, tightening untrusted file: exit %d:\n%s", code, out)
	}
	run("policy", "trust", "--workspace", ws)
	if code, out, _ := run("policy", "show", "strict", "--workspace", ws); code != 0 || !strings.Contains(out, "the strict preset never lets it loosen, trusted or not") {
		t.Errorf("show strict, trusted file: exit %d:\n%s", code, out)
	}
	// Nothing to trust, and bad usage.
	if code, _, errs := run("policy", "trust", "--workspace", t.TempDir()); code != 1 || !strings.Contains(errs, "nothing to trust") {
		t.Errorf("trust with no file: exit %d: %s", code, errs)
	}
	if code, _, _ := run("policy", "trust", "one", "two"); code != 2 {
		t.Errorf("trust with two arguments: exit %d", code)
	}
	if code, _, errs := run("policy", "trust", "--workspace", ws, filepath.Join(ws, "missing.json")); code != 1 || !strings.Contains(errs, "only an MCP configuration") {
		t.Errorf("trust of a missing file: exit %d: %s", code, errs)
	}
	outside := filepath.Join(t.TempDir(), "mcp.json")
	os.WriteFile(outside, []byte(`{"mcpServers": {"x": {"command": "true"}}}`), 0o644)
	if code, _, errs := run("policy", "trust", "--workspace", ws, outside); code != 1 || !strings.Contains(errs, "is not in the workspace") {
		t.Errorf("trust of a file outside the workspace: exit %d: %s", code, errs)
	}
}
