package tools

import (
	"fmt"
	"sync"
)

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
	// served is set when this program (not a child) called
	// ServeConfinedCall; late are the tools built after that. A child
	// stops inside ServeConfinedCall, so it never builds those: they
	// cannot run confined (CheckConfinable).
	served bool
	late   map[*Tool]bool
}{byName: map[string]*Tool{}, ambiguous: map[string]bool{}, late: map[*Tool]bool{}}

func register(t *Tool) {
	registry.Lock()
	defer registry.Unlock()
	if prev, ok := registry.byName[t.name]; ok && prev != t {
		registry.ambiguous[t.name] = true
	}
	registry.byName[t.name] = t
	if registry.served {
		registry.late[t] = true
	}
}

// markServed records that ServeConfinedCall returned in this process.
func markServed() {
	registry.Lock()
	defer registry.Unlock()
	registry.served = true
}

// lookupRegistered returns the tool named name, and whether the name is
// ambiguous.
func lookupRegistered(name string) (*Tool, bool) {
	registry.Lock()
	defer registry.Unlock()
	return registry.byName[name], registry.ambiguous[name]
}

// CheckConfinable reports why t's handler could not run confined — why
// the re-executed copy of this program (see ServeConfinedCall) would not
// find it — or nil. It is one map lookup, made for every custom tool
// before an agent's first model call, so that the mistake fails at once
// with its fix instead of at the tool's first call:
//
//   - the program never called ServeConfinedCall: the child would run
//     main from the start;
//   - t was built after ServeConfinedCall returned (in main, after the
//     call; in a function main calls later): the child stops inside
//     ServeConfinedCall and never builds it;
//   - another tool of the same name was built: the child cannot tell
//     which one is meant.
//
// The check cannot see a tool built before ServeConfinedCall only under a
// condition the child does not meet (a flag: the child gets no arguments).
func CheckConfinable(t *Tool) error {
	registry.Lock()
	defer registry.Unlock()
	const rule = "a custom handler runs confined in a re-execution of this program, which finds it by name among the tools built before tools.ServeConfinedCall()"
	switch {
	case !registry.served:
		return fmt.Errorf("the %s tool cannot run confined: this program has not called tools.ServeConfinedCall() (%s); call it first thing in main", t.name, rule)
	case registry.late[t]:
		return fmt.Errorf("the %s tool cannot run confined: it was built after tools.ServeConfinedCall() returned (%s); build it at package level or in main before ServeConfinedCall — state it needs (a client, a configuration) is made there too, in the child (see \"Run-time state\" in the tools package documentation)", t.name, rule)
	case registry.ambiguous[t.name] || registry.byName[t.name] != t:
		return fmt.Errorf("the %s tool cannot run confined: this program builds more than one tool named %s (%s); give each its own name", t.name, t.name, rule)
	}
	return nil
}
