package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// binary is the lite-agent binary built once for the whole package.
var binary string

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
	build := exec.Command("go", "build", "-o", binary, "github.com/lite-agent/lite-agent/cmd/lite-agent")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building lite-agent:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
