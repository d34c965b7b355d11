package machine

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pelletier/go-toml/v2"
	"golang.org/x/sys/unix"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// # Verifying what a toolchain checks only once
//
// Go checks a module against go.sum when it extracts it into GOMODCACHE,
// and never again: every later build compiles the extracted source as it
// finds it. The go profile's GOMODCACHE is per workspace and writable by
// the sandbox (go must extract into it), and the read-only mode bits go
// leaves there are no bar to the agent (it owns the files and may chmod
// them; a new directory with a matching .ziphash beside it needs no chmod
// at all). So a source edited in one session would be compiled by every
// later one, the person's unconfined builds of what those sessions wrote
// included. Landlock cannot tell go's extraction from the agent's write,
// so the check is made where the sandbox cannot reach: before a session
// starts, in lite-agent itself, every extracted module directory is
// hashed the way go.sum hashes it (h1:, golang.org/x/mod/sumdb/dirhash's
// Hash1) and compared with the workspace's go.sum line for it, or with
// the hash go recorded when it extracted the module (.ziphash) when
// go.sum has none — which go itself compares with go.sum at every use. A
// directory that differs is removed with its zip and .ziphash, and go
// extracts it again from a checked download (the person's read-only module
// cache first) at its next build.
//
// The downloads are held to the same rule. Go extracts a module from
// the zip in cache/download without hashing it again when its .ziphash
// is there (it compares the .ziphash, not the zip, with go.sum), so an
// edited zip beside its original .ziphash would be extracted and built
// by the next session that needs the module: each zip with a .ziphash
// is hashed the way go.sum hashes it (dirhash.HashZip) and compared with
// go.sum's line (the .ziphash when go.sum has none), and one that differs
// is removed with its .ziphash, to be downloaded again, checked. The
// zips are checked before the directories, which go extracts from them.
// A link anywhere go looks for either — a module directory, a directory
// on a module's path, the downloads or one of them — would lead go to
// files no check saw (go's own cache holds none): it is removed.
//
// Hashing every source at every session start would cost seconds on a
// large module graph, so what was verified is remembered outside the
// sandbox's reach (goVerifiedFile, beside the cache, not in it) as each
// directory's stat digest: every file's path, mode, size, mtime, ctime
// and inode. A sandboxed process cannot set a ctime (it is the kernel's
// clock at each change; moving the clock needs CAP_SYS_TIME, which no
// command has), so an unchanged digest means unchanged files, and only a
// directory whose digest moved is hashed again.
//
// That holds only for a ctime older than the clock's present tick. The
// kernel stamps a change with its coarse clock (one tick, 1–10 ms), and
// a file system may keep less (ext4 with small inodes keeps seconds); a
// kernel without multigrain timestamps (before 6.13) gives a change made
// in the same tick as the stat that read the ctime the very same ctime.
// A session running while another one starts could so chmod a file (its
// stat moves, so it is hashed), watch the hash read it (inotify), and
// write it back edited in the same tick: the digest recorded would then
// be the edited file's too. So, as git does with racily clean index
// entries, a digest with an entry changed within settleMargin of the
// coarse clock read before the digest was taken is not recorded as
// verified: the directory is hashed again at the next session, by when
// its ctimes are settled.
//
// Every file is stat'ed, at every session start: nothing cheaper is a
// witness. A write into an existing file, a chmod, or a hard link taken
// out (to write through later) moves that file's ctime and nothing
// else's — no directory's mtime or ctime, no parent's — and a file
// system keeps no change counter over a tree that a process outside
// could read. So the cost is made small instead: each directory is held
// open and its entries stat'ed relative to it (statDigest), and the
// module directories are checked in parallel (verifyGoModules); on a
// cache of 60 modules and 6,000 files that is ~8 ms on two cores
// (BenchmarkVerifyGoModulesUnchanged), against ~32 ms with a path walk.

// goVerifiedFile is where the digests of verified module directories are
// kept: a sibling of the per-workspace caches' profile directories,
// which no sandbox is granted.
const goVerifiedFile = "go.verified.json"

// verifiedModule is one module directory as it was when last verified.
type verifiedModule struct {
	Stat string `json:"stat"`
	Hash string `json:"hash"`
}

