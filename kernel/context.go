package kernel

// Context management: the kernel knows the model's context window, tracks
// how full it is from the provider's usage, and makes room before a
// request would overflow — first by clearing old tool results, then by
// summarising the older turns (compact.go). The full history stays in
// r.messages and in the transcript; what the model is sent is a view of
// it (view), so that user turns, checkpoints and rewind keep counting the
// real conversation.

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/sandbox"
)

// Thresholds, as fractions of the window or in tokens.
const (
	// clearTrigger: old tool results are cleared once the next request
	// would exceed this many tokens (or half the window, if smaller) —
	// the trigger of Anthropic's own context editing. Clearing early
	// keeps every later turn's cache reads small; it costs one cache
	// write of the (small) remaining context.
	clearTrigger = 100_000
	// keepResults: the most recent tool results are never cleared.
	keepResults = 3
	// clearMinTokens: a result this small is not worth a note.
	clearMinTokens = 64
	// compactPercent: the older turns are summarised once the next
	// request would exceed this share of the window even after clearing.
	compactPercent = 80
	// keepPercent: the recent turns kept verbatim by a compaction fill at
	// most this share of the window.
	keepPercent = 25
)

// ContextEdits is what a transcript records about its context edits.
type ContextEdits struct {
	// Cleared are the tool_use ids whose results were cleared.
	Cleared []string
	// Summary replaces the messages before Cut (zero: no compaction).
	Summary string
	Cut     int
}

// contextState is one agent's context bookkeeping.
type contextState struct {
	size    int64 // the window, in tokens; zero when unknown
	sized   bool
	last    provider.Usage // of the newest model call
	sentLen int            // len(r.messages) when that call was sent
	removed int64          // tokens removed by edits since that call

	cleared map[string]string // tool_use id → the note that replaces its result
	summary string
	cut     int

	// cache is the view built so far, of r.messages[:cached], and
	// cacheTokens its size estimated from bytes; an edit empties it. Each
	// turn only appends to it, so a long edited session does not rebuild
	// the whole view on every call.
	cache       []provider.Message
	cached      int
	cacheTokens int64
}

// restore applies a transcript's edits to a resumed conversation. An edit
// that does not fit the messages (a transcript cut by hand) is ignored:
// the model is then sent more, never a broken conversation.
func (c *contextState) restore(e ContextEdits, msgs []provider.Message) {
	if e.Cut > 0 && e.Cut < len(msgs) && msgs[e.Cut].Role == provider.RoleAssistant {
		c.summary, c.cut = e.Summary, e.Cut
	}
	if len(e.Cleared) > 0 {
		calls := toolCalls(msgs)
		for _, id := range e.Cleared {
			if u, ok := calls[id]; ok {
				c.clear(u)
			}
		}
	}
}

func (c *contextState) clear(u provider.Block) {
	if c.cleared == nil {
		c.cleared = map[string]string{}
	}
	c.cache, c.cached = nil, 0
	c.cleared[u.ID] = clearedNote(u)
}

// observe records the usage of a model call.
func (c *contextState) observe(u provider.Usage) {
	c.last = u
	c.removed = 0
}

// window returns the context window: Options.ContextWindow, else the
// model family's.
func (r *run) contextWindow() int64 {
	if !r.window.sized {
		r.window.sized = true
		r.window.size = int64(r.opts.ContextWindow)
		if r.window.size == 0 {
			r.window.size = int64(provider.LookupModel(r.modelName).ContextWindow)
		}
	}
	return r.window.size
}

// checkModelOptions validates the model options of a session.
func (r *run) checkModelOptions() error {
	o := r.opts
	if o.ContextWindow < 0 {
		return errors.New("kernel: Options.ContextWindow is negative")
	}
	if o.ThinkingBudget < 0 || (o.ThinkingBudget > 0 && o.ThinkingBudget < 1024) {
		return fmt.Errorf("kernel: Options.ThinkingBudget %d: use 0 (off) or at least 1024 tokens", o.ThinkingBudget)
	}
	if o.WebSearch != nil && r.basePolicy.Network != sandbox.NetworkUnrestricted {
		// web_search reaches the internet (through the API) like any
		// network tool: it needs the network a preset grants to such
		// tools, and no search leaves through a sandbox that has none.
		return fmt.Errorf("kernel: Options.WebSearch is a network tool, and the sandbox's network is %q: use a policy with network unrestricted (and WebSearch.AllowedDomains to narrow it) to offer it", networkName(r.basePolicy.Network))
	}
	return nil
}

func networkName(m sandbox.NetworkMode) string {
	if m == "" {
		return string(sandbox.NetworkNone)
	}
	return string(m)
}

