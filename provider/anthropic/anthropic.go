package anthropic

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/lite-agent/lite-agent/provider"
)

// Defaults filled in by New for zero Options fields.
const (
	defaultMaxRetries     = 4
	defaultRetryBaseDelay = 500 * time.Millisecond
	// defaultMaxTokens is max_tokens for a model the family table
	// (provider.LookupModel) does not know.
	defaultMaxTokens = 8192
)

// maxBreakpoints is the API's limit of cache_control breakpoints in one
// request; a request with more is refused.
const maxBreakpoints = 4

// maxRetryDelay caps one backoff wait, so that a large MaxRetries does not
// turn into waits of minutes.
const maxRetryDelay = 30 * time.Second

// ErrNoAPIKey is returned by New when neither Options.APIKey nor the
// ANTHROPIC_API_KEY environment variable gives a key.
var ErrNoAPIKey = errors.New("anthropic: no API key: set ANTHROPIC_API_KEY (or Options.APIKey)")

// errStreamCut is the cause of a retry when the event stream ended cleanly
// but before message_stop: the server or a proxy dropped the response.
var errStreamCut = errors.New("stream ended before message_stop")

// Options configures a Model. The zero value is usable; New copies it.
type Options struct {
	// APIKey overrides ANTHROPIC_API_KEY.
	APIKey string
	// BaseURL overrides ANTHROPIC_BASE_URL; the default is the SDK's,
	// https://api.anthropic.com.
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
	// MaxTokens is used when a Request does not set MaxTokens. 0 means the
	// model family's output limit (provider.LookupModel: 64,000 for the
	// Sonnet and Opus 4.5+ families), or 8192 for a model it does not know.
	MaxTokens int
	// HTTPClient replaces the SDK's default client (which has a
	// response-header timeout but no overall timeout, as streams are long).
	HTTPClient *http.Client
	// FirstByteTimeout bounds the wait from sending a request to the first
	// byte of its response, IdleTimeout the gaps between reads of the
	// stream after it. A request that hits either is cancelled and retried
	// like a cut stream. 0 means the environment's value
	// (provider.EnvFirstByteTimeout, provider.EnvIdleTimeout), else
	// provider.DefaultFirstByteTimeout (120 s) and
	// provider.DefaultIdleTimeout (60 s); negative means none.
	FirstByteTimeout time.Duration
	IdleTimeout      time.Duration
	// MaxServerWait is the longest retry-after honoured; a server asking
	// for more fails the call at once, naming its wait. 0 means
	// provider.DefaultMaxServerWait (60 s).
	MaxServerWait time.Duration
}

// Model is a provider.Model backed by the Anthropic Messages API. It is safe
// for concurrent use: all per-call state lives in the Stream call.
type Model struct {
	client   sdk.Client
	opts     Options
	timeouts provider.Timeouts
	// encoded keeps the encoding of the messages sent
	// (provider.EncodedMessages).
	encoded *provider.EncodedMessages
}

var _ provider.Model = (*Model)(nil)

// New returns a Model. A nil opts means all defaults. The key and base URL
// are resolved as the official SDK resolves them: an explicit option wins,
// else a non-empty ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL; the SDK itself
// still applies ANTHROPIC_CUSTOM_HEADERS. Without a key New returns
// ErrNoAPIKey: other SDK credential sources (auth tokens, profiles,
// federation) are deliberately not consulted.
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
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	if o.APIKey == "" {
		// LookupEnv and a non-empty check, as the SDK does: an empty
		// variable counts as unset.
		if v, ok := os.LookupEnv("ANTHROPIC_API_KEY"); ok && v != "" {
			o.APIKey = v
		}
	}
	if o.APIKey == "" {
		return nil, ErrNoAPIKey
	}
	if o.BaseURL == "" {
		if v, ok := os.LookupEnv("ANTHROPIC_BASE_URL"); ok && v != "" {
			o.BaseURL = v
		}
	}

	// Passing WithAPIKey makes the SDK skip its own credential chain, so a
	// stray ANTHROPIC_AUTH_TOKEN or profile on disk cannot add a second
	// credential to our requests. The SDK retries nothing: every retry is
	// ours, so that each is announced with its wait (provider.Restarts).
	reqOpts := []option.RequestOption{
		option.WithAPIKey(o.APIKey),
		option.WithMaxRetries(0),
	}
	if o.BaseURL != "" {
		// The SDK reports a bad base URL only on the first request; say it now.
		u, err := url.Parse(o.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("anthropic: base URL %q: want an absolute http(s) URL", o.BaseURL)
		}
		reqOpts = append(reqOpts, option.WithBaseURL(o.BaseURL))
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
			yield(provider.Chunk{}, fmt.Errorf("anthropic: encoding the request: %w", err))
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
	// whole request, encoded once for all attempts (msgcache.go).
	params sdk.MessageNewParams
	body   []byte
	// budget is how many HTTP requests the call may send in all.
	budget int
	// streaming says whether the last request got a success response, so
	// that an error is known to come from reading its stream rather than
	// from an error response or a failed connection.
	streaming bool
	// notSSE is the body of a success response whose Content-Type is not
	// text/event-stream, kept to name it if no event comes of it.
	notSSE      *provider.BodyHead
	contentType string
}

