package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// binary is the lite-agent binary built once for the whole package,
// with lite-agent-sandbox beside it; entryVersion is their -X
// main.version.
var binary, entryVersion string

func TestMain(m *testing.M) {
	if os.Getenv(rusageHelperEnv) != "" {
		os.Exit(rusageHelper()) // memory_e2e_test.go
	}
	dir, err := os.MkdirTemp("", "lite-agent-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "lite-agent")
	// Both programs, as make install puts them: one version stamp, one
	// directory, so `sandbox run` is handed to lite-agent-sandbox
	// (sandbox_entry_e2e_test.go).
	entryVersion = fmt.Sprintf("e2e+%d", os.Getpid())
	for _, b := range [][2]string{{binary, "cmd/lite-agent"}, {filepath.Join(dir, "lite-agent-sandbox"), "cmd/lite-agent-sandbox"}} {
		build := exec.Command("go", "build", "-o", b[0], "-ldflags", "-X main.version="+entryVersion, "github.com/lite-agent/lite-agent/"+b[1])
		build.Stdout, build.Stderr = os.Stdout, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building", b[1]+":", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
