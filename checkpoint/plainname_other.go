//go:build !linux

package checkpoint

// plainName: see plainname_linux.go; elsewhere the caller asks relPath.
func plainName(workspace, p string) (rel string, link, ok bool) { return "", false, false }

// plainRel: see plainname_linux.go; elsewhere the caller asks relPath.
func plainRel(workspace, p string) (rel string, ok bool) { return "", false }
