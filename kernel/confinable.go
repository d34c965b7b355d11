package kernel

import (
	"errors"
	"fmt"

	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
	"github.com/lite-agent/lite-agent/tools/confined"
)

// CheckConfinedTools refuses, before the first model call, a custom tool
// (or a tool a toolset knows before it opens: an in-process MCP server's,
// tools.ToolsetPreview) whose handler would run confined but could not:
//
//   - the re-executed child cannot find it (confined.Check): a tool not
//     handed to confined.Serve, two tools of one name handed to it, or a
//     program that never calls it;
//   - it declares more network than the handler ceiling gives
//     (confined.CheckNetwork): its handler would be confined to less than
//     it says it needs and fail at its first connection.
//
// Without this the mistake surfaced only when the model first called the
// tool, as an error result mid-run. local.New calls it; Query calls it
// before opening anything, and checks the tools a toolset only offers
// once open (and does not mark as forwarding) when it has opened. With
// InProcessHandlers nothing is checked: handlers run in this process.
func CheckConfinedTools(o *Options) error {
	var errs []error
	check := func(t *tools.Tool) {
		if t == nil {
			return
		}
		if err := checkConfinable(o, t); err != nil {
			errs = append(errs, err)
		}
	}
	for _, t := range o.CustomTools {
		check(t)
	}
	for _, ts := range o.Toolsets {
		if p, ok := ts.(tools.ToolsetPreview); ok {
			for _, t := range p.KnownTools() {
				check(t)
			}
		}
	}
	return errors.Join(errs...)
}

// checkConfinable is the one check of a tool that will run confined.
func checkConfinable(o *Options, t *tools.Tool) error {
	if o.InProcessHandlers {
		return nil
	}
	if err := confined.Check(t); err != nil {
		return fmt.Errorf("kernel: %w", err)
	}
	if err := confined.CheckNetwork(handlerCeiling(o), t.Security()); err != nil {
		return fmt.Errorf("kernel: the %s tool cannot run confined: %w", t.Name(), err)
	}
	return nil
}

// handlerCeiling is the policy a custom handler is narrowed from, as the
// options give it: HandlerCeiling, else Sandbox, else the default policy
// (prepareSandbox fills in the workspace and the session's hooks, which
// do not change what a declaration is checked against).
func handlerCeiling(o *Options) sandbox.Policy {
	switch {
	case o.HandlerCeiling != nil:
		return *o.HandlerCeiling
	case o.Sandbox != nil:
		return *o.Sandbox
	}
	return sandbox.Policy{}
}
