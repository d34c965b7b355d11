package local

import (
	"fmt"
	"strings"

	"github.com/lite-agent/lite-agent/internal/paths"
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
			own = append(own, owned{parentOf(f), "your lite-agent policy file"})
		}
	default:
		own = append(own, owned{parentOf(o.UserFile), "your lite-agent policy file"})
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
		// Both as the kernel resolves them, as far as they exist (the
		// policy directory may not exist yet: a command could create it;
		// a ".." after a link climbs from the link's target).
		dir := paths.Real(w.dir)
		for _, r := range roots {
			if r == "" {
				continue
			}
			if paths.Within(dir, paths.Real(r)) {
				return fmt.Errorf("commands could write %s (beneath the writable %s), which holds %s: "+
					"a command could widen its own next session. Run lite-agent in a project directory, not there", dir, r, w.what)
			}
		}
	}
	return nil
}

// parentOf is the directory that holds the entry f, as written, for
// paths.Real to resolve: filepath.Dir would clean a ".." away before the
// link it follows is resolved.
func parentOf(f string) string {
	return f[:strings.LastIndexByte(f, '/')+1] // "" (the working directory) for a bare name
}
