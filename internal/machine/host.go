package machine

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

// Host is the policies.Host of this machine, for resolving the
// toolchain profiles: the user's environment and PATH, the tools' own
// queries (go env -json, npm config get registry) run unconfined in the
// parent from "/" (never the workspace, whose files could steer them),
// with a time limit, and the per-workspace caches under CacheRoot.
type Host struct {
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
// one directory per toolchain profile), and the identity of ws it is
// keyed on. The key is the path and the directory's identity (device,
// inode, birth time: workspaceIdentity), never the path alone: a
// workspace removed and made again at the same path must not inherit the
// caches an earlier session filled — an extracted module source edited
// there would be compiled by every later build (go checks go.sum only
// when it extracts).
func WorkspaceCacheDir(root, ws string) (dir, identity string, err error) {
	if identity, err = workspaceIdentity(ws); err != nil {
		return "", "", fmt.Errorf("the per-workspace cache: %w", err)
	}
	sum := sha256.Sum256([]byte(ws + "\x00" + identity))
	return filepath.Join(root, filepath.Base(ws)+"-"+hex.EncodeToString(sum[:8])), identity, nil
}

// cacheOwner is the "workspace" file of a per-workspace cache directory:
// the workspace's path, then its identity, one a line.
func cacheOwner(dir string) (ws, identity string, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, "workspace"))
	if err != nil {
		return "", "", false
	}
	ws, identity, _ = strings.Cut(strings.TrimSuffix(string(b), "\n"), "\n")
	return ws, identity, ws != ""
}

func (h *Host) Getenv(n string) string {
	if h.Env != nil {
		return h.Env(n)
	}
	return os.Getenv(n)
}

func (h *Host) HomeDir() string {
	if v := h.Getenv("HOME"); v != "" {
		return filepath.Clean(v)
	}
	d, _ := os.UserHomeDir()
	return d
}

func (h *Host) LookPath(name string) string {
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

func (h *Host) Output(argv ...string) (string, error) {
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

func (h *Host) Exists(p string) bool { _, err := os.Stat(p); return err == nil }

func (h *Host) Glob(pattern string) []string {
	m, _ := filepath.Glob(pattern)
	return m
}

func (h *Host) ReadFile(p string) ([]byte, error) { return os.ReadFile(p) }

// EvalSymlinks is the real location of p (a profile's credential file
// beneath a system path may be a link out of it).
func (h *Host) EvalSymlinks(p string) (string, error) { return filepath.EvalSymlinks(p) }

func (h *Host) WorkspaceCache(ws, profile string) (string, error) {
	root := h.CacheRoot
	if root == "" {
		var err error
		if root, err = CacheRoot(); err != nil {
			return "", err
		}
	}
	dir, identity, err := WorkspaceCacheDir(root, ws)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(dir, profile), 0o700); err != nil {
		return "", fmt.Errorf("the per-workspace cache: %w", err)
	}
	// Which workspace it is, for `lite-agent gc` (a cache whose
	// workspace is gone, or is another directory now, is removed).
	os.WriteFile(filepath.Join(dir, "workspace"), []byte(ws+"\n"+identity+"\n"), 0o600)
	return filepath.Join(dir, profile), nil
}

// WriteFile writes a profile's generated configuration (Maven's
// settings) through a temporary file and a rename, so a session starting
// beside a running one never reads half a file.
func (h *Host) WriteFile(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return writeFileAtomic(p, data)
}

var _ policies.Host = (*Host)(nil)

// RemoveWorkspaceCaches removes per-workspace caches under root (""
// means CacheRoot()): with all, every one; otherwise those whose
// workspace no longer exists or is another directory now (removed and
// made again: its identity differs). It returns the directories removed (or
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
			ws, identity, ok := cacheOwner(dir)
			if !ok {
				continue // not ours, or being made: leave it
			}
			if now, err := workspaceIdentity(ws); err == nil && now == identity {
				continue
			}
		}
		removed = append(removed, dir)
		if dryRun {
			continue
		}
		if err := removeCacheDir(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// removeCacheDir removes one per-workspace cache directory, making its
// directories writable first (Go leaves extracted modules read-only).
func removeCacheDir(dir string) error {
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		// Not following symlinks: WalkDir does not, and Chmod on a
		// directory entry of our own tree only.
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// ResetWorkspaceCaches empties the per-workspace toolchain caches of ws
// under root ("" means CacheRoot()), returning the cache directories
// emptied (with dryRun, those that would be). It is what
// `lite-agent rewind --to 0` does besides the files: the caches are not
// recorded by the checkpoint store, and what a session left there (an
// edited module source, a planted build result) must not outlive a rewind
// to the session's start. An empty cache is one every later session can
// trust; the tools fill it again — offline from the user's own caches,
// which a profile grants read-only. The directories themselves stay: a
// session still running has its sandbox's write grant on them (Landlock
// grants name the directory, not the path), and so do the generated
// configuration directories (<profile>.conf…), which no sandbox can write.
func ResetWorkspaceCaches(root, ws string, dryRun bool) ([]string, error) {
	if root == "" {
		var err error
		if root, err = CacheRoot(); err != nil {
			return nil, err
		}
	}
	dir, _, err := WorkspaceCacheDir(root, ws)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the workspace's toolchain caches: %w", err)
	}
	var emptied []string
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || strings.Contains(e.Name(), ".conf") {
			continue // the owner file, a generated configuration
		}
		cache := filepath.Join(dir, e.Name())
		inside, err := os.ReadDir(cache)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(inside) == 0 {
			continue
		}
		emptied = append(emptied, cache)
		if dryRun {
			continue
		}
		for _, f := range inside {
			if err := removeCacheDir(filepath.Join(cache, f.Name())); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return emptied, fmt.Errorf("clearing the workspace's toolchain caches: %w (remove what is left in %s by hand)", err, dir)
	}
	return emptied, nil
}

// firstLine is the first line of a tool's stderr, for an error message.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	if s == "" {
		return "(nothing on stderr)"
	}
	return s
}