func (c *call) run(ctx context.Context, yield func(provider.Chunk, error) bool) {
	r := provider.Restarts{Name: "anthropic", Budget: c.budget, Backoff: c.m.backoff,
		MaxServerWait: c.m.opts.MaxServerWait, Exhausted: exhausted}
	r.Run(ctx, yield, func(int) (provider.Outcome, error) { return c.attempt(ctx, yield) })
}

// middleware bounds the quiet of the connection (provider.Timeouts) and
// notes what kind of response came.
func (c *call) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := c.m.timeouts.Do(req, next)
	c.streaming = err == nil && res != nil && res.StatusCode < 400
	if c.streaming && !provider.IsEventStream(res.Header) {
		c.notSSE = &provider.BodyHead{ReadCloser: res.Body}
		c.contentType = res.Header.Get("Content-Type")
		res.Body = c.notSSE
	}
	return res, err
}

// attempt sends one request (which the SDK may retry on error responses,
// within what is left of the budget) and streams its answer.
func (c *call) attempt(ctx context.Context, yield func(provider.Chunk, error) bool) (provider.Outcome, error) {
	// Cancelling actx on return aborts the request even if closing the
	// stream did not.
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.streaming, c.notSSE = false, nil
	stream := c.m.client.Messages.NewStreaming(actx, c.params, option.WithMiddleware(c.middleware),
		option.WithRequestBody("application/json", c.body))
	defer stream.Close()

	var acc accumulator
	for stream.Next() {
		acc.events++
		ev := stream.Current()
		delta, stop, err := acc.add(&ev)
		if err != nil {
			return provider.Failed, err
		}
		if delta.text != "" && !yield(provider.Chunk{Type: delta.kind, Text: delta.text}, nil) {
			return provider.Done, nil
		}
		if stop {
			msg := acc.message()
			yield(provider.Chunk{Type: provider.ChunkMessage, Message: msg, StopReason: acc.stop, Usage: acc.usage}, nil)
			return provider.Done, nil
		}
	}
	return c.classify(ctx, stream, acc.events)
}

// classify decides whether the error that ended a stream early is final.
func (c *call) classify(ctx context.Context, stream *ssestream.Stream[sdk.MessageStreamEventUnion], events int) (provider.Outcome, error) {
	if ctx.Err() != nil {
		return provider.Failed, fmt.Errorf("anthropic: %w", ctx.Err())
	}
	err := stream.Err()
	var apiErr *sdk.Error
	isAPI := errors.As(err, &apiErr)

	if !c.streaming {
		// The request failed before any stream: an error response, or a
		// connection that failed or timed out. (A request that never
		// reached the middleware failed while being built.)
		if err == nil {
			return provider.Failed, errors.New("anthropic: no response and no error from the SDK")
		}
		if !isAPI {
			return provider.Retryable, err
		}
		cause := wrapAPIError(apiErr)
		if isPromptTooLong(apiErr) {
			return provider.Failed, fmt.Errorf("anthropic: %w (%w)", cause, provider.ErrPromptTooLong)
		}
		if !retryResponse(apiErr.Response) {
			return provider.Failed, fmt.Errorf("anthropic: %w", cause)
		}
		if d, ok := retryAfter(apiErr.Response); ok {
			return provider.Retryable, provider.WithServerWait(cause, d)
		}
		return provider.Retryable, cause
	}
	if c.notSSE != nil && events == 0 && !isAPI {
		return provider.Failed, provider.NotEventStream("anthropic", c.contentType, c.notSSE.Head,
			"is the base URL that of the Messages API?")
	}

	switch {
	case err == nil:
		return provider.Retryable, errStreamCut
	case isAPI:
		// An `event: error` in the stream; the SDK does not retry those.
		e := wrapAPIError(apiErr)
		if retryableType(string(apiErr.Type())) {
			return provider.Retryable, e
		}
		return provider.Failed, fmt.Errorf("anthropic: %w", e)
	case isDecodeError(err):
		// A complete event that is not valid JSON is not a network fault.
		return provider.Failed, fmt.Errorf("anthropic: malformed stream event: %w", err)
	default:
		// A read error: connection reset, unexpected EOF, and the like.
		return provider.Retryable, err
	}
}

