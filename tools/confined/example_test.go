package confined_test

import (
	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/confined"
)

type WeatherIn struct {
	City string `json:"city" jsonschema:"the city to look up"`
}

// Defined at package level, so that the re-executed copy of the program
// builds it too.
var weather = tools.Must(tools.New("get_weather", "Get the weather for a city",
	func(ctx *tools.Context, in WeatherIn) (string, error) { return "It's sunny in " + in.City + ".", nil },
	&tools.Options{Security: &tools.Security{Network: tools.NetworkNone}}))

// A program whose agent has custom tools hands every one of them to
// Serve, first thing in main: in a normal run it returns at once; in the
// confined copy of the program that kernel.Query starts for a call, it
// runs that call's handler and exits. (Not run here: a test binary serves
// its tools in TestMain.)
func ExampleServe() {
	confined.Serve(weather)
	// ... kernel.Query(ctx, kernel.Options{Agent: kernel.Agent{CustomTools: []*tools.Tool{weather}, ...}, ...})
}
