// Command rm_guard is the second seed's hooks.PreToolUse example: with
// allowedTools ['Bash'] every shell command is pre-approved, and a
// PreToolUse hook with matcher 'Bash' denies any command containing
// "rm -rf". Claude Code's names (Bash) are lite-agent's (bash) in rules
// and matchers; the hook sees our name and the bash tool's "command".
//
//	go run ./examples/rm_guard            # offline, scripted model
//	ANTHROPIC_API_KEY=... go run ./examples/rm_guard
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/lite-agent/lite-agent/examples/internal/example"
	"github.com/lite-agent/lite-agent/kernel"
)

//go:embed script.json
var script []byte

// main does not call confined.Serve: this program has no custom tool to
// run confined (bash and the file tools are built in, the guard is a
// hook running in this process).
func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "rm_guard:", err)
		os.Exit(1)
	}
}

// guard is the seed's hook: deny "rm -rf", allow everything else.
func guard(_ context.Context, in *kernel.HookInput) (*kernel.HookOutput, error) {
	var input struct {
		Command string `json:"command"`
	}
	if err := json.Unmarshal(in.ToolInput, &input); err != nil {
		return nil, err // a failing hook denies
	}
	if strings.Contains(input.Command, "rm -rf") {
		return &kernel.HookOutput{Decision: "deny", Reason: "rm -rf is not allowed"}, nil
	}
	return &kernel.HookOutput{Decision: "allow"}, nil
}

func run(ctx context.Context, out io.Writer) error {
	model, modelName, err := example.Model(script)
	if err != nil {
		return err
	}
	ws, err := os.MkdirTemp("", "rm_guard-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	// Something for rm -rf to destroy.
	if err := os.MkdirAll(filepath.Join(ws, "build"), 0o755); err != nil {
		return err
	}
	for ev, err := range kernel.Query(ctx, kernel.Options{
		Agent: kernel.Agent{
			Model:        model,
			ModelName:    modelName,
			Workspace:    ws,
			AllowedTools: []string{"Bash"},
			Hooks:        []kernel.Hook{{Event: kernel.HookPreToolUse, Matcher: "Bash", Name: "rm-guard", Func: guard}},
		},
		Prompt: "Run the test command.",
	}) {
		if err != nil {
			return err
		}
		example.Print(out, ev)
	}
	if _, err := os.Stat(filepath.Join(ws, "build")); err == nil {
		fmt.Fprintln(out, "build/ is still there")
	} else {
		fmt.Fprintln(out, "build/ is gone")
	}
	return nil
}
