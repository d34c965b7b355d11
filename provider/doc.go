// Package provider defines the Model interface the kernel talks to and the
// provider-neutral message types it speaks.
//
// # Why one interface
//
// The agent loop must not care which vendor answers: a Model streams one
// assistant turn as an iter.Seq2[Chunk, error] — text deltas while they
// arrive, then one final ChunkMessage with the whole message, its stop reason
// and its usage. Retries that a provider performs after it has already
// streamed some text are announced with a ChunkRetry so that a consumer
// can discard the partial text instead of showing it twice.
//
// # Implementations
//
//   - provider/anthropic: the Anthropic Messages API through the official
//     Go SDK, with retries on 429/5xx/overloaded and on a stream cut before
//     message_stop;
//   - provider/openai: OpenAI Chat Completions and compatible servers
//     (vLLM, Ollama, llama.cpp, LM Studio) through the official Go SDK, with
//     the same retry scheme;
//   - provider/scripted: a deterministic, offline model that replays a JSON
//     script, for demos and tests.
//
// # Shared machinery
//
// What the hosted providers do alike lives here: Restarts (retries, each
// announced with its wait, ended at once by cancellation), Timeouts (a
// bound on the wait for the first byte and between reads: a quiet
// connection is cut and retried), and EncodedMessages with JoinBody (each
// message of the history encoded once and sent again as those bytes, so a
// turn does not cost more as the conversation grows).
//
// Providers know tools only by their wire schema (ToolSpec); they never run
// them.
package provider
