package kernel

import (
	"os/exec"
	"strings"
	"testing"
)

// TestKernelLinksNoMCPClient keeps the kernel from linking the MCP go-sdk
// (its client, its HTTP and SSE transports): MCP servers are a toolset
// the kernel is handed (tools.Toolset, built by package mcp), never a
// package it imports. The same listing of package mcp must show the
// go-sdk, so that the test cannot pass by looking for the wrong name.
func TestKernelLinksNoMCPClient(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH: would have checked that `go list -deps ./kernel` names no github.com/modelcontextprotocol package")
	}
	// The test runs in kernel/; ../mcp is the package that may link it.
	out, err := exec.Command(goTool, "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, ".", "../mcp").Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	const sdk = "github.com/modelcontextprotocol/"
	deps := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) > 0 {
			deps[f[0]] = f[1:]
		}
	}
	linked := func(pkg string) []string {
		var out []string
		for _, d := range deps[pkg] {
			if strings.HasPrefix(d, sdk) {
				out = append(out, d)
			}
		}
		return out
	}
	const kernelPkg, mcpPkg = "github.com/lite-agent/lite-agent/kernel", "github.com/lite-agent/lite-agent/mcp"
	if _, ok := deps[kernelPkg]; !ok {
		t.Fatalf("go list did not list %s:\n%s", kernelPkg, out)
	}
	if got := linked(kernelPkg); len(got) > 0 {
		t.Errorf("the kernel links %v: hand MCP to it as a tools.Toolset instead of importing a package that needs the go-sdk", got)
	}
	if len(linked(mcpPkg)) == 0 {
		t.Errorf("package mcp does not seem to link %s* either: the check above looks for the wrong name", sdk)
	}
}