// VerifyWorkspaceCache checks the per-workspace cache dir of a toolchain
// profile for content its tool trusts without checking again, and
// removes what does not match what the tool checked (see the section
// comments); ws is the workspace (its go.sum, its Cargo.lock). It returns one line per
// removal, for the sandbox report. Profiles without such content need no
// check.
func (h *Host) VerifyWorkspaceCache(ws, profile, dir string) []string {
	switch profile {
	case "go":
		return verifyGoModules(filepath.Join(dir, "mod"), filepath.Join(filepath.Dir(dir), goVerifiedFile), readGoSum(ws))
	case "rust":
		return verifyCrates(filepath.Join(dir, "cargo"), filepath.Join(filepath.Dir(dir), rustVerifiedFile), readCargoLock(ws))
	}
	return nil
}

// readGoSum is the workspace's go.sum as module@version -> h1: hash of
// the module's files (the /go.mod lines are not about directories).
func readGoSum(ws string) map[string]string {
	sums := map[string]string{}
	b, err := os.ReadFile(filepath.Join(ws, "go.sum"))
	if err != nil {
		return sums
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && !strings.HasSuffix(f[1], "/go.mod") {
			sums[f[0]+"@"+f[1]] = f[2]
		}
	}
	return sums
}

// verifyGoModules verifies each extracted module directory under modRoot
// (a GOMODCACHE), remembering the verified ones in record. The
// directories are independent of one another, so they are verified by
// up to goVerifyWorkers at once: a session start waits for the slowest
// share, not for the sum.
func verifyGoModules(modRoot, record string, sums map[string]string) []string {
	if fi, err := os.Lstat(modRoot); err != nil {
		return nil
	} else if fi.Mode()&fs.ModeSymlink != 0 {
		return []string{removeLink(filepath.Dir(modRoot), modRoot)}
	}
	old, _ := os.ReadFile(record)
	known := map[string]verifiedModule{}
	json.Unmarshal(old, &known)
	var found []extractedModule
	var notes []string
	var walk func(dir string)
	walk = func(dir string) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if e.Type()&fs.ModeSymlink != 0 {
				// Where go looks for a module's directory, or for a
				// directory on its path: go follows a link, to files
				// nobody checked. Go's own cache holds none.
				notes = append(notes, removeLink(modRoot, p))
				continue
			}
			if !e.IsDir() {
				continue
			}
			if dir == modRoot && e.Name() == "cache" {
				continue // the downloads: go checks them against go.sum at every use
			}
			escPath, escVersion, ok := strings.Cut(e.Name(), "@")
			if !ok {
				walk(p)
				continue
			}
			if _, err := os.Stat(p + ".partial"); err == nil {
				// Being extracted (by a session running now), or left
				// half done: go itself extracts such a directory again
				// before it uses it.
				continue
			}
			rel, _ := filepath.Rel(modRoot, filepath.Join(dir, escPath))
			found = append(found, extractedModule{dir: p, rel: rel, escVersion: escVersion})
		}
	}
	now := map[string]verifiedModule{}
	// The downloads first: an extraction go makes later is of these.
	zips, zipNotes := downloadedZips(modRoot)
	notes = append(notes, zipNotes...)
	zipOK := make([]*verifiedModule, len(zips))
	inParallel(len(zips), goVerifyWorkers(), func(i int) {
		zipOK[i] = zips[i].verify(known, sums)
	})
	for i, z := range zips {
		if zipOK[i] != nil {
			now[z.zip] = *zipOK[i]
			continue
		}
		notes = append(notes, fmt.Sprintf("go: removed the downloaded module %s@%s from the workspace's module cache: its zip differs from what go checked against go.sum when it downloaded it (go downloads it again, checked, at the next build)",
			filepath.ToSlash(z.rel), z.escVersion))
	}
	walk(modRoot)
	verified := make([]*verifiedModule, len(found))
	inParallel(len(found), goVerifyWorkers(), func(i int) {
		verified[i] = found[i].verify(modRoot, known, sums)
	})
	for i, m := range found {
		if verified[i] != nil {
			now[m.dir] = *verified[i]
			continue
		}
		notes = append(notes, fmt.Sprintf("go: removed the extracted module %s@%s from the workspace's module cache: its files differ from what go checked against go.sum when it extracted them (go extracts it again, checked, at the next build)",
			strings.TrimSuffix(filepath.ToSlash(m.rel), "/"), m.escVersion))
	}
	if b, err := json.Marshal(now); err == nil && !bytes.Equal(b, old) {
		writeFileAtomic(record, b)
	}
	return notes
}

