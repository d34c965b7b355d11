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
// # Results and failures
//
// A Result holds MCP content blocks (text, image, audio, resource_link,
// resource) and IsError. A handler's error, a panic, a malformed result, or a
// handler that outlives its deadline all become error results: a tool can
// fail, the loop goes on.
//
// # Security metadata
//
// Security declares what a tool touches (Network is required; Filesystem
// and SideEffects default to none). Annotations are MCP behaviour hints.
// The strict assembler (package local) refuses custom tools whose
// declaration is missing or too broad, and the sandbox runs each handler
// under the profile its declaration allows. A declaration only narrows
// the policy it runs under (HandlerPolicy): a tool declaring loopback in
// a session without network gets none, and one declaring the whole
// filesystem reaches "/" only where that policy already grants it.
//
// # Per-call services
//
// Context carries the session id, cancellation, Emit for custom events, the
// approval and user-input handlers, the active sandbox policy, the
// background-task registry, the raw call, and RecordSnapshot, which saves a
// file's pre-image before a tool changes it so the change can be rewound;
// RecordWrite then reports what the tool wrote, so that another writer's
// edit during the call is never taken for the tool's.
//
// The built-in tools live in the builtin subpackage.
package tools