// exhausted is the error of a call whose retry budget ran out.
func exhausted(sent int, cause error) error {
	n := "attempts"
	if sent == 1 {
		n = "attempt"
	}
	return fmt.Errorf("anthropic: giving up after %d %s: %w", sent, n, cause)
}

// retryResponse is the SDK's rule for error responses: x-should-retry
// decides when the server sends it, else the status.
func retryResponse(res *http.Response) bool {
	if res == nil {
		return false
	}
	switch res.Header.Get("X-Should-Retry") {
	case "true":
		return true
	case "false":
		return false
	}
	return retryableStatus(res.StatusCode)
}

// retryAfter reads the wait an error response asks for: retry-after-ms,
// else retry-after in seconds or as an HTTP date.
func retryAfter(res *http.Response) (time.Duration, bool) {
	if res == nil {
		return 0, false
	}
	if v := res.Header.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	if v := res.Header.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
			return time.Duration(s * float64(time.Second)), true
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(time.Until(t), 0), true
		}
	}
	return 0, false
}

func isDecodeError(err error) bool {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.As(err, &syn) || errors.As(err, &typ)
}

// isPromptTooLong recognises the API's refusal of a request that does not
// fit the context window: 400 invalid_request_error "prompt is too long:
// 201428 tokens > 200000 maximum".
func isPromptTooLong(e *sdk.Error) bool {
	return e.StatusCode == http.StatusBadRequest && strings.Contains(strings.ToLower(e.Message+e.RawJSON()), "prompt is too long")
}

// retryableStatus mirrors the SDK's own rule for error responses.
func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusConflict ||
		code == http.StatusTooManyRequests || code >= 500
}

// retryableType reports whether an error event mid-stream is transient.
func retryableType(t string) bool {
	switch t {
	case "overloaded_error", "api_error", "rate_limit_error", "timeout_error":
		return true
	}
	return false
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

// apiError is an API error with a short message: the SDK's own Error()
// includes the method, URL and raw body. It unwraps to the *sdk.Error for
// callers that need the status or headers.
type apiError struct {
	msg string
	err *sdk.Error
}

func (e *apiError) Error() string { return e.msg }
func (e *apiError) Unwrap() error { return e.err }

// wrapAPIError formats e as "401 authentication_error: invalid x-api-key";
// callers add the "anthropic: " prefix once, to the final error. Error events
// inside a 200 stream carry no status of their own, so theirs is left out.
func wrapAPIError(e *sdk.Error) error {
	var b strings.Builder
	if e.StatusCode >= 400 {
		fmt.Fprintf(&b, "%d ", e.StatusCode)
	} else {
		b.WriteString("stream error: ")
	}
	typ, msg := string(e.Type()), e.Message
	switch {
	case typ != "" && msg != "":
		fmt.Fprintf(&b, "%s: %s", typ, msg)
	case typ != "":
		b.WriteString(typ)
	case msg != "":
		b.WriteString(msg)
	case strings.TrimSpace(e.RawJSON()) != "":
		b.WriteString(strings.TrimSpace(e.RawJSON()))
	default:
		b.WriteString(http.StatusText(e.StatusCode))
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " (request-id %s)", e.RequestID)
	}
	return &apiError{msg: b.String(), err: e}
}

