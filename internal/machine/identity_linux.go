package machine

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// workspaceIdentity names the directory ws is, not only where it is: its
// device, inode and birth time (statx). A workspace deleted and made again
// at the same path is another directory with another identity, so it gets
// fresh per-workspace caches instead of inheriting what an earlier agent
// left in the old one's. Where the file system keeps no birth time, device
// and inode alone stand (an inode number can be reused after the old
// directory is gone; the birth time is what rules that out).
func workspaceIdentity(ws string) (string, error) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, ws, 0, unix.STATX_INO|unix.STATX_BTIME, &st); err != nil {
		return "", fmt.Errorf("the workspace %s: %w", ws, err)
	}
	id := fmt.Sprintf("dev=%d:%d ino=%d", st.Dev_major, st.Dev_minor, st.Ino)
	if st.Mask&unix.STATX_BTIME != 0 {
		id += fmt.Sprintf(" btime=%d.%09d", st.Btime.Sec, st.Btime.Nsec)
	}
	return id, nil
}
