// Command get_weather is the first seed's "define a tool" example: a typed
// custom tool, appended after the built-in tools and gated like them.
//
//	go run ./examples/get_weather            # offline, scripted model
//	ANTHROPIC_API_KEY=... go run ./examples/get_weather
package main

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"

	"github.com/lite-agent/lite-agent/examples/internal/example"
	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/confined"
)

//go:embed script.json
var script []byte

// const weather = tool("get_weather", "Get the weather for a city",
//
//	z.object({ city: z.string() }), async ({ city }) => `It's sunny in ${city}.`)
type WeatherIn struct {
	City string `json:"city" jsonschema:"the city to look up"`
}

// Defined at package level: the handler runs confined in a re-execution
// of this program, which finds the tool by its name.
var weather = tools.Must(tools.New("get_weather", "Get the weather for a city",
	func(ctx *tools.Context, in WeatherIn) (string, error) {
		return "It's sunny in " + in.City + ".", nil
	},
	&tools.Options{Security: &tools.Security{Network: tools.NetworkNone}}))

func main() {
	// First: a confined call's child runs its handler here and exits.
	// The child runs only the tools handed over here.
	confined.Serve(weather)
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "get_weather:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	model, modelName, err := example.Model(script)
	if err != nil {
		return err
	}
	ws, err := os.MkdirTemp("", "get_weather-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	for ev, err := range kernel.Query(ctx, kernel.Options{
		Agent: kernel.Agent{
			Model:        model,
			ModelName:    modelName,
			Workspace:    ws,
			CustomTools:  []*tools.Tool{weather},
			AllowedTools: []string{"get_weather", "read_file"},
		},
		Prompt: "What's the weather in Tokyo?",
	}) {
		if err != nil {
			return err
		}
		// The seed prints only text deltas; the calls and results are
		// shown too, so that you can see the tool run.
		example.Print(out, ev)
	}
	return nil
}
