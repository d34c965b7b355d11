package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/lite-agent/lite-agent/provider"
)

// Defaults filled in by New for zero Options fields.
const (
	defaultBaseURL        = "https://api.openai.com/v1"
	defaultMaxRetries     = 4
	defaultRetryBaseDelay = 500 * time.Millisecond
)

// maxRetryDelay caps one backoff wait, so that a large MaxRetries does not
// turn into waits of minutes.
const maxRetryDelay = 30 * time.Second

// maxErrorBody bounds how much of an error response is kept for its message.
const maxErrorBody = 64 << 10

// The two request fields that can carry the output token limit.
const (
	FieldMaxTokens           = "max_tokens"
	FieldMaxCompletionTokens = "max_completion_tokens"
)

// ErrNoAPIKey is returned by New when the base URL is OpenAI's own API and
// neither Options.APIKey nor OPENAI_API_KEY gives a key. Other servers may
// need none, so for them a missing key is not an error.
var ErrNoAPIKey = errors.New("openai: no API key for api.openai.com: set OPENAI_API_KEY (or Options.APIKey), or point the base URL at a local server")

// errStreamCut is the cause of a retry when the event stream ended cleanly
// but before any finish_reason: the server or a proxy dropped the response.
var errStreamCut = errors.New("stream ended before finish_reason")

// Options configures a Model. The zero value is usable; New copies it.
type Options struct {
	// APIKey overrides OPENAI_API_KEY. Without either, requests carry no
	// Authorization header, which is what keyless local servers expect.
	APIKey string
	// BaseURL overrides OPENAI_BASE_URL; the default is
	// https://api.openai.com/v1. It includes the version path, as in every
	// OpenAI SDK: requests go to BaseURL + "/chat/completions", e.g.
	// http://localhost:11434/v1 for Ollama.
	BaseURL string
	// MaxRetries is how many times one call is retried after its first
	// request: 0 means the default, 4; a negative value means none. The
	// budget is shared by the SDK's retries of error responses and this
	// package's restarts of broken streams, so one Stream call sends at most
	// MaxRetries+1 requests.
	MaxRetries int
	// RetryBaseDelay is the first backoff wait; the n-th retry waits
	// RetryBaseDelay·2^(n-1) plus up to a quarter of that as jitter, unless
	// the server says how long to wait (retry-after, retry-after-ms).
	// 0 means the default, 500ms.
	RetryBaseDelay time.Duration
	// MaxTokens is used when a Request does not set MaxTokens. 0 means no
	// limit is sent and the server's own default applies: unlike Anthropic's,
	// this API does not require one.
	MaxTokens int
	// TokenLimitField is the request field that carries the token limit:
	// FieldMaxCompletionTokens or FieldMaxTokens. Empty means
	// max_completion_tokens for api.openai.com, whose reasoning models refuse
	// max_tokens, and max_tokens for any other server, since that is the
	// field every OpenAI-compatible server knows.
	TokenLimitField string
	// HTTPClient replaces the SDK's default client (which has a
	// response-header timeout but no overall timeout, as streams are long).
	HTTPClient *http.Client
	// FirstByteTimeout bounds the wait from sending a request to the first
	// byte of its response, IdleTimeout the gaps between reads of the
	// stream after it. A request that hits either is cancelled and retried
	// like a cut stream. 0 means the environment's value
	// (provider.EnvFirstByteTimeout, provider.EnvIdleTimeout), else
	// provider.DefaultFirstByteTimeout (120 s: a local server reads the
	// whole prompt before its first byte) and provider.DefaultIdleTimeout
	// (60 s); negative means none.
	FirstByteTimeout time.Duration
	IdleTimeout      time.Duration
	// MaxServerWait is the longest retry-after honoured; a server asking
	// for more fails the call at once, naming its wait. 0 means
	// provider.DefaultMaxServerWait (60 s).
	MaxServerWait time.Duration
}

// Model is a provider.Model backed by an OpenAI-compatible Chat Completions
// API. It is safe for concurrent use: all per-call state lives in the
// Stream call.
type Model struct {
	client   sdk.Client
	opts     Options
	timeouts provider.Timeouts
	// encoded keeps the encoding of the messages sent
	// (provider.EncodedMessages).
	encoded *provider.EncodedMessages
}

var _ provider.Model = (*Model)(nil)

