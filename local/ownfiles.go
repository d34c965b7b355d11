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
// later session loads as trusted. With the workspace at $HOME (or a write
// grant over ~/.config) a command — an agent obeying a prompt injection —
// could add allow rules, hooks or sandbox grants to it and widen its own
// next session. Landlock cannot carve a read-only hole in a writable root,
// so such a root is refused, with what to do instead.
func ownFilesOutsideWritable(sb sandbox.Policy, load *policies.LoadOptions) error {
	userFile := ""
	if load != nil {
		userFile = load.UserFile
	}
	if userFile == "-" {
		return nil // no user file is read: nothing to protect
	}
	if userFile == "" {
		var err error
		if userFile, err = policies.UserFile(); err != nil {
			return nil // no home, no file: nothing to protect
		}
	}
	own := resolvedPath(filepath.Dir(userFile))
	roots := append([]string{sb.Workspace}, sb.ReadWritePaths...)
	for _, r := range roots {
		if r == "" {
			continue
		}
		if rr := resolvedPath(r); rr == own || strings.HasPrefix(own, strings.TrimSuffix(rr, "/")+"/") {
			return fmt.Errorf("commands could write %s (beneath the writable %s), which holds your lite-agent policy file: "+
				"a command could widen its own next session. Run lite-agent in a project directory, not there, or move the policy file with XDG_CONFIG_HOME", own, r)
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
