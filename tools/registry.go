package tools

import (
	"fmt"
	"sync"
)

// served is the set of tools this program handed to ServeConfinedCall: the
// only tools a confined child (a fresh copy of the program, see
// ServeConfinedCall) can run, because a Go closure cannot be sent to
// another process and the child finds the handler by the tool's name.
//
// It is filled by that one explicit call, never as a side effect of New,
// and the same call fills it in the parent and in the child: what the
// parent checks (CheckConfinable) is exactly what the child will look up
// (runInChild), so a tool the child would not find is refused when the
// session starts instead of failing at its first call.
var served = struct {
	sync.Mutex
	called bool
	byName map[string]*Tool
	// dup names were handed over more than once as different tools: a
	// child cannot tell which one the parent meant.
	dup map[string]bool
}{byName: map[string]*Tool{}, dup: map[string]bool{}}

// serve records ts as this program's confined tools. It panics on a second
// call or a nil tool: programmer errors, reported where they are made (a
// child serves at the first call, so tools of a second one would never be
// there).
func serve(ts []*Tool) {
	served.Lock()
	defer served.Unlock()
	if served.called {
		panic("tools.ServeConfinedCall called twice: call it once, first thing in main, with every custom tool the program may run confined")
	}
	served.called = true
	for i, t := range ts {
		if t == nil {
			panic(fmt.Sprintf("tools.ServeConfinedCall: tool %d is nil (built after the call, or a nil variable?)", i))
		}
		if prev, ok := served.byName[t.name]; ok && prev != t {
			served.dup[t.name] = true
		}
		served.byName[t.name] = t
	}
}

// lookupServed returns the served tool named name, and whether the name is
// ambiguous.
func lookupServed(name string) (*Tool, bool) {
	served.Lock()
	defer served.Unlock()
	return served.byName[name], served.dup[name]
}

// CheckConfinable reports why t's handler could not run confined — why
// the re-executed copy of this program would not find it — or nil. It is
// a map lookup, made for every custom tool when a session starts
// (kernel.CheckConfinedTools, from kernel.Query and local.New), so that
// the mistake fails at once with its fix instead of at the tool's first
// call:
//
//   - the program never called ServeConfinedCall: no child could serve
//     any call (it would run main from the start);
//   - t is not among the tools handed to ServeConfinedCall;
//   - two different tools of t's name were handed to it: the child cannot
//     tell which one is meant.
func CheckConfinable(t *Tool) error {
	served.Lock()
	defer served.Unlock()
	const rule = "a custom handler runs confined in a re-execution of this program, which runs only the tools handed to tools.ServeConfinedCall"
	switch {
	case !served.called:
		return fmt.Errorf("the %s tool cannot run confined: this program has not called tools.ServeConfinedCall (%s); call tools.ServeConfinedCall(%s, ...) first thing in main, with every custom tool", t.name, rule, t.name)
	case served.dup[t.name]:
		return fmt.Errorf("the %s tool cannot run confined: two different tools named %s were handed to tools.ServeConfinedCall (%s); give each its own name", t.name, t.name, rule)
	case served.byName[t.name] != t:
		if served.byName[t.name] != nil {
			return fmt.Errorf("the %s tool cannot run confined: tools.ServeConfinedCall was handed a different tool of the same name (%s); hand it this one, and build each tool once", t.name, rule)
		}
		return fmt.Errorf("the %s tool cannot run confined: it is not among the tools handed to tools.ServeConfinedCall (%s); add it to that call — build it at package level, or in main before the call (see \"Confined handlers and run-time state\" in the tools package documentation)", t.name, rule)
	}
	return nil
}