// removeLink removes the link p found where go looks for modules (in a
// GOMODCACHE), and says so.
func removeLink(modRoot, p string) string {
	os.Remove(p)
	rel, _ := filepath.Rel(modRoot, p)
	return fmt.Sprintf("go: removed %s from the workspace's module cache: a link where go looks for module files (go's own cache holds none), leading to files go never checked", filepath.ToSlash(rel))
}

// downloadedZip is one downloaded module of a GOMODCACHE:
// cache/download/<rel>/@v/<escVersion>.zip, and its .ziphash.
type downloadedZip struct{ zip, rel, escVersion string }

// downloadedZips lists the zips of modRoot's downloads that go would
// extract without checking them again: those with a .ziphash, which go
// compares with go.sum in the zip's stead (modfetch: a zip and its
// .ziphash in the cache are used as they are). Links there are removed,
// with a note each: go would follow them.
func downloadedZips(modRoot string) (zips []downloadedZip, notes []string) {
	base := filepath.Join(modRoot, "cache", "download")
	var walk func(dir string)
	walk = func(dir string) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			switch {
			case e.Type()&fs.ModeSymlink != 0:
				notes = append(notes, removeLink(modRoot, p))
			case e.IsDir() && e.Name() == "@v":
				rel, _ := filepath.Rel(base, dir)
				vs, _ := os.ReadDir(p)
				for _, v := range vs {
					name := v.Name()
					if v.Type()&fs.ModeSymlink != 0 {
						notes = append(notes, removeLink(modRoot, filepath.Join(p, name)))
						continue
					}
					esc, ok := strings.CutSuffix(name, ".zip")
					if !ok || !v.Type().IsRegular() {
						continue
					}
					if _, err := os.Lstat(filepath.Join(p, esc+".ziphash")); err != nil {
						continue // go hashes a zip without one before it trusts it
					}
					zips = append(zips, downloadedZip{zip: filepath.Join(p, name), rel: rel, escVersion: esc})
				}
			case e.IsDir():
				walk(p)
			}
		}
	}
	if fi, err := os.Lstat(base); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, []string{removeLink(modRoot, base)}
	}
	walk(base)
	return zips, notes
}

// verify returns the zip's record when its content is what go checked:
// its stat and its .ziphash's are the ones known for it, or its hash is
// go.sum's line for it (its .ziphash when go.sum has none). Otherwise it
// removes the zip and its .ziphash, and returns nil: go downloads the
// module again, and checks it, before it extracts it.
func (z downloadedZip) verify(known map[string]verifiedModule, sums map[string]string) *verifiedModule {
	ziphash := strings.TrimSuffix(z.zip, ".zip") + ".ziphash"
	mod, errPath := unescapeModulePart(filepath.ToSlash(z.rel))
	version, errVersion := unescapeModulePart(z.escVersion)
	before := coarseNow()
	zipStat, newest, err := statDigest(z.zip)
	hashStat, newestHash, herr := statDigest(ziphash)
	if newestHash.Sec > newest.Sec || newestHash.Sec == newest.Sec && newestHash.Nsec > newest.Nsec {
		newest = newestHash
	}
	stat := zipStat + " " + hashStat
	if err == nil && herr == nil && errPath == nil && errVersion == nil {
		if k, ok := known[z.zip]; ok && k.Stat == stat {
			return &k
		}
		want := sums[mod+"@"+version]
		if want == "" {
			b, _ := os.ReadFile(ziphash)
			want = strings.TrimSpace(string(b))
		}
		got, err := hashModuleZip(z.zip)
		if err == nil && want != "" && got == want {
			if !settled(newest, before) {
				stat = "" // hashed again next time
			}
			return &verifiedModule{Stat: stat, Hash: got}
		}
	}
	os.Remove(z.zip)
	os.Remove(ziphash)
	return nil
}

