// Package tools is the tool contract: how a Go function becomes something a
// model can call, what it declares about itself, and what it gets per call.
//
// # Defining a tool
//
// New builds a typed tool from a function taking (*Context, In). The JSON
// Schema of In is inferred with github.com/google/jsonschema-go (the library
// the official MCP Go SDK uses); `jsonschema:"..."` tags give descriptions.
// The model's input is parsed, defaulted and validated before the handler
// runs; invalid input becomes an error result that names the field, so the
// model can correct itself and the handler only ever sees well-formed input.
//
// # Schema tags
//
// Each line of a zod schema has a one-line Go counterpart:
//
//	query: z.string().describe('Search keywords')
//	  Query string `json:"query" jsonschema:"Search keywords"`
//	maxResults: z.number().int().min(1).max(10).optional()
//	  MaxResults int `json:"maxResults,omitempty" min:"1" max:"10"`
//	source: z.enum(['docs', 'tickets', 'wiki']).default('docs')
//	  Source string `json:"source,omitempty" enum:"docs,tickets,wiki" default:"docs"`
//	orderId: z.string().min(1).max(32).regex(/^O-\d+$/)
//	  OrderID string `json:"orderId" min:"1" max:"32" pattern:"^O-\d+$"`
//
// min and max bound a number, a string's length or a slice's items, as in
// zod; a default makes the field optional and is applied before the
// handler runs; a tag that does not fit the field is an error from New.
// Keys the struct does not have are refused (additionalProperties is
// false), naming the key. See schematags.go.
//
// # Results and failures
//
// A Result holds MCP content blocks (text, image, audio, resource_link,
// resource) and IsError. A handler's error, a panic, a malformed result, or a
// handler that outlives its deadline all become error results: a tool can
// fail, the loop goes on.
//
// # Validating once
//
// Prepare validates a call's input and applies its defaults; CallPrepared
// runs the handler on what Prepare returned without decoding the input
// again (Call does both). The kernel prepares before its permission gate,
// so rules, hooks and the handler read the same input, decoded once: a
// typed input of plain fields is filled from validation's own decoding,
// sharing its strings (flat.go), and a large input that needs no change is
// kept as sent rather than re-encoded. A 50 MB write_file is held about
// twice, not a dozen times.
//
// # Security metadata
//
// Security declares what a tool touches (Network is required; Filesystem
// and SideEffects default to none). Annotations are MCP behaviour hints.
// The strict assembler (package local) refuses custom tools whose
// declaration is missing or too broad, and the sandbox runs each handler
// under the profile its declaration allows (package tools/confined). A
// declaration only narrows the policy it runs under: one asking for more
// network than that policy gives is refused when a session starts, one
// declaring anything narrower than unrestricted network gets neither the
// policy's domain proxy nor its questions about unknown domains, and one
// declaring the whole filesystem reaches "/" only where that policy
// already grants it.
//
// Each field is a ladder of words, narrowest first, compared by one
// ordering (internal/levels): Network is the sandbox's own NetworkMode
// (an alias of sandbox/policy's, which package sandbox re-exports), so a
// declaration meets a policy with NetworkMode.Within, Narrower and Wider;
// Filesystem and SideEffects have the same methods. A word nobody knows
// fails closed: within no limit, a limit that contains nothing, never the
// narrower.
//
// # Toolsets
//
// A Toolset is a source of tools that lives as long as a session (the
// session's MCP servers: package mcp's Toolset). The kernel is handed
// toolsets rather than importing what makes them, opens each per session
// (ToolsetEnv: the workspace, the handler ceiling, the checkpoint
// recorder) and closes it at the end. Optional abilities are type
// assertions: ToolsetTraits (which tools forward and run in this process,
// whose read-only hint is trusted — asked of the toolset that offered the
// tool, never of a registry), ToolsetStatus (its servers for
// session_start), ToolOfferer (names of tools not known yet) and
// ToolsetPreview (tools known before opening).
//
// # Per-call services
//
// Context carries the session id, cancellation, Emit for custom events, the
// approval and user-input handlers, the active sandbox (as the small
// Sandbox interface: its policy), the background-task registry, the raw
// call, and RecordSnapshot, which saves a file's pre-image before a tool
// changes it so the change can be rewound; RecordWrite then reports what
// the tool wrote, so that another writer's edit during the call is never
// taken for the tool's.
// In a confined handler (the default for custom tools) Emit,
// RecordSnapshot, Approval, UserInput, Workspace and Root work — they are
// proxied to the parent over the child's pipe — but Sandbox and Tasks are
// nil: the handler is already inside its sandbox (a command it starts with
// os/exec is confined by the same policy) and background tasks belong to
// the parent's session. They are set for built-in tools and for handlers
// run with kernel.Confinement.InProcessHandlers.
//
// # What this package links
//
// This package is data and interfaces: the tool contract, Security, the
// Context and the Toolset interfaces. It names the sandbox's policy types
// (package sandbox/policy, pure data) but not the sandbox itself, so that
// defining or unit-testing a tool links no seccomp, no spawn path and no
// cgo (TestToolsLinkNoSandbox). Running a handler confined — the
// re-execution of the program, the wire protocol, the narrowing of a
// ceiling to a declaration — is package tools/confined; running commands
// is package sandbox, reached through Context.Sandbox by the built-in
// tools that start them.
//
// The built-in tools live in the builtin subpackage.
package tools
