//go:build !linux

package checkpoint

// plainLook: see plainname_linux.go; elsewhere the caller asks relPath.
func plainLook(workspace, p string) (rel string, look lookHint, ok bool) { return "", look, false }

// plainRel: see plainname_linux.go; elsewhere the caller asks relPath.
func plainRel(workspace, p string) (rel string, ok bool) { return "", false }