// maxModuleZipBytes bounds what a module zip may expand to, as go's own
// extraction does (golang.org/x/mod/zip.MaxZipFile): a zip made to expand
// without end fails the check rather than holding up the session.
const maxModuleZipBytes = 500 << 20

// hashModuleZip is golang.org/x/mod/sumdb/dirhash.HashZip(zipfile,
// Hash1): the h1: hash go.sum records for a module, over the zip's files
// (named mod@version/...).
func hashModuleZip(zipfile string) (string, error) {
	z, err := zip.OpenReader(zipfile)
	if err != nil {
		return "", err
	}
	defer z.Close()
	var total uint64
	files := make([]string, 0, len(z.File))
	byName := make(map[string]*zip.File, len(z.File))
	for _, f := range z.File {
		total += f.UncompressedSize64
		files = append(files, f.Name)
		byName[f.Name] = f
	}
	if total > maxModuleZipBytes {
		return "", fmt.Errorf("%s expands to more than %d bytes", zipfile, maxModuleZipBytes)
	}
	slices.Sort(files)
	h, hf, buf := sha256.New(), sha256.New(), make([]byte, 32<<10)
	for _, name := range files {
		if strings.Contains(name, "\n") {
			return "", fmt.Errorf("file name %q has a newline", name)
		}
		r, err := byName[name].Open()
		if err != nil {
			return "", err
		}
		hf.Reset()
		err = copyThrough(hf, io.LimitReader(r, maxModuleZipBytes), buf)
		r.Close()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%x  %s\n", hf.Sum(nil), name)
	}
	return "h1:" + base64.StdEncoding.EncodeToString(h.Sum(nil)), nil
}

// extractedModule is one extracted module directory of a GOMODCACHE:
// dir, its escaped module path relative to the cache (rel) and its
// escaped version.
type extractedModule struct{ dir, rel, escVersion string }

// verify returns the module directory's record when its files are the
// ones go checked: its stat digest is the one known for it, or its hash
// is go.sum's line for it (the .ziphash go recorded when go.sum has
// none). Otherwise it removes the directory and its download, and
// returns nil.
func (m extractedModule) verify(modRoot string, known map[string]verifiedModule, sums map[string]string) *verifiedModule {
	mod, errPath := unescapeModulePart(filepath.ToSlash(m.rel))
	version, errVersion := unescapeModulePart(m.escVersion)
	before := coarseNow()
	stat, newest, err := statDigest(m.dir)
	if err == nil && errPath == nil && errVersion == nil {
		if k, ok := known[m.dir]; ok && k.Stat == stat {
			return &k
		}
		want := sums[mod+"@"+version]
		if want == "" {
			b, _ := os.ReadFile(filepath.Join(modRoot, "cache", "download", m.rel, "@v", m.escVersion+".ziphash"))
			want = strings.TrimSpace(string(b))
		}
		got, herr := hashModuleDir(m.dir, mod+"@"+version)
		// The stat digest is taken before the hash: a file changed
		// while it was hashed has a new ctime, and is hashed again
		// next time.
		if herr == nil && want != "" && got == want {
			if !settled(newest, before) {
				stat = "" // hashed again next time
			}
			return &verifiedModule{Stat: stat, Hash: got}
		}
	}
	// Differs, cannot be hashed, or has nothing to be checked against:
	// go extracts it again, checked.
	removeModule(modRoot, m.rel, m.escVersion, m.dir)
	return nil
}

// goVerifyWorkers is how many module directories are verified at once:
// one per processor Go runs on, at most 8 (the work is the kernel's
// stat and readdir of one file system).
func goVerifyWorkers() int { return min(runtime.GOMAXPROCS(0), 8) }

// inParallel calls do(0) … do(n-1), up to workers of them at once, and
// returns when all have returned.
func inParallel(n, workers int, do func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				do(i)
			}
		})
	}
	wg.Wait()
}