// accumulator builds the assistant message from stream events. Tool input
// is kept as the raw text of the input_json_delta fragments, unparsed, so
// that malformed JSON reaches the kernel as the model sent it.
type accumulator struct {
	events int    // events decoded
	blocks []slot // by content block index
	stop   provider.StopReason
	usage  provider.Usage
}

type slot struct {
	kind  provider.BlockType // "" for blocks we skip (unknown kinds)
	text  strings.Builder    // text; thinking
	sig   strings.Builder    // thinking: signature; redacted_thinking: data
	id    string
	name  string
	input strings.Builder
	raw   json.RawMessage // web_search_tool_result content
}

// streamed is what one event adds to the stream: a text or thinking delta.
type streamed struct {
	kind provider.ChunkType
	text string
}

// add applies one event. It returns what to stream, and whether the event
// was message_stop.
func (a *accumulator) add(ev *sdk.MessageStreamEventUnion) (delta streamed, stop bool, err error) {
	switch ev.Type {
	case "message_start":
		u := ev.Message.Usage
		a.usage = provider.Usage{
			InputTokens:              u.InputTokens,
			OutputTokens:             u.OutputTokens,
			CacheCreationInputTokens: u.CacheCreationInputTokens,
			CacheReadInputTokens:     u.CacheReadInputTokens,
		}
	case "content_block_start":
		i := int(ev.Index)
		if i < 0 || i > 10000 {
			return delta, false, fmt.Errorf("anthropic: content block index %d out of range", ev.Index)
		}
		for len(a.blocks) <= i {
			a.blocks = append(a.blocks, slot{})
		}
		s := &a.blocks[i]
		switch cb := ev.ContentBlock; cb.Type {
		case "text":
			s.kind = provider.BlockText
			s.text.WriteString(cb.Text)
			delta = streamed{provider.ChunkTextDelta, cb.Text}
		case "thinking":
			s.kind = provider.BlockThinking
			s.text.WriteString(cb.Thinking)
			s.sig.WriteString(cb.Signature)
			delta = streamed{provider.ChunkThinkingDelta, cb.Thinking}
		case "redacted_thinking":
			s.kind = provider.BlockRedactedThinking
			s.sig.WriteString(cb.Data)
		case "tool_use":
			s.kind = provider.BlockToolUse
			s.id, s.name = cb.ID, cb.Name
		case "server_tool_use":
			s.kind = provider.BlockServerToolUse
			s.id, s.name = cb.ID, cb.Name
		case "web_search_tool_result":
			// Kept verbatim: its results carry encrypted content that
			// must go back to the API unchanged.
			s.kind = provider.BlockWebSearchResult
			s.id = cb.ToolUseID
			s.raw = json.RawMessage(cb.JSON.Content.Raw())
		}
	case "content_block_delta":
		i := int(ev.Index)
		if i < 0 || i >= len(a.blocks) {
			return delta, false, fmt.Errorf("anthropic: delta for content block %d, which did not start", ev.Index)
		}
		s := &a.blocks[i]
		switch {
		case ev.Delta.Type == "text_delta" && s.kind == provider.BlockText:
			s.text.WriteString(ev.Delta.Text)
			delta = streamed{provider.ChunkTextDelta, ev.Delta.Text}
		case ev.Delta.Type == "thinking_delta" && s.kind == provider.BlockThinking:
			s.text.WriteString(ev.Delta.Thinking)
			delta = streamed{provider.ChunkThinkingDelta, ev.Delta.Thinking}
		case ev.Delta.Type == "signature_delta" && s.kind == provider.BlockThinking:
			s.sig.WriteString(ev.Delta.Signature)
		case ev.Delta.Type == "input_json_delta" && (s.kind == provider.BlockToolUse || s.kind == provider.BlockServerToolUse):
			s.input.WriteString(ev.Delta.PartialJSON)
		}
	case "message_delta":
		if ev.Delta.StopReason != "" {
			a.stop = provider.StopReason(ev.Delta.StopReason)
		}
		// Counts in message_delta are totals for the message, not
		// increments; the input and cache counts are there only sometimes.
		u := ev.Usage
		a.usage.OutputTokens = u.OutputTokens
		if u.JSON.InputTokens.Valid() {
			a.usage.InputTokens = u.InputTokens
		}
		if u.JSON.CacheCreationInputTokens.Valid() {
			a.usage.CacheCreationInputTokens = u.CacheCreationInputTokens
		}
		if u.JSON.CacheReadInputTokens.Valid() {
			a.usage.CacheReadInputTokens = u.CacheReadInputTokens
		}
	case "message_stop":
		stop = true
	}
	return delta, stop, nil
}

