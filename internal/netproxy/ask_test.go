package netproxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// scriptedAsker answers every question with answer, counting the calls
// and recording the questions.
type scriptedAsker struct {
	answer Answer
	calls  atomic.Int32
	mu     sync.Mutex
	asked  []Question
}

func (s *scriptedAsker) ask(_ context.Context, q Question) (Answer, error) {
	s.calls.Add(1)
	s.mu.Lock()
	s.asked = append(s.asked, q)
	s.mu.Unlock()
	return s.answer, nil
}

// askNet: one "public" test name routed to a loopback server, one that
// resolves to loopback (rebinding), and the server's own IP:PORT.
func askNet(t *testing.T) (*fakeNet, *httptest.Server) {
	srv := httptest.NewServer(http.HandlerFunc(hello))
	t.Cleanup(srv.Close)
	return &fakeNet{
		names: map[string][]netip.Addr{
			"pkg.example":  {netip.MustParseAddr("203.0.113.7")},
			"evil.example": {netip.MustParseAddr("127.0.0.1")},
		},
		route: map[string]string{"203.0.113.7:80": srv.Listener.Addr().String()},
	}, srv
}

// TestAskAnswers: each answer decides as it says — once admits that
// connection and asks again next time, session and always ask once, a
// refusal names the flag and is not asked about again — and the event's
// rule says it was asked.
func TestAskAnswers(t *testing.T) {
	for _, tc := range []struct {
		answer     Answer
		code       int
		rule       string
		calls      int32 // after two requests
		secondRule string
	}{
		{AllowOnce, 200, "asked: allowed once", 2, "asked: allowed once"},
		{AllowSession, 200, "asked: allowed for the session", 1, "asked: allowed for the session"},
		{AllowAlways, 200, "asked: allowed always", 1, "asked: allowed always"},
		// A "no" is remembered: the second connection is refused
		// without a question.
		{Refuse, 403, "asked: denied", 1, "asked earlier: denied"},
	} {
		t.Run(answerRule(tc.answer), func(t *testing.T) {
			fn, _ := askNet(t)
			a := &scriptedAsker{answer: tc.answer}
			h := newHarness(t, Options{Resolve: fn.resolve, Dial: fn.dial, Ask: a.ask})
			c := h.client()
			for i := range 2 {
				code, body := get(t, c, "http://pkg.example/x")
				if code != tc.code {
					t.Fatalf("request %d: %d %q", i, code, body)
				}
				if code == 403 && (!strings.Contains(body, "--allow-domain pkg.example") || !strings.Contains(body, "refused it when asked")) {
					t.Fatalf("refusal body: %q", body)
				}
				c.CloseIdleConnections() // a new connection each time
			}
			if n := a.calls.Load(); n != tc.calls {
				t.Fatalf("asked %d times, want %d", n, tc.calls)
			}
			if q := a.asked[0]; q.Host != "pkg.example" || q.Port != 80 || q.Grant != "pkg.example" {
				t.Fatalf("question: %+v", q)
			}
			h.p.Close()
			ev := h.snapshot()
			if len(ev) != 2 || ev[0].Rule != tc.rule || ev[1].Rule != tc.secondRule || ev[0].Allow != (tc.code == 200) {
				t.Fatalf("events: %+v", ev)
			}
		})
	}
}

// TestAskNeverForDenyOrGrant: a deny entry wins without a question (even
// over an earlier "session" answer for the name), and a granted host is
// not asked about.
func TestAskNeverForDenyOrGrant(t *testing.T) {
	fn, srv := askNet(t)
	a := &scriptedAsker{answer: AllowSession}
	r, err := NewRules(Options{
		Allow:   []Grant{{Pattern: srv.Listener.Addr().String()}},
		Deny:    []Grant{{Pattern: "pkg.example", Source: "policy.toml:3"}},
		Resolve: fn.resolve, Ask: a.ask,
	})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := r.Check(context.Background(), "pkg.example", 443); err == nil || d.Rule != "policy.toml:3" {
		t.Fatalf("denied host: %+v %v", d, err)
	}
	host, port, _ := splitAuthority(srv.Listener.Addr().String(), 0)
	if d, err := r.Check(context.Background(), host, port); err != nil || !d.Allow {
		t.Fatalf("granted host: %+v %v", d, err)
	}
	if n := a.calls.Load(); n != 0 {
		t.Fatalf("asked %d times about a denied or granted host", n)
	}
	// Without the deny entry, the same answer would have let it through:
	// the deny is what refused it.
	open, _ := NewRules(Options{Resolve: fn.resolve, Ask: (&scriptedAsker{answer: AllowSession}).ask})
	if d, err := open.Check(context.Background(), "pkg.example", 443); err != nil || !d.Allow {
		t.Fatalf("pkg.example without the deny entry: %+v %v", d, err)
	}
	// An IP literal is asked about as IP:PORT, the grant the refusal
	// would suggest; a non-public one with a note saying what it is.
	if d, err := r.Check(context.Background(), "198.51.100.1", 8080); err != nil || d.Rule != "asked: allowed for the session" {
		t.Fatalf("public IP literal: %+v %v", d, err)
	}
	if d, err := r.Check(context.Background(), "127.0.0.1", 5432); err != nil || d.Rule != "asked: allowed for the session" {
		t.Fatalf("loopback IP literal: %+v %v", d, err)
	}
	if len(a.asked) != 2 || a.asked[0].Grant != "198.51.100.1:8080" || a.asked[0].Note != "" ||
		a.asked[1].Grant != "127.0.0.1:5432" || a.asked[1].Note != "a loopback address" {
		t.Fatalf("questions: %+v", a.asked)
	}
}

