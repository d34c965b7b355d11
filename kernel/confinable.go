package kernel

import (
	"errors"
	"fmt"

	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/tools"
)

// CheckConfinedTools refuses, before the first model call, a custom tool
// (or an in-process MCP server's tool) whose handler would run confined
// but that the re-executed child cannot find (tools.CheckConfinable): a
// tool not handed to tools.ServeConfinedCall, two tools of one name
// handed to it, or a program that never calls it. Without this the mistake surfaced only when the model
// first called the tool, as an error result mid-run. local.New calls it;
// Query calls it before connecting anything. With InProcessHandlers
// nothing is checked: handlers run in this process.
func CheckConfinedTools(o *Options) error {
	if o.InProcessHandlers {
		return nil
	}
	var errs []error
	check := func(t *tools.Tool) {
		if t == nil || mcp.IsProxy(t) {
			return
		}
		if err := tools.CheckConfinable(t); err != nil {
			errs = append(errs, fmt.Errorf("kernel: %w", err))
		}
	}
	for _, t := range o.CustomTools {
		check(t)
	}
	for _, sc := range o.MCPServers {
		if sc.Server != nil {
			for _, t := range sc.Server.Tools() {
				check(t)
			}
		}
	}
	return errors.Join(errs...)
}