// message returns the blocks in index order. Empty text blocks are
// dropped: the API refuses them when they are sent back. Thinking blocks
// are kept with their signatures, in place: the API requires them back,
// unmodified, when the turn continues with tool results.
func (a *accumulator) message() *provider.Message {
	msg := &provider.Message{Role: provider.RoleAssistant, Content: []provider.Block{}}
	for i := range a.blocks {
		s := &a.blocks[i]
		switch s.kind {
		case provider.BlockText:
			if s.text.Len() > 0 {
				msg.Content = append(msg.Content, provider.Block{Type: provider.BlockText, Text: s.text.String()})
			}
		case provider.BlockThinking:
			msg.Content = append(msg.Content, provider.Block{Type: provider.BlockThinking, Text: s.text.String(), Signature: s.sig.String()})
		case provider.BlockRedactedThinking:
			msg.Content = append(msg.Content, provider.Block{Type: provider.BlockRedactedThinking, Signature: s.sig.String()})
		case provider.BlockToolUse, provider.BlockServerToolUse:
			in := s.input.String()
			if strings.TrimSpace(in) == "" {
				in = "{}"
			}
			msg.Content = append(msg.Content, provider.Block{
				Type: s.kind, ID: s.id, Name: s.name, Input: json.RawMessage(in),
			})
		case provider.BlockWebSearchResult:
			msg.Content = append(msg.Content, provider.Block{Type: provider.BlockWebSearchResult, ToolUseID: s.id, Raw: s.raw})
		}
	}
	return msg
}

// maxTokens is the request's max_tokens: the request's own, else the
// Options', else the model family's output limit.
func (m *Model) maxTokens(req *provider.Request) int64 {
	switch {
	case req.MaxTokens > 0:
		return int64(req.MaxTokens)
	case m.opts.MaxTokens > 0:
		return int64(m.opts.MaxTokens)
	}
	if n := provider.LookupModel(req.Model).MaxOutputTokens; n > 0 {
		return int64(n)
	}
	return defaultMaxTokens
}

