// Package openai is a provider.Model for OpenAI's Chat Completions API and
// the many servers that copy it — vLLM, Ollama, llama.cpp's llama-server,
// LM Studio, LiteLLM and other proxies — built on the official Go SDK
// (github.com/openai/openai-go/v3).
//
// # Usage
//
// With OpenAI itself, set OPENAI_API_KEY and name a model:
//
//	export OPENAI_API_KEY=sk-...
//	lite-agent run --provider openai --model gpt-4.1 "fix the failing test"
//
// With a local server, point the base URL at it; most need no key:
//
//	lite-agent run --provider openai --base-url http://localhost:11434/v1 --model qwen3:8b "..."   # Ollama
//	lite-agent run --provider openai --base-url http://localhost:8000/v1 --model Qwen/Qwen3-8B "..."  # vLLM
//	lite-agent run --provider openai --base-url http://localhost:8080/v1 --model any "..."        # llama-server
//
// The model must support tool calling, and the server must have it turned
// on (vLLM: --enable-auto-tool-choice --tool-call-parser …; llama-server:
// --jinja). OPENAI_BASE_URL may replace --base-url, and --api-key sets a key
// for a server started with one; prefer OPENAI_API_KEY, as a flag is visible
// to other users in the process list.
//
// From Go:
//
//	m, err := openai.New(&openai.Options{BaseURL: "http://localhost:11434/v1"})
//	...
//	for c, err := range m.Stream(ctx, &provider.Request{Model: "qwen3:8b", ...}) { ... }
//
// # Configuration
//
// New takes a nil-able *Options. The API key comes from Options.APIKey,
// else from OPENAI_API_KEY; the base URL from Options.BaseURL, else from
// OPENAI_BASE_URL, else https://api.openai.com/v1. An empty variable counts
// as unset. The base URL includes the version path, as in every OpenAI SDK:
// requests go to BaseURL + "/chat/completions".
//
// Without a key, requests carry no Authorization header at all, rather than
// a placeholder such as "Bearer none": keyless servers ignore the header
// either way, a server started with a key rejects both alike, and no header
// is the only choice that sends nothing pretending to be a credential. New
// refuses a missing key only for api.openai.com (ErrNoAPIKey), where no
// request could succeed. Note that OPENAI_API_KEY is used for whatever base
// URL is set, as the official SDKs do: do not leave a real key in the
// environment when pointing the base URL at a server you do not trust. The
// SDK itself still applies OPENAI_ORG_ID, OPENAI_PROJECT_ID and
// OPENAI_CUSTOM_HEADERS.
//
// # Requests
//
// The system prompt is a system message. Tools are function tools whose
// parameters are the tool's JSON schema as given. A user message is sent
// as a plain string when it holds only text (blocks joined by a blank line,
// the one form every server's chat template accepts) and as content parts
// when it holds images, which go as image_url data: URLs.
//
// Tool results become role "tool" messages with their tool_call_id, placed
// before any other content of the same provider message since they must
// follow the assistant's tool calls directly. Their text blocks are joined
// by newlines. The API has no is_error flag, so an error result's text is
// prefixed with "Error: " unless it already starts so; and a tool message
// can carry only text, so an image in a result is replaced by a note naming
// its type and size.
//
// A past tool call is sent back with its arguments verbatim when they are
// a JSON object and as {} otherwise: servers that render tool calls through
// a chat template parse those arguments and reject the request when they
// cannot, and the kernel has already told the model what was wrong.
//
// The token limit is Request.MaxTokens, else Options.MaxTokens, else none
// (the server's default). It is sent as max_completion_tokens to
// api.openai.com, whose reasoning models refuse max_tokens, and as
// max_tokens elsewhere, the field every compatible server knows;
// Options.TokenLimitField overrides the choice.
//
// # Streaming
//
// Requests set "stream": true and stream_options.include_usage. Stream
// yields a ChunkTextDelta per content delta as it arrives and, at the end
// of the stream, one ChunkMessage with the text block, then the tool_use
// blocks in the order the calls began, the stop reason and the usage.
//
// Tool calls are assembled here from their fragments, by the index each
// fragment names (or, for servers that leave the index out, by id). The id
// and name come first, the argument text in any number of pieces; the
// pieces are concatenated unparsed, so malformed JSON reaches the kernel as
// the model sent it, and empty arguments become "{}". A call without an id
// keeps an empty ID, which the kernel replaces. Reasoning fields that some
// servers add to deltas are skipped. Refusal text is streamed and kept as
// text, and makes the stop reason refusal.
//
// finish_reason maps as stop → end_turn, tool_calls → tool_use, length →
// max_tokens, content_filter → refusal. Several local servers answer "stop"
// to a turn that made tool calls, so any turn with tool calls (unless cut by
// length or a content filter) is tool_use. Usage comes from the chunk that
// carries it, the last one with include_usage: InputTokens
// is prompt_tokens less the cached_tokens, which are reported as
// CacheReadInputTokens, so that the counts mean what they mean for the
// Anthropic provider.
//
// # Retries
//
// Two layers share one budget of Options.MaxRetries+1 HTTP requests per
// Stream call:
//
//   - The SDK retries an error response — 408, 409, 429 and 5xx — unless the
//     server sends x-should-retry: false, and a connection that fails before
//     any response. It waits what retry-after-ms or retry-after says; when an
//     error response gives neither, a middleware supplies our backoff so that
//     Options.RetryBaseDelay governs it rather than the SDK's own 0.5s·2^n (a
//     failed connection has no response to carry it, so there the SDK's
//     schedule stands). These retries happen before any text, so they are
//     silent.
//   - The SDK does not retry once a 200 response has started: a stream that
//     ends without any finish_reason (cleanly, or with a reset or unexpected
//     EOF) or that carries an error object naming a transient condition
//     (server_error, rate limits, overload, timeouts, or a 429/5xx code).
//     Stream restarts the whole request then, after yielding a ChunkRetry so
//     that the consumer can drop the partial text, and waiting
//     RetryBaseDelay·2^n plus up to 25% jitter. The chunk's Attempt is the
//     number of the request about to be sent, counting the SDK's silent
//     retries, and its Err the cause.
//
// A stream is complete once a finish_reason has arrived. If it is cut after
// that, before the usage chunk or data: [DONE], the message is delivered
// with zero usage rather than paid for twice. (The SDK does not say whether
// it saw [DONE], so finish_reason is what tells a whole answer from a cut
// one.)
//
// # Errors
//
// Other errors are final at once and read like "openai: 401
// invalid_request_error: Incorrect API key provided (code invalid_api_key)".
// They are *APIError values carrying the status and the server's message,
// read from the raw body whatever its shape — OpenAI's {"error": {...}},
// {"error": "text"}, vLLM's top-level message, FastAPI's detail, or the text
// of a plain body — since the SDK parses only the first. A 404 whose body
// says nothing names the URL and suggests checking the base URL. When the
// budget runs out the error says how many attempts were made and wraps the
// last cause. A chunk that is not valid JSON, or names a tool-call index
// that is not a small non-negative integer, ends the stream with an error
// saying so, without a retry: a server that sends one will send it again.
// Valid JSON of an odd shape (nulls, missing fields, a number for a
// string) is read as leniently as the SDK reads it. A 200 answer in
// application/json that holds no event is reported, with the start of its
// body, rather than retried as a cut stream.
//
// A cancelled context ends the stream promptly with an error wrapping
// ctx.Err(), during a request, a stream or a backoff wait alike. A consumer
// that stops iterating ends the call just as promptly: the response body is
// closed and the request's context cancelled.
package openai
