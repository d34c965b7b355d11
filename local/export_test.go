package local

import "github.com/lite-agent/lite-agent/tools"

// ExternalConfinedTools are the confined tools of this package's external
// tests (example_test.go, package local_test), which TestMain cannot name:
// they append here from an init function, which runs before TestMain hands
// the whole set to confined.Serve.
var ExternalConfinedTools []*tools.Tool
