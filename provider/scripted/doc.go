// Package scripted is a deterministic, offline Model that replays a JSON
// script. It exists so that the demo and every test of the agent loop run
// without an API key or a network.
//
// # Script format
//
//	{"turns": [
//	  {"text": "I'll create the file.",
//	   "tool_calls": [{"id": "t1", "name": "write_file",
//	                   "input": {"path": "a.txt", "content": "hi"}}]},
//	  {"text": "Done."}
//	]}
//
// The k-th model call of a session gets turns[k], where k is the number of
// assistant messages already in the conversation — so a resumed session
// continues where it stopped. The text is streamed as a few deltas, then
// the tool calls; a turn with tool calls stops with tool_use, else end_turn.
// Running out of turns is an error that says so.
//
// A subagent (kernel.Options.Agents) replays its own script, chosen by the
// agent's name (provider.Request.Agent):
//
//	{"turns": [...],
//	 "agents": {"researcher": {"turns": [{"text": "Found it."}]}}}
//
// Its turns are counted in its own conversation, so every run of the
// subagent starts at its first turn.
//
// For testing bad input, a tool call may give "raw_input" (text sent as the
// call's arguments verbatim, valid JSON or not) instead of "input", and a
// turn may give "error" to make that model call fail with that message.
package scripted
