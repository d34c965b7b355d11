package machine

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// goModule lays out one extracted module in a GOMODCACHE as go leaves it:
// the read-only directory, and its download's zip and .ziphash.
func goModule(t testing.TB, modRoot, escPath, version string, files map[string]string) (dir, hash string) {
	t.Helper()
	dir = filepath.Join(modRoot, filepath.FromSlash(escPath)+"@"+version)
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	path, err := unescapeModulePart(escPath)
	if err != nil {
		t.Fatal(err)
	}
	if hash, err = hashModuleDir(dir, path+"@"+version); err != nil {
		t.Fatal(err)
	}
	dl := filepath.Join(modRoot, "cache", "download", filepath.FromSlash(escPath), "@v")
	os.MkdirAll(dl, 0o755)
	writeModuleZip(t, filepath.Join(dl, version+".zip"), path+"@"+version, files)
	os.WriteFile(filepath.Join(dl, version+".ziphash"), []byte(hash+"\n"), 0o644)
	return dir, hash
}

// writeModuleZip writes a module's zip as go downloads it: its files
// under prefix/.
func writeModuleZip(t testing.TB, p, prefix string, files map[string]string) {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		f, err := w.Create(prefix + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(files[name]))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// An extracted module source edited after go checked it — in place with
// its mtime put back, or planted whole with a .ziphash to match — is
// removed before the next session, with its download, so go extracts it
// again; an untouched one stays, and is not hashed again while no file's
// stat changes.
func TestVerifyGoModulesRemovesEditedSources(t *testing.T) {
	root := t.TempDir()
	modRoot := filepath.Join(root, "mod")
	record := filepath.Join(root, goVerifiedFile)
	clean, cleanHash := goModule(t, modRoot, "example.com/clean", "v1.0.0", map[string]string{"go.mod": "module example.com/clean\n", "a.go": "package clean\n"})
	edited, editedHash := goModule(t, modRoot, "github.com/!upper/edited", "v1.2.0", map[string]string{"go.mod": "module github.com/Upper/edited\n", "x/b.go": "package x\n"})
	noSum, _ := goModule(t, modRoot, "example.com/nosum", "v0.1.0", map[string]string{"c.go": "package nosum\n"})
	planted, _ := goModule(t, modRoot, "example.com/planted", "v1.0.0", map[string]string{"d.go": "package planted // BACKDOOR\n"})
	partial, _ := goModule(t, modRoot, "example.com/partial", "v1.0.0", map[string]string{"e.go": "package partial // half extracted\n"})
	os.WriteFile(partial+".partial", nil, 0o644)
	sums := map[string]string{
		"example.com/clean@v1.0.0":         cleanHash,
		"github.com/Upper/edited@v1.2.0":   editedHash,
		"example.com/planted@v1.0.0":       "h1:the-hash-go.sum-has-for-the-real-module=",
		"example.com/partial@v1.0.0":       "h1:not-checked-while-go-extracts-it=",
		"example.com/not-extracted@v1.0.0": "h1:x=",
	}
	// The planted module's zip and directory go; so does the zip of the
	// module being extracted, whose go.sum line it does not match (its
	// directory, which go extracts again, is left alone).
	if notes := verifyGoModules(modRoot, record, sums); len(notes) != 3 ||
		!strings.Contains(notes[0], "downloaded module example.com/partial@v1.0.0") ||
		!strings.Contains(notes[1], "downloaded module example.com/planted@v1.0.0") ||
		!strings.Contains(notes[2], "extracted module example.com/planted@v1.0.0") {
		t.Fatalf("first check: %q", notes)
	}
	if _, err := os.Stat(planted); err == nil {
		t.Fatalf("the planted module (its own .ziphash matched, go.sum did not) is still there")
	}
	if _, err := os.Stat(filepath.Join(modRoot, "cache/download/example.com/planted/@v/v1.0.0.ziphash")); err == nil {
		t.Errorf("the planted module's .ziphash is still there: go would trust the next extraction of its zip")
	}
	for _, d := range []string{clean, edited, noSum, partial} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
	// The agent's edit: write permission back, a line added, the mtime
	// restored (the ctime cannot be).
	f := filepath.Join(edited, "x/b.go")
	fi, _ := os.Stat(f)
	os.Chmod(f, 0o644)
	os.WriteFile(f, []byte("package x\nfunc init() { panic(\"BACKDOOR\") }\n"), 0o644)
	os.Chmod(f, 0o444)
	os.Chtimes(f, fi.ModTime(), fi.ModTime())
	notes := verifyGoModules(modRoot, record, sums)
	if len(notes) != 1 || !strings.Contains(notes[0], "github.com/!upper/edited@v1.2.0") {
		t.Fatalf("after the edit: %q", notes)
	}
	if _, err := os.Stat(edited); err == nil {
		t.Errorf("the edited module is still there")
	}
	// Untouched and recorded: not hashed again. (A changed go.sum line
	// is not looked at while the directory's stat is unchanged: the
	// directory was proven equal to what go checked.)
	if notes := verifyGoModules(modRoot, record, map[string]string{}); len(notes) != 0 {
		t.Errorf("a third check with nothing changed removed: %q", notes)
	}
	// A module with no go.sum line is held to the hash go recorded when
	// it extracted it.
	os.Chmod(filepath.Join(noSum, "c.go"), 0o644)
	os.WriteFile(filepath.Join(noSum, "c.go"), []byte("package nosum // edited\n"), 0o644)
	if notes := verifyGoModules(modRoot, record, sums); len(notes) != 1 || !strings.Contains(notes[0], "example.com/nosum@v0.1.0") {
		t.Errorf("an edited module without a go.sum line: %q", notes)
	}
	if _, err := os.Stat(clean); err != nil {
		t.Errorf("the clean module went: %v", err)
	}
}

// crateFiles writes a .crate (a gzipped tar under name-version/) and
// its extraction, as cargo leaves them, and returns the .crate's sha256.
func crateFiles(t *testing.T, cargoHome, nameVersion string, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	src := filepath.Join(cargoHome, "registry/src/reg-1", nameVersion)
	for name, body := range files {
		tw.WriteHeader(&tar.Header{Name: nameVersion + "/" + name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(body))
		os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o755)
		os.WriteFile(filepath.Join(src, name), []byte(body), 0o644)
	}
	tw.Close()
	gz.Close()
	os.WriteFile(filepath.Join(src, ".cargo-ok"), []byte(`{"v":1}`), 0o644)
	os.MkdirAll(filepath.Join(cargoHome, "registry/cache/reg-1"), 0o755)
	os.WriteFile(filepath.Join(cargoHome, "registry/cache/reg-1", nameVersion+".crate"), buf.Bytes(), 0o644)
	return fmt.Sprintf("%x", sha256.Sum256(buf.Bytes()))
}

// An extracted crate that differs from its .crate is removed (the .crate
// stays: cargo extracts it again offline); a .crate that is not the one
// Cargo.lock names goes with it; an untouched one stays.
func TestVerifyCratesRemovesEditedSources(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "cargo")
	record := filepath.Join(root, rustVerifiedFile)
	files := map[string]string{"Cargo.toml": "[package]\nname = \"a\"\n", "src/lib.rs": "pub fn f() -> u32 { 42 }\n"}
	sums := map[string]string{"clean-1.0.0": crateFiles(t, home, "clean-1.0.0", files), "edited-1.0.0": crateFiles(t, home, "edited-1.0.0", files)}
	crateFiles(t, home, "swapped-1.0.0", map[string]string{"Cargo.toml": "[package]\nname = \"a\"\n", "src/lib.rs": "pub fn f() -> u32 { 666 }\n"})
	sums["swapped-1.0.0"] = sums["clean-1.0.0"] // the lockfile's checksum is another .crate's
	os.WriteFile(filepath.Join(home, "registry/src/reg-1/edited-1.0.0/src/lib.rs"), []byte("pub fn f() -> u32 { 666 }\n"), 0o644)
	notes := verifyCrates(home, record, sums)
	if len(notes) != 2 {
		t.Fatalf("notes: %q", notes)
	}
	exists := func(p string) bool { _, err := os.Stat(filepath.Join(home, p)); return err == nil }
	for p, want := range map[string]bool{
		"registry/src/reg-1/clean-1.0.0": true, "registry/cache/reg-1/clean-1.0.0.crate": true,
		"registry/src/reg-1/edited-1.0.0": false, "registry/cache/reg-1/edited-1.0.0.crate": true,
		"registry/src/reg-1/swapped-1.0.0": false, "registry/cache/reg-1/swapped-1.0.0.crate": false,
	} {
		if exists(p) != want {
			t.Errorf("%s exists = %v, want %v", p, !want, want)
		}
	}
	if notes := verifyCrates(home, record, sums); len(notes) != 0 {
		t.Errorf("a second check with nothing changed: %q", notes)
	}
}