// params maps a provider.Request to the SDK's request parameters.
//
// # Cache breakpoints
//
// The API caches a request's prefix in the order tools → system →
// messages, up to a block carrying cache_control, and a later request
// reads the longest prefix written before. Two breakpoints do it all:
// one on the (last) system block — it covers the tools as well, which
// come first — so that the stable prefix is cached once per session; and
// one on the last cacheable block of the newest message, so that each
// call writes its new tail and the next call reads everything before its
// own new tail. The newest-message breakpoint moves forward every turn,
// which leaves the count at two, under the API's limit of four; a
// subagent's calls get the same two.
func (m *Model) params(req *provider.Request) (p sdk.MessageNewParams, raws [][]byte, err error) {
	if req == nil {
		return p, nil, errors.New("anthropic: nil Request")
	}
	if req.Model == "" {
		return p, nil, errors.New("anthropic: Request.Model is empty")
	}
	p.Model = sdk.Model(req.Model)
	p.MaxTokens = m.maxTokens(req)
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System, CacheControl: sdk.NewCacheControlEphemeralParam()}}
	}
	if b := int64(req.ThinkingBudget); b > 0 {
		if b < 1024 {
			return p, nil, fmt.Errorf("anthropic: thinking budget %d is below the API's minimum of 1024 tokens", b)
		}
		if b >= p.MaxTokens {
			// The budget is part of max_tokens: leave the answer room.
			p.MaxTokens = b + min(p.MaxTokens, 16_000)
		}
		p.Thinking = sdk.ThinkingConfigParamUnion{OfEnabled: &sdk.ThinkingConfigEnabledParam{BudgetTokens: b}}
	}
	for i, t := range req.Tools {
		tp, err := toolParam(t)
		if err != nil {
			return p, nil, fmt.Errorf("anthropic: tools[%d]: %w", i, err)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: tp})
	}
	if ws := req.WebSearch; ws != nil {
		t := &sdk.WebSearchTool20250305Param{AllowedDomains: ws.AllowedDomains}
		if ws.MaxUses > 0 {
			t.MaxUses = param.NewOpt(int64(ws.MaxUses))
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfWebSearchTool20250305: t})
	}
	// Every message but the newest (which carries the moving breakpoint)
	// is sent as encoded before, when its content is the same
	// (provider.EncodedMessages).
	gen := m.encoded.Begin()
	defer m.encoded.End(gen)
	var keyBuf []byte
	for i := range req.Messages {
		msg := &req.Messages[i]
		newest := i == len(req.Messages)-1
		var key provider.MessageKey
		if !newest {
			var raw []byte
			var ok bool
			if key, raw, ok = m.encoded.Get(msg, gen, &keyBuf); ok {
				p.Messages = append(p.Messages, param.Override[sdk.MessageParam](raw))
				raws = append(raws, raw)
				continue
			}
		}
		blocks, err := contentParams(msg.Content)
		if err != nil {
			return p, nil, fmt.Errorf("anthropic: messages[%d]: %w", i, err)
		}
		if newest {
			markNewest(blocks)
		}
		var mp sdk.MessageParam
		switch msg.Role {
		case provider.RoleUser:
			mp = sdk.MessageParam{OfUser: &sdk.UserMessageParam{Content: blocks}}
		case provider.RoleAssistant:
			mp = sdk.MessageParam{OfAssistant: &sdk.AssistantMessageParam{Content: blocks}}
		default:
			return p, nil, fmt.Errorf("anthropic: messages[%d]: unknown role %q", i, msg.Role)
		}
		raw, err := mp.MarshalJSON()
		if err != nil {
			return p, nil, fmt.Errorf("anthropic: messages[%d]: %w", i, err)
		}
		if !newest {
			m.encoded.Put(key, raw, gen)
		}
		p.Messages = append(p.Messages, param.Override[sdk.MessageParam](json.RawMessage(raw)))
		raws = append(raws, raw)
	}
	return p, raws, nil
}

// markNewest puts the moving cache breakpoint on the last block of the
// newest message that can carry one (thinking blocks and verbatim server
// results cannot).
func markNewest(blocks []sdk.ContentBlockParamUnion) {
	cc := sdk.NewCacheControlEphemeralParam()
	for i := len(blocks) - 1; i >= 0; i-- {
		b := &blocks[i]
		switch {
		case b.OfText != nil:
			b.OfText.CacheControl = cc
		case b.OfToolResult != nil:
			b.OfToolResult.CacheControl = cc
		case b.OfToolUse != nil:
			b.OfToolUse.CacheControl = cc
		case b.OfImage != nil:
			b.OfImage.CacheControl = cc
		case b.OfServerToolUse != nil:
			b.OfServerToolUse.CacheControl = cc
		default:
			continue
		}
		return
	}
}

// toolParam sends the tool's JSON schema verbatim as input_schema, so that
// nothing the schema says ($defs, additionalProperties…) is lost to the
// SDK's typed ToolInputSchemaParam.
func toolParam(t provider.ToolSpec) (*sdk.ToolParam, error) {
	if t.Name == "" {
		return nil, errors.New("tool has no name")
	}
	schema := bytes.TrimSpace(t.InputSchema)
	if len(schema) == 0 {
		schema = []byte(`{"type":"object"}`)
	}
	if !isJSONObject(schema) {
		return nil, fmt.Errorf("tool %q: input schema is not a JSON object", t.Name)
	}
	tp := &sdk.ToolParam{
		Name:        t.Name,
		InputSchema: param.Override[sdk.ToolInputSchemaParam](json.RawMessage(schema)),
	}
	if t.Description != "" {
		tp.Description = param.NewOpt(t.Description)
	}
	return tp, nil
}