// estimate is the size, in tokens, of the request the view would make
// now: the last call's prompt and answer, plus what was added since,
// less what edits removed. Without a call yet, it is counted from bytes.
func (r *run) estimate() int64 {
	c := &r.window
	if c.last.ContextTokens() == 0 || c.sentLen > len(r.messages) {
		r.view()
		n := tokensOf(r.system) + c.cacheTokens
		for _, t := range r.specs {
			n += 20 + tokensOf(t.Name) + tokensOf(t.Description) + tokensOf(string(t.InputSchema))
		}
		return n
	}
	n := c.last.ContextTokens() + c.last.OutputTokens - c.removed
	// The assistant message of that call is counted by its output tokens.
	for _, m := range r.messages[min(c.sentLen+1, len(r.messages)):] {
		n += messageTokens(m)
	}
	return n
}

// tokensOf estimates tokens from text: about four bytes a token for
// English and code, which errs on the large side for both.
func tokensOf(s string) int64 { return int64(len(s)+3) / 4 }

func messageTokens(m provider.Message) int64 {
	n := int64(4)
	for _, b := range m.Content {
		n += blockTokens(b)
	}
	return n
}

func blockTokens(b provider.Block) int64 {
	// Lengths only: string(b.Input) would copy a large input each time.
	n := int64(8) + tokensOf(b.Text) + int64(len(b.Input)+3)/4 + tokensOf(b.Signature) + int64(len(b.Raw)+3)/4
	if b.Type == provider.BlockImage {
		n += 1600 // a typical image
	}
	for _, c := range b.Content {
		n += blockTokens(c)
	}
	return n
}

// view is what the model is sent: the summary, if the session was
// compacted, then the messages after the boundary, with cleared tool
// results replaced by their notes. Nothing in it changes between turns
// but what an edit changed, so that the provider's cache keeps working.
func (r *run) view() []provider.Message {
	c := &r.window
	if c.cache == nil || c.cached < c.cut || c.cached > len(r.messages) {
		c.cache, c.cacheTokens = nil, 0
		if c.summary != "" {
			sm := summaryMessage(c.summary)
			c.cache = append(c.cache, sm)
			c.cacheTokens = messageTokens(sm)
		}
		c.cached = c.cut
	}
	plain := c.summary == "" && len(c.cleared) == 0
	for _, m := range r.messages[c.cached:] {
		if m.Role == provider.RoleUser && len(c.cleared) > 0 {
			m = c.withNotes(m)
		}
		c.cacheTokens += messageTokens(m)
		if !plain {
			c.cache = append(c.cache, m)
		}
	}
	c.cached = len(r.messages)
	if plain {
		// Nothing edited: the view is the conversation itself.
		c.cache = r.messages[:0:0]
		return r.messages
	}
	return c.cache
}

// withNotes returns m with its cleared results replaced (m itself, when
// none of them is).
func (c *contextState) withNotes(m provider.Message) provider.Message {
	var out []provider.Block
	for i, b := range m.Content {
		note, ok := c.cleared[b.ToolUseID]
		if b.Type != provider.BlockToolResult || !ok {
			continue
		}
		if out == nil {
			out = append([]provider.Block(nil), m.Content...)
		}
		out[i] = provider.Block{Type: provider.BlockToolResult, ToolUseID: b.ToolUseID, IsError: b.IsError,
			Content: []provider.Block{{Type: provider.BlockText, Text: note}}}
	}
	if out != nil {
		m.Content = out
	}
	return m
}

// clearedNote is what a cleared result becomes: what it was, and how to
// get it again.
func clearedNote(u provider.Block) string {
	in := string(u.Input)
	if len(in) > 300 {
		in = in[:300] + "…"
	}
	return fmt.Sprintf("[result cleared to save context: this was the output of %s %s. Call the tool again if you need it.]", u.Name, in)
}

func summaryMessage(summary string) provider.Message {
	return provider.Message{Role: provider.RoleUser, Content: []provider.Block{{Type: provider.BlockText, Text: "This session continues a conversation that was compacted to fit the context window. Summary of the earlier part:\n\n" + summary + "\n\n(The full transcript is kept by lite-agent; the turns after this summary are verbatim.)"}}}
}

// toolCalls maps tool_use ids to their calls.
func toolCalls(msgs []provider.Message) map[string]provider.Block {
	calls := map[string]provider.Block{}
	for _, m := range msgs {
		if m.Role != provider.RoleAssistant {
			continue
		}
		for _, b := range m.Content {
			if b.Type == provider.BlockToolUse {
				calls[b.ID] = b
			}
		}
	}
	return calls
}

// request is the next model call.
func (r *run) request() *provider.Request {
	r.window.sentLen = len(r.messages)
	return &provider.Request{
		Model:          r.modelName,
		System:         r.system,
		Messages:       r.view(),
		Tools:          r.specs,
		MaxTokens:      r.opts.MaxTokens,
		Agent:          r.agent,
		ThinkingBudget: r.opts.ThinkingBudget,
		WebSearch:      r.opts.WebSearch,
	}
}

