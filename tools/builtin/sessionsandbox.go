package builtin

import (
	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// sessionSandbox is the call's sandbox as the command runner the kernel
// hands (tools.Context.Sandbox names only its policy, so that package
// tools does not link the sandbox). nil when no sandbox is active — or
// when the context holds another implementation, which cannot start
// commands: the tools that need one then refuse, as without a sandbox.
func sessionSandbox(ctx *tools.Context) *sandbox.Sandbox {
	sb, _ := ctx.Sandbox.(*sandbox.Sandbox)
	return sb
}