// TestAskKeepsRebindingCheck: a yes admits the name, not what it resolves
// to: a name that resolves to loopback is still refused.
func TestAskKeepsRebindingCheck(t *testing.T) {
	fn, _ := askNet(t)
	a := &scriptedAsker{answer: AllowAlways}
	r, err := NewRules(Options{Resolve: fn.resolve, Ask: a.ask})
	if err != nil {
		t.Fatal(err)
	}
	// The same yes admits a name that resolves to a public address...
	if d, err := r.Check(context.Background(), "pkg.example", 80); err != nil || !d.Allow {
		t.Fatalf("pkg.example after a yes: %+v %v", d, err)
	}
	// ...and not one that resolves to loopback.
	_, err = r.Check(context.Background(), "evil.example", 80)
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(re.Msg, "loopback") || a.calls.Load() != 2 {
		t.Fatalf("evil.example after a yes: %v (asked %d)", err, a.calls.Load())
	}
}

// TestAskConcurrentOnce: connections that arrive while a question about
// their host is open wait for its answer rather than asking again.
func TestAskConcurrentOnce(t *testing.T) {
	fn, _ := askNet(t)
	release := make(chan struct{})
	var calls atomic.Int32
	ask := func(ctx context.Context, q Question) (Answer, error) {
		calls.Add(1)
		<-release
		return AllowOnce, nil
	}
	r, err := NewRules(Options{Resolve: fn.resolve, Ask: ask})
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := r.Check(context.Background(), "pkg.example", 443)
			errs <- err
		}()
	}
	// Every caller has joined the one flight before it is answered.
	waitUntil(t, func() bool {
		r.asking.mu.Lock()
		defer r.asking.mu.Unlock()
		f := r.asking.flights["pkg.example:443"]
		return f != nil && f.waiters == n
	})
	close(release)
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if c := calls.Load(); c != 1 {
		t.Fatalf("asked %d times for %d concurrent connections", c, n)
	}
}