// callModel makes room in the context if the next request needs it, then
// streams one assistant turn. If the provider still refuses the request as
// too long, the conversation is compacted and the call made once more.
// ok is false when the consumer stopped the iteration.
func (r *run) callModel(yield func(Event, error) bool) (msg *provider.Message, stop provider.StopReason, err error, ok bool) {
	if !r.manageContext(yield, "auto") {
		return nil, "", nil, false
	}
	msg, stop, err, ok = r.streamModel(yield, r.request())
	if err == nil || !ok || !errors.Is(err, provider.ErrPromptTooLong) {
		return msg, stop, err, ok
	}
	done, cerr, ok := r.compact(yield, "prompt_too_long")
	if !ok {
		return nil, "", nil, false
	}
	if !done {
		return nil, "", fmt.Errorf("%w; compacting did not help: %v", err, cerr), true
	}
	return r.streamModel(yield, r.request())
}

// manageContext clears old tool results and, if that is not enough,
// compacts, when the next request would pass the thresholds. A failed
// compaction is reported and the call goes ahead: the provider may still
// take it, and if not, callModel tries again.
func (r *run) manageContext(yield func(Event, error) bool, trigger string) bool {
	w := r.contextWindow()
	if w == 0 {
		return true
	}
	est := r.estimate()
	if est <= min(clearTrigger, w/2) {
		return true
	}
	if !r.clearResults(yield, trigger, keepResults, est, min(clearTrigger, w/2)/2) {
		return false
	}
	if est = r.estimate(); est <= w*compactPercent/100 {
		return true
	}
	_, _, ok := r.compact(yield, trigger)
	return ok
}

// clearResults clears the tool results of the view but the newest keep —
// and of those too, all but the newest one, while the estimate is above
// target — and records it. Clearing down to a target well below the
// trigger leaves room for many turns before the next clearing, and each
// clearing costs a cache write of everything after the first result it
// changed. ok is false when the consumer stopped.
func (r *run) clearResults(yield func(Event, error) bool, trigger string, keep int, before, target int64) bool {
	c := &r.window
	var results []provider.Block
	for _, m := range r.messages[c.cut:] {
		for _, b := range m.Content {
			if b.Type == provider.BlockToolResult {
				results = append(results, b)
			}
		}
	}
	if len(results) <= 1 {
		return true
	}
	calls := toolCalls(r.messages[c.cut:])
	var ids []string
	var saved int64
	for i, b := range results[:len(results)-1] {
		if i >= len(results)-keep && before-saved <= target {
			break
		}
		u, known := calls[b.ToolUseID]
		if _, done := c.cleared[b.ToolUseID]; done || !known || blockTokens(b) < clearMinTokens {
			continue
		}
		c.clear(u)
		ids = append(ids, b.ToolUseID)
		saved += blockTokens(b) - tokensOf(c.cleared[b.ToolUseID])
	}
	if len(ids) == 0 {
		return true
	}
	c.removed += saved
	info := &Compaction{Trigger: trigger, Kind: "clear_tool_results", TokensBefore: before, TokensAfter: before - saved, ClearedToolResults: len(ids)}
	if err := r.recordEdit(Record{Type: "compact", Subtype: "clear", Cleared: ids, TokensBefore: before, TokensAfter: before - saved, Time: time.Now().UTC()}); err != nil {
		info.Error = err.Error()
	}
	return yield(r.event(Event{Type: EventCompact, Compaction: info}), nil)
}

// recordEdit appends a context edit to the transcript. A subagent's
// context is its own and is not resumed, so its edits are not recorded.
func (r *run) recordEdit(rec Record) error {
	if r.agentID != "" {
		return nil
	}
	return r.file.append(rec)
}

// dropTruncatedCall handles an answer cut off by max_tokens: a tool call
// it was writing has an incomplete input, which must never run (a
// truncated write_file would write half a file). The call is removed from
// the message and note tells the model what happened and to go on.
func dropTruncatedCall(m *provider.Message) (*provider.Message, string) {
	n := len(m.Content)
	if n == 0 || m.Content[n-1].Type != provider.BlockToolUse {
		return m, ""
	}
	cut := m.Content[n-1]
	c := *m
	c.Content = append([]provider.Block(nil), m.Content[:n-1]...)
	if len(c.Content) == 0 || onlyThinking(c.Content) {
		// The API refuses an assistant message without content.
		c.Content = append(c.Content, provider.Block{Type: provider.BlockText, Text: "(answer cut off by the max_tokens limit)"})
	}
	in, _ := json.Marshal(truncateString(string(cut.Input), 200))
	note := fmt.Sprintf("Your previous answer reached the max_tokens limit while writing a call of %s (input began %s); the call was cut off and was NOT run. Continue where you were: make the call again, complete — if its input is large, split the work into smaller calls.", cut.Name, in)
	return &c, note
}

func onlyThinking(bs []provider.Block) bool {
	for _, b := range bs {
		if b.Type != provider.BlockThinking && b.Type != provider.BlockRedactedThinking {
			return false
		}
	}
	return true
}

func truncateString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
