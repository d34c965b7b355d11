//go:build !linux

package checkpoint

// plainName: see plainname_linux.go; elsewhere the caller asks relPath.
func plainName(workspace, p string) (rel string, link, ok bool) { return "", false, false }
