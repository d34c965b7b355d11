// lite-agent runs an agent from the command line: interactively in a
// terminal, or headless with run.
//
// # Usage
//
//	lite-agent [chat] [flags]            an interactive session in a terminal (chat*.go):
//	                                     run's flags, --continue, --resume [ID]
//	lite-agent run [flags] PROMPT        run an agent (or -p PROMPT; "-" reads stdin)
//	lite-agent sandbox run [flags] -- CMD [ARGS...]
//	                                     run one command confined
//	lite-agent sandbox check [--json]    what this kernel can enforce, per preset
//	lite-agent policy show [NAME] [--workspace DIR] [--json]
//	                                     a preset as data (and what policy files add,
//	                                     and whether the workspace's file is trusted)
//	lite-agent policy trust [--workspace DIR] [FILE]
//	                                     show the workspace's policy file (path, size,
//	                                     SHA-256, what it loosens) and trust this version
//	lite-agent policy untrust [--workspace DIR]
//	                                     take that trust back
//	lite-agent version                   print the version
//
// run flags: --workspace DIR, --provider anthropic|scripted, --model NAME,
// --script FILE (implies scripted), --max-turns N, --tools LIST,
// --allowed-tools LIST, --disallowed-tools LIST (comma lists of allow and
// deny rules: tool names, wildcards, "bash(git status)", "read_file(src/**)"),
// --preset strict|standard|permissive, --permission-mode
// default|acceptEdits|plan|dontAsk|bypassPermissions|auto,
// --dangerously-skip-permissions, --output-format text|json|stream-json,
// --system-prompt TEXT, --state-dir DIR, --resume SESSION, --verbose,
// --mcp-config FILE (the {"mcpServers": {...}} shape; inline JSON too),
// --mcp-connect-timeout DURATION, --agents FILE (subagent definitions by
// name; inline JSON too), --max-budget-tokens N, --output-schema FILE (a
// JSON Schema the final answer must match; inline JSON too),
// --append-system-prompt TEXT, --no-project-instructions, --context-window
// N, --thinking-budget N, --web-search DOMAINS (see model.go: what the
// model is told, context compaction, thinking, the server web_search
// tool). The agent is built by package local (the strict assembler): the preset, the
// policy files ($XDG_CONFIG_HOME/lite-agent/policy.toml and
// WORKSPACE/.lite-agent/policy.toml — under standard and permissive it
// loosens only in the version the user trusted with `policy trust`, whose
// record lives outside the workspace where the agent's commands cannot
// write it; policy.go), then the flags. When stdin is a
// terminal, a call that asks is an interactive prompt (allow once, allow
// always for this session, deny); otherwise it is denied with a message the
// model sees.
//
// The interactive mode (chat.go) is a Bubble Tea program in the normal
// screen: text streams in, each tool call is a line with its status and
// duration, and a call that asks shows what it will do — the unified diff
// of an edit or write (builtin.PreviewChange), the exact command, the
// parts the rule parser found and the sandbox of a bash call — and takes
// y (once), a (this session), A (always: the rule is written to the user's
// or the workspace's policy file, policies.AddRuleToUserFile and
// AddRuleToWorkspaceFile), n (deny) or m (deny with a message); Enter never
// allows. Esc or Ctrl-C stops the turn (the model stream and the running
// command, whose process tree the sandbox kills when the context ends);
// Ctrl-C twice or Ctrl-D exits. Everything is wrapped to the terminal's
// width, printing is ordered through one outbox, and a change of width
// redraws the screen (chat_screen.go says why each is needed); a running
// bash shows its output live (kernel tool_output events) and folded once
// it ends (Ctrl+O: the whole). Typing "/" opens a menu of the slash
// commands (chat_menu.go), which reuse the commands' implementations
// (/rewind is rewindCmd, /checkpoints is cmdCheckpoints); /rewind lists
// the prompts with the files each turn changed (chat_rewind.go); /undo
// takes the last rewind back (the files to the checkpoint before the one
// recording the rewind, the conversation with
// checkpoint.RestoreTranscriptCut), until the next prompt. A subagent's
// calls are nested under the agent call that started it (events'
// ParentToolUseID); background tasks are followed from their tools'
// results and listed until the turn, which kills them, ends. Each prompt
// is a Query resuming the session, so every other command works on it.
// Without a terminal it says to use run (exit 2). Bubble Tea's package init
// would ask the terminal for its background colour and wait up to 5 s for
// the answer: internal/noquery (imported by chat_init.go) keeps it from
// asking.
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
// The command is internal/sandboxrun, which lite-agent-sandbox
// (cmd/lite-agent-sandbox) runs too, without the agent's packages: when
// that program is installed beside this one from the same build (make
// install) — a regular file owned by this binary's owner or root that
// nobody else may write — a C constructor (entry_linux.c) execs it for `sandbox run`
// before this program's runtime and package initialisation start, and it
// checks the build and sends the command back when the two differ;
// LITE_AGENT_SANDBOX_ENTRY=in-process keeps it here (BENCHMARKS.md: what
// each costs).
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
// and "content"), permission (between them: "decision", "by", "rule",
// "rule_source", "hook", "mode", "reason"), hook (a hook that failed),
// tool_output (a running command's output as it comes, for a person
// watching: paced and lossy, the tool_result is the output), custom,
// retry, checkpoint, network (a connection the domain proxy decided), and
// result last (with structured_output under
// --output-schema). session_start lists mcp_servers and agents; every
// event a subagent emits carries agent, agent_id and parent_tool_use_id.
// Each line is a kernel.Event as its MarshalJSON writes it (see the
// kernel's doc, # Events); testdata/stream-json.txtar is the golden
// transcript of scripted sessions that pins the format.
// In text output, denials and hook failures are shown on stderr, and so is
// a subagent's work with --verbose (stdout is the main agent's answer).
//
// # Terminal safety
//
// Everything the agent controls — model text, tool names, input and
// output, file names and contents, diffs, hook reasons, session prompts,
// the workspace policy file's rules, error messages — is shown in text
// output through package internal/termsafe: C0 and C1 controls, DEL, ESC
// sequences (CSI, OSC such as OSC 52, the clipboard), bidi and other
// format characters (U+200B–U+200F, U+202A–U+202E, U+2066–U+2069, U+FEFF,
// U+00AD, tag characters) and bytes that are not UTF-8 become visible
// escapes (\x1b, \r, \u202e, \xff); model text and diffs keep their
// newlines and tabs. So the approval prompt shows the command that runs,
// and flags one that held such characters. The JSON outputs
// (--output-format json|stream-json, the --json listings) carry the exact
// bytes. The output of `sandbox run` is the user's own command's, and
// passes through unchanged.
//
// Ctrl-C at the approval prompt denies the call and stops the run at once
// (exit 1, "run interrupted"): the prompt's read never blocks the run.
//
// # The workspace
//
// run resolves the workspace once (--workspace, else the current
// directory as $PWD names it). When a symlink leads there, text mode's
// first line (on stderr) shows the resolved path. A workspace reached
// through a symlink that an agent created in a recorded session
// (checkpoint.AgentSymlink) is refused, naming the link and the session;
// pass the resolved path to work there anyway. The agent is given the
// resolved path.
//
// # Exit codes
//
// 0 success; 1 an agent or provider error (one line on stderr); 2 a usage
// error; 3 (run) the sandbox cannot run the agent's commands here: refused,
// its trial failed, or a command could not be started during the session
// (a sandbox event, and a line on stderr). sandbox run exits with the command's own code, 128+N when signal
// N killed it, 124 when --timeout killed it, 125 when the sandbox could not
// start (the reason on stderr: fail closed), 126 when the command could not
// be executed and 127 when it was not found.
package main
