package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/lite-agent/lite-agent/internal/netproxy"
	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/sandbox"
)

// TestDomainAsk: the question about an unknown domain shows the host, what
// a non-public address is, the sandbox's network and its grants, fits
// 80x24, allows only on y, a or A, and leaves the screen when the proxy
// stops waiting. (TestChatAsksUnknownDomain in test/ drives it in a pty.)
func TestDomainAsk(t *testing.T) {
	ws := t.TempDir()
	app := &chatApp{f: runFlags{workspace: ws, stateDir: t.TempDir()}, modelName: "m",
		opts: kernel.Options{Confinement: kernel.Confinement{Sandbox: &sandbox.Policy{Workspace: ws, Network: sandbox.NetworkNone, AllowDomains: []string{"goproxy.example.com"}}}}}
	m := newChatModel(app, false)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	key := func(s string) tea.KeyMsg {
		switch s {
		case "enter":
			return tea.KeyMsg{Type: tea.KeyEnter}
		case "esc":
			return tea.KeyMsg{Type: tea.KeyEsc}
		}
		return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
	}
	ask := func(q sandbox.DomainQuestion) (chan sandbox.DomainDecision, chan struct{}, tea.Cmd) {
		reply, cancel := make(chan sandbox.DomainDecision, 1), make(chan struct{})
		_, cmd := m.Update(domainAskMsg{q: q, reply: reply, cancel: cancel})
		return reply, cancel, cmd
	}
	q := sandbox.DomainQuestion{Host: "169.254.169.254", Port: 80, Grant: "169.254.169.254:80", Note: "a link-local address (cloud metadata services live there)"}
	reply, _, _ := ask(q)
	v := m.View()
	for _, want := range []string{"wants to reach 169.254.169.254:80", "cloud metadata", "network: none; domains goproxy.example.com", "[y] allow once", "[A] allow always"} {
		if !strings.Contains(strings.Join(strings.Fields(v), " "), want) {
			t.Errorf("the question lacks %q:\n%s", want, v)
		}
	}
	checkFits(t, "domain question", v, 80)
	m.Update(key("enter")) // never allows
	m.Update(key("A"))
	checkFits(t, "domain question, always", m.View(), 80)
	if !strings.Contains(m.View(), "write it to allow_domains in") {
		t.Errorf("A does not ask for the file:\n%s", m.View())
	}
	m.Update(key("esc")) // back
	m.Update(key("a"))
	if d := <-reply; d != sandbox.DomainAllowSession || m.domainAsk != nil {
		t.Fatalf("a answered %v (question still up: %v)", d, m.domainAsk != nil)
	}

	// Esc and n refuse; the turn goes on.
	for _, k := range []string{"n", "esc"} {
		reply, _, _ := ask(sandbox.DomainQuestion{Host: "pkg.example", Port: 443, Grant: "pkg.example"})
		m.Update(key(k))
		if d := <-reply; d != sandbox.DomainRefuse {
			t.Fatalf("%s answered %v", k, d)
		}
	}

	// The proxy stopped waiting (timeout): the question goes away.
	_, cancel, cmd := ask(sandbox.DomainQuestion{Host: "pkg.example", Port: 443, Grant: "pkg.example"})
	close(cancel)
	m.Update(cmd())
	if m.domainAsk != nil {
		t.Fatal("the question stayed after the proxy stopped waiting")
	}
}

// TestSessionDomainsEndWithTheSession: a "session" answer and a refusal
// belong to the session they were given in; /clear starts another one,
// which asks again.
func TestSessionDomainsEndWithTheSession(t *testing.T) {
	ws := t.TempDir()
	app := &chatApp{f: runFlags{workspace: ws, stateDir: t.TempDir()}, modelName: "m", sessionID: "s1",
		sessionDomains: map[string]sandbox.DomainDecision{"evil.example": sandbox.DomainAllowSession},
		refusedDomains: map[string]bool{"pkg.example:443": true}}
	if d, ok := app.knownDomain(sandbox.DomainQuestion{Host: "pkg.example", Port: 443, Grant: "pkg.example"}); !ok || d != sandbox.DomainRefuse {
		t.Fatalf("a refused host:port is not refused without a question: %v %v", d, ok)
	}
	m := newChatModel(app, false)
	m.slash("/clear")
	app.domainMu.Lock()
	left := len(app.sessionDomains) + len(app.refusedDomains)
	app.domainMu.Unlock()
	if left != 0 {
		t.Errorf("after /clear the new session still has %d domain answers of the old one", left)
	}
}

// TestChatQuestionBudgetSpansPrompts: the kernel's question budget is per
// Query and chat runs one Query per prompt; chat's own budget spans them
// all, so a host past it is refused without a question (and without the
// program being asked to show one: prog is nil here).
func TestChatQuestionBudgetSpansPrompts(t *testing.T) {
	app := &chatApp{}
	for range netproxy.MaxRecentQuestions {
		if err := app.domainBudget.Take(); err != nil {
			t.Fatal(err)
		}
	}
	d, err := app.askDomain(context.Background(), sandbox.DomainQuestion{Host: "flood-13.example", Port: 443, Grant: "flood-13.example"})
	if d != sandbox.DomainRefuse || !errors.Is(err, netproxy.ErrTooManyQuestions) {
		t.Fatalf("past the chat's budget: %v, %v; want a refusal wrapping ErrTooManyQuestions", d, err)
	}
}