// TestHashModuleDirIsDirhash: hashModuleDir gives what
// golang.org/x/mod/sumdb/dirhash.HashDir(dir, prefix, Hash1) gives (the
// want below was computed by it), with names that sort differently
// around "/" ("a-b/", "a.b/", "a/").
func TestHashModuleDirIsDirhash(t *testing.T) {
	d := t.TempDir()
	for p, c := range map[string]string{"a.go": "x\n", "a-b/c.go": "y\n", "a/b.go": "z\n", "a.b/d.go": "w\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(d, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const want = "h1:8aRw++L94+gl9esaBf9vkpMQWc/G4gXFwDaSg6msdqc="
	if got, err := hashModuleDir(d, "example.com/m@v1.0.0"); err != nil || got != want {
		t.Fatalf("hashModuleDir = %q, %v; want %q", got, err, want)
	}
}

// statDigestByWalkDir is the stat digest written the plain way
// (filepath.WalkDir, Lstat by path, fmt): the digests already recorded
// in goVerifiedFile and rustVerifiedFile were computed so.
func statDigestByWalkDir(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%q %o %d %d.%d %d.%d %d %d\n", rel, st.Mode, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec, st.Ino, st.Dev)
		return nil
	})
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(h.Sum(nil)), nil
}

// TestStatDigestIsWalkDirs: statDigest's descriptor-relative walk gives,
// byte for byte, the digest of a WalkDir with Lstat and fmt — over names
// that sort differently around "/", need quoting (a quote, a newline,
// bytes that are not UTF-8), a symlink, a fifo, an empty directory, a
// read-only one, and a root that is a file — so the records kept from
// before stay valid (no module is hashed again for it).
func TestStatDigestIsWalkDirs(t *testing.T) {
	d := t.TempDir()
	for p, c := range map[string]string{"a.go": "x\n", "a-b/c.go": "y\n", "a/b.go": "z\n", "a.b/d.go": "w\n",
		"q\"uote/n\nl": "n", "bad\xff\xfe/é.go": "u", "deep/er/still/f": "f", "ro/f": "r"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(d, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(d, "empty"), 0o755)
	os.Symlink("a", filepath.Join(d, "link-to-dir"))
	syscall.Mkfifo(filepath.Join(d, "fifo"), 0o644)
	os.Chmod(filepath.Join(d, "ro"), 0o555)
	t.Cleanup(func() { os.Chmod(filepath.Join(d, "ro"), 0o755) })
	for _, root := range []string{d, filepath.Join(d, "a.go"), filepath.Join(d, "empty")} {
		want, err := statDigestByWalkDir(root)
		if err != nil {
			t.Fatal(err)
		}
		if got, _, err := statDigest(root); err != nil || got != want {
			t.Errorf("statDigest(%s) = %q, %v; WalkDir's is %q", root, got, err, want)
		}
	}
}

// Every way a sandboxed process can change a verified module's files is
// seen by the next check, in whichever module (and so whichever of the
// parallel workers) it is made: an edit that keeps the size and puts the
// mtime back, a chmod and back, a rename over a file, a new file (at the
// top or deep), a directory swapped for a link, and a hard link taken out
// and written through later. The ones that change no content are hashed
// again and kept (their new stat is recorded); the others are removed.
// The edit and the chmod leave every directory's stat as it was: a check
// of directories alone would miss them, which is why every file is
// stat'ed.
func TestVerifyGoModulesInParallelCatchesEveryChange(t *testing.T) {
	root := t.TempDir()
	modRoot := filepath.Join(root, "mod")
	record := filepath.Join(root, goVerifiedFile)
	const modules = 16
	dirs := make([]string, modules)
	for i := range dirs {
		dirs[i], _ = goModule(t, modRoot, fmt.Sprintf("example.com/m%02d", i), "v1.0.0", map[string]string{
			"go.mod": fmt.Sprintf("module example.com/m%02d\n", i), "a.go": "package m // original\n", "sub/deep/b.go": "package deep\n"})
	}
	settleClock(t)
	if notes := verifyGoModules(modRoot, record, nil); len(notes) != 0 {
		t.Fatalf("first check: %q", notes)
	}
	stats := func() map[string]verifiedModule {
		var m map[string]verifiedModule
		b, _ := os.ReadFile(record)
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := stats()
	dirStats := func(dir string) string {
		var s strings.Builder
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if d != nil && d.IsDir() {
				var st syscall.Stat_t
				syscall.Lstat(p, &st)
				fmt.Fprintf(&s, "%s %v %v %v\n", p, st.Mtim, st.Ctim, st.Mode)
			}
			return nil
		})
		return s.String()
	}
	writeKeepingMtime := func(p, body string) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, 0o644)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, fi.Mode())
		os.Chtimes(p, fi.ModTime(), fi.ModTime())
	}
	outside := filepath.Join(root, "outside.go")
	changes := []struct {
		name    string
		module  int
		removed bool
		change  func(dir string)
		blind   bool // no directory's stat moves
	}{
		{"edit, same size, mtime put back", 1, true, func(d string) { writeKeepingMtime(filepath.Join(d, "a.go"), "package m // BACKDOOR\n") }, true},
		{"chmod and back", 4, false, func(d string) {
			os.Chmod(filepath.Join(d, "sub/deep/b.go"), 0o666)
			os.Chmod(filepath.Join(d, "sub/deep/b.go"), 0o444)
		}, true},
		{"rename over a file", 6, true, func(d string) {
			os.Chmod(d, 0o755)
			os.WriteFile(filepath.Join(d, ".x"), []byte("package m // BACKDOOR\n"), 0o444)
			if err := os.Rename(filepath.Join(d, ".x"), filepath.Join(d, "a.go")); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"new file", 9, true, func(d string) { os.WriteFile(filepath.Join(d, "init.go"), []byte("package m\n"), 0o444) }, false},
		{"new file deep", 11, true, func(d string) { os.WriteFile(filepath.Join(d, "sub/deep/init.go"), []byte("package deep\n"), 0o444) }, false},
		{"directory swapped for a link", 13, true, func(d string) {
			os.Rename(filepath.Join(d, "sub"), filepath.Join(root, "sub13"))
			os.Symlink(filepath.Join(root, "sub13"), filepath.Join(d, "sub"))
		}, false},
		{"hard link taken out", 15, false, func(d string) {
			if err := os.Link(filepath.Join(d, "a.go"), outside); err != nil {
				t.Fatal(err)
			}
		}, true},
	}
	changed := map[int]bool{}
	for _, c := range changes {
		was := dirStats(dirs[c.module])
		c.change(dirs[c.module])
		changed[c.module] = true
		if c.blind && dirStats(dirs[c.module]) != was {
			t.Errorf("%s: a directory's stat moved; this case is meant to show one that leaves them all", c.name)
		}
	}
	notes := verifyGoModules(modRoot, record, nil)
	after := stats()
	for _, c := range changes {
		removed := slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, fmt.Sprintf("example.com/m%02d@", c.module)) })
		if removed != c.removed {
			t.Errorf("%s: removed = %v, want %v (notes %q)", c.name, removed, c.removed, notes)
		}
		if _, err := os.Lstat(dirs[c.module]); (err == nil) == c.removed {
			t.Errorf("%s: the module directory exists = %v", c.name, err == nil)
		}
		if !c.removed && after[dirs[c.module]].Stat == before[dirs[c.module]].Stat {
			t.Errorf("%s: kept without being hashed again (its stat digest did not move)", c.name)
		}
	}
	if len(notes) != 5 {
		t.Errorf("notes: %q", notes)
	}
	for i, d := range dirs {
		if changed[i] {
			continue
		}
		if after[d] != before[d] {
			t.Errorf("untouched module %d: record %v, was %v", i, after[d], before[d])
		}
	}
	// Written through the link taken out last session, after it was
	// verified: the file in the module is the same inode, its ctime moves.
	writeKeepingMtime(outside, "package m // BACKDOOR\n")
	if notes := verifyGoModules(modRoot, record, nil); len(notes) != 1 || !strings.Contains(notes[0], "example.com/m15@v1.0.0") {
		t.Errorf("after writing through the hard link: %q", notes)
	}
}

