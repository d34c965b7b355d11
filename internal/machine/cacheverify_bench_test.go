package machine

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// syntheticModCache lays out a GOMODCACHE shaped like the one `go list
// -deps -test ./...` of this repository leaves (58 modules, ~6,600
// entries in ~850 directories): modules modules of filesPer files each,
// seven to a directory, with their downloads' .ziphash. It returns the
// module root. No go.sum names them: each is held to its .ziphash.
func syntheticModCache(tb testing.TB, root string, modules, filesPer int) string {
	tb.Helper()
	modRoot := filepath.Join(root, "mod")
	for m := range modules {
		escPath := fmt.Sprintf("github.com/owner%d/module%d", m%7, m)
		files := map[string]string{"go.mod": fmt.Sprintf("module github.com/owner%d/module%d\n", m%7, m)}
		for f := range filesPer - 1 {
			files[fmt.Sprintf("pkg%d/sub%d/file%d.go", f/21, f/7, f)] = fmt.Sprintf("package sub%d\n\n// file %d of module %d\nconst X%d = %d\n", f/7, f, m, f, f)
		}
		goModule(tb, modRoot, escPath, "v1.0.0", files)
	}
	return modRoot
}

// BenchmarkVerifyGoModulesUnchanged: the check every session with the go
// profile makes before it starts, on a cache of 60 modules of 100 files
// already verified (nothing to hash again) — what a warm `sandbox run`
// of `go build` pays for it:
//
//	go test ./internal/machine -run '^$' -bench VerifyGoModulesUnchanged -count 6
func BenchmarkVerifyGoModulesUnchanged(b *testing.B) {
	root := b.TempDir()
	modRoot := syntheticModCache(b, root, 60, 100)
	record := filepath.Join(root, goVerifiedFile)
	settleClock(b)
	if notes := verifyGoModules(modRoot, record, nil); len(notes) != 0 {
		b.Fatalf("the first check removed: %q", notes)
	}
	for b.Loop() {
		if notes := verifyGoModules(modRoot, record, nil); len(notes) != 0 {
			b.Fatalf("removed: %q", notes)
		}
	}
}

// BenchmarkVerifyGoModulesAllNew: the same cache with nothing recorded
// yet, so every module is hashed (as go.sum hashes it) — what the first
// session after a cold install pays once for the modules it extracted:
//
//	go test ./internal/machine -run '^$' -bench VerifyGoModulesAllNew -count 6
func BenchmarkVerifyGoModulesAllNew(b *testing.B) {
	root := b.TempDir()
	modRoot := syntheticModCache(b, root, 60, 100)
	record := filepath.Join(root, goVerifiedFile)
	for b.Loop() {
		os.Remove(record)
		if notes := verifyGoModules(modRoot, record, nil); len(notes) != 0 {
			b.Fatalf("removed: %q", notes)
		}
	}
}
