package kernel

import (
	"errors"
	"fmt"

	"github.com/lite-agent/lite-agent/tools"
)

// CheckConfinedTools refuses, before the first model call, a custom tool
// (or a tool a toolset knows before it opens: an in-process MCP server's,
// tools.ToolsetPreview) whose handler would run confined but that the
// re-executed child cannot find (tools.CheckConfinable): a tool not handed
// to tools.ServeConfinedCall, two tools of one name handed to it, or a
// program that never calls it. Without this the mistake surfaced only when
// the model first called the tool, as an error result mid-run. local.New
// calls it; Query calls it before opening anything, and checks the tools
// a toolset only offers once open (and does not mark as forwarding) when
// it has opened. With InProcessHandlers nothing is checked: handlers run
// in this process.
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
	if err := tools.CheckConfinable(t); err != nil {
		return fmt.Errorf("kernel: %w", err)
	}
	return nil
}