// A directory is listed only if it is the one stat'ed: one swapped for a
// link or for another directory between its stat and its open is an
// error (the module is then removed), never a listing of the other.
func TestStatDigestRefusesASwappedDirectory(t *testing.T) {
	d := t.TempDir()
	for _, p := range []string{"dir", "other"} {
		os.Mkdir(filepath.Join(d, p), 0o755)
	}
	os.Symlink("dir", filepath.Join(d, "link"))
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(d, "dir"), &st); err != nil {
		t.Fatal(err)
	}
	var s statDigester
	for _, name := range []string{"dir", "link", "other"} {
		fd, err := s.openDir(unix.AT_FDCWD, filepath.Join(d, name), &st)
		if err == nil {
			unix.Close(fd)
		}
		if (err == nil) != (name == "dir") {
			t.Errorf("opening %s as dir's stat: %v", name, err)
		}
	}
}

// inParallel calls each index once, whatever the number of workers.
func TestInParallelCallsEachIndexOnce(t *testing.T) {
	for _, workers := range []int{1, 2, 3, 8} {
		for _, n := range []int{0, 1, 5, 100} {
			var calls = make([]atomic.Int32, n)
			inParallel(n, workers, func(i int) { calls[i].Add(1) })
			for i := range calls {
				if c := calls[i].Load(); c != 1 {
					t.Errorf("workers %d, n %d: index %d called %d times", workers, n, i, c)
				}
			}
		}
	}
}

