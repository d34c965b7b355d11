package machine

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	os.WriteFile(filepath.Join(dl, version+".zip"), []byte("zip"), 0o644)
	os.WriteFile(filepath.Join(dl, version+".ziphash"), []byte(hash+"\n"), 0o644)
	return dir, hash
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
	if notes := verifyGoModules(modRoot, record, sums); len(notes) != 1 || !strings.Contains(notes[0], "example.com/planted@v1.0.0") {
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
