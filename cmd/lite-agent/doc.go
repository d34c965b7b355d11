// lite-agent runs an agent headless from the command line.
//
// # Usage
//
//	lite-agent run [flags] PROMPT        run an agent (or -p PROMPT; "-" reads stdin)
//	lite-agent sandbox run [flags] -- CMD [ARGS...]
//	                                     run one command confined
//	lite-agent sandbox check [--json]    what this kernel can enforce, per preset
//	lite-agent version                   print the version
//
// run flags: --workspace DIR, --provider anthropic|scripted, --model NAME,
// --script FILE (implies scripted), --max-turns N, --tools LIST,
// --allowed-tools LIST, --disallowed-tools LIST (comma lists of tool names
// or wildcards), --output-format text|json|stream-json, --system-prompt
// TEXT, --state-dir DIR, --resume SESSION, --verbose.
//
// sandbox run flags: --workspace DIR (default: the current directory; the
// command runs there, or in the current directory when that is inside it),
// --preset strict|standard|permissive (default strict), --network
// none|loopback|private|unrestricted (overrides the preset's), --allow-read
// PATH and --allow-write PATH (repeatable), --env NAME[=VALUE] (repeatable;
// by default only an allowlist such as PATH, LANG, TERM, HOME passes, and a
// secret-looking NAME passes only as NAME=VALUE), --timeout DURATION,
// --max-memory SIZE, --max-procs N, --max-file-size SIZE, --max-output SIZE
// (SIZE: 512M, 2G, ...), --best-effort (run even when the kernel cannot
// enforce everything; what was not enforced is printed on stderr). Stdin,
// stdout and stderr pass through. A limit that was hit is reported on stderr.
//
// sandbox check prepares every preset for real and prints the Landlock ABI,
// seccomp (and user notification), pidfd_getfd, user namespaces and cgroups
// this kernel and user give, and what each preset would refuse or lose.
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
// error. sandbox run exits with the command's own code, 128+N when signal
// N killed it, 124 when --timeout killed it, 125 when the sandbox could not
// start (the reason on stderr: fail closed), 126 when the command could not
// be executed and 127 when it was not found.
package main