// unescapeModulePart undoes Go's module path and version escaping
// (golang.org/x/mod/module: an upper-case letter is '!' and its lower
// case, as the module cache stores them on case-insensitive disks).
func unescapeModulePart(s string) (string, error) {
	var b strings.Builder
	bang := false
	for _, r := range s {
		switch {
		case bang:
			if r < 'a' || r > 'z' {
				return "", fmt.Errorf("invalid escaped module path %q", s)
			}
			b.WriteRune(r - 'a' + 'A')
			bang = false
		case r == '!':
			bang = true
		case r >= 'A' && r <= 'Z':
			return "", fmt.Errorf("invalid escaped module path %q", s)
		default:
			b.WriteRune(r)
		}
	}
	if bang {
		return "", fmt.Errorf("invalid escaped module path %q", s)
	}
	return b.String(), nil
}

// hashModuleDir is golang.org/x/mod/sumdb/dirhash.HashDir(dir, prefix,
// Hash1): the h1: hash go.sum records for a module's files. Anything but
// regular files and directories (a symlink planted in the tree) makes it
// an error, as in dirhash.
func hashModuleDir(dir, prefix string) (string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		rel, _ := filepath.Rel(dir, p)
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return "", err
	}
	slices.Sort(files) // the order of prefix+"/"+f too
	h, hf, buf := sha256.New(), sha256.New(), make([]byte, 32<<10)
	for _, rel := range files {
		f := prefix + "/" + rel
		if strings.Contains(f, "\n") {
			return "", fmt.Errorf("file name %q has a newline", f)
		}
		r, err := os.Open(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return "", err
		}
		hf.Reset()
		err = copyThrough(hf, r, buf)
		r.Close()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%x  %s\n", hf.Sum(nil), f)
	}
	return "h1:" + base64.StdEncoding.EncodeToString(h.Sum(nil)), nil
}

// copyThrough writes everything r reads to w through buf (io.Copy would
// take a new buffer for every file: an *os.File's WriteTo falls back to
// one).
func copyThrough(w io.Writer, r io.Reader, buf []byte) error {
	for {
		n, err := r.Read(buf)
		w.Write(buf[:n])
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// statDigest digests every entry of a tree as lstat sees it: name, mode,
// size, mtime, ctime, inode and device, one line per entry in
// filepath.WalkDir's order (the root as ".", then each directory's
// entries sorted by name, a directory's entries right after its own
// line). Equal digests mean no entry changed (the ctime is the kernel's
// to set). A root that is not a directory (a .crate) is its one line.
//
// The walk holds each directory open and stats its entries relative to
// it (fstatat), so the kernel resolves one name per entry rather than
// the whole path, and the lines are appended to the hash without a
// formatter: a session start pays this for every file of every
// extracted module. A directory is opened without following a link, and
// the one opened must be the one stat'ed (same device and inode): a
// directory swapped for another between its stat and its listing is an
// error, not a listing of the other under the first one's line.
func statDigest(dir string) (digest string, newest unix.Timespec, err error) {
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Lstat(dir, &st) }); err != nil {
		return "", newest, &fs.PathError{Op: "lstat", Path: dir, Err: err}
	}
	d := statDigester{h: sha256.New()}
	d.addLine(".", &st)
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		fd, err := d.openDir(unix.AT_FDCWD, dir, &st)
		if err != nil {
			return "", newest, err
		}
		err = d.walk(fd, dir, "")
		unix.Close(fd)
		if err != nil {
			return "", newest, err
		}
	}
	return base64.StdEncoding.EncodeToString(d.h.Sum(nil)), d.newest, nil
}

// settleMargin is how long before the coarse clock read ahead of a stat
// digest its newest ctime must be for the digest to be trusted later: a
// file system's timestamp granularity (for a ctime with no fraction of
// a second, 2 s: FAT's, and ext4's small inodes' 1 s), on top of the
// same-tick rule (newest < the clock) that needs none.
func settleMargin(newest unix.Timespec) time.Duration {
	if newest.Nsec == 0 {
		return 2 * time.Second
	}
	return 10 * time.Millisecond
}

// settled reports whether a digest whose newest entry ctime is newest,
// taken after the coarse clock read before, can be trusted at a later
// check: no change made after the digest can have been given a ctime it
// already holds.
func settled(newest, before unix.Timespec) bool {
	return time.Unix(newest.Unix()).Add(settleMargin(newest)).Before(time.Unix(before.Unix()))
}

