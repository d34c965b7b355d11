package kernel_test

import (
	"context"
	"fmt"
	"os"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/provider/scripted"
	"github.com/lite-agent/lite-agent/tools"
)

type WeatherIn struct {
	City string `json:"city"`
}

// Custom tools are defined at package level: each handler runs confined in
// a re-execution of the program, which finds it by name among the tools
// the program's main (here the test binary's TestMain) hands to
// confined.Serve first.
var weather = tools.Must(tools.New("get_weather", "Get the weather for a city",
	func(ctx *tools.Context, in WeatherIn) (string, error) { return "sunny in " + in.City, nil },
	&tools.Options{Security: &tools.Security{Network: tools.NetworkNone}}))

// In a program: func main() { confined.Serve(weather); ... }.
// Here TestMain does it, with this package's other test tools.
func init() { kernel.ExternalConfinedTools = append(kernel.ExternalConfinedTools, weather) }

// Query streams a session: here a scripted model (offline, deterministic)
// calls a custom tool, then answers. With a real model, use
// provider/anthropic instead.
func ExampleQuery() {
	model, _ := scripted.Parse([]byte(`{"turns": [
	  {"tool_calls": [{"id": "t1", "name": "get_weather", "input": {"city": "Tokyo"}}]},
	  {"text": "It is sunny in Tokyo."}]}`))
	workspace, _ := os.MkdirTemp("", "ws")
	state, _ := os.MkdirTemp("", "state")
	defer os.RemoveAll(workspace)
	defer os.RemoveAll(state)

	for ev, err := range kernel.Query(context.Background(), kernel.Options{
		Agent: kernel.Agent{
			Model:        model,
			Workspace:    workspace,
			StateDir:     state,
			CustomTools:  []*tools.Tool{weather},
			Tools:        []string{"get_weather"},
			AllowedTools: []string{"get_weather"},
		},
		Prompt: "What's the weather in Tokyo?",
	}) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		switch ev.Type {
		case kernel.EventToolCall:
			fmt.Printf("call %s %s\n", ev.ToolCall.Name, ev.ToolCall.Input)
		case kernel.EventToolResult:
			fmt.Printf("result %s: %s\n", ev.ToolResult.ID, ev.ToolResult.Content[0].Text)
		case kernel.EventResult:
			fmt.Printf("%s after %d turns: %s\n", ev.Result.Subtype, ev.Result.NumTurns, ev.Result.Result)
		}
	}
	// Output:
	// call get_weather {"city": "Tokyo"}
	// result t1: sunny in Tokyo
	// success after 2 turns: It is sunny in Tokyo.
}

// A subagent runs its own loop — its own prompt, conversation and tools —
// and its final text is the agent call's result. Its events come in the
// same stream, tagged with the agent. (The scripted model replays the
// subagent's own script, chosen by its name.)
func ExampleQuery_subagents() {
	model, _ := scripted.Parse([]byte(`{
	  "turns": [
	    {"tool_calls": [{"id": "a1", "name": "agent", "input": {"agent": "counter", "prompt": "How many files are there?"}}]},
	    {"text": "The counter found none."}],
	  "agents": {"counter": {"turns": [
	    {"tool_calls": [{"id": "g1", "name": "glob", "input": {"pattern": "*"}}]},
	    {"text": "There are no files."}]}}}`))
	workspace, _ := os.MkdirTemp("", "ws")
	state, _ := os.MkdirTemp("", "state")
	defer os.RemoveAll(workspace)
	defer os.RemoveAll(state)

	for ev, err := range kernel.Query(context.Background(), kernel.Options{
		Agent: kernel.Agent{
			Model:     model,
			Workspace: workspace,
			StateDir:  state,
			Agents: map[string]kernel.AgentDefinition{
				"counter": {Description: "Counts files.", Prompt: "You count files.", Tools: []string{"glob"}},
			},
		},
		Prompt: "Count the files.",
	}) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		switch {
		case ev.Type == kernel.EventToolCall && ev.Agent != "":
			fmt.Printf("[%s, for call %s] call %s\n", ev.Agent, ev.ParentToolUseID, ev.ToolCall.Name)
		case ev.Type == kernel.EventToolResult && ev.Agent == "":
			fmt.Printf("result of %s: %s\n", ev.ToolResult.Name, ev.ToolResult.Content[0].Text)
		case ev.Type == kernel.EventResult:
			fmt.Println(ev.Result.Result)
		}
	}
	// Output:
	// [counter, for call a1] call glob
	// result of agent: There are no files.
	// The counter found none.
}

// With OutputFormat the final answer must be JSON matching the schema; a
// wrong answer is sent back with what is wrong, and the model answers
// again.
func ExampleQuery_structuredOutput() {
	type Count struct {
		Files int `json:"files"`
	}
	schema, _ := jsonschema.For[Count](nil)
	model, _ := scripted.Parse([]byte(`{"turns": [{"text": "None."}, {"text": "{\"files\": 0}"}]}`))
	workspace, _ := os.MkdirTemp("", "ws")
	state, _ := os.MkdirTemp("", "state")
	defer os.RemoveAll(workspace)
	defer os.RemoveAll(state)

	for ev, err := range kernel.Query(context.Background(), kernel.Options{
		Agent: kernel.Agent{
			Model:        model,
			Workspace:    workspace,
			StateDir:     state,
			OutputFormat: &kernel.OutputFormat{Schema: schema},
		},
		Prompt: "Count the files.",
	}) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if ev.Type == kernel.EventResult {
			fmt.Printf("%s after %d answers: %s\n", ev.Result.Subtype, ev.Result.NumTurns, ev.Result.StructuredOutput)
		}
	}
	// Output:
	// success after 2 answers: {"files":0}
}