// A digest taken in the clock tick of its newest change is not trusted
// at the next check: the module is hashed again then, and only a digest
// whose ctimes have settled is recorded as verified. (Before multigrain
// timestamps, Linux 6.13, a change made right after the digest in that
// same tick would keep the very ctime the digest holds; a kernel with
// them, as where these tests usually run, gives it a finer one, so the
// race itself cannot be staged here: the clock is pinned instead.)
func TestVerifyGoModulesDoesNotTrustARacyDigest(t *testing.T) {
	root := t.TempDir()
	modRoot := filepath.Join(root, "mod")
	record := filepath.Join(root, goVerifiedFile)
	dir, hash := goModule(t, modRoot, "example.com/racy", "v1.0.0", map[string]string{"go.mod": "module example.com/racy\n", "a.go": "package racy\n"})
	_, newest, err := statDigest(dir)
	if err != nil {
		t.Fatal(err)
	}
	settleClock(t) // restored at the end; pinned below
	recorded := func() verifiedModule {
		var m map[string]verifiedModule
		b, _ := os.ReadFile(record)
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m[dir]
	}
	coarseNow = func() unix.Timespec { return newest } // the digest is taken in the tick of the last change
	if notes := verifyGoModules(modRoot, record, nil); len(notes) != 0 {
		t.Fatalf("first check: %q", notes)
	}
	if r := recorded(); r.Stat != "" || r.Hash != hash {
		t.Fatalf("a digest taken in the tick of its newest change was recorded as verified: %+v", r)
	}
	coarseNow = func() unix.Timespec { return unix.Timespec{Sec: newest.Sec + 1, Nsec: newest.Nsec} }
	if notes := verifyGoModules(modRoot, record, nil); len(notes) != 0 {
		t.Fatalf("second check: %q", notes)
	}
	settledDigest := recorded().Stat
	if settledDigest == "" {
		t.Fatalf("a digest a second after the newest change was not recorded")
	}
	if notes := verifyGoModules(modRoot, record, nil); len(notes) != 0 || recorded().Stat != settledDigest {
		t.Errorf("third check, nothing changed: %q, %+v", notes, recorded())
	}
}

