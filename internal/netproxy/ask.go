package netproxy

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"
)

// Answer is what the person said about a host no grant names.
type Answer int

const (
	// Refuse: this connection is refused (403), like a host never asked
	// about, and so is every later connection to this host:port, without
	// a question, for as long as these Rules live.
	Refuse Answer = iota
	// AllowOnce admits the connections waiting on this question — to the
	// host and port it showed, not another port of the host — and
	// nothing after them.
	AllowOnce
	// AllowSession adds the grant to these Rules for as long as they live.
	AllowSession
	// AllowAlways is AllowSession for the proxy; the asker also keeps the
	// grant (a policy file's allow_domains) for later sessions.
	AllowAlways
)

// Question is one ask about a host no allow or deny entry names.
type Question struct {
	Host string // canonical: a lower-case name or an IP literal
	Port int
	// Grant is the pattern that AllowSession/AllowAlways adds, and that a
	// policy file's allow_domains would hold: the name (every port), or
	// IP:PORT for an IP literal (as the refusal suggests).
	Grant string
	// Note, for an IP literal that is not a public address, says what it
	// is ("a loopback address", "a link-local address (cloud metadata
	// services live there)"): a yes reaches it as an explicit IP:PORT
	// grant would, so the person must be told. Empty otherwise.
	Note string
}

// key is what a question is about, as shown: host and port.
func (q Question) key() string { return hostPort(q.Host, q.Port) }

// Asker asks about an unknown host. It is called with a context that ends
// when AskTimeout passes or the proxy closes; an error or the context's end
// refuses. It may be called from many goroutines at once (for different
// hosts).
type Asker func(ctx context.Context, q Question) (Answer, error)

// DefaultAskTimeout bounds how long a connection is held for an answer:
// long enough for a person to read the question, short enough that a
// command waiting on it fails while someone is still watching.
const DefaultAskTimeout = 2 * time.Minute

// maxOpenQuestions bounds the questions open at once: a command that
// connects to host after host must not bury the person under questions
// (or hold a goroutine per host for minutes). Beyond it a new host is
// refused at once, with the flag named as without asking.
const maxOpenQuestions = 8

// ErrTooManyQuestions wraps the error of a host refused without a
// question because too many were asked already (open at once, or raised
// recently: QuestionBudget). An Asker may return it too (the kernel does,
// with one budget for all of a session's proxies): the refusal then says
// the host was not asked about, rather than that no answer came.
var ErrTooManyQuestions = errors.New("too many questions")

// tooMany is a refusal without a question, saying why.
type tooMany struct{ why string }

func (e *tooMany) Error() string { return e.why }
func (e *tooMany) Unwrap() error { return ErrTooManyQuestions }

// errTooManyOpen refuses a host while maxOpenQuestions are open.
var errTooManyOpen error = &tooMany{fmt.Sprintf("%d other hosts are being asked about already", maxOpenQuestions)}

// The question budget: at most MaxRecentQuestions questions raised in any
// QuestionWindow. maxOpenQuestions alone bounds what is open at once, not
// what follows: a command that connects to a fresh random subdomain each
// time the person says no would raise question after question, eight at a
// time, for as long as the person keeps answering — wearing them down
// until a tired "y". A dozen is more distinct unknown hosts than a real
// install touches in ten minutes (a registry, its CDN, a git host); past
// it the hosts are refused with the flag named, and a person who wants
// them grants them with --allow-domain.
const (
	MaxRecentQuestions = 12
	QuestionWindow     = 10 * time.Minute
)

// QuestionBudget counts the questions raised and refuses a new one when
// MaxRecentQuestions were raised within the last QuestionWindow. It is
// the one implementation of that bound: Rules keeps one per proxy, and
// the kernel one per session (its sandboxes each run a proxy). The zero
// value is ready; it is safe for concurrent use.
type QuestionBudget struct {
	mu     sync.Mutex
	raised []time.Time      // oldest first, none older than the window
	now    func() time.Time // nil: time.Now (tests move the clock)
}

// Take spends one question, or returns an error wrapping
// ErrTooManyQuestions that says why none is left.
func (b *QuestionBudget) Take() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if b.now != nil {
		now = b.now()
	}
	i := 0
	for i < len(b.raised) && now.Sub(b.raised[i]) >= QuestionWindow {
		i++
	}
	b.raised = b.raised[i:]
	if len(b.raised) >= MaxRecentQuestions {
		return &tooMany{fmt.Sprintf("%d hosts were asked about in the last %s, the most a session asks in that time", MaxRecentQuestions, QuestionWindow)}
	}
	b.raised = append(b.raised, now)
	return nil
}

