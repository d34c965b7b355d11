// Package anthropic is a provider.Model for the Anthropic Messages API,
// built on the official Go SDK (github.com/anthropics/anthropic-sdk-go/v2).
//
// # Configuration
//
// New takes a nil-able *Options. The API key comes from Options.APIKey,
// else from ANTHROPIC_API_KEY; the base URL from Options.BaseURL, else from
// ANTHROPIC_BASE_URL, else the SDK default. An empty variable counts as
// unset, as in the SDK. Without a key New fails with ErrNoAPIKey rather than
// letting the first request fail: the SDK's other credential sources (auth
// token, profiles, federation) are not used, so a Model authenticates with
// exactly one key that the caller can name.
//
// # Streaming
//
// Stream yields a ChunkTextDelta per text delta as it arrives and, at
// message_stop, one ChunkMessage with the text and tool_use blocks in order,
// the stop reason and the usage (input, output and cache tokens from
// message_start, overwritten by the totals in message_delta). Thinking
// streams as ChunkThinkingDelta and is kept as a thinking block with its
// signature (redacted thinking as its opaque data), in place, because the
// API wants it back unmodified within a tool loop. The server web_search
// tool's server_tool_use and web_search_tool_result blocks are kept too,
// the result verbatim (it holds encrypted content), and are not tool_use
// blocks: the kernel never runs them. Ping events are ignored.
//
// # Requests
//
// max_tokens is the Request's, else Options.MaxTokens, else the model
// family's output limit (provider.LookupModel: 64,000 for Sonnet 4.x and
// Opus 4.5+, 32,000 for Opus 4/4.1), else 8192. Request.ThinkingBudget
// turns on extended thinking (max_tokens is raised above the budget if
// needed); Request.WebSearch adds the web_search_20250305 tool with its
// allowed domains.
//
// Prompt caching: the system block carries a cache_control breakpoint
// (covering the tools, which precede it in the cache order) and so does
// the last block of the newest message that can take one, so that every
// call reads the previous calls' prefix from the cache and writes only its
// new tail. That is two breakpoints per request, the API allowing four.
// A 400 "prompt is too long" wraps provider.ErrPromptTooLong.
//
// Tool input is accumulated here from the raw partial_json fragments, not
// by the SDK: the SDK would parse it, and a model that emits malformed JSON
// must have its exact text reach the kernel, which tells the model what was
// wrong. An empty input is "{}". In the other direction, a tool_use whose
// Input is not a JSON object is sent as {} because the API rejects anything
// else; the kernel has already answered it with an error tool_result.
//
// # Retries
//
// Two layers share one budget of Options.MaxRetries+1 HTTP requests per
// Stream call:
//
//   - The SDK retries an error response — 408, 409, 429, 5xx and 529
//     overloaded — unless the server sends x-should-retry: false, and a
//     connection that fails before any response. It waits what
//     retry-after-ms or retry-after says; when an error response gives
//     neither, a middleware supplies our backoff so that
//     Options.RetryBaseDelay governs it rather than the SDK's fixed
//     0.5s·2^n (a failed connection has no response to carry it, so there
//     the SDK's schedule stands). These retries happen before any text, so
//     they are silent.
//   - The SDK does not retry once the response has started: a stream cut
//     before message_stop (EOF, reset, unexpected EOF) or an error event
//     inside it (overloaded_error, api_error, rate_limit_error,
//     timeout_error). Stream restarts the whole request then, after
//     yielding a ChunkRetry so that the consumer can drop the partial text,
//     and waiting RetryBaseDelay·2^n plus up to 25% jitter. The chunk's
//     Attempt is the number of the request about to be sent, counting the
//     SDK's silent retries, and its Err the cause.
//
// Other errors are final at once and read like "anthropic: 401
// authentication_error: invalid x-api-key"; they unwrap to the SDK's
// *anthropic.Error for the status and headers. When the budget runs out the
// error says how many attempts were made and wraps the last cause. A
// cancelled context ends the stream promptly with an error wrapping
// ctx.Err(), and so does a consumer that stops iterating: the response body
// is closed and the request's context cancelled.
package anthropic
