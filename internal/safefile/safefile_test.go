package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadFileRefusesWhatIsNotASmallRegularFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("ok.toml", "a = 1\n")
	big := write("big.toml", strings.Repeat("x", 2048))
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(ok, link); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		path string
		want error // nil: reads "a = 1\n"
	}{
		{"regular", ok, nil},
		{"too large", big, ErrTooLarge},
		// Without O_NONBLOCK the open of a FIFO with no writer blocks for
		// ever; this test would hang.
		{"fifo", fifo, ErrNotRegular},
		{"symlink to /dev/zero", zero, ErrNotRegular},
		{"symlink to a regular file", link, ErrNotRegular},
		{"directory", sub, ErrNotRegular},
		{"missing", filepath.Join(dir, "none"), fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := ReadFile(tc.path, 1024)
			if tc.want == nil {
				if err != nil || string(data) != "a = 1\n" {
					t.Fatalf("ReadFile = %q, %v", data, err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("ReadFile error = %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.path) {
				t.Errorf("error %q does not name the path", err)
			}
		})
	}
}

func TestReadFileBeneathRefusesSymlinksOnTheWay(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "policy.toml"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	// .lite-agent is a symlink to a directory outside the workspace: a
	// plain read of .lite-agent/policy.toml would load the outside file.
	if err := os.Symlink(outside, filepath.Join(ws, ".lite-agent")); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(ws, ".lite-agent", "policy.toml")); err != nil || string(data) != "secret" {
		t.Fatalf("the attack does not work unguarded: %q, %v", data, err)
	}
	if _, err := ReadFileBeneath(ws, ".lite-agent/policy.toml", 0); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("ReadFileBeneath through a symlinked directory: %v, want ErrNotRegular", err)
	}
	if _, err := ReadFileBeneath(ws, "../x", 0); err == nil {
		t.Fatal("ReadFileBeneath accepted a path leaving the directory")
	}
	if err := os.Mkdir(filepath.Join(ws, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "real", "p.toml"), []byte("ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadFileBeneath(ws, "real/p.toml", 0); err != nil || string(data) != "ok" {
		t.Fatalf("ReadFileBeneath of a plain file = %q, %v", data, err)
	}
	if _, err := ReadFileBeneath(ws, "missing.toml", 0); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v, want fs.ErrNotExist", err)
	}
}

// TestReadUserFile: a path the user names is followed through the user's
// own symlinks, but once it is in the workspace no symlink is followed —
// also when the user's link leads into the workspace.
func TestReadUserFile(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.json")
	os.WriteFile(secret, []byte("secret"), 0o644)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "ok.json"), []byte("ok"), 0o644)
	// The agent's link inside the workspace.
	os.Symlink(secret, filepath.Join(ws, "planted.json"))
	// The user's link to the workspace, outside it.
	home := t.TempDir()
	os.Symlink(ws, filepath.Join(home, "proj"))
	os.Symlink(filepath.Join(ws, "ok.json"), filepath.Join(home, "ok-link.json"))

	for _, tc := range []struct {
		name, path, ws string
		want           string // "" : an ErrNotRegular
	}{
		{"in the workspace", filepath.Join(ws, "ok.json"), ws, "ok"},
		{"the agent's symlink", filepath.Join(ws, "planted.json"), ws, ""},
		{"the agent's symlink through the user's link to the workspace", filepath.Join(home, "proj", "planted.json"), ws, ""},
		{"the user's link to a workspace file", filepath.Join(home, "ok-link.json"), ws, "ok"},
		{"the user's own file", secret, ws, "secret"},
		{"no workspace: symlinks are the user's", filepath.Join(ws, "planted.json"), "", "secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := ReadUserFile(tc.path, tc.ws, 0)
			if tc.want == "" {
				if !errors.Is(err, ErrNotRegular) {
					t.Fatalf("ReadUserFile = %q, %v; want ErrNotRegular", data, err)
				}
				return
			}
			if err != nil || string(data) != tc.want {
				t.Fatalf("ReadUserFile = %q, %v; want %q", data, err, tc.want)
			}
		})
	}
}

// TestReadUserFileDotDotAfterLink: a ".." after a symlink climbs from the
// link's target, as the kernel (and a shell's cat) reads the path, not
// from the link's own directory (filepath.Abs's reading): after the
// user's link into the workspace it reaches the workspace's parent, and
// after the agent's link inside the workspace the path is refused, not
// read as the workspace file the text suggests.
func TestReadUserFileDotDotAfterLink(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, home, outside := filepath.Join(base, "ws"), filepath.Join(base, "home"), filepath.Join(base, "outside")
	for _, d := range []string{ws, home, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(base, "shared.json"), "beside the workspace")
	write(filepath.Join(home, "shared.json"), "beside the user's link")
	write(filepath.Join(ws, "x.json"), "the workspace's x")
	write(filepath.Join(outside, "x.json"), "outside")
	os.Symlink(ws, filepath.Join(home, "proj"))              // the user's link
	os.Symlink(outside+"/sub", filepath.Join(ws, "planted")) // the agent's link
	os.Mkdir(filepath.Join(outside, "sub"), 0o755)

	data, rel, err := ReadUserFileFrom(home+"/proj/../shared.json", ws, 0) // not filepath.Join: it cleans
	if err != nil || string(data) != "beside the workspace" || rel != "" {
		t.Errorf("home/proj/../shared.json = %q, %q, %v; want the file beside the workspace, as the kernel reads it", data, rel, err)
	}
	data, _, err = ReadUserFileFrom(ws+"/planted/../x.json", ws, 0)
	if !errors.Is(err, ErrNotRegular) {
		t.Errorf("ws/planted/../x.json = %q, %v; want ErrNotRegular (the agent's link is on the way)", data, err)
	}
	data, rel, err = ReadUserFileFrom(filepath.Join(home, "proj", "x.json"), ws, 0)
	if err != nil || string(data) != "the workspace's x" || rel != "x.json" {
		t.Errorf("home/proj/x.json = %q, %q, %v; want the workspace's file, rel x.json", data, rel, err)
	}
	t.Chdir(ws)
	data, rel, err = ReadUserFileFrom("../shared.json", ws, 0)
	if err != nil || string(data) != "beside the workspace" || rel != "" {
		t.Errorf("../shared.json from the workspace = %q, %q, %v", data, rel, err)
	}
}
