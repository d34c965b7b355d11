//go:build !linux

package machine

import (
	"errors"
	"os"
)

// workspaceIdentity is the path alone where there is no statx: the
// toolchain profiles (and the sandbox they serve) are Linux only.
func workspaceIdentity(ws string) (string, error) {
	if _, err := os.Stat(ws); err != nil {
		return "", errors.Join(errors.New("the workspace "+ws), err)
	}
	return "", nil
}
