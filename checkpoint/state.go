package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// Kind is what a workspace path is at some moment.
type Kind string

const (
	KindAbsent  Kind = "absent"
	KindFile    Kind = "file"
	KindSymlink Kind = "symlink"
	KindDir     Kind = "dir"
	// KindOther is a named pipe, socket or device: noted, never restored.
	KindOther Kind = "other"
)

// pstate is the recorded state of one path: a pre-image (before a change),
// a post-image (at a seal) or an observation (an external change).
type pstate struct {
	Kind Kind `json:"k"`
	// Hash is the SHA-256 of a file's content (hex). For a recorded
	// pre-image the content is in the store; for a post-image only the
	// hash is kept (the content is in the workspace, and becomes the next
	// pre-image if it changes again).
	Hash string `json:"h,omitempty"`
	// Mode is the Unix permission bits with setuid, setgid and sticky
	// (07777) of a file or directory.
	Mode uint32 `json:"m,omitempty"`
	Size int64  `json:"n,omitempty"`
	// Target is a symlink's target, as stored in the link (byte-exact).
	Target exactName `json:"t,omitempty"`
	// Unrecorded marks a file larger than the size cap: its content was
	// neither stored nor hashed, and it is identified by size and MTime.
	Unrecorded bool  `json:"u,omitempty"`
	MTime      int64 `json:"mt,omitempty"`
}

// same reports whether two states are the same content, type and mode.
func (a pstate) same(b pstate) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case KindFile:
		if a.Mode != b.Mode {
			return false
		}
		if a.Unrecorded || b.Unrecorded {
			return a.Unrecorded == b.Unrecorded && a.Size == b.Size && a.MTime == b.MTime
		}
		return a.Hash == b.Hash
	case KindSymlink:
		return a.Target == b.Target
	case KindDir:
		return a.Mode == b.Mode
	}
	return true
}

func (a pstate) String() string {
	switch a.Kind {
	case KindFile:
		if a.Unrecorded {
			return fmt.Sprintf("file %04o, %d bytes (not recorded)", a.Mode, a.Size)
		}
		return fmt.Sprintf("file %04o, %d bytes, %.12s", a.Mode, a.Size, a.Hash)
	case KindSymlink:
		return "symlink to " + string(a.Target)
	case KindDir:
		return fmt.Sprintf("directory %04o", a.Mode)
	}
	return string(a.Kind)
}

// unixMode converts Go's mode bits to the Unix 07777 bits.
func unixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		u |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		u |= 0o1000
	}
	return u
}

