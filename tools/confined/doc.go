// Package confined runs custom tool handlers confined by the sandbox: a
// handler runs in a re-execution of the program, confined before its
// first instruction, and talks to its parent over a pipe.
//
// # Why a re-execution
//
// Landlock and seccomp confine threads, and the Go runtime moves
// goroutines between threads, so a Go function cannot be confined inside
// the process that calls it; and a closure cannot be sent to another
// process. So the program starts itself again (Call), in the sandbox, and
// the copy finds the handler by the tool's name among the tools handed to
// Serve — the one explicit list of what may run confined; tools.New
// registers nothing. Emit, RecordSnapshot, approvals and user input are
// proxied to the parent over the child's stdin and stdout.
//
// # Serve
//
// A program whose agent has custom tools (an in-process MCP server's
// count) calls Serve(ts...) once, first thing in main, with every one of
// them:
//
//	var weather = tools.Must(tools.New("get_weather", ...))
//
//	func main() {
//		confined.Serve(weather) // returns at once, except in a confined child
//		...
//	}
//
// The parent records the same list, so a tool not handed over, two
// different tools of one name, or a program that never calls Serve is
// refused when a session starts, before the agent's first model call
// (Check, from kernel.CheckConfinedTools; Call checks it too, before
// starting anything), with this rule and its fix. Serve panics when
// handed nothing: a program without custom tools does not call it, and
// one that calls it with an empty list has forgotten its tools.
//
// # Run-time state
//
//   - define the tools at package level, or in main before Serve (a tool
//     closing over a client made in main works when the client is made
//     before the call);
//   - state the handler needs is built again in the child by that same
//     code: a client, a configuration read from a file, a connection to a
//     loopback service (within what the tool's Security grants). The
//     child gets no arguments and no environment of the parent beyond
//     the sandbox's allowlist, so build that state from constants or files;
//   - state only the parent process can hold (an open connection passed
//     in, an in-memory cache shared across calls) does not cross: use
//     kernel.Confinement.InProcessHandlers (unconfined; the strict
//     assembler cannot set it), or put the state behind a local service or
//     an MCP server the tool reaches.
//
// # The policy of a handler
//
// HandlerPolicy narrows the session's handler ceiling to what the tool
// declared (tools.Security): the declared network, the domain proxy only
// for a declaration of unrestricted, no workspace for filesystem none, a
// read-only one for side effects none. A declaration never widens, and
// one the ceiling cannot give is an error (CheckNetwork), which the
// kernel raises when the session starts rather than confining the handler
// to less than it says it needs. NarrowNetwork, ReadOnlyWorkspace and
// WithoutRoot are the same rules for the kernel's other confined
// processes (sandboxed MCP servers).
package confined
