package local

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/lite-agent/lite-agent/policies"
)

// MachineHost is the policies.Host of this machine, for resolving the
// toolchain profiles: the user's environment and PATH, the tools' own
// queries (go env -json, npm config get registry) run unconfined in the
// parent from "/" (never the workspace, whose files could steer them),
// with a time limit, and the per-workspace caches under CacheRoot.
type MachineHost struct {
	// CacheRoot holds the per-workspace caches; "" means CacheRoot().
	CacheRoot string
	// Env, when not nil, replaces os.Getenv (tests give a fake HOME).
	Env func(string) string
}

// queryTimeout bounds one tool query: a broken npm must not hang New.
const queryTimeout = 10 * time.Second

// CacheRoot is $XDG_CACHE_HOME/lite-agent/workspaces (or
// ~/.cache/lite-agent/workspaces): outside every workspace and outside
// the user's own tool caches.
func CacheRoot() (string, error) {
	d := os.Getenv("XDG_CACHE_HOME")
	if d == "" || !filepath.IsAbs(d) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("finding the cache directory: %w (set XDG_CACHE_HOME)", err)
		}
		d = filepath.Join(home, ".cache")
	}
	return filepath.Join(d, "lite-agent", "workspaces"), nil
}

// WorkspaceCacheDir is the per-workspace cache directory of ws (holding
// one directory per toolchain profile).
func WorkspaceCacheDir(root, ws string) string {
	sum := sha256.Sum256([]byte(ws))
	return filepath.Join(root, filepath.Base(ws)+"-"+hex.EncodeToString(sum[:8]))
}

func (h *MachineHost) Getenv(n string) string {
	if h.Env != nil {
		return h.Env(n)
	}
	return os.Getenv(n)
}

func (h *MachineHost) HomeDir() string {
	if v := h.Getenv("HOME"); v != "" {
		return filepath.Clean(v)
	}
	d, _ := os.UserHomeDir()
	return d
}

func (h *MachineHost) LookPath(name string) string {
	for _, dir := range filepath.SplitList(h.Getenv("PATH")) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // a relative PATH entry would be the workspace's
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			// The link itself stays (rustup's proxies are links to one
			// binary that looks at argv[0]); its directory is what goes
			// on PATH.
			return p
		}
	}
	return ""
}

func (h *MachineHost) Output(argv ...string) (string, error) {
	bin := h.LookPath(argv[0])
	if bin == "" {
		return "", fmt.Errorf("%s is not installed (not on PATH)", argv[0])
	}
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, argv[1:]...)
	cmd.Dir = "/"
	if h.Env != nil {
		// Only the fake environment: a test's HOME and GOENV, not the
		// user's settings.
		cmd.Env = []string{}
		for _, n := range []string{"HOME", "PATH", "GOENV", "GOPROXY", "GOFLAGS", "GOMODCACHE", "GOPATH", "NPM_CONFIG_REGISTRY",
			"npm_config_registry", "PIP_INDEX_URL", "PIP_CONFIG_FILE", "CARGO_HOME", "RUSTUP_HOME", "XDG_CONFIG_HOME"} {
			if v := h.Env(n); v != "" {
				cmd.Env = append(cmd.Env, n+"="+v)
			}
		}
	}
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return "", fmt.Errorf("%s: %v: %s", argv[0], err, firstLine(string(ee.Stderr)))
		}
		return "", fmt.Errorf("%s: %v", argv[0], err)
	}
	return string(out), nil
}

func (h *MachineHost) Exists(p string) bool { _, err := os.Stat(p); return err == nil }

func (h *MachineHost) Glob(pattern string) []string {
	m, _ := filepath.Glob(pattern)
	return m
}

func (h *MachineHost) ReadFile(p string) ([]byte, error) { return os.ReadFile(p) }

// EvalSymlinks is the real location of p (a profile's credential file
// beneath a system path may be a link out of it).
func (h *MachineHost) EvalSymlinks(p string) (string, error) { return filepath.EvalSymlinks(p) }

func (h *MachineHost) WorkspaceCache(ws, profile string) (string, error) {
	root := h.CacheRoot
	if root == "" {
		var err error
		if root, err = CacheRoot(); err != nil {
			return "", err
		}
	}
	dir := WorkspaceCacheDir(root, ws)
	if err := os.MkdirAll(filepath.Join(dir, profile), 0o700); err != nil {
		return "", fmt.Errorf("the per-workspace cache: %w", err)
	}
	// Which workspace it is, for `lite-agent gc --caches`.
	os.WriteFile(filepath.Join(dir, "workspace"), []byte(ws+"\n"), 0o600)
	return filepath.Join(dir, profile), nil
}

// WriteFile writes a profile's generated configuration (Maven's
// settings) through a temporary file and a rename, so a session starting
// beside a running one never reads half a file.
func (h *MachineHost) WriteFile(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

var _ policies.Host = (*MachineHost)(nil)

// RemoveWorkspaceCaches removes per-workspace caches under root (""
// means CacheRoot()): with all, every one; otherwise those whose
// workspace no longer exists. It returns the directories removed (or
// that would be, with dryRun). Files are made writable first: Go's module
// cache is read-only unless -modcacherw was in force when it was filled.
func RemoveWorkspaceCaches(root string, all, dryRun bool) ([]string, error) {
	if root == "" {
		var err error
		if root, err = CacheRoot(); err != nil {
			return nil, err
		}
	}
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if !e.IsDir() {
			continue
		}
		if !all {
			ws, err := os.ReadFile(filepath.Join(dir, "workspace"))
			if err != nil {
				continue // not ours, or being made: leave it
			}
			if _, err := os.Stat(strings.TrimSpace(string(ws))); err == nil {
				continue
			}
		}
		removed = append(removed, dir)
		if dryRun {
			continue
		}
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			// Not following symlinks: WalkDir does not, and Chmod on a
			// directory entry of our own tree only.
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o700)
			}
			return nil
		})
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}
