package kernel

import (
	"context"
	"net"
	"strconv"
	"sync"

	"github.com/lite-agent/lite-agent/internal/netproxy"
	"github.com/lite-agent/lite-agent/sandbox"
)

// maxQueuedNetwork bounds the decisions held between two drains: a
// command that opens connections in a loop while the model streams must
// not grow the session's memory without limit. Beyond it decisions are
// counted, not kept, and the count is reported in the next event's Rule.
const maxQueuedNetwork = 4096

// networkQueue carries the domain proxy's decisions (sandbox.Policy's
// OnNetwork, called on the proxy's goroutines, which must not block) to
// the goroutine that iterates the query, the only one that may yield.
type networkQueue struct {
	mu      sync.Mutex
	pending []sandbox.NetworkEvent
	dropped int
	notify  chan struct{} // one token: "pending is not empty"
	once    sync.Once

	// allowed are the grants (DomainQuestion.Grant) a person allowed for
	// the session or always: the session's sandboxes each run a proxy
	// of their own, and a host answered for one is not asked about again
	// by another.
	askMu   sync.Mutex
	allowed map[string]sandbox.DomainDecision
	// refused are the host:ports a person said no to in this session:
	// refused again without a question by every sandbox of the session,
	// so that a command cannot ask about one host again and again (each
	// proxy remembers its own "no" as well, for as long as it lives). A
	// "no" is for the host and port the question showed, as "once" is.
	refused map[string]bool
	// budget bounds the questions the whole session raises (each proxy
	// has a budget of its own; a session with several sandboxes must not
	// get several times as many).
	budget netproxy.QuestionBudget
}

func (q *networkQueue) init() { q.once.Do(func() { q.notify = make(chan struct{}, 1) }) }

// observer returns the OnNetwork the session's sandboxes get: it queues
// the decision and calls the caller's own observer, if any, too.
func (q *networkQueue) observer(callers func(sandbox.NetworkEvent)) func(sandbox.NetworkEvent) {
	q.init()
	return func(ev sandbox.NetworkEvent) {
		if callers != nil {
			callers(ev)
		}
		q.mu.Lock()
		if len(q.pending) < maxQueuedNetwork {
			q.pending = append(q.pending, ev)
		} else {
			q.dropped++
		}
		q.mu.Unlock()
		select {
		case q.notify <- struct{}{}:
		default:
		}
	}
}

// asker returns the OnUnknownDomain the session's sandboxes get: the
// kernel option when set, else the policy's own; nil stays nil (refuse
// without asking). Answers "session" and "always" are kept for the
// session and given again without asking, and so is a refusal (for the
// host:port asked about); at most netproxy.MaxRecentQuestions questions
// reach the person per netproxy.QuestionWindow, the rest are refused
// without asking.
func (q *networkQueue) asker(opt, policy func(context.Context, sandbox.DomainQuestion) (sandbox.DomainDecision, error)) func(context.Context, sandbox.DomainQuestion) (sandbox.DomainDecision, error) {
	ask := opt
	if ask == nil {
		ask = policy
	}
	if ask == nil {
		return nil
	}
	return func(ctx context.Context, dq sandbox.DomainQuestion) (sandbox.DomainDecision, error) {
		key := net.JoinHostPort(dq.Host, strconv.Itoa(dq.Port))
		q.askMu.Lock()
		// The "no" first: it wins over a "session" yes to the name
		// given since, as in the proxy.
		refused := q.refused[key]
		d, ok := q.allowed[dq.Grant]
		q.askMu.Unlock()
		if refused {
			return sandbox.DomainRefuse, nil
		}
		if ok {
			return d, nil
		}
		// Only a question that reaches the person spends the budget;
		// the proxy shows the error as "not asked about", with the flag.
		if err := q.budget.Take(); err != nil {
			return sandbox.DomainRefuse, err
		}
		d, err := ask(ctx, dq)
		// An answer that came after the connection stopped waiting is
		// not kept: the proxy refused that connection, and the person
		// answered a question that was gone. Nor is an error kept as a
		// "no": no one may have read the question.
		if err != nil || ctx.Err() != nil {
			return d, err
		}
		q.askMu.Lock()
		switch d {
		case sandbox.DomainAllowSession, sandbox.DomainAllowAlways:
			if q.allowed == nil {
				q.allowed = map[string]sandbox.DomainDecision{}
			}
			q.allowed[dq.Grant] = d
		case sandbox.DomainAllowOnce:
		default: // DomainRefuse, and any value the proxy reads as it
			if q.refused == nil {
				q.refused = map[string]bool{}
			}
			q.refused[key] = true
		}
		q.askMu.Unlock()
		return d, nil
	}
}

// ready is readable when decisions are waiting (nil, never ready, before
// any sandbox was given an observer).
func (q *networkQueue) ready() <-chan struct{} {
	q.init()
	return q.notify
}

// take returns the waiting decisions and how many were dropped.
func (q *networkQueue) take() ([]sandbox.NetworkEvent, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	evs, dropped := q.pending, q.dropped
	q.pending, q.dropped = nil, 0
	return evs, dropped
}

// yieldNetwork yields the waiting decisions as network events.
func (r *run) yieldNetwork(yield func(Event, error) bool, ok *bool, cancel context.CancelFunc) {
	evs, dropped := r.network.take()
	for i, n := range evs {
		if i == 0 && dropped > 0 {
			n.Rule = n.Rule + " (and " + strconv.Itoa(dropped) + " earlier decisions not reported: too many at once)"
		}
		if *ok && !yield(r.event(networkEvent(n)), nil) {
			*ok = false
			cancel()
		}
	}
}
