package tools

import "sync"

// registry maps tool names to the tools this program has built. A confined
// child (see ServeConfinedCall) is a fresh copy of the program: it finds the
// handler to run by the tool's name here, because a Go closure cannot be
// sent to another process.
var registry = struct {
	sync.Mutex
	byName map[string]*Tool
	// ambiguous names were built more than once with different handlers;
	// a confined child cannot tell which one the parent meant.
	ambiguous map[string]bool
}{byName: map[string]*Tool{}, ambiguous: map[string]bool{}}

func register(t *Tool) {
	registry.Lock()
	defer registry.Unlock()
	if prev, ok := registry.byName[t.name]; ok && prev != t {
		registry.ambiguous[t.name] = true
	}
	registry.byName[t.name] = t
}

// lookupRegistered returns the tool named name, and whether the name is
// ambiguous.
func lookupRegistered(name string) (*Tool, bool) {
	registry.Lock()
	defer registry.Unlock()
	return registry.byName[name], registry.ambiguous[name]
}
