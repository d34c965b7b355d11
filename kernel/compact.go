package kernel

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lite-agent/lite-agent/provider"
)

// Compaction describes one context edit, as the compact event reports it.
type Compaction struct {
	// Trigger is "auto" (the next request would pass a threshold),
	// "prompt_too_long" (the provider refused a request) or "manual"
	// (Compact).
	Trigger string `json:"trigger"`
	// Kind is "clear_tool_results" or "summary".
	Kind string `json:"kind"`
	// TokensBefore and TokensAfter estimate the next request's size.
	TokensBefore int64 `json:"tokens_before"`
	TokensAfter  int64 `json:"tokens_after"`
	// ClearedToolResults counts the results replaced by a note.
	ClearedToolResults int `json:"cleared_tool_results,omitempty"`
	// SummarizedMessages were replaced by the summary; KeptMessages are
	// sent verbatim after it.
	SummarizedMessages int `json:"summarized_messages,omitempty"`
	KeptMessages       int `json:"kept_messages,omitempty"`
	// Error says why a compaction failed; the context is then unchanged.
	Error string `json:"error,omitempty"`
}

// compactInstruction is appended to the conversation for the summary
// request. The request is otherwise the conversation as it is sent, so
// that the provider reads all of it from its cache.
const compactInstruction = `The conversation is about to be compacted to fit the context window. Respond with TEXT ONLY: do not call any tools. Write a summary of the conversation so far that lets you continue the work without it: the user's requests and intent, what was done (files read and changed, with paths, commands run and their outcomes), decisions and their reasons, errors met and how they were fixed, what is still to do, and the exact next step. Keep code only where it matters. The most recent turns will follow the summary verbatim.`

// ErrNothingToCompact is returned by Compact when the conversation has no
// older turns to summarise.
var ErrNothingToCompact = errors.New("nothing to compact: the conversation has no older turns to summarise")

// compact summarises the turns before a boundary through the model and
// sends, from then on, the summary and the recent turns verbatim. done is
// false when it did not compact (err says why); ok is false when the
// consumer stopped.
func (r *run) compact(yield func(Event, error) bool, trigger string) (done bool, err error, ok bool) {
	live := true
	report := func(e Event) {
		if live && !yield(r.event(e), nil) {
			live = false
		}
	}
	before := r.estimate()
	// When the provider refused the request, clear all but the newest
	// result first, so that the summary request itself fits.
	if trigger == "prompt_too_long" {
		if !r.clearResults(yield, trigger, 1, before, 0) {
			return false, nil, false
		}
	}
	info := &Compaction{Trigger: trigger, Kind: "summary", TokensBefore: before}
	fail := func(err error) (bool, error, bool) {
		info.Error, info.TokensAfter = err.Error(), before
		report(Event{Type: EventCompact, Compaction: info})
		return false, err, live
	}
	cut := r.compactionCut()
	if cut <= r.window.cut {
		return fail(ErrNothingToCompact)
	}
	in := r.gate.hookInput()
	in.Event, in.Source = HookPreCompact, trigger
	r.gate.hooks.notify(r.ctx, in, nil, report)
	if !live {
		return false, nil, false
	}

	req := r.request()
	req.Messages = withInstruction(req.Messages, compactInstruction)
	// The summary is not the answer: no deltas are streamed.
	ch, err := provider.Collect(r.opts.Model.Stream(r.ctx, req))
	if err != nil {
		return fail(fmt.Errorf("the summary request failed: %w", err))
	}
	r.addUsage(ch.Usage)
	summary := strings.TrimSpace(ch.Message.Text())
	if summary == "" {
		return fail(errors.New("the model answered the summary request without text"))
	}
	info.SummarizedMessages = cut - r.window.cut
	info.KeptMessages = len(r.messages) - cut
	r.window.summary, r.window.cut = summary, cut
	r.window.cache, r.window.cached = nil, 0
	// The next request is new from the summary on: count it from bytes.
	r.window.last = provider.Usage{}
	info.TokensAfter = r.estimate()
	if err := r.recordEdit(Record{Type: "compact", Subtype: "summary", Summary: summary, Cut: cut, TokensBefore: before, TokensAfter: info.TokensAfter, Time: time.Now().UTC()}); err != nil {
		info.Error = err.Error()
	}
	report(Event{Type: EventCompact, Compaction: info})
	return true, nil, live
}

// compactionCut picks the boundary: the recent turns kept verbatim fill at
// most keepPercent of the window (at least the newest call and its
// results), and the kept part starts with an assistant message, so that
// it follows the summary (a user message) and no tool result is parted
// from its call.
func (r *run) compactionCut() int {
	budget := r.contextWindow() * keepPercent / 100
	if budget == 0 {
		budget = 20_000
	}
	kept := int64(0)
	best := -1
	for i := len(r.messages) - 1; i > r.window.cut; i-- {
		kept += messageTokens(r.window.withNotes(r.messages[i]))
		if r.messages[i].Role != provider.RoleAssistant {
			continue
		}
		if best >= 0 && kept > budget {
			break
		}
		best = i
	}
	return best
}

// withInstruction returns msgs with text added to the last (user) message,
// copied, so that the conversation itself is untouched.
func withInstruction(msgs []provider.Message, text string) []provider.Message {
	out := append([]provider.Message(nil), msgs...)
	last := &out[len(out)-1]
	if last.Role != provider.RoleUser {
		return append(out, provider.Message{Role: provider.RoleUser, Content: []provider.Block{{Type: provider.BlockText, Text: text}}})
	}
	last.Content = append(append([]provider.Block(nil), last.Content...), provider.Block{Type: provider.BlockText, Text: text})
	return out
}

// Compact compacts the session opts.Resume now, as the interactive mode's
// /compact does: the older turns are summarised through opts.Model and
// the boundary recorded in the transcript, so that the next run resuming
// the session is sent the summary and the recent turns. opts.Prompt is not
// needed. The PreCompact hooks run; SessionStart and SessionEnd do not.
func Compact(ctx context.Context, opts Options) (*Compaction, error) {
	if opts.Resume == "" {
		return nil, errors.New("kernel: Compact needs Options.Resume, the session to compact")
	}
	if strings.TrimSpace(opts.Prompt) == "" {
		opts.Prompt = "(compact)"
	}
	r, err := newRun(ctx, &opts)
	if err != nil {
		return nil, err
	}
	r.ended = true // no SessionEnd hooks: no run took place
	defer r.close()
	var info *Compaction
	_, cerr, _ := r.compact(func(e Event, _ error) bool {
		if e.Type == EventCompact && e.Compaction.Kind == "summary" {
			info = e.Compaction
		}
		return true
	}, "manual")
	if cerr != nil {
		return info, fmt.Errorf("kernel: %w", cerr)
	}
	return info, nil
}