// asking deduplicates questions: one flight per host:port, so that the
// ten connections a package manager opens at once to one registry ask once
// and share the answer. The key is what the question shows (host and
// port), not the Grant (the name, every port): an answer covers exactly
// what the person read. Grouping by Grant let "allow once" for
// pkg.example:443 admit a connection to pkg.example:22 that happened to
// be waiting. A connection to another port of the host waits for a
// question of its own; a "session" answer to the first (which grants the
// name, every port) answers the second too, since the asker keeps it.
type asking struct {
	ask     Asker
	timeout time.Duration
	budget  QuestionBudget
	mu      sync.Mutex
	flights map[string]*flight
	session []rule // grants added by AllowSession/AllowAlways
	// refused are the host:ports the person said no to: asked again,
	// they are refused at once. Without it one host could be asked about
	// again and again, each connection a new question, until a yes. The
	// "no" is for what the question showed (host and port), like "once";
	// it lives as long as the session grants (these Rules), and wins
	// over a later "session" yes to the name.
	refused map[string]bool
}

type flight struct {
	done    chan struct{}
	answer  Answer
	err     error
	waiters int                // connections waiting (under asking.mu)
	cancel  context.CancelFunc // ends the question when no one waits
}

// answerRule is what an event's Rule says about a decision taken by asking.
func answerRule(a Answer) string {
	switch a {
	case AllowOnce:
		return "asked: allowed once"
	case AllowSession:
		return "asked: allowed for the session"
	case AllowAlways:
		return "asked: allowed always"
	}
	return "asked: denied"
}

// refusedBefore says whether the person refused host:port earlier.
func (a *asking) refusedBefore(q Question) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.refused[q.key()]
}

// sessionGrant returns the grant an earlier answer added that covers the
// host, if any.
func (a *asking) sessionGrant(h string, ip netip.Addr, port int) *rule {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range a.session {
		if a.session[i].matches(h, ip, port) {
			x := a.session[i]
			return &x
		}
	}
	return nil
}

// decide asks about q (or joins the flight already asking) and returns the
// answer. A rule for AllowSession/AllowAlways is added before the flight
// ends, so a connection that comes after the answer matches it and is not
// asked about again.
func (a *asking) decide(ctx context.Context, q Question) (Answer, error) {
	a.mu.Lock()
	f, ok := a.flights[q.key()]
	if !ok && len(a.flights) >= maxOpenQuestions {
		a.mu.Unlock()
		return Refuse, errTooManyOpen
	}
	if !ok {
		// A new question spends the budget; joining one does not.
		if err := a.budget.Take(); err != nil {
			a.mu.Unlock()
			return Refuse, err
		}
		// The question has a context of its own: the first connection
		// going away must not cancel what the others wait on. It ends
		// when its timeout passes or the last waiter leaves (the client
		// gave up, or the proxy closed).
		fctx, cancel := context.WithTimeout(context.Background(), a.timeout)
		f = &flight{done: make(chan struct{}), cancel: cancel}
		a.flights[q.key()] = f
		go a.fly(fctx, q, f)
	}
	f.waiters++
	a.mu.Unlock()
	select {
	case <-f.done:
		return f.answer, f.err
	case <-ctx.Done():
		a.mu.Lock()
		f.waiters--
		if f.waiters == 0 {
			f.cancel()
		}
		a.mu.Unlock()
		return Refuse, ctx.Err()
	}
}

// fly asks once and publishes the answer to every waiter.
func (a *asking) fly(ctx context.Context, q Question, f *flight) {
	defer f.cancel()
	ans, err := a.call(ctx, q)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err() // an answer after the deadline is no answer
	}
	if err != nil {
		ans = Refuse
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", a.timeout)
		}
	}
	a.mu.Lock()
	if ans == Refuse && err == nil {
		// A "no" from the person (not a timeout, not an asker's error:
		// no one may have been there to read the question).
		a.refused[q.key()] = true
	}
	if ans == AllowSession || ans == AllowAlways {
		// q.Grant came from suggest(), so it parses; were it not to,
		// the grant is simply not kept and the next connection asks.
		if x, perr := parseRule(Grant{Pattern: q.Grant, Source: answerRule(ans)}); perr == nil {
			a.session = append(a.session, x)
		}
	}
	delete(a.flights, q.key())
	f.answer, f.err = ans, err
	a.mu.Unlock()
	close(f.done)
}

// call runs the asker, turning its panic into a refusal: a broken UI must
// not take the proxy (and every held connection) down with it.
func (a *asking) call(ctx context.Context, q Question) (ans Answer, err error) {
	defer func() {
		if v := recover(); v != nil {
			ans, err = Refuse, fmt.Errorf("asking failed: %v", v)
		}
	}()
	return a.ask(ctx, q)
}
