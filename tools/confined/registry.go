package confined

import (
	"fmt"
	"sync"

	"github.com/lite-agent/lite-agent/tools"
)

// served is the set of tools this program handed to Serve: the only tools
// a confined child (a fresh copy of the program, see Serve) can run, because a Go closure cannot be sent to
// another process and the child finds the handler by the tool's name.
//
// It is filled by that one explicit call, never as a side effect of
// tools.New,
// and the same call fills it in the parent and in the child: what the
// parent checks (Check) is exactly what the child will look up
// (runInChild), so a tool the child would not find is refused when the
// session starts instead of failing at its first call.
var served = struct {
	sync.Mutex
	called bool
	byName map[string]*tools.Tool
	// dup names were handed over more than once as different tools: a
	// child cannot tell which one the parent meant.
	dup map[string]bool
}{byName: map[string]*tools.Tool{}, dup: map[string]bool{}}

// serve records ts as this program's confined tools. It panics on a second
// call, a nil tool or no tool: programmer errors, reported where they are
// made (a child serves at the first call, so tools of a second one would
// never be there; a call handing over nothing would let every custom tool
// be refused later, at a session's start).
func serve(ts []*tools.Tool) {
	served.Lock()
	defer served.Unlock()
	if served.called {
		panic("confined.Serve called twice: call it once, first thing in main, with every custom tool the program may run confined")
	}
	if len(ts) == 0 {
		panic("confined.Serve called with no tool: hand it every custom tool the program may run confined (an in-process MCP server's too: srv.Tools()...); a program without custom tools does not call it")
	}
	served.called = true
	for i, t := range ts {
		if t == nil {
			panic(fmt.Sprintf("confined.Serve: tool %d is nil (built after the call, or a nil variable?)", i))
		}
		if prev, ok := served.byName[t.Name()]; ok && prev != t {
			served.dup[t.Name()] = true
		}
		served.byName[t.Name()] = t
	}
}

// lookupServed returns the served tool named name, and whether the name is
// ambiguous.
func lookupServed(name string) (*tools.Tool, bool) {
	served.Lock()
	defer served.Unlock()
	return served.byName[name], served.dup[name]
}

// Check reports why t's handler could not run confined — why the
// re-executed copy of this program would not find it — or nil. It is a
// map lookup, made for every custom tool when a session starts
// (kernel.CheckConfinedTools, from kernel.Query and local.New), so that
// the mistake fails at once with its fix instead of at the tool's first
// call:
//
//   - the program never called Serve: no child could serve any call (it
//     would run main from the start);
//   - t is not among the tools handed to Serve;
//   - two different tools of t's name were handed to it: the child cannot
//     tell which one is meant.
func Check(t *tools.Tool) error {
	served.Lock()
	defer served.Unlock()
	const rule = "a custom handler runs confined in a re-execution of this program, which runs only the tools handed to confined.Serve"
	name := t.Name()
	switch {
	case !served.called:
		return fmt.Errorf("the %s tool cannot run confined: this program has not called confined.Serve (%s); call confined.Serve(%s, ...) first thing in main, with every custom tool", name, rule, name)
	case served.dup[name]:
		return fmt.Errorf("the %s tool cannot run confined: two different tools named %s were handed to confined.Serve (%s); give each its own name", name, name, rule)
	case served.byName[name] != t:
		if served.byName[name] != nil {
			return fmt.Errorf("the %s tool cannot run confined: confined.Serve was handed a different tool of the same name (%s); hand it this one, and build each tool once", name, rule)
		}
		return fmt.Errorf("the %s tool cannot run confined: it is not among the tools handed to confined.Serve (%s); add it to that call — build it at package level, or in main before the call (see \"Run-time state\" in the confined package documentation)", name, rule)
	}
	return nil
}
