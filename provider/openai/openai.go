package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"mime"
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
}

// Model is a provider.Model backed by an OpenAI-compatible Chat Completions
// API. It is safe for concurrent use: all per-call state lives in the
// Stream call.
type Model struct {
	client sdk.Client
	opts   Options
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
	reqOpts := []option.RequestOption{
		option.WithBaseURL(o.BaseURL),
		option.WithAPIKey(o.APIKey),
		option.WithMaxRetries(o.MaxRetries),
	}
	if o.HTTPClient != nil {
		reqOpts = append(reqOpts, option.WithHTTPClient(o.HTTPClient))
	}
	return &Model{client: sdk.NewClient(reqOpts...), opts: o}, nil
}

// Stream sends req and streams the answer. See the package documentation
// for what is retried and how.
func (m *Model) Stream(ctx context.Context, req *provider.Request) iter.Seq2[provider.Chunk, error] {
	return func(yield func(provider.Chunk, error) bool) {
		params, err := m.params(req)
		if err != nil {
			yield(provider.Chunk{}, err)
			return
		}
		c := &call{m: m, params: params, budget: m.opts.MaxRetries + 1}
		c.run(ctx, yield)
	}
}

// call is the state of one Stream call across its attempts.
type call struct {
	m      *Model
	params sdk.ChatCompletionNewParams
	// budget is how many HTTP requests the call may send in all.
	budget int
	// sent counts the HTTP requests sent so far, by the SDK's retries and by
	// our restarts alike; the middleware increments it.
	sent int

	// What the middleware saw of the last response of the current attempt.
	// The middleware runs on the goroutine that calls NewStreaming, so these
	// need no lock.
	streaming bool          // a 2xx response: errors come from its body
	jsonBody  *headCapture  // a 2xx body labelled application/json
	errResp   *httpErrorRes // an error response, with its body
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
	r := provider.Restarts{Name: "openai", Budget: c.budget, Sent: func() int { return c.sent },
		Backoff: c.m.backoff, Exhausted: c.exhausted}
	r.Run(ctx, yield, func() (provider.Outcome, error) { return c.attempt(ctx, yield) })
}

// middleware counts requests, keeps error bodies and, for an error response
// that does not say how long to wait, tells the SDK to wait our backoff: the
// SDK's own schedule is fixed at 0.5s·2^n, so this is how RetryBaseDelay
// reaches it.
func (c *call) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	c.sent++
	c.streaming, c.jsonBody, c.errResp = false, nil, nil
	res, err := next(req)
	if err != nil || res == nil {
		return res, err
	}
	if res.StatusCode >= 400 {
		body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		res.Body.Close()
		res.Body = io.NopCloser(bytes.NewReader(body))
		c.errResp = &httpErrorRes{status: res.StatusCode, header: res.Header.Clone(), body: body, url: req.URL.Redacted()}
		if (retryableStatus(res.StatusCode) || res.Header.Get("X-Should-Retry") == "true") &&
			res.Header.Get("Retry-After-Ms") == "" && res.Header.Get("Retry-After") == "" {
			res.Header.Set("Retry-After-Ms", strconv.FormatInt(c.m.backoff(c.sent-1).Milliseconds(), 10))
		}
		return res, nil
	}
	c.streaming = true
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt == "application/json" {
		// A server that ignored "stream": true, or answered 200 with an
		// error object. The SSE decoder finds no events in that, and the
		// call would be retried as if cut; keep the start of the body to
		// report instead. The body is still read as a stream, in case a
		// server merely mislabels one.
		c.jsonBody = &headCapture{ReadCloser: res.Body}
		res.Body = c.jsonBody
	}
	return res, nil
}

// headCapture keeps the first bytes read through it.
type headCapture struct {
	io.ReadCloser
	head []byte
}

func (h *headCapture) Read(p []byte) (int, error) {
	n, err := h.ReadCloser.Read(p)
	if room := 512 - len(h.head); room > 0 {
		h.head = append(h.head, p[:min(n, room)]...)
	}
	return n, err
}

// attempt sends one request (which the SDK may retry on error responses,
// within what is left of the budget) and streams its answer.
func (c *call) attempt(ctx context.Context, yield func(provider.Chunk, error) bool) (provider.Outcome, error) {
	// Cancelling actx on return aborts the request even if closing the
	// stream did not.
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.streaming, c.jsonBody, c.errResp = false, nil, nil
	stream := c.m.client.Chat.Completions.NewStreaming(actx, c.params,
		option.WithMiddleware(c.middleware),
		option.WithMaxRetries(max(0, c.budget-c.sent-1)),
	)
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
		return provider.Failed, c.requestError(err)
	}
	var evErr *ssestream.StreamError
	switch {
	case c.jsonBody != nil && acc.chunks == 0:
		return provider.Failed, fmt.Errorf("openai: the server answered with application/json instead of an event stream (does it support \"stream\": true?): %s", snippet(c.jsonBody.head))
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

// requestError is the error of an attempt whose request got no 2xx response:
// the SDK has already retried it as far as the budget and the response
// allowed.
func (c *call) requestError(err error) error {
	var cause error
	switch {
	case c.errResp != nil:
		var sdkErr *sdk.Error
		errors.As(err, &sdkErr)
		cause = newAPIError(c.errResp, sdkErr)
		if !retryableStatus(c.errResp.status) {
			return fmt.Errorf("openai: %w", cause)
		}
	case err != nil:
		// No response at all: refused, reset, DNS, TLS…
		cause = err
	default:
		return errors.New("openai: no response and no error from the SDK")
	}
	if c.sent >= c.budget && c.sent > 1 {
		return c.exhausted(cause)
	}
	return fmt.Errorf("openai: %w", cause)
}

// exhausted is the error of a call whose retry budget ran out.
func (c *call) exhausted(cause error) error {
	n := "attempts"
	if c.sent == 1 {
		n = "attempt"
	}
	return fmt.Errorf("openai: giving up after %d %s: %w", c.sent, n, cause)
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
