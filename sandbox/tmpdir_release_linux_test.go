package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A command's temp dir is emptied and pooled when its tree is gone
// (releaseTmp). What the command may have done to it meanwhile must neither
// lose the directory for the next command nor make the release act outside
// it.

// TestTmpdirReusedAfterModeChanges: a command that takes its own access
// away (chmod 000 on its TMPDIR and on a directory in it) still leaves the
// next command the same, empty, 0700 directory. As uid 65534 (the
// unprivileged run) the release cannot even open a 000 directory without
// giving the mode back first; root could.
func TestTmpdirReusedAfterModeChanges(t *testing.T) {
	sb, _ := newTestSandbox(t, nil)
	r := sh(t, sb, `mkdir "$TMPDIR/d" && echo x > "$TMPDIR/d/f" && echo y > "$TMPDIR/g" && chmod 000 "$TMPDIR/d" && chmod 000 "$TMPDIR" && echo "$TMPDIR"`)
	first := strings.TrimSpace(r.out)
	if r.st.Code != 0 || first == "" {
		t.Fatalf("first command: %v", r)
	}
	r = sh(t, sb, `echo "$TMPDIR"; stat -c %a "$TMPDIR"; ls -A "$TMPDIR" | wc -l`)
	got := strings.Fields(r.out)
	if r.st.Code != 0 || len(got) != 3 {
		t.Fatalf("second command: %v", r)
	}
	if got[0] != first {
		t.Errorf("the temp dir %s was not reused (the second command got %s)", first, got[0])
	}
	if got[1] != "700" || got[2] != "0" {
		t.Errorf("the reused temp dir: mode %s, %s entries; want 700 and 0", got[1], got[2])
	}
}

// TestTmpdirReplacedBySymlinkIsNotFollowed: a command's temp dir inside the
// sandbox's temp root (another command holds the root itself) can be renamed
// by the command and replaced by a symlink to a directory it can write
// elsewhere. The release must drop the link, not empty what it points to: a
// release that followed it (os.Open, Readdirnames, RemoveAll of each name)
// would delete the workspace file below. The next command still gets an
// empty directory of its own.
func TestTmpdirReplacedBySymlinkIsNotFollowed(t *testing.T) {
	sb, ws := newTestSandbox(t, nil)
	// A holds the temp root, so B's TMPDIR is a directory inside it.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a, err := sb.Start(context.Background(), &Command{Path: "/bin/sh", Args: []string{"sh", "-c", "read x || true"}, Stdin: r})
	if err != nil {
		t.Fatal(err)
	}
	res := sh(t, sb, `d="$TMPDIR"; mkdir "$PWD/victim" && echo keep > "$PWD/victim/f" && mv "$d" "$d.moved" && ln -s "$PWD/victim" "$d" && echo "$d"`)
	if res.st.Code != 0 || !strings.Contains(res.out, "cmd-") {
		t.Fatalf("replacing the temp dir: %v", res)
	}
	b, err := os.ReadFile(filepath.Join(ws, "victim", "f"))
	if err != nil || string(b) != "keep\n" {
		t.Errorf("the release followed the symlink: victim/f %q, %v", b, err)
	}
	res = sh(t, sb, `[ -d "$TMPDIR" ] && [ ! -L "$TMPDIR" ] && ls -A "$TMPDIR" | wc -l`)
	if res.st.Code != 0 || strings.TrimSpace(res.out) != "0" {
		t.Errorf("the next command's temp dir: %v", res)
	}
	w.Close()
	if st, err := a.Wait(); err != nil || st.Code != 0 {
		t.Errorf("holder: %v %+v", err, st)
	}
}