// coarseNow is the clock the kernel stamps changes with (ctime, mtime):
// CLOCK_REALTIME_COARSE.
var coarseNow = func() unix.Timespec {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &ts)
	return ts
}

// statDigester is one statDigest's walk: the hash, and buffers reused
// for every line and every directory listing.
type statDigester struct {
	h       hash.Hash
	newest  unix.Timespec // the newest ctime seen
	lineBuf []byte
	buf     []byte
}

// addLine appends the entry rel's line, as fmt's "%q %o %d %d.%d %d.%d %d
// %d\n" of its name, mode, size, mtime, ctime, inode and device writes it.
func (d *statDigester) addLine(rel string, st *unix.Stat_t) {
	b := strconv.AppendQuote(d.lineBuf[:0], rel)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(st.Mode), 8)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(st.Size), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(st.Mtim.Sec), 10)
	b = append(b, '.')
	b = strconv.AppendInt(b, int64(st.Mtim.Nsec), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(st.Ctim.Sec), 10)
	b = append(b, '.')
	b = strconv.AppendInt(b, int64(st.Ctim.Nsec), 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(st.Ino), 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(st.Dev), 10)
	b = append(b, '\n')
	d.h.Write(b)
	d.lineBuf = b
	if st.Ctim.Sec > d.newest.Sec || st.Ctim.Sec == d.newest.Sec && st.Ctim.Nsec > d.newest.Nsec {
		d.newest = st.Ctim
	}
}