// New returns a Model. A nil opts means all defaults. An explicit option
// wins over the environment, and an empty variable counts as unset. See the
// package documentation for what is sent without a key.
func New(opts *Options) (*Model, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case o.MaxRetries == 0:
		o.MaxRetries = defaultMaxRetries
	case o.MaxRetries < 0:
		o.MaxRetries = 0
	}
	if o.RetryBaseDelay <= 0 {
		o.RetryBaseDelay = defaultRetryBaseDelay
	}
	if o.MaxTokens < 0 {
		o.MaxTokens = 0
	}
	timeouts, err := provider.Timeouts{FirstByte: o.FirstByteTimeout, Idle: o.IdleTimeout}.Resolve()
	if err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	if o.APIKey == "" {
		o.APIKey = os.Getenv("OPENAI_API_KEY")
	}
	if o.BaseURL == "" {
		o.BaseURL = os.Getenv("OPENAI_BASE_URL")
	}
	if o.BaseURL == "" {
		o.BaseURL = defaultBaseURL
	}
	// The SDK reports a bad base URL only on the first request; say it now.
	u, err := url.Parse(o.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: base URL %q: want an absolute http(s) URL such as http://localhost:11434/v1", o.BaseURL)
	}
	official := strings.EqualFold(u.Hostname(), "api.openai.com")
	if official && o.APIKey == "" {
		return nil, ErrNoAPIKey
	}
	switch o.TokenLimitField {
	case "":
		o.TokenLimitField = FieldMaxTokens
		if official {
			o.TokenLimitField = FieldMaxCompletionTokens
		}
	case FieldMaxTokens, FieldMaxCompletionTokens:
	default:
		return nil, fmt.Errorf("openai: TokenLimitField %q: want %q or %q", o.TokenLimitField, FieldMaxCompletionTokens, FieldMaxTokens)
	}

	// Both options are always passed, so that the SDK's own reading of
	// OPENAI_BASE_URL and OPENAI_API_KEY (which takes a set-but-empty
	// variable at face value) is overridden by the values resolved above.
	// WithAPIKey("") makes the SDK send no Authorization header at all.
	// The SDK retries nothing: every retry is ours, so that each is
	// announced with its wait (provider.Restarts).
	reqOpts := []option.RequestOption{
		option.WithBaseURL(o.BaseURL),
		option.WithAPIKey(o.APIKey),
		option.WithMaxRetries(0),
	}
	if o.HTTPClient != nil {
		reqOpts = append(reqOpts, option.WithHTTPClient(o.HTTPClient))
	}
	return &Model{client: sdk.NewClient(reqOpts...), opts: o, timeouts: timeouts, encoded: provider.NewEncodedMessages()}, nil
}

// Stream sends req and streams the answer. See the package documentation
// for what is retried and how.
func (m *Model) Stream(ctx context.Context, req *provider.Request) iter.Seq2[provider.Chunk, error] {
	return func(yield func(provider.Chunk, error) bool) {
		params, raws, err := m.params(req)
		if err != nil {
			yield(provider.Chunk{}, err)
			return
		}
		lean, body, err := requestBody(params, raws)
		if err != nil {
			yield(provider.Chunk{}, fmt.Errorf("openai: encoding the request: %w", err))
			return
		}
		c := &call{m: m, params: lean, body: body, budget: m.opts.MaxRetries + 1}
		c.run(ctx, yield)
	}
}

// call is the state of one Stream call across its attempts.
type call struct {
	m *Model
	// params are the request's parameters but its messages; body is the
	// whole request, encoded once for all attempts.
	params sdk.ChatCompletionNewParams
	body   []byte
	// budget is how many HTTP requests the call may send in all.
	budget int

	// What the middleware saw of the last response of the current attempt.
	// The middleware runs on the goroutine that calls NewStreaming, so these
	// need no lock.
	streaming bool               // a 2xx response: errors come from its body
	notSSE    *provider.BodyHead // a 2xx body not labelled text/event-stream
	ctype     string             // its Content-Type
	errResp   *httpErrorRes      // an error response, with its body
}

// httpErrorRes is what is kept of an error response. The SDK parses only
// OpenAI's own {"error": {...}} shape and fails on others (vLLM's top-level
// "message", a proxy's HTML page, {"error": "text"}), so the raw body is kept
// to give the user the server's message whatever its shape.
type httpErrorRes struct {
	status int
	header http.Header
	body   []byte
	url    string
}

func (c *call) run(ctx context.Context, yield func(provider.Chunk, error) bool) {
	r := provider.Restarts{Name: "openai", Budget: c.budget, Backoff: c.m.backoff,
		MaxServerWait: c.m.opts.MaxServerWait, Exhausted: exhausted}
	r.Run(ctx, yield, func(int) (provider.Outcome, error) { return c.attempt(ctx, yield) })
}

// middleware bounds the quiet of the connection (provider.Timeouts), keeps
// error bodies and notes what kind of success response came.
func (c *call) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	c.streaming, c.notSSE, c.errResp = false, nil, nil
	res, err := c.m.timeouts.Do(req, next)
	if err != nil || res == nil {
		return res, err
	}
	if res.StatusCode >= 400 {
		body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		res.Body.Close()
		res.Body = io.NopCloser(bytes.NewReader(body))
		c.errResp = &httpErrorRes{status: res.StatusCode, header: res.Header.Clone(), body: body, url: req.URL.Redacted()}
		return res, nil
	}
	c.streaming = true
	if !provider.IsEventStream(res.Header) {
		// A server that ignored "stream": true, answered 200 with an error
		// object, or a proxy's HTML page. The SSE decoder finds no events
		// in that, and the call would be retried as if cut; keep the start
		// of the body to report instead. The body is still read as a
		// stream, in case a server merely mislabels one.
		c.notSSE = &provider.BodyHead{ReadCloser: res.Body}
		c.ctype = res.Header.Get("Content-Type")
		res.Body = c.notSSE
	}
	return res, nil
}

