package tools

import (
	"os/exec"
	"strings"
	"testing"
)

// TestToolsLinkNoSandbox keeps package tools to data and interfaces:
// defining or unit-testing a tool must not link the sandbox — its cgo
// spawn path, seccomp, the notification server, cgroups, the domain proxy
// — which is what enforces a policy, not what describes one (the pure
// types are in sandbox/policy). The same listing of tools/confined, which
// runs handlers in the sandbox, must show those packages, so that the
// test cannot pass by looking for the wrong names.
func TestToolsLinkNoSandbox(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH: would have checked that `go list -deps ./tools` names no package of the sandbox's implementation")
	}
	// The test runs in tools/; ./confined is the package that must link it.
	out, err := exec.Command(goTool, "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, ".", "./confined").Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	deps := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) > 0 {
			deps[f[0]] = f[1:]
		}
	}
	const mod = "github.com/lite-agent/lite-agent/"
	implementation := func(pkg string) bool {
		switch {
		case pkg == mod+"sandbox",
			strings.HasPrefix(pkg, mod+"sandbox/internal/"),
			pkg == mod+"internal/netproxy",
			pkg == "runtime/cgo":
			return true
		}
		return false
	}
	linked := func(pkg string) []string {
		var out []string
		for _, d := range deps[pkg] {
			if implementation(d) {
				out = append(out, d)
			}
		}
		return out
	}
	const toolsPkg, confinedPkg = mod + "tools", mod + "tools/confined"
	if _, ok := deps[toolsPkg]; !ok {
		t.Fatalf("go list did not list %s:\n%s", toolsPkg, out)
	}
	if got := linked(toolsPkg); len(got) > 0 {
		t.Errorf("package tools links %v: keep it to data and interfaces (the policy types are in sandbox/policy; what runs confined is tools/confined)", got)
	}
	want := []string{mod + "sandbox", mod + "sandbox/internal/spawn", mod + "sandbox/internal/seccomp", mod + "sandbox/internal/notify"}
	for _, w := range want {
		found := false
		for _, d := range linked(confinedPkg) {
			found = found || d == w
		}
		if !found {
			t.Errorf("tools/confined does not seem to link %s: the check above looks for the wrong names", w)
		}
	}
}
