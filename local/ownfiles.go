package local

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/sandbox"
)

// ownFilesOutsideWritable refuses a sandbox of commands that could write
// lite-agent's own configuration: the user's policy file, which every
// later session loads as trusted, and the trust store of workspace policy
// files (policies.Trust), whose records let a workspace's file loosen.
// With the workspace at $HOME (or a write grant over ~/.config or
// ~/.local) a command — an agent obeying a prompt injection — could add
// allow rules, hooks or sandbox grants, or trust the workspace's file,
// and widen its own next session. Landlock cannot carve a read-only hole
// in a writable root, so such a root is refused, with what to do instead.
func ownFilesOutsideWritable(sb sandbox.Policy, load *policies.LoadOptions) error {
	var o policies.LoadOptions
	if load != nil {
		o = *load
	}
	type owned struct{ dir, what string }
	var own []owned
	switch o.UserFile {
	case "-": // no user file is read: nothing to protect
	case "":
		if f, err := policies.UserFile(); err == nil {
			own = append(own, owned{filepath.Dir(f), "your lite-agent policy file"})
		}
	default:
		own = append(own, owned{filepath.Dir(o.UserFile), "your lite-agent policy file"})
	}
	store := o.TrustStore
	if store == "" {
		store, _ = policies.TrustStoreDir()
	}
	if store != "" {
		own = append(own, owned{store, "the records of the workspace policy files you trusted"})
	}
	roots := append([]string{sb.Workspace}, sb.ReadWritePaths...)
	for _, w := range own {
		dir := resolvedPath(w.dir)
		for _, r := range roots {
			if r == "" {
				continue
			}
			if rr := resolvedPath(r); rr == dir || strings.HasPrefix(dir, strings.TrimSuffix(rr, "/")+"/") {
				return fmt.Errorf("commands could write %s (beneath the writable %s), which holds %s: "+
					"a command could widen its own next session. Run lite-agent in a project directory, not there", dir, r, w.what)
			}
		}
	}
	return nil
}

// resolvedPath is p made absolute with its symlinks resolved, as far as
// it exists (the policy directory may not exist yet: a command could
// create it).
func resolvedPath(p string) string {
	p, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	rest := ""
	for cur := p; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}
