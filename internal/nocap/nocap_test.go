package nocap

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestDoDropsRootsOverride: a 0600 file of another user is readable by
// root (CAP_DAC_OVERRIDE) and not from inside Do, which is what a confined
// command — all capabilities dropped — sees.
func TestDoDropsRootsOverride(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: checks that Do removes root's CAP_DAC_OVERRIDE when reading another user's 0600 file")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "other")
	if err := os.WriteFile(p, []byte("not yours"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	// The attack works with the process's capabilities.
	if _, err := os.ReadFile(p); err != nil {
		t.Fatalf("root cannot read the file at all, so the test proves nothing: %v", err)
	}
	err := Do(func() error {
		_, err := os.ReadFile(p)
		return err
	})
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("read inside Do = %v, want permission denied", err)
	}
	// Writing a file whose mode forbids it, and chmod of a file one does
	// not own (CAP_FOWNER), are refused too.
	ro := filepath.Join(dir, "ro")
	if err := os.WriteFile(ro, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := Do(func() error { return os.WriteFile(ro, []byte("x"), 0o444) }); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("write of a 0444 file inside Do = %v, want permission denied", err)
	}
	if err := Do(func() error { return os.Chmod(p, 0o666) }); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("chmod of another user's file inside Do = %v, want permission denied", err)
	}
	// The thread's capabilities are back afterwards, and the process can
	// still read the file.
	if _, err := os.ReadFile(p); err != nil {
		t.Fatalf("after Do the process lost its capabilities: %v", err)
	}
}

func TestDoEffectiveSetInsideAndAfter(t *testing.T) {
	before, err := Effective()
	if err != nil {
		t.Fatal(err)
	}
	var inside bool
	if err := Do(func() error {
		var err error
		inside, err = Effective()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if inside {
		t.Error("the thread had effective capabilities inside Do")
	}
	if os.Geteuid() == 0 && !before {
		t.Skip("root without effective capabilities: nothing to restore")
	}
	want := errors.New("handler error")
	if err := Do(func() error { return want }); err != want {
		t.Errorf("Do returned %v, want the function's own error", err)
	}
}
