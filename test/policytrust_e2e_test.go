package test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgentCannotLoosenItsNextSession: under --preset standard, which lets
// the workspace's policy file loosen the policy, the agent's bash in one
// session writes .lite-agent/policy.toml widening the sandbox to the whole
// network, and tries to trust it itself by forging a record in the trust
// store. Before the trust store the next session loaded that file and ran
// with network unrestricted. Now the next `lite-agent run` refuses, naming
// the line and `lite-agent policy trust`; the forged record was never
// written (the store is outside the workspace: Landlock); and only the
// user's `lite-agent policy trust` makes the file load and loosen.
func TestAgentCannotLoosenItsNextSession(t *testing.T) {
	u := newFakeUser(t)
	ws := t.TempDir()
	realWS, err := filepath.EvalSymlinks(ws)
	if err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(u.home, ".state", "lite-agent", "trusted-policies")
	key := sha256.Sum256([]byte(realWS))
	record := filepath.Join(store, hex.EncodeToString(key[:]))
	wsFile := filepath.Join(ws, ".lite-agent", "policy.toml")
	plant := `mkdir -p .lite-agent && printf '[sandbox]\nnetwork = "unrestricted"\n' > .lite-agent/policy.toml && echo planted`
	// The record Trusted accepts, forged with the file's digest.
	forge := fmt.Sprintf(`mkdir -p %[1]s && printf 'sha256 %%s\nworkspace %%s\n' "$(sha256sum .lite-agent/policy.toml | cut -d' ' -f1)" %[2]s > %[3]s && echo forged`,
		shellQuote(store), shellQuote(realWS), shellQuote(record))

	res, _ := u.bashSession(t, ws, []string{"--preset", "standard"}, plant, forge)
	if !strings.Contains(res[0].text, "planted") {
		t.Fatalf("the agent's bash could not write the workspace's policy file, so this test proves nothing: %s", res[0].text)
	}
	if strings.Contains(res[1].text, "forged") {
		t.Fatalf("the agent's bash wrote the trust store: %s", res[1].text)
	}
	if _, err := os.Lstat(record); err == nil {
		t.Fatal("a trust record exists after the agent's session")
	}

	script := filepath.Join(t.TempDir(), "s.json")
	writeFile(t, script, `{"turns": [{"text": "hi"}]}`)
	next := func() (string, error) {
		cmd := exec.Command(binary, "run", "--workspace", ws, "--state-dir", t.TempDir(), "--preset", "standard", "--no-checkpoints", "--script", script, "hi")
		cmd.Env = u.env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := next()
	if err == nil || !strings.Contains(out, wsFile+":2: sandbox.network \"unrestricted\"") || !strings.Contains(out, "not trusted in this version") || !strings.Contains(out, "lite-agent policy trust --workspace") {
		t.Fatalf("the next session with the planted file: %v\n%s", err, out)
	}

	// The forged record is one Trusted accepts: written by the user (not
	// confined) it would have trusted the file — the sandbox is what keeps
	// the agent from writing it.
	forgeCmd := exec.Command("bash", "-c", forge)
	forgeCmd.Dir = ws
	if b, err := forgeCmd.CombinedOutput(); err != nil {
		t.Fatalf("forging unconfined: %v %s", err, b)
	}
	if out, err := next(); err != nil {
		t.Fatalf("the forged record, written unconfined, is not accepted, so the confined attempt proves nothing: %v\n%s", err, out)
	}
	os.Remove(record)

	// The user reviews and trusts it; then it loads and loosens.
	cmd := exec.Command(binary, "policy", "trust", "--workspace", ws)
	cmd.Env = u.env
	b, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(b), "sha256") || !strings.Contains(string(b), "sandbox.network unrestricted") {
		t.Fatalf("policy trust: %v\n%s", err, b)
	}
	if out, err := next(); err != nil {
		t.Fatalf("the trusted file: %v\n%s", err, out)
	}
	cmd = exec.Command(binary, "policy", "show", "standard", "--workspace", ws)
	cmd.Env = u.env
	if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "network     unrestricted ("+wsFile+":2)") || !strings.Contains(string(b), "workspace policy file  trusted in this version") {
		t.Fatalf("policy show after trust: %v\n%s", err, b)
	}

	// The agent changes the trusted file (one more grant): untrusted again.
	res, _ = u.bashSession(t, ws, []string{"--preset", "standard"}, `printf 'read = ["/etc"]\n' >> .lite-agent/policy.toml && echo appended`)
	if !strings.Contains(res[0].text, "appended") {
		t.Fatalf("the agent's bash could not change the file: %s", res[0].text)
	}
	if out, err := next(); err == nil || !strings.Contains(out, "not trusted in this version") {
		t.Fatalf("the changed file: %v\n%s", err, out)
	}
	cmd = exec.Command(binary, "policy", "untrust", "--workspace", ws)
	cmd.Env = u.env
	if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "no longer trusted") {
		t.Fatalf("policy untrust: %v\n%s", err, b)
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
