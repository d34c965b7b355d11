// Package kernel is the agent loop: Query streams the events of a session in
// which a model calls tools until it answers.
//
// # The loop
//
// Query sends the conversation and the visible tools' schemas to the model,
// streams its text as text_delta events, then runs the tool calls the model
// made and sends their results back, until the model stops calling tools,
// MaxTurns is reached, the provider fails, or ctx is cancelled. The stream
// starts with session_start and ends with one result event.
//
// # One tool call
//
// A call to a tool outside the visible set (Options.Tools, minus the tools
// a deny rule names without an argument) gets an error result. Otherwise
// the input is validated against the tool's schema and its defaults are
// applied — input the schema refuses is an error result and never reaches
// the gate — and the permission gate decides on that validated input. The
// tool then runs; failures become error results and the loop goes on.
// Consecutive read-only calls of one turn run concurrently; others run
// alone, in order. Results reach the model in call order.
//
// # The permission gate
//
// In this order; the first layer that decides wins, and deny always wins:
//
//  1. Deny rules — Options.DisallowedTools and the deny rules of
//     Options.Rules (presets, policy files) → denied. In plan mode a tool
//     that is not read-only is denied here too.
//  2. PreToolUse hooks (those whose Matcher matches) → deny, ask or allow;
//     a hook may rewrite the input, which is validated again and meets
//     the deny rules again. A hook that fails denies.
//  3. Ask rules → ask; allow rules and Options.AllowedTools → allowed.
//     An argument rule that cannot be proven not to match (a shell
//     command only known when it runs) asks.
//  4. The permission mode: bypassPermissions allows; acceptEdits allows
//     write_file and edit_file inside the workspace; auto allows read-only
//     tools and changes that stay in the workspace and asks for the shell
//     and network tools; default and dontAsk decide nothing here.
//  5. The tool's default: read-only tools are allowed, others ask.
//  6. An ask: dontAsk mode denies it; otherwise CanUseTool decides, else
//     the Approval handler, else (headless) it is denied with a message
//     the model sees that says how to pre-approve it.
//
// So an ask rule or a hook's ask still asks in bypassPermissions, and a
// deny is never overridden. Every decision is a permission event (which
// layer, rule, hook, mode). CanUseTool may rewrite the input (validated
// and checked against the deny rules again) and may add allow rules for
// the rest of the run ("allow always"). Permission is not confinement: an
// allowed call still runs in the sandbox.
//
// AllowedTools pre-approves; it does not restrict what the model can use —
// Tools does that, in every mode.
//
// # Hooks
//
// Options.Hooks are Go functions run at PreToolUse, PostToolUse,
// PostToolUseFailure, UserPromptSubmit, Stop, SessionStart, SessionEnd and
// PermissionDenied (see Hook). A hook that errors, panics, answers
// nonsense or times out is reported as a hook event and never counts as an
// allow: PreToolUse denies, PostToolUse withholds the output,
// UserPromptSubmit blocks the prompt; notification hooks are only
// reported. Command hooks from policy files are wired by package local.
//
// # Sessions
//
// Each session is a JSONL transcript in the state directory, outside the
// workspace ($XDG_STATE_HOME/lite-agent/sessions/ID.jsonl). Records are
// appended with one write each, so a crash leaves at most a torn last line,
// which readers ignore and a resumed session cuts off. A transcript is
// locked (flock) while a run uses it. Options.Resume continues a session.
package kernel