// settled: a ctime must be older than the coarse clock read before the
// digest by the file system's granularity (a ctime with no fraction of
// a second may be one truncated to seconds).
func TestSettledRule(t *testing.T) {
	ts := func(sec, nsec int64) unix.Timespec { return unix.Timespec{Sec: sec, Nsec: nsec} }
	for _, c := range []struct {
		newest, before unix.Timespec
		want           bool
	}{
		{ts(100, 5e6), ts(100, 5e6), false},  // the same tick
		{ts(100, 5e6), ts(100, 1e6), false},  // a ctime ahead of the coarse clock (a fine-grained one)
		{ts(100, 5e6), ts(100, 14e6), false}, // within the margin
		{ts(100, 5e6), ts(100, 16e6), true},
		{ts(100, 0), ts(101, 5e8), false}, // seconds only: this second's later changes get it too
		{ts(100, 0), ts(102, 1), true},
	} {
		if got := settled(c.newest, c.before); got != c.want {
			t.Errorf("settled(%v, %v) = %v, want %v", c.newest, c.before, got, c.want)
		}
	}
}

// settleClock makes every ctime of the test's files settled (a coarse
// clock 5 s ahead) for the test's checks, as it is for files extracted
// in an earlier session.
func settleClock(tb testing.TB) {
	was := coarseNow
	tb.Cleanup(func() { coarseNow = was })
	coarseNow = func() unix.Timespec {
		ts := kernelCoarseNow()
		ts.Sec += 5
		return ts
	}
}