func contentParams(blocks []provider.Block) ([]sdk.ContentBlockParamUnion, error) {
	out := make([]sdk.ContentBlockParamUnion, 0, len(blocks))
	for j, b := range blocks {
		switch b.Type {
		case provider.BlockText:
			if b.Text == "" {
				continue // the API rejects empty text blocks
			}
			out = append(out, sdk.ContentBlockParamUnion{OfText: &sdk.TextBlockParam{Text: b.Text}})
		case provider.BlockImage:
			img, err := imageParam(b)
			if err != nil {
				return nil, fmt.Errorf("content[%d]: %w", j, err)
			}
			out = append(out, sdk.ContentBlockParamUnion{OfImage: img})
		case provider.BlockToolUse:
			// Input is the model's raw text and may not be a JSON object;
			// the API accepts only an object, and the kernel has already
			// told the model about its bad arguments in the tool_result.
			in := json.RawMessage(bytes.TrimSpace(b.Input))
			if !isJSONObject(in) {
				in = json.RawMessage("{}")
			}
			out = append(out, sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{ID: b.ID, Name: b.Name, Input: in}})
		case provider.BlockThinking:
			out = append(out, sdk.ContentBlockParamUnion{OfThinking: &sdk.ThinkingBlockParam{Thinking: b.Text, Signature: b.Signature}})
		case provider.BlockRedactedThinking:
			out = append(out, sdk.ContentBlockParamUnion{OfRedactedThinking: &sdk.RedactedThinkingBlockParam{Data: b.Signature}})
		case provider.BlockServerToolUse:
			in := json.RawMessage(bytes.TrimSpace(b.Input))
			if !isJSONObject(in) {
				in = json.RawMessage("{}")
			}
			out = append(out, sdk.ContentBlockParamUnion{OfServerToolUse: &sdk.ServerToolUseBlockParam{ID: b.ID, Name: sdk.ServerToolUseBlockParamName(b.Name), Input: in}})
		case provider.BlockWebSearchResult:
			raw := b.Raw
			if !json.Valid(raw) {
				return nil, fmt.Errorf("content[%d]: web_search_tool_result without valid content", j)
			}
			whole, err := json.Marshal(struct {
				Type      string          `json:"type"`
				ToolUseID string          `json:"tool_use_id"`
				Content   json.RawMessage `json:"content"`
			}{"web_search_tool_result", b.ToolUseID, raw})
			if err != nil {
				return nil, fmt.Errorf("content[%d]: %w", j, err)
			}
			wr := param.Override[sdk.WebSearchToolResultBlockParam](json.RawMessage(whole))
			out = append(out, sdk.ContentBlockParamUnion{OfWebSearchToolResult: &wr})
		case provider.BlockToolResult:
			tr := &sdk.ToolResultBlockParam{ToolUseID: b.ToolUseID}
			if b.IsError {
				tr.IsError = param.NewOpt(true)
			}
			for k, c := range b.Content {
				switch c.Type {
				case provider.BlockText:
					if c.Text == "" {
						continue
					}
					tr.Content = append(tr.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: c.Text}})
				case provider.BlockImage:
					img, err := imageParam(c)
					if err != nil {
						return nil, fmt.Errorf("content[%d].content[%d]: %w", j, k, err)
					}
					tr.Content = append(tr.Content, sdk.ToolResultBlockParamContentUnion{OfImage: img})
				default:
					return nil, fmt.Errorf("content[%d].content[%d]: block type %q cannot be in a tool_result", j, k, c.Type)
				}
			}
			out = append(out, sdk.ContentBlockParamUnion{OfToolResult: tr})
		default:
			return nil, fmt.Errorf("content[%d]: unsupported block type %q", j, b.Type)
		}
	}
	return out, nil
}

func imageParam(b provider.Block) (*sdk.ImageBlockParam, error) {
	mime := b.MIMEType
	if mime == "" {
		mime = http.DetectContentType(b.Data)
	}
	if !strings.HasPrefix(mime, "image/") {
		return nil, fmt.Errorf("image block: MIME type %q is not an image type", mime)
	}
	return &sdk.ImageBlockParam{Source: sdk.ImageBlockParamSourceUnion{OfBase64: &sdk.Base64ImageSourceParam{
		Data:      base64.StdEncoding.EncodeToString(b.Data),
		MediaType: sdk.Base64ImageSourceMediaType(mime),
	}}}, nil
}

// isJSONObject reports whether b is one valid JSON object.
func isJSONObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}
