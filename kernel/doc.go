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
// A call to a tool outside the visible set (Options.Tools minus
// Options.DisallowedTools) gets an error result. Otherwise the permission
// gate decides, deny first: disallowed → allowed (AllowedTools) → read-only
// tools → CanUseTool → the approval handler → denied with a message the
// model sees (headless). The tool then validates its input against its
// schema and runs; failures become error results and the loop goes on.
// Consecutive read-only calls of one turn run concurrently; others run
// alone, in order. Results reach the model in call order.
//
// # Sessions
//
// Each session is a JSONL transcript in the state directory, outside the
// workspace ($XDG_STATE_HOME/lite-agent/sessions/ID.jsonl). Records are
// appended with one write each, so a crash leaves at most a torn last line,
// which readers ignore and a resumed session cuts off. A transcript is
// locked (flock) while a run uses it. Options.Resume continues a session.
package kernel