// kernelCoarseNow is coarseNow as the package sets it.
var kernelCoarseNow = coarseNow

// The same for extracted crates: one checked in the tick of its newest
// change (here: a coarse clock behind every ctime) is checked again.
func TestVerifyCratesDoesNotTrustARacyDigest(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "cargo")
	record := filepath.Join(root, rustVerifiedFile)
	sums := map[string]string{"racy-1.0.0": crateFiles(t, home, "racy-1.0.0", map[string]string{"Cargo.toml": "[package]\nname = \"racy\"\n"})}
	dir := filepath.Join(home, "registry/src/reg-1/racy-1.0.0")
	recorded := func() string {
		var m map[string]verifiedModule
		b, _ := os.ReadFile(record)
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m[dir].Stat
	}
	settleClock(t)
	coarseNow = func() unix.Timespec { return unix.Timespec{} }
	if notes := verifyCrates(home, record, sums); len(notes) != 0 || recorded() != "" {
		t.Fatalf("checked in the tick of its newest change: %q, recorded %q", notes, recorded())
	}
	settleClock(t)
	if notes := verifyCrates(home, record, sums); len(notes) != 0 || recorded() == "" {
		t.Fatalf("settled: %q, recorded %q", notes, recorded())
	}
}

// A downloaded zip is what go extracts, without hashing it again, when
// its .ziphash is there (go compares the .ziphash with go.sum, never the
// zip): one edited in the workspace's cache, with or without a .ziphash
// made to match, is removed with its .ziphash before the next session,
// and go downloads it again, checked. An untouched zip stays, and so does
// a zip without a .ziphash (go hashes that one itself).
func TestVerifyGoModulesChecksDownloadedZips(t *testing.T) {
	root := t.TempDir()
	modRoot := filepath.Join(root, "mod")
	record := filepath.Join(root, goVerifiedFile)
	files := map[string]string{"go.mod": "module example.com/m\n", "m.go": "package m\n"}
	dir, hash := goModule(t, modRoot, "example.com/m", "v1.0.0", files)
	_, hash2 := goModule(t, modRoot, "example.com/forged", "v1.0.0", files)
	_, hash3 := goModule(t, modRoot, "example.com/clean", "v1.0.0", files)
	dl := func(mod string) string { return filepath.Join(modRoot, "cache/download", mod, "@v/v1.0.0") }
	edited := map[string]string{"go.mod": "module example.com/m\n", "m.go": "package m // BACKDOOR\n"}
	// Only the zip edited: the .ziphash still says what go.sum says.
	writeModuleZip(t, dl("example.com/m")+".zip", "example.com/m@v1.0.0", edited)
	// The zip edited and a .ziphash forged to match it.
	writeModuleZip(t, dl("example.com/forged")+".zip", "example.com/forged@v1.0.0", edited)
	forgedHash, err := hashModuleZip(dl("example.com/forged") + ".zip")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(dl("example.com/forged")+".ziphash", []byte(forgedHash+"\n"), 0o644)
	// A zip go has not hashed yet (no .ziphash).
	os.MkdirAll(filepath.Dir(dl("example.com/fresh")), 0o755)
	writeModuleZip(t, dl("example.com/fresh")+".zip", "example.com/fresh@v1.0.0", edited)
	sums := map[string]string{"example.com/m@v1.0.0": hash, "example.com/forged@v1.0.0": hash2, "example.com/clean@v1.0.0": hash3}

	notes := verifyGoModules(modRoot, record, sums)
	if len(notes) != 2 || !strings.Contains(notes[0], "downloaded module example.com/forged@v1.0.0") || !strings.Contains(notes[1], "downloaded module example.com/m@v1.0.0") {
		t.Fatalf("notes %q", notes)
	}
	for _, p := range []string{dl("example.com/m") + ".zip", dl("example.com/m") + ".ziphash", dl("example.com/forged") + ".zip", dl("example.com/forged") + ".ziphash"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is still there: go would extract the edited zip", p)
		}
	}
	for _, p := range []string{dl("example.com/clean") + ".zip", dl("example.com/clean") + ".ziphash", dl("example.com/fresh") + ".zip", dir} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	// Nothing changed since: nothing removed.
	if notes := verifyGoModules(modRoot, record, sums); len(notes) != 0 {
		t.Errorf("a second check with nothing changed: %q", notes)
	}
}

