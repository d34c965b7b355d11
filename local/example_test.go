package local_test

import (
	"context"
	"fmt"
	"os"

	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/local"
	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/provider/scripted"
	"github.com/lite-agent/lite-agent/tools"
)

type WeatherIn struct {
	City string `json:"city"`
}

// getWeather declares that it needs no network and touches no file: the
// strict preset accepts it, and its handler runs confined to exactly that.
// Custom tools are defined at package level: a confined handler runs in a
// re-execution of the program, which finds the tool by name among those
// the program's main — here TestMain — hands to confined.Serve.
var getWeather = tools.Must(tools.New("get_weather", "Get the weather for a city",
	func(ctx *tools.Context, in WeatherIn) (string, error) { return "sunny in " + in.City, nil },
	&tools.Options{
		Security:    &tools.Security{Network: tools.NetworkNone},
		Annotations: &tools.Annotations{ReadOnlyHint: true},
	}))

// The same tool, declaring that it reaches anywhere on the network.
var getWeatherOnline = tools.Must(tools.New("get_weather_online", "Get the weather for a city from a web service",
	func(ctx *tools.Context, in WeatherIn) (string, error) { return "", nil },
	&tools.Options{Security: &tools.Security{Network: tools.NetworkUnrestricted}}))

// In a program: func main() { confined.Serve(getWeather); ... }.
// Here TestMain does it, with this package's other test tools.
func init() {
	local.ExternalConfinedTools = append(local.ExternalConfinedTools, getWeather, getWeatherOnline)
}

// New builds a hardened agent (the strict preset by default) and refuses
// any custom tool that would weaken it.
func ExampleNew() {
	workspace, _ := os.MkdirTemp("", "ws")
	state, _ := os.MkdirTemp("", "state")
	defer os.RemoveAll(workspace)
	defer os.RemoveAll(state)
	model, _ := scripted.Parse([]byte(`{"turns": [
	  {"tool_calls": [{"id": "t1", "name": "get_weather", "input": {"city": "Tokyo"}}]},
	  {"text": "It is sunny in Tokyo."}]}`))

	_, err := local.New(local.Config{
		PolicyFiles: &policies.LoadOptions{UserFile: "-"},
		Agent: kernel.Agent{
			Model:       model,
			Workspace:   workspace,
			StateDir:    state,
			CustomTools: []*tools.Tool{getWeatherOnline},
		},
	})
	fmt.Println("rejected:", err)

	agent, err := local.New(local.Config{
		PolicyFiles: &policies.LoadOptions{UserFile: "-"},
		Agent: kernel.Agent{
			Model:       model,
			Workspace:   workspace,
			StateDir:    state,
			CustomTools: []*tools.Tool{getWeather},
			Tools:       []string{"get_weather"},
			// Its readOnlyHint is a hint, not a permission: pre-approve it.
			AllowedTools: []string{"get_weather"},
		},
	})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println("accepted, preset", agent.Preset().Name)
	for ev, err := range agent.Query(context.Background(), "What's the weather in Tokyo?") {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		switch ev.Type {
		case kernel.EventPermission:
			fmt.Printf("permission %s: %s by %s\n", ev.Permission.Name, ev.Permission.Decision, ev.Permission.DecidedBy)
		case kernel.EventToolResult:
			fmt.Printf("result: %s\n", ev.ToolResult.Content[0].Text)
		case kernel.EventResult:
			fmt.Printf("%s: %s\n", ev.Result.Subtype, ev.Result.Result)
		}
	}
	// Output:
	// rejected: local: custom tool "get_weather_online": field Security.Network is "unrestricted", beyond what the strict preset allows custom tools (at most loopback)
	// accepted, preset strict
	// permission get_weather: allow by rule
	// result: sunny in Tokyo
	// success: It is sunny in Tokyo.
}