// TestAskTimeoutAndGoneWaiters: no answer within AskTimeout refuses with
// the flag named; and a question every waiter gave up on is cancelled
// (the UI is told through its context).
func TestAskTimeoutAndGoneWaiters(t *testing.T) {
	fn, _ := askNet(t)
	cancelled := make(chan struct{}, 1)
	ask := func(ctx context.Context, q Question) (Answer, error) {
		<-ctx.Done()
		cancelled <- struct{}{}
		return AllowSession, nil // too late: ignored
	}
	r, err := NewRules(Options{Resolve: fn.resolve, Ask: ask, AskTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.Check(context.Background(), "pkg.example", 443)
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(re.Msg, "no answer within 50ms") || !strings.Contains(re.Msg, "--allow-domain pkg.example") || !strings.HasPrefix(d.Rule, "asked: no answer") {
		t.Fatalf("timeout: %+v %v", d, err)
	}
	<-cancelled
	if _, err := r.Check(context.Background(), "pkg.example", 443); err == nil {
		t.Fatal("a late answer was kept as a session grant")
	}
	<-cancelled

	r, _ = NewRules(Options{Resolve: fn.resolve, Ask: ask, AskTimeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := r.Check(ctx, "pkg.example", 443); done <- err }()
	waitUntil(t, func() bool {
		r.asking.mu.Lock()
		defer r.asking.mu.Unlock()
		return r.asking.flights["pkg.example:443"] != nil
	})
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a connection that gave up was allowed")
	}
	<-cancelled // the question ended with its last waiter, not after an hour
}

// TestAskBoundsOpenQuestions: a command that connects to host after host
// gets at most maxOpenQuestions questions open at once; the next host is
// refused at once, naming the flag, and a host already being asked about
// still joins its question.
func TestAskBoundsOpenQuestions(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	r, _ := NewRules(Options{Ask: func(ctx context.Context, q Question) (Answer, error) {
		calls.Add(1)
		<-release
		return AllowOnce, nil
	}})
	errs := make(chan error, maxOpenQuestions+1)
	check := func(host string) { _, err := r.Check(context.Background(), host, 8080); errs <- err }
	for i := range maxOpenQuestions {
		go check(fmt.Sprintf("198.51.100.%d", i+1))
	}
	waitUntil(t, func() bool { return calls.Load() == maxOpenQuestions })
	_, err := r.Check(context.Background(), "198.51.100.200", 8080)
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(re.Msg, "being asked about already") || !strings.Contains(re.Msg, "--allow-domain 198.51.100.200:8080") {
		t.Fatalf("one host too many: %v", err)
	}
	go check("198.51.100.1") // joins the open question
	waitUntil(t, func() bool {
		r.asking.mu.Lock()
		defer r.asking.mu.Unlock()
		return r.asking.flights["198.51.100.1:8080"].waiters == 2
	})
	close(release)
	for range maxOpenQuestions + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := calls.Load(); n != maxOpenQuestions {
		t.Fatalf("asked %d times, want %d", n, maxOpenQuestions)
	}
}

// TestAskPanicRefuses: a broken asker refuses instead of crashing the
// proxy.
func TestAskPanicRefuses(t *testing.T) {
	fn, _ := askNet(t)
	r, _ := NewRules(Options{Resolve: fn.resolve, Ask: func(context.Context, Question) (Answer, error) { panic("ui gone") }})
	if _, err := r.Check(context.Background(), "pkg.example", 443); err == nil || !strings.Contains(err.Error(), "ui gone") {
		t.Fatalf("panicking asker: %v", err)
	}
}

// waitUntil polls a condition the code under test reaches on its own
// goroutines (there is no event to wait on from outside).
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestAskOnceCoversThePortAsked: "allow once" admits the connection to
// the host:port the question showed, not a connection to another port of
// the same host that was waiting at the same time. (Before, questions
// were grouped by Grant — the name, every port — so the connection to
// :22 joined the question about :443 and was let through by its "once":
// this test then never sees a second question and fails.)
func TestAskOnceCoversThePortAsked(t *testing.T) {
	fn, _ := askNet(t)
	questions := make(chan Question, 2)
	answers := map[int]chan Answer{443: make(chan Answer, 1), 22: make(chan Answer, 1)}
	r, err := NewRules(Options{Resolve: fn.resolve, Ask: func(ctx context.Context, q Question) (Answer, error) {
		questions <- q
		select {
		case a := <-answers[q.Port]:
			return a, nil
		case <-ctx.Done():
			return Refuse, ctx.Err()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	done := map[int]chan error{443: make(chan error, 1), 22: make(chan error, 1)}
	for port, ch := range done {
		go func() { _, err := r.Check(context.Background(), "pkg.example", port); ch <- err }()
	}
	// Both connections are held, each with a question of its own.
	asked := map[int]bool{}
	for range 2 {
		select {
		case q := <-questions:
			asked[q.Port] = true
		case err := <-done[22]:
			t.Fatalf("pkg.example:22 decided before its own question: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatalf("asked only about %v: the connections share one question", asked)
		}
	}
	answers[443] <- AllowOnce
	if err := <-done[443]; err != nil {
		t.Fatalf("pkg.example:443 after 'once': %v", err)
	}
	select {
	case err := <-done[22]:
		t.Fatalf("pkg.example:22 was decided by the answer about :443: %v", err)
	default:
	}
	answers[22] <- Refuse
	if err := <-done[22]; err == nil {
		t.Fatal("pkg.example:22 was admitted though its question was refused")
	}
}

// TestAskRefusalRemembered: a "no" refuses that host:port at once for as
// long as the Rules live (no new question however often the command
// retries), wins over a later "session" yes to the name, and covers only
// the port asked about. A timeout is not a "no": no one may have read
// the question. (Without the memory, each retry was a new question: the
// asker is called three times and the test fails.)
func TestAskRefusalRemembered(t *testing.T) {
	fn, _ := askNet(t)
	var mu sync.Mutex
	answer := map[string]Answer{"pkg.example:443": Refuse, "pkg.example:80": AllowSession}
	var asked []string
	r, err := NewRules(Options{Resolve: fn.resolve, Ask: func(ctx context.Context, q Question) (Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, q.key())
		if q.Host == "slow.example" {
			<-ctx.Done()
			return Refuse, ctx.Err()
		}
		return answer[q.key()], nil
	}, AskTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		_, err := r.Check(context.Background(), "pkg.example", 443)
		var re *RefusedError
		if !errors.As(err, &re) || !strings.Contains(re.Msg, "--allow-domain pkg.example") {
			t.Fatalf("try %d: %v", i, err)
		}
		if i > 0 && (re.Rule != "asked earlier: denied" || !strings.Contains(re.Msg, "refused it when asked earlier")) {
			t.Fatalf("try %d: %+v", i, re)
		}
	}
	// "session" for the name, through another port: every port but the
	// one refused.
	if d, err := r.Check(context.Background(), "pkg.example", 80); err != nil || !d.Allow {
		t.Fatalf("pkg.example:80: %+v %v", d, err)
	}
	if d, err := r.Check(context.Background(), "pkg.example", 8443); err != nil || !d.Allow {
		t.Fatalf("pkg.example:8443 after the session yes: %+v %v", d, err)
	}
	if _, err := r.Check(context.Background(), "pkg.example", 443); err == nil {
		t.Fatal("pkg.example:443 admitted by the session yes after the person refused it")
	}
	// No answer twice: asked twice.
	for range 2 {
		if _, err := r.Check(context.Background(), "slow.example", 443); err == nil {
			t.Fatal("slow.example admitted without an answer")
		}
	}
	want := []string{"pkg.example:443", "pkg.example:80", "slow.example:443", "slow.example:443"}
	if fmt.Sprint(asked) != fmt.Sprint(want) {
		t.Fatalf("asked %v, want %v", asked, want)
	}
}

// TestAskBudget: a command that tries a fresh random subdomain each time
// (every one refused) gets MaxRecentQuestions questions, then 403s that
// say why and name the flag, without a question; the budget comes back as
// the window passes. (Without the budget, the flood asks all 40.)
func TestAskBudget(t *testing.T) {
	fn, _ := askNet(t)
	a := &scriptedAsker{answer: Refuse}
	h := newHarness(t, Options{Resolve: fn.resolve, Dial: fn.dial, Ask: a.ask})
	now := time.Unix(1e9, 0)
	h.r.asking.budget.now = func() time.Time { return now }
	c := h.client()
	var last string
	for i := range 40 {
		code, body := get(t, c, fmt.Sprintf("http://x%d.pkg.example/", i))
		if code != 403 {
			t.Fatalf("request %d: %d %q", i, code, body)
		}
		last = body
		now = now.Add(time.Second)
	}
	if n := a.calls.Load(); n != MaxRecentQuestions {
		t.Fatalf("a flood of 40 hosts asked %d questions, want %d", n, MaxRecentQuestions)
	}
	for _, want := range []string{"not asked about", "asked about in the last 10m0s", "--allow-domain x39.pkg.example"} {
		if !strings.Contains(last, want) {
			t.Fatalf("refusal without a question %q does not say %q", last, want)
		}
	}
	now = now.Add(QuestionWindow)
	if code, _ := get(t, c, "http://later.pkg.example/"); code != 403 || a.calls.Load() != MaxRecentQuestions+1 {
		t.Fatalf("after the window: %d, asked %d", code, a.calls.Load())
	}
}

// TestAskerOutOfBudget: an asker that refuses for want of budget (the
// kernel's, shared by a session's proxies) returns an error wrapping
// ErrTooManyQuestions; the 403 says the host was not asked about and
// why, names the flag, and the refusal is not remembered as a "no".
func TestAskerOutOfBudget(t *testing.T) {
	fn, _ := askNet(t)
	calls := 0
	r, _ := NewRules(Options{Resolve: fn.resolve, Ask: func(context.Context, Question) (Answer, error) {
		calls++
		if calls == 1 {
			return Refuse, fmt.Errorf("session: %w", &tooMany{"12 hosts were asked about in the last 10m0s"})
		}
		return AllowOnce, nil
	}})
	d, err := r.Check(context.Background(), "pkg.example", 443)
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(re.Msg, "it was not asked about (session: 12 hosts") || !strings.Contains(re.Msg, "--allow-domain pkg.example") || !strings.HasPrefix(d.Rule, "not asked: ") {
		t.Fatalf("out of budget: %+v %v", d, err)
	}
	if d, err := r.Check(context.Background(), "pkg.example", 443); err != nil || !d.Allow {
		t.Fatalf("after a refusal for want of budget, the host is asked again: %+v %v", d, err)
	}
}