// openDir opens the directory name (relative to at) that st describes,
// refusing a link and a directory other than st's.
func (d *statDigester) openDir(at int, name string, st *unix.Stat_t) (int, error) {
	var fd int
	err := ignoringEINTR(func() (err error) {
		fd, err = unix.Openat(at, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	var got unix.Stat_t
	if err := unix.Fstat(fd, &got); err != nil || got.Dev != st.Dev || got.Ino != st.Ino {
		unix.Close(fd)
		return -1, &fs.PathError{Op: "open", Path: name, Err: errors.New("replaced while it was read")}
	}
	return fd, nil
}

// walk appends the lines of the entries of the open directory fd (the
// tree's prefix, "" for the root, with a slash otherwise), and of the
// directories below it.
func (d *statDigester) walk(fd int, path, prefix string) error {
	names, err := d.readNames(fd)
	if err != nil {
		return &fs.PathError{Op: "readdirent", Path: path, Err: err}
	}
	slices.Sort(names) // os.ReadDir's order
	for _, name := range names {
		var st unix.Stat_t
		if err := ignoringEINTR(func() error { return unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
			return &fs.PathError{Op: "lstat", Path: path + "/" + name, Err: err}
		}
		d.addLine(prefix+name, &st)
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		sub, err := d.openDir(fd, name, &st)
		if err != nil {
			return err
		}
		err = d.walk(sub, path+"/"+name, prefix+name+"/")
		unix.Close(sub)
		if err != nil {
			return err
		}
	}
	return nil
}

// readNames lists the open directory fd (without "." and "..").
func (d *statDigester) readNames(fd int) ([]string, error) {
	if d.buf == nil {
		d.buf = make([]byte, 8<<10) // os.ReadDir's too
	}
	var names []string
	for {
		var n int
		err := ignoringEINTR(func() (err error) {
			n, err = unix.Getdents(fd, d.buf)
			return err
		})
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(d.buf[:n], -1, names)
	}
}

// ignoringEINTR retries a call interrupted by a signal.
func ignoringEINTR(call func() error) error {
	for {
		if err := call(); err != unix.EINTR {
			return err
		}
	}
}

// removeModule removes an extracted module directory (made writable
// first: go leaves it read-only) and the download go would extract it
// from again without a check (its zip; its .ziphash, which go compares
// with go.sum), so that the next build takes it afresh from GOPROXY —
// the person's read-only module cache first.
func removeModule(modRoot, relPath, escVersion, dir string) {
	removeCacheDir(dir)
	dl := filepath.Join(modRoot, "cache", "download", relPath, "@v", escVersion)
	for _, ext := range []string{".zip", ".ziphash", ".partial"} {
		os.Remove(dl + ext)
	}
}

// writeFileAtomic replaces p through a temporary file and a rename.
func writeFileAtomic(p string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// # Cargo's extracted registry sources
//
// cargo checks a .crate's checksum when it downloads it and extracts it
// into $CARGO_HOME/registry/src once; later builds compile that
// directory, and a .crate already in registry/cache is extracted again
// unchecked. So, as for Go: each extracted crate is compared, file by
// file, with the .crate it came from, and the .crate with the checksum
// the workspace's Cargo.lock names for it (a crate the lockfile does not
// name is only held to its .crate). A directory that differs is removed
// (cargo extracts it again, offline, from the .crate); a .crate whose
// checksum differs is removed with it (cargo downloads it again, through
// a grant). Verified directories are remembered by stat digest
// (rustVerifiedFile), like Go's.

// rustVerifiedFile holds the digests of verified crate directories,
// beside the per-workspace caches.
const rustVerifiedFile = "rust.verified.json"

// readCargoLock is the workspace's Cargo.lock as "name-version" ->
// checksum, for the packages that have one (registry packages).
func readCargoLock(ws string) map[string]string {
	sums := map[string]string{}
	b, err := os.ReadFile(filepath.Join(ws, "Cargo.lock"))
	if err != nil {
		return sums
	}
	var lock struct {
		Package []struct{ Name, Version, Checksum string }
	}
	if toml.Unmarshal(b, &lock) != nil {
		return sums
	}
	for _, p := range lock.Package {
		if p.Checksum != "" {
			sums[p.Name+"-"+p.Version] = p.Checksum
		}
	}
	return sums
}

// cargoLink is why a link in the cargo cache is removed.
const cargoLink = "a link where cargo looks for crates (cargo makes none), leading to files no check saw"

// removeFromCargoCache removes p from the cargo cache at cargoHome, and
// says so and why.
func removeFromCargoCache(cargoHome, p, why string) string {
	os.Remove(p)
	rel, _ := filepath.Rel(cargoHome, p)
	return fmt.Sprintf("rust: removed %s from the workspace's cargo cache: %s", filepath.ToSlash(rel), why)
}

// verifyCachedCrates checks the downloaded .crate files of cargoHome
// that are not extracted (those that are are checked with their
// extraction, in verifyCrates): cargo extracts a .crate it finds in
// registry/cache without checking it again, so one that is not the file
// Cargo.lock's checksum names is removed, to be downloaded again,
// checked. A link there (cargo makes none) is removed. Records and notes
// as verifyCrates'.
func verifyCachedCrates(cargoHome string, known, now map[string]verifiedModule, sums map[string]string) []string {
	var notes []string
	cacheRoot := filepath.Join(cargoHome, "registry", "cache")
	srcRoot := filepath.Join(cargoHome, "registry", "src")
	removed := func(p, why string) { notes = append(notes, removeFromCargoCache(cargoHome, p, why)) }
	registries, _ := os.ReadDir(cacheRoot)
	for _, reg := range registries {
		dir := filepath.Join(cacheRoot, reg.Name())
		if reg.Type()&fs.ModeSymlink != 0 {
			removed(dir, cargoLink)
			continue
		}
		if !reg.IsDir() {
			continue
		}
		crates, _ := os.ReadDir(dir)
		for _, c := range crates {
			p := filepath.Join(dir, c.Name())
			if c.Type()&fs.ModeSymlink != 0 {
				removed(p, cargoLink)
				continue
			}
			nameVersion, ok := strings.CutSuffix(c.Name(), ".crate")
			if !ok || !c.Type().IsRegular() {
				continue
			}
			if _, err := os.Lstat(filepath.Join(srcRoot, reg.Name(), nameVersion)); err == nil {
				continue // checked with its extraction
			}
			want := sums[nameVersion]
			if want == "" {
				continue // nothing names it: cargo checks what it downloads for a lockfile
			}
			before := coarseNow()
			stat, newest, err := statDigest(p)
			if err == nil {
				if k, ok := known[p]; ok && k.Stat == stat {
					now[p] = k
					continue
				}
				if got, err := fileSHA256(p); err == nil && got == want {
					if !settled(newest, before) {
						stat = "" // checked again next time
					}
					now[p] = verifiedModule{Stat: stat}
					continue
				}
			}
			removed(p, "it is not the .crate Cargo.lock names (cargo downloads it again, through a grant)")
		}
	}
	return notes
}

// verifyCrates verifies each extracted crate under cargoHome's
// registry/src against its .crate in registry/cache (and that against
// sums), remembering the verified ones in record.
func verifyCrates(cargoHome, record string, sums map[string]string) []string {
	srcRoot := filepath.Join(cargoHome, "registry", "src")
	registries, err := os.ReadDir(srcRoot)
	if err != nil {
		return nil
	}
	known := map[string]verifiedModule{}
	if b, err := os.ReadFile(record); err == nil {
		json.Unmarshal(b, &known)
	}
	now := map[string]verifiedModule{}
	notes := verifyCachedCrates(cargoHome, known, now, sums)
	linkNote := func(p string) { notes = append(notes, removeFromCargoCache(cargoHome, p, cargoLink)) }
	for _, reg := range registries {
		if reg.Type()&fs.ModeSymlink != 0 {
			linkNote(filepath.Join(srcRoot, reg.Name()))
			continue
		}
		crates, err := os.ReadDir(filepath.Join(srcRoot, reg.Name()))
		if err != nil {
			continue
		}
		for _, c := range crates {
			dir := filepath.Join(srcRoot, reg.Name(), c.Name())
			crate := filepath.Join(cargoHome, "registry", "cache", reg.Name(), c.Name()+".crate")
			if c.Type()&fs.ModeSymlink != 0 {
				linkNote(dir)
				continue
			}
			if !c.IsDir() {
				continue
			}
			if _, err := os.Stat(filepath.Join(dir, ".cargo-ok")); err != nil {
				continue // not (yet) extracted whole: cargo extracts it again itself
			}
			before := coarseNow()
			stat, newest, err := statDigest(dir)
			cst, cnewest, cerr := statDigest(crate)
			if err == nil && cerr == nil {
				stat += " " + cst
				if k, ok := known[dir]; ok && k.Stat == stat {
					now[dir] = k
					continue
				}
			}
			crateOK := cerr == nil
			if want := sums[c.Name()]; crateOK && want != "" {
				got, err := fileSHA256(crate)
				crateOK = err == nil && got == want
			}
			if crateOK && err == nil && sameAsCrate(dir, crate, c.Name()) {
				if !settled(newest, before) || !settled(cnewest, before) {
					stat = "" // checked again next time
				}
				now[dir] = verifiedModule{Stat: stat}
				continue
			}
			removeCacheDir(dir)
			what := "its files differ from its .crate (cargo extracts it again from the .crate, offline)"
			if !crateOK {
				os.Remove(crate)
				what = "its .crate is not the one Cargo.lock names (cargo downloads it again, through a grant)"
			}
			notes = append(notes, fmt.Sprintf("rust: removed the extracted crate %s from the workspace's cargo cache: %s", c.Name(), what))
		}
	}
	if b, err := json.Marshal(now); err == nil {
		writeFileAtomic(record, b)
	}
	return notes
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}

// sameAsCrate reports whether dir holds exactly the regular files of the
// .crate (a gzipped tar whose entries are under "name-version/"), with
// the same contents, besides cargo's own .cargo-ok marker. Anything else
// in the tar or the directory (a link, a device) is a difference.
func sameAsCrate(dir, crate, top string) bool {
	f, err := os.Open(crate)
	if err != nil {
		return false
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return false
	}
	tr := tar.NewReader(gz)
	seen := map[string]bool{".cargo-ok": true}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return false
		}
		rel, ok := paths.Rel(top, filepath.ToSlash(hdr.Name))
		switch {
		case hdr.Typeflag == tar.TypeDir:
			continue
		case !ok || rel == "." || hdr.Typeflag != tar.TypeReg:
			return false
		}
		want := sha256.New()
		if _, err := io.Copy(want, tr); err != nil {
			return false
		}
		got, err := fileSHA256(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil || got != fmt.Sprintf("%x", want.Sum(nil)) {
			return false
		}
		seen[rel] = true
	}
	same := true
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			same = false
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if !d.Type().IsRegular() || !seen[filepath.ToSlash(rel)] {
			same = false
			return filepath.SkipAll
		}
		return nil
	})
	return same
}
