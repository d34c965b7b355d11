package sandbox

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBuildOffLinuxSaysLinuxOnly: lite-agent is Linux-only by decision
// (linux_only.go), so building the sandbox for another system must fail
// with the message-bearing identifier, not compile a stub that pretends.
func TestBuildOffLinuxSaysLinuxOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: would cross-build the sandbox package for darwin and check that it fails with the Linux-only message")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH: would cross-build the sandbox package for darwin and check that it fails with the Linux-only message")
	}
	cmd := exec.Command(goBin, "build", "-o", "/dev/null", ".")
	cmd.Env = append(cmd.Environ(), "GOOS=darwin", "GOARCH=arm64")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the sandbox package built for darwin; it must refuse (linux_only.go):\n%s", out)
	}
	if !strings.Contains(string(out), "lite_agent_builds_only_on_linux_with_cgo_and_libseccomp") {
		t.Fatalf("building for darwin failed without the Linux-only message:\n%s", out)
	}
}
