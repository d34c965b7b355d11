// lite-agent runs an agent headless from the command line.
//
// # Usage
//
//	lite-agent run [flags] PROMPT        run an agent (or -p PROMPT; "-" reads stdin)
//	lite-agent version                   print the version
//
// run flags: --workspace DIR, --provider anthropic|scripted, --model NAME,
// --script FILE (implies scripted), --max-turns N, --tools LIST,
// --allowed-tools LIST, --disallowed-tools LIST (comma lists of tool names
// or wildcards), --output-format text|json|stream-json, --system-prompt
// TEXT, --state-dir DIR, --resume SESSION, --verbose.
//
// # Output formats
//
// text streams the assistant's text to stdout (tool activity goes to stderr
// with --verbose). json prints one final result object. stream-json prints
// one JSON event per line, each with a "type": session_start (with
// session_id) first, then text_delta, assistant_message, tool_call and
// tool_result (with the model's tool-use "id"; tool_result with "is_error"
// and "content"), custom, retry, and result last.
//
// # Exit codes
//
// 0 success; 1 an agent or provider error (one line on stderr); 2 a usage
// error.
package main