// goMode converts Unix 07777 bits to Go's mode bits.
func goMode(u uint32) fs.FileMode {
	m := fs.FileMode(u & 0o777)
	if u&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if u&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if u&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// keepForDiff is the largest content kept in memory to count changed lines.
const keepForDiff = 1 << 20

// readState reads the state of rel through root (which never follows a
// path out of the workspace). With st set, a regular file's content is
// stored (unless it is larger than maxSize, maxSize < 0 meaning no cap);
// otherwise it is only hashed. data is the file's content when it is at most
// keepForDiff bytes, for counting changed lines.
//
// A path whose parent is not a real directory (missing, a file, or a
// symlink) is absent: a path is an entry of a directory, and a symlink in
// its parent would make it some other path. dirs caches the directories
// found real during one operation (nil: no cache).
func readState(root *os.Root, rel string, st *store, maxSize int64, dirs map[string]bool) (ps pstate, data []byte, err error) {
	if ok, err := parentsReal(root, rel, dirs); err != nil || !ok {
		return pstate{Kind: KindAbsent}, nil, err
	}
	fi, err := root.Lstat(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return pstate{Kind: KindAbsent}, nil, nil
		}
		return ps, nil, err
	}
	switch m := fi.Mode(); {
	case m&fs.ModeSymlink != 0:
		t, err := root.Readlink(rel)
		if err != nil {
			return ps, nil, err
		}
		return pstate{Kind: KindSymlink, Target: exactName(t)}, nil, nil
	case m.IsDir():
		return pstate{Kind: KindDir, Mode: unixMode(m)}, nil, nil
	case !m.IsRegular():
		return pstate{Kind: KindOther}, nil, nil
	}
	ps = pstate{Kind: KindFile, Mode: unixMode(fi.Mode()), Size: fi.Size()}
	if maxSize >= 0 && fi.Size() > maxSize {
		ps.Unrecorded, ps.MTime = true, fi.ModTime().UnixNano()
		return ps, nil, nil
	}
	f, err := root.Open(rel)
	if err != nil {
		return ps, nil, err
	}
	defer f.Close()
	// The path may have been replaced between Lstat and Open (os.Root
	// follows a final symlink): make sure this is the file that was
	// looked at.
	ofi, err := f.Stat()
	if err != nil {
		return ps, nil, err
	}
	if !os.SameFile(fi, ofi) {
		return ps, nil, fmt.Errorf("%s changed while it was being recorded; try again", rel)
	}
	if ofi.Size() < looseThreshold {
		raw, err := io.ReadAll(io.LimitReader(f, looseThreshold))
		if err != nil {
			return ps, nil, err
		}
		ps.Size = int64(len(raw))
		if st != nil {
			h, err := st.put(raw)
			if err != nil {
				return ps, nil, err
			}
			ps.Hash = h.String()
		} else {
			ps.Hash = Hash(sha256.Sum256(raw)).String()
		}
		if len(raw) <= keepForDiff {
			data = raw
		}
		return ps, data, nil
	}
	var keep *bytes.Buffer
	var src io.Reader = f
	if ofi.Size() <= keepForDiff {
		keep = &bytes.Buffer{}
		src = io.TeeReader(f, keep)
	}
	if st != nil {
		h, n, err := st.putFile(src)
		if err != nil {
			return ps, nil, err
		}
		ps.Hash, ps.Size = h.String(), n
	} else {
		hs := sha256.New()
		n, err := io.Copy(hs, src)
		if err != nil {
			return ps, nil, err
		}
		var h Hash
		hs.Sum(h[:0])
		ps.Hash, ps.Size = h.String(), n
	}
	if keep != nil && keep.Len() <= keepForDiff {
		data = keep.Bytes()
	}
	return ps, data, nil
}

// parentsReal reports whether every ancestor of rel is a real directory.
func parentsReal(root *os.Root, rel string, dirs map[string]bool) (bool, error) {
	for i := 0; i < len(rel); i++ {
		if rel[i] != '/' {
			continue
		}
		d := rel[:i]
		if dirs != nil && dirs[d] {
			continue
		}
		fi, err := root.Lstat(d)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				return false, nil
			}
			return false, err
		}
		if !fi.IsDir() {
			return false, nil
		}
		if dirs != nil {
			dirs[d] = true
		}
	}
	return true, nil
}

// ErrOutsideWorkspace is wrapped by errors about paths that are not inside
// the workspace.
var ErrOutsideWorkspace = errors.New("path is outside the workspace")

// relPath turns a path given by a tool or a capturer (workspace-relative or
// absolute) into the canonical key of the path: slash-separated, relative to
// the workspace, with every symlink in its parent directories resolved, so
// that one file has one key however it was named. The last element is kept
// as is: the path itself may be a symlink, and that link is what changes
// when it is replaced or removed.
func relPath(workspace, p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	root := workspace // an absolute path names the workspace's own
	if !filepath.IsAbs(p) {
		root = "."
	}
	rel, ok := paths.Rel(root, p)
	if !ok {
		return "", fmt.Errorf("%s: %w", p, ErrOutsideWorkspace)
	}
	if rel == "." {
		return "", fmt.Errorf("%s is the workspace root itself; record the paths inside it", p)
	}
	dir, base := filepath.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		return filepath.ToSlash(rel), nil
	}
	// Where the kernel finds the directory now, as far as it exists.
	realDir := paths.Real(filepath.Join(workspace, dir))
	rd, ok := paths.Rel(workspace, realDir)
	if !ok {
		return "", fmt.Errorf("%s resolves to %s: %w", p, realDir, ErrOutsideWorkspace)
	}
	if rd == "." {
		return filepath.ToSlash(base), nil
	}
	return filepath.ToSlash(path.Join(filepath.ToSlash(rd), base)), nil
}

// depth is the number of elements of a relative slash path.
func depth(rel string) int { return strings.Count(rel, "/") + 1 }

var nowFunc = time.Now
