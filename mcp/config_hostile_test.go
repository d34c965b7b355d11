package mcp

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/internal/safefile"
)

// loadWithin calls LoadConfigIn and fails the test if it does not return
// within 10 s: a hang is a failure, not a stalled test binary.
func loadWithin(t *testing.T, path, ws string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { _, err := LoadConfigIn(path, ws); done <- err }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("LoadConfigIn(%s) has not returned after 10s: it hangs", path)
		return nil
	}
}

// TestFIFOMCPConfigHangsOSReadFileButNotLoadConfig: a .mcp.json the agent
// made a FIFO blocks os.ReadFile (what LoadConfig used) until someone
// writes; LoadConfigIn returns at once with an error naming the file. The
// os.ReadFile goroutine is shown still blocked after LoadConfigIn has
// returned, then released by our own open for writing — no sleep decides.
func TestFIFOMCPConfigHangsOSReadFileButNotLoadConfig(t *testing.T) {
	ws := t.TempDir()
	p := filepath.Join(ws, ".mcp.json")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	unguarded := make(chan error, 1)
	go func() { _, err := os.ReadFile(p); unguarded <- err }()
	for _, ws := range []string{ws, ""} { // beneath the workspace, and as a user path
		err := loadWithin(t, p, ws)
		if !errors.Is(err, safefile.ErrNotRegular) || !strings.Contains(err.Error(), p) {
			t.Fatalf("LoadConfigIn(ws=%q) = %v, want a not-regular error naming %s", ws, err, p)
		}
	}
	select {
	case err := <-unguarded:
		t.Fatalf("os.ReadFile of the FIFO returned (%v) before anybody wrote: the attack would not hang", err)
	default:
	}
	w, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := <-unguarded; err != nil {
		t.Fatal(err)
	}
}

// TestHostileMCPConfig: a symlink to /dev/zero, a symlink to a file
// outside the workspace and a file over 1 MiB as .mcp.json, each shown to
// work against a plain read first.
func TestHostileMCPConfig(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(outside, []byte(`{"mcpServers": {"planted": {"command": "true"}}}`), 0o644)
	for _, c := range []struct {
		name      string
		plant     func(p string)
		unguarded func(t *testing.T, p string)
		want      error
	}{
		{"symlink to /dev/zero", func(p string) { os.Symlink("/dev/zero", p) }, func(t *testing.T, p string) {
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if n, _ := io.Copy(io.Discard, io.LimitReader(f, 2<<20)); n != 2<<20 {
				t.Fatalf("read %d bytes", n)
			}
		}, safefile.ErrNotRegular},
		{"symlink to a file outside", func(p string) { os.Symlink(outside, p) }, func(t *testing.T, p string) {
			if c, err := LoadConfig(p); err != nil || c.Servers["planted"].Command != "true" {
				// LoadConfig follows symlinks (a user path); beneath the
				// workspace they are the agent's.
				t.Fatalf("a plain load through the link: %v", err)
			}
		}, safefile.ErrNotRegular},
		{"larger than 1 MiB", func(p string) {
			os.WriteFile(p, []byte(`{"mcpServers": {}, "pad": "`+strings.Repeat("x", safefile.DefaultLimit)+`"}`), 0o644)
		}, func(t *testing.T, p string) {
			if data, err := os.ReadFile(p); err != nil || len(data) <= safefile.DefaultLimit {
				t.Fatalf("%d bytes, %v", len(data), err)
			}
		}, safefile.ErrTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			p := filepath.Join(ws, ".mcp.json")
			c.plant(p)
			c.unguarded(t, p)
			err := loadWithin(t, p, ws)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("LoadConfigIn = %v, want %v naming %s", err, c.want, p)
			}
		})
	}
}