// A link where go looks for a module's files — the module's directory,
// a directory on its path, the downloads or one of them — leads go to
// files no check saw (both directories and zips are checked where they
// lie): it is removed, and said.
func TestVerifyGoModulesRemovesLinks(t *testing.T) {
	root := t.TempDir()
	modRoot := filepath.Join(root, "mod")
	record := filepath.Join(root, goVerifiedFile)
	files := map[string]string{"go.mod": "module example.com/a/m\n", "m.go": "package m\n"}
	_, hashA := goModule(t, modRoot, "example.com/a/m", "v1.0.0", files)
	_, hashB := goModule(t, modRoot, "example.org/b", "v1.0.0", map[string]string{"b.go": "package b\n"})
	elsewhere := filepath.Join(root, "elsewhere")
	os.MkdirAll(elsewhere, 0o755)
	// The module's directory swapped for a link to an edited copy.
	modDir := filepath.Join(modRoot, "example.com/a/m@v1.0.0")
	removeCacheDir(modDir)
	if err := os.Symlink(elsewhere, modDir); err != nil {
		t.Fatal(err)
	}
	// A directory on another module's path swapped for a link.
	pathDir := filepath.Join(modRoot, "example.org")
	os.Rename(pathDir, filepath.Join(root, "moved-aside"))
	if err := os.Symlink(filepath.Join(root, "moved-aside"), pathDir); err != nil {
		t.Fatal(err)
	}
	// A download swapped for a link.
	zipA := filepath.Join(modRoot, "cache/download/example.com/a/m/@v/v1.0.0.zip")
	os.Remove(zipA)
	if err := os.Symlink(filepath.Join(elsewhere, "x.zip"), zipA); err != nil {
		t.Fatal(err)
	}
	notes := verifyGoModules(modRoot, record, map[string]string{"example.com/a/m@v1.0.0": hashA, "example.org/b@v1.0.0": hashB})
	joined := strings.Join(notes, "\n")
	for _, want := range []string{"removed cache/download/example.com/a/m/@v/v1.0.0.zip", "removed example.com/a/m@v1.0.0", "removed example.org"} {
		if !strings.Contains(joined, want+" from the workspace's module cache: a link") {
			t.Errorf("no note %q in %q", want, notes)
		}
	}
	for _, p := range []string{modDir, pathDir, zipA} {
		if fi, err := os.Lstat(p); err == nil {
			t.Errorf("%s is still there (%v)", p, fi.Mode())
		}
	}
}

