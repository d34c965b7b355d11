package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadRefusalsThroughSandbox: a command that fails to read a file
// outside the grants (the test's own, outside /tmp) has its error line
// named by ReadRefusals with the grant that shows it; with that grant the
// same command reads the file and nothing is named. A credential
// pattern's path is named as a credential.
func TestReadRefusalsThroughSandbox(t *testing.T) {
	outside := outsideTmpfs(t)
	notes := filepath.Join(outside, "notes.txt")
	if err := os.WriteFile(notes, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(outside, "keys")
	if err := os.MkdirAll(keys, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(keys, "id"), []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := canonical([]string{outside})[0]
	sb, _ := newTestSandbox(t, func(p *Policy) {
		p.CredentialPatterns = []string{out + "/keys", out + "/keys/**"}
	})
	r := sh(t, sb, `cat "`+notes+`"`)
	if r.st.Code == 0 {
		t.Fatalf("the file outside the grants was read: %v", r)
	}
	refs := sb.ReadRefusals(r.out + r.err)
	if len(refs) != 1 || refs[0].Target != filepath.Join(out, "notes.txt") {
		t.Fatalf("cat's %q: refusals %+v, want a read of %s", r.err, refs, notes)
	}
	note := RefusalNote(append(r.st.Refusals, refs...), r.st.MoreRefusals, true)
	if !strings.HasPrefix(note, "[lite-agent] the sandbox refused read ") || !strings.Contains(note, "--allow-read "+filepath.Join(out, "notes.txt")) {
		t.Errorf("note %q: want the read named with --allow-read", note)
	}
	r = sh(t, sb, `cat "`+filepath.Join(keys, "id")+`"`)
	if refs := sb.ReadRefusals(r.out + r.err); r.st.Code == 0 || len(refs) != 1 || !strings.Contains(refs[0].Why, "credential") {
		t.Errorf("a credential file: %v, refusals %+v", r, refs)
	}

	granted, _ := newTestSandbox(t, func(p *Policy) { p.ReadOnlyPaths = []string{notes} })
	r = sh(t, granted, `cat "`+notes+`"`)
	if r.st.Code != 0 || r.out != "mine\n" {
		t.Fatalf("with --allow-read the file is not read: %v", r)
	}
	// The line a failed read would print, now about a granted file.
	if refs := granted.ReadRefusals("cat: " + notes + ": No such file or directory"); len(refs) != 0 {
		t.Errorf("a granted file is named: %+v", refs)
	}
}

// TestReadRefusalsRevealNothing: a command can print error lines of its
// own making about any path; what ReadRefusals answers must not depend
// on what the host holds there. A file that exists outside, one that
// does not, and a link outside the grants that leads into the workspace
// get the same answer. (A check that asked the host — readableDir,
// which resolves links, as trimming PATH does — tells the link apart:
// shown below, so the test cannot pass by testing nothing.)
func TestReadRefusalsRevealNothing(t *testing.T) {
	outside := outsideTmpfs(t)
	sb, ws := newTestSandbox(t, nil)
	if err := os.WriteFile(filepath.Join(ws, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "exists"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(ws, "f"), filepath.Join(outside, "link")); err != nil {
		t.Fatal(err)
	}
	if !sb.readableDir(filepath.Join(outside, "link")) {
		t.Fatal("readableDir does not resolve the link into the workspace: the contrast below shows nothing")
	}
	out := canonical([]string{outside})[0]
	var first Refusal
	for i, name := range []string{"exists", "absent", "link"} {
		p := filepath.Join(out, name)
		r := sh(t, sb, `echo "cat: `+p+`: No such file or directory" >&2; exit 1`)
		refs := sb.ReadRefusals(r.out + r.err)
		if len(refs) != 1 || refs[0].Target != p {
			t.Errorf("%s: %+v, want one read of %s", name, refs, p)
			continue
		}
		got := refs[0]
		got.Allow = strings.ReplaceAll(got.Allow, p, "PATH")
		if i == 0 {
			first = got
			first.Target = ""
			continue
		}
		got.Target = ""
		if got != first {
			t.Errorf("%s: %+v; the file that exists got %+v", name, got, first)
		}
	}
}
