// Command cli is the first seed's "CLI example": a complete agent that
// wires custom tools end to end through the strict assembler (local.New):
// the strict preset's sandbox and rules, the policy files, checkpoints,
// custom tools checked against the preset and run confined, and a
// terminal prompt for calls that need approval.
//
//	go run ./examples/cli -workspace DIR [PROMPT]      # offline, scripted model
//	ANTHROPIC_API_KEY=... go run ./examples/cli -workspace DIR "count the words in notes.txt"
package main

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lite-agent/lite-agent/examples/internal/example"
	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/local"
	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/confined"
)

//go:embed script.json
var script []byte

type WeatherIn struct {
	City string `json:"city" jsonschema:"the city to look up"`
}

// get_weather needs nothing: no network, no files.
var weather = tools.Must(tools.New("get_weather", "Get the weather for a city",
	func(ctx *tools.Context, in WeatherIn) (string, error) {
		return "It's sunny in " + in.City + ".", nil
	},
	&tools.Options{Security: &tools.Security{Network: tools.NetworkNone}}))

type CountIn struct {
	Path string `json:"path" jsonschema:"a file in the workspace" min:"1"`
}

// word_count reads the workspace and changes nothing: its handler's
// sandbox has the workspace read-only, and ctx.Root cannot leave it.
var wordCount = tools.Must(tools.New("word_count", "Count the words of a file in the workspace",
	func(ctx *tools.Context, in CountIn) (string, error) {
		b, err := ctx.Root.ReadFile(in.Path)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s has %d words", in.Path, len(strings.Fields(string(b)))), nil
	},
	&tools.Options{
		Security:    &tools.Security{Network: tools.NetworkNone, Filesystem: tools.FilesystemWorkspace, SideEffects: tools.SideEffectsNone},
		Annotations: &tools.Annotations{ReadOnlyHint: true},
	}))

func main() {
	// First: a confined handler's child is this program; it runs the
	// handler here and exits. It runs only the tools handed over.
	confined.Serve(weather, wordCount)
	if err := run(context.Background(), os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "cli:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("cli", flag.ContinueOnError)
	workspace := fs.String("workspace", ".", "the directory the agent works in")
	preset := fs.String("preset", "strict", "strict, standard or permissive")
	if err := fs.Parse(args); err != nil {
		return err
	}
	prompt := strings.Join(fs.Args(), " ")
	if prompt == "" {
		prompt = "How many words are in notes.txt, and what's the weather in Tokyo?"
	}
	model, modelName, err := example.Model(script)
	if err != nil {
		return err
	}
	agent, err := local.New(local.Config{
		Preset: *preset,
		Agent: kernel.Agent{
			Workspace:   *workspace,
			Model:       model,
			ModelName:   modelName,
			CustomTools: []*tools.Tool{weather, wordCount},
			// Custom tools run only when something allows them; a readOnlyHint
			// is not a permission.
			AllowedTools: []string{"get_weather", "word_count"},
			Approval:     terminalApproval(stdin, out),
			MaxTurns:     20,
		},
	})
	if err != nil {
		return err
	}
	res, err := runPrinting(ctx, agent, prompt, out)
	if err != nil {
		return err
	}
	if res.Result.Subtype != kernel.SubtypeSuccess {
		return errors.New(res.Result.Subtype)
	}
	return nil
}

func runPrinting(ctx context.Context, agent *local.Agent, prompt string, out io.Writer) (kernel.Event, error) {
	var last kernel.Event
	for ev, err := range agent.Query(ctx, prompt) {
		example.Print(out, ev)
		if ev.Type == kernel.EventResult {
			last = ev
		}
		if err != nil {
			return last, err
		}
	}
	return last, nil
}

// terminalApproval asks on the terminal; nil (headless: what needs
// approval is denied, and the model is told how to pre-approve it) when
// stdin is not one.
func terminalApproval(stdin io.Reader, out io.Writer) tools.ApprovalFunc {
	f, ok := stdin.(*os.File)
	if !ok {
		return nil
	}
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	lines := bufio.NewScanner(stdin)
	return func(_ context.Context, req tools.ApprovalRequest) (bool, error) {
		fmt.Fprintf(out, "\nallow %s %s? (%s) [y/N] ", req.ToolName, req.Input, req.Reason)
		if !lines.Scan() {
			return false, nil
		}
		return strings.EqualFold(strings.TrimSpace(lines.Text()), "y"), nil
	}
}
