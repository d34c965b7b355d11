package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// plant is the bash command that backdoors the extracted errgroup source
// in dir: an existing file, because go indexes a module's file list once
// (a new file would be ignored; an edited one is compiled). chmod first:
// go leaves the sources read-only, which stops an accident, not the agent.
func plant(dir string) string {
	return "chmod u+w " + dir + "/errgroup.go && printf '\\nfunc init() { panic(\"BACKDOOR\") }\\n' >> " + dir + "/errgroup.go && echo planted"
}

// Issue 26, class 2: the go profile's per-workspace module cache is
// outside every checkpoint, and go checks go.sum only when it extracts a
// module. An agent that edits an extracted dependency's source leaves a
// backdoor that `rewind --to 0` used to keep: the next session compiled
// it. Now rewind --to 0 empties the workspace's toolchain caches, and the
// next session extracts the module again from the user's (read-only)
// cache, checked against go.sum.
func TestBackdooredModuleSourceRewound(t *testing.T) {
	u := newFakeUser(t)
	u.checkpoints = true
	ws := goModuleWithDependency(t, u)
	// go test extracts golang.org/x/sync into the per-workspace cache;
	// the agent then edits a source of the extracted package.
	src := `$(go env GOMODCACHE)/golang.org/x/sync@v0.23.0/errgroup`
	res, evs, _ := u.bashSessionEvents(t, ws, nil, "go test ./...",
		plant(src),
		"go test -count=1 ./...")
	if !strings.Contains(res[0].text, "ok  \texample.com/rw") || !strings.Contains(res[1].text, "planted") {
		t.Fatalf("setting up the attack:\n%s\n%s", res[0].text, res[1].text)
	}
	if !strings.Contains(res[2].text, "BACKDOOR") {
		t.Fatalf("the planted source was not compiled in the session that planted it (the attack is not shown):\n%s", res[2].text)
	}
	id, _ := evs[0]["session_id"].(string)
	rw := exec.Command(binary, "rewind", id, "--to", "0", "--files-only", "--state-dir", filepath.Join(u.home, ".state"))
	rw.Env = u.env
	out, err := rw.CombinedOutput()
	if err != nil {
		t.Fatalf("rewind --to 0: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "emptied the toolchain cache") {
		t.Errorf("rewind --to 0 did not say it emptied the caches:\n%s", out)
	}
	res, _ = u.bashSession(t, ws, nil, "go test -count=1 ./...")
	if strings.Contains(res[0].text, "BACKDOOR") || !strings.Contains(res[0].text, "ok  \texample.com/rw") {
		t.Fatalf("after rewind --to 0 a new session compiled the backdoored module:\n%s", res[0].text)
	}
}

// A workspace removed and made again at the same path is a new directory:
// it does not inherit the old one's caches (keyed on the path alone, it
// did, backdoor included).
func TestRecreatedWorkspaceDoesNotInheritCache(t *testing.T) {
	u := newFakeUser(t)
	ws := goModuleWithDependency(t, u)
	src := `$(go env GOMODCACHE)/golang.org/x/sync@v0.23.0/errgroup`
	res, _ := u.bashSession(t, ws, nil, "go test ./...",
		plant(src))
	if !strings.Contains(res[1].text, "planted") {
		t.Fatalf("setting up the attack:\n%s\n%s", res[0].text, res[1].text)
	}
	saved := t.TempDir()
	for _, f := range []string{"go.mod", "go.sum", "rw_test.go"} {
		b, err := os.ReadFile(filepath.Join(ws, f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(saved, f), string(b))
	}
	if err := os.RemoveAll(ws); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"go.mod", "go.sum", "rw_test.go"} {
		b, _ := os.ReadFile(filepath.Join(saved, f))
		writeFile(t, filepath.Join(ws, f), string(b))
	}
	res, _ = u.bashSession(t, ws, nil, "go test -count=1 ./...")
	if strings.Contains(res[0].text, "BACKDOOR") || !strings.Contains(res[0].text, "ok  \texample.com/rw") {
		t.Fatalf("the re-created workspace compiled the old one's backdoored module:\n%s", res[0].text)
	}
}

// Issue 26, class 2, without a rewind: the agent's edit of an extracted
// dependency's source (chmod first — the read-only mode bits go leaves
// stop an accident, not the agent) is compiled in the session that made
// it, and never in the next: before a session starts, lite-agent hashes
// the workspace's extracted modules as go.sum does and removes one that
// differs, and go extracts it again, checked. Before, the next session
// compiled the backdoor.
func TestBackdooredModuleSourceRemovedBeforeNextSession(t *testing.T) {
	u := newFakeUser(t)
	ws := goModuleWithDependency(t, u)
	src := `$(go env GOMODCACHE)/golang.org/x/sync@v0.23.0/errgroup`
	res, _ := u.bashSession(t, ws, nil, "go test ./...", plant(src), "go test -count=1 ./...")
	if !strings.Contains(res[1].text, "planted") || !strings.Contains(res[2].text, "BACKDOOR") {
		t.Fatalf("the attack is not shown (planted and compiled in its own session):\n%s\n%s", res[1].text, res[2].text)
	}
	res, _ = u.bashSession(t, ws, nil, "go test -count=1 ./...", "grep -c BACKDOOR "+src+"/errgroup.go")
	if strings.Contains(res[0].text, "BACKDOOR") || !strings.Contains(res[0].text, "ok  \texample.com/rw") {
		t.Fatalf("the next session compiled the backdoored module:\n%s", res[0].text)
	}
	if !strings.HasPrefix(strings.TrimSpace(res[1].text), "0") {
		t.Errorf("the extracted source still holds the backdoor:\n%s", res[1].text)
	}
	// sandbox check says nothing is removed when nothing differs.
	cmd := exec.Command(binary, "sandbox", "check", "--workspace", ws)
	cmd.Env = u.env
	out, _ := cmd.CombinedOutput()
	if strings.Contains(string(out), "removed the extracted module") {
		t.Errorf("sandbox check reports a removal with nothing edited:\n%s", out)
	}
}

// plantZip is the bash command that backdoors the downloaded zip of
// golang.org/x/sync (its .ziphash left as it was) and removes the
// extracted copy, so that go extracts the zip again.
const plantZip = `d=$(go env GOMODCACHE) && z=$d/cache/download/golang.org/x/sync/@v/v0.23.0.zip && ` +
	`python3 -c 'import sys, zipfile
src = zipfile.ZipFile(sys.argv[1])
out = zipfile.ZipFile(sys.argv[2], "w")
for i in src.infolist():
    b = src.read(i.filename)
    if i.filename.endswith("/errgroup/errgroup.go"):
        b += b"\nfunc init() { panic(\"BACKDOOR\") }\n"
    out.writestr(i.filename, b)
out.close()' $z $z.new && mv $z.new $z && ` +
	`chmod -R u+w $d/golang.org/x/sync@v0.23.0 && rm -rf $d/golang.org/x/sync@v0.23.0 && echo planted`

// Go extracts a downloaded zip beside its .ziphash without hashing it
// again (it compares the .ziphash with go.sum, not the zip): an agent
// that edits the zip in the workspace's module cache and removes the
// extracted copy has go build its backdoor — in its own session (shown
// here), and, having removed the extracted copy again, in every later one
// unless the zip is checked before it starts. It is: the next session
// downloads the module again, checked.
func TestBackdooredModuleZipRemovedBeforeNextSession(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 to rewrite the zip with: this test would show an edited module zip removed before the next session")
	}
	u := newFakeUser(t)
	ws := goModuleWithDependency(t, u)
	// The extracted copy is removed again at the end, so that the next
	// session finds only the edited zip (an extracted copy that differs
	// from go.sum is caught, and its zip removed with it).
	removeExtracted := `d=$(go env GOMODCACHE) && chmod -R u+w $d/golang.org/x/sync@v0.23.0 && rm -rf $d/golang.org/x/sync@v0.23.0 && echo removed`
	res, _ := u.bashSession(t, ws, nil, "go test ./...", plantZip, "go test -count=1 ./...", removeExtracted)
	if !strings.Contains(res[1].text, "planted") || !strings.Contains(res[2].text, "BACKDOOR") || !strings.Contains(res[3].text, "removed") {
		t.Fatalf("the attack is not shown (the edited zip extracted and compiled in its own session):\n%s\n%s\n%s", res[1].text, res[2].text, res[3].text)
	}
	res, _ = u.bashSession(t, ws, nil, "go test -count=1 ./...")
	if strings.Contains(res[0].text, "BACKDOOR") || !strings.Contains(res[0].text, "ok  \texample.com/rw") {
		t.Fatalf("the next session compiled the edited zip:\n%s", res[0].text)
	}
}
