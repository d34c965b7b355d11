package tools_test

import (
	"encoding/json"
	"fmt"

	"github.com/lite-agent/lite-agent/tools"
)

// A typed tool: the schema comes from the input struct, input is validated
// before the handler runs, and bad input becomes an error result naming the
// field.
func ExampleNew() {
	type WeatherIn struct {
		City string `json:"city" jsonschema:"the city to look up"`
	}
	weather := tools.Must(tools.New("get_weather", "Get the weather for a city",
		func(ctx *tools.Context, in WeatherIn) (string, error) {
			return "It's sunny in " + in.City + ".", nil
		},
		&tools.Options{
			Security:    &tools.Security{Network: tools.NetworkNone},
			Annotations: &tools.Annotations{ReadOnlyHint: true},
		}))

	fmt.Println(string(weather.InputSchemaJSON()))
	ok := weather.Call(nil, json.RawMessage(`{"city": "Tokyo"}`))
	fmt.Println(ok.IsError, ok.TextOf())
	bad := weather.Call(nil, json.RawMessage(`{"city": 7}`))
	fmt.Println(bad.IsError, bad.TextOf())
	// Output:
	// {"type":"object","properties":{"city":{"type":"string","description":"the city to look up"}},"required":["city"],"additionalProperties":false}
	// false It's sunny in Tokyo.
	// true invalid input for get_weather: field city: type: 7 has type "integer", want "string"
}