// hashModuleZip of a module's zip is hashModuleDir of its extraction:
// dirhash's HashZip and HashDir agree.
func TestHashModuleZipIsDirhash(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.zip")
	writeModuleZip(t, p, "example.com/m@v1.0.0", map[string]string{"a.go": "x\n", "a-b/c.go": "y\n", "a/b.go": "z\n", "a.b/d.go": "w\n"})
	const want = "h1:8aRw++L94+gl9esaBf9vkpMQWc/G4gXFwDaSg6msdqc=" // TestHashModuleDirIsDirhash's
	if got, err := hashModuleZip(p); err != nil || got != want {
		t.Fatalf("hashModuleZip = %q, %v; want %q", got, err, want)
	}
}

// A downloaded .crate not extracted yet is what cargo extracts without
// checking it again: one that is not the file Cargo.lock's checksum
// names is removed before the session (one that is stays, and so does one
// Cargo.lock does not name); a link where cargo looks for crates — an
// extracted crate's directory, a .crate, a registry's directory — is
// removed.
func TestVerifyCratesChecksDownloadsAndRemovesLinks(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "cargo")
	record := filepath.Join(root, rustVerifiedFile)
	files := map[string]string{"Cargo.toml": "[package]\nname = \"a\"\n", "src/lib.rs": "pub fn f() -> u32 { 42 }\n"}
	evil := map[string]string{"Cargo.toml": "[package]\nname = \"a\"\n", "src/lib.rs": "pub fn f() -> u32 { 666 }\n"}
	sums := map[string]string{}
	for _, nv := range []string{"good-1.0.0", "bad-1.0.0", "linked-1.0.0"} {
		sums[nv] = crateFiles(t, home, nv, files)
	}
	crateFiles(t, home, "unnamed-1.0.0", evil) // no Cargo.lock line
	// bad: its .crate replaced by another, then its extraction removed,
	// so that cargo would extract the replaced one.
	crateFiles(t, home, "bad-1.0.0", evil)
	for _, nv := range []string{"good-1.0.0", "bad-1.0.0", "unnamed-1.0.0"} {
		removeCacheDir(filepath.Join(home, "registry/src/reg-1", nv))
	}
	// linked: its extraction swapped for a link to an edited copy.
	elsewhere := filepath.Join(root, "elsewhere")
	os.MkdirAll(elsewhere, 0o755)
	linked := filepath.Join(home, "registry/src/reg-1/linked-1.0.0")
	removeCacheDir(linked)
	if err := os.Symlink(elsewhere, linked); err != nil {
		t.Fatal(err)
	}
	crateLink := filepath.Join(home, "registry/cache/reg-1/viaLink-1.0.0.crate")
	if err := os.Symlink(filepath.Join(elsewhere, "x.crate"), crateLink); err != nil {
		t.Fatal(err)
	}
	notes := verifyCrates(home, record, sums)
	joined := strings.Join(notes, "\n")
	for _, want := range []string{
		"removed registry/cache/reg-1/bad-1.0.0.crate from the workspace's cargo cache: it is not the .crate Cargo.lock names",
		"removed registry/cache/reg-1/viaLink-1.0.0.crate from the workspace's cargo cache: a link",
		"removed registry/src/reg-1/linked-1.0.0 from the workspace's cargo cache: a link",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("no note %q in %q", want, notes)
		}
	}
	if len(notes) != 3 {
		t.Errorf("%d notes, want 3: %q", len(notes), notes)
	}
	exists := func(p string) bool { _, err := os.Lstat(filepath.Join(home, p)); return err == nil }
	for p, want := range map[string]bool{
		"registry/cache/reg-1/good-1.0.0.crate": true, "registry/cache/reg-1/unnamed-1.0.0.crate": true,
		"registry/cache/reg-1/bad-1.0.0.crate": false, "registry/cache/reg-1/viaLink-1.0.0.crate": false,
		"registry/src/reg-1/linked-1.0.0": false,
	} {
		if exists(p) != want {
			t.Errorf("%s exists = %v, want %v", p, !want, want)
		}
	}
	if notes := verifyCrates(home, record, sums); len(notes) != 0 {
		t.Errorf("a second check with nothing changed: %q", notes)
	}
}