// attempt sends one request (which the SDK may retry on error responses,
// within what is left of the budget) and streams its answer.
func (c *call) attempt(ctx context.Context, yield func(provider.Chunk, error) bool) (provider.Outcome, error) {
	// Cancelling actx on return aborts the request even if closing the
	// stream did not.
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.streaming, c.notSSE, c.errResp = false, nil, nil
	stream := c.m.client.Chat.Completions.NewStreaming(actx, c.params, option.WithMiddleware(c.middleware),
		option.WithRequestBody("application/json", c.body))
	defer stream.Close()

	var acc accumulator
	for stream.Next() {
		chunk := stream.Current()
		delta, err := acc.add(&chunk)
		if err != nil {
			return provider.Failed, fmt.Errorf("openai: malformed stream chunk: %w: %s", err, snippet([]byte(chunk.RawJSON())))
		}
		if delta != "" && !yield(provider.Chunk{Type: provider.ChunkTextDelta, Text: delta}, nil) {
			return provider.Done, nil
		}
	}
	if ctx.Err() != nil {
		return provider.Failed, fmt.Errorf("openai: %w", ctx.Err())
	}
	err := stream.Err()
	if !c.streaming {
		return c.requestError(err)
	}
	var evErr *ssestream.StreamError
	switch {
	case c.notSSE != nil && acc.chunks == 0 && !errors.As(err, &evErr):
		return provider.Failed, provider.NotEventStream("openai", c.ctype, c.notSSE.Head,
			`does the server support "stream": true, and is the base URL that of its API, e.g. http://localhost:11434/v1?`)
	case errors.As(err, &evErr):
		// An error object inside a 200 stream; the SDK does not retry those.
		e, transient := streamError(evErr)
		if transient {
			return provider.Retryable, e
		}
		return provider.Failed, fmt.Errorf("openai: %w", e)
	case isDecodeError(err):
		// A complete event that is not valid JSON is not a network fault.
		return provider.Failed, fmt.Errorf("openai: malformed stream chunk: %w", err)
	case !acc.finished && err == nil:
		return provider.Retryable, errStreamCut
	case !acc.finished:
		// A read error: connection reset, unexpected EOF, and the like.
		return provider.Retryable, err
	}
	// The answer is complete once a finish_reason has arrived: what may be
	// missing after it is the usage chunk and [DONE], which is not worth
	// paying for a second generation. The usage may be zero then.
	yield(provider.Chunk{Type: provider.ChunkMessage, Message: acc.message(), StopReason: acc.stopReason(), Usage: acc.usage}, nil)
	return provider.Done, nil
}

// requestError classifies an attempt whose request got no 2xx response:
// an error response, or a connection that failed or timed out.
func (c *call) requestError(err error) (provider.Outcome, error) {
	switch {
	case c.errResp != nil:
		var sdkErr *sdk.Error
		errors.As(err, &sdkErr)
		cause := newAPIError(c.errResp, sdkErr)
		if !retryResponse(c.errResp) {
			return provider.Failed, fmt.Errorf("openai: %w", cause)
		}
		if d, ok := retryAfter(c.errResp.header); ok {
			return provider.Retryable, provider.WithServerWait(cause, d)
		}
		return provider.Retryable, cause
	case err != nil:
		// No response at all: refused, reset, DNS, TLS, a first-byte timeout…
		return provider.Retryable, err
	}
	return provider.Failed, errors.New("openai: no response and no error from the SDK")
}

// exhausted is the error of a call whose retry budget ran out.
func exhausted(sent int, cause error) error {
	n := "attempts"
	if sent == 1 {
		n = "attempt"
	}
	return fmt.Errorf("openai: giving up after %d %s: %w", sent, n, cause)
}

// retryResponse is the SDK's rule for error responses: x-should-retry
// decides when the server sends it, else the status.
func retryResponse(r *httpErrorRes) bool {
	switch r.header.Get("X-Should-Retry") {
	case "true":
		return true
	case "false":
		return false
	}
	return retryableStatus(r.status)
}

// retryAfter reads the wait an error response asks for: retry-after-ms,
// else retry-after in seconds or as an HTTP date.
func retryAfter(h http.Header) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
			return time.Duration(s * float64(time.Second)), true
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(time.Until(t), 0), true
		}
	}
	return 0, false
}

// retryableStatus mirrors the SDK's own rule for error responses.
func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusConflict ||
		code == http.StatusTooManyRequests || code >= 500
}

// backoff is the wait before retry n+1 (n from 0): RetryBaseDelay·2^n, capped,
// plus up to 25% jitter so that many clients do not retry in step.
func (m *Model) backoff(n int) time.Duration {
	d := m.opts.RetryBaseDelay
	for i := 0; i < n && d < maxRetryDelay; i++ {
		d *= 2
	}
	d = min(d, maxRetryDelay)
	if q := int64(d / 4); q > 0 {
		d += time.Duration(rand.Int64N(q))
	}
	return d
}
