package main

import (
	"context"
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/lite-agent/lite-agent/policies"
	"github.com/lite-agent/lite-agent/sandbox"
)

// Asking about an unknown domain (issue 13): with domains granted, a
// command's connection to a host no allow or deny entry names is held by
// the proxy while the person is asked — allow once, for the session,
// always (written to the user's policy file's allow_domains, as A writes
// rules), or deny. deny_domains never gets here (the proxy refuses it
// first). No answer within the proxy's timeout refuses, and the question
// is taken off the screen.

// domainAskMsg puts a question on the screen; the answer goes to reply.
type domainAskMsg struct {
	q      sandbox.DomainQuestion
	reply  chan sandbox.DomainDecision
	cancel <-chan struct{}
}

// domainAskGone takes a question the proxy stopped waiting for off the
// screen.
type domainAskGone struct{ ask *domainAskMsg }

// askDomain is the agent's OnUnknownDomain. Each prompt of the session is
// a Query of its own, with a proxy of its own: the answers "session" and
// "always" are kept here, for the whole chat session, and so are the
// refusals (by host:port, what the question showed), so that a command
// cannot ask about one host again in the next turn. The kernel bounds how
// many questions one Query raises (netproxy.QuestionBudget).
// forgetSessionDomains drops the "session" answers and the refusals when
// the chat moves to another session (/clear, /resume): they were given
// for the one before. "always" answers are in the policy file by then.
func (a *chatApp) forgetSessionDomains() {
	a.domainMu.Lock()
	a.sessionDomains, a.refusedDomains = nil, nil
	a.domainMu.Unlock()
}

// knownDomain is an earlier answer of this chat session to q, if any; a
// refusal of its host:port wins over a "session" yes to the name.
func (a *chatApp) knownDomain(q sandbox.DomainQuestion) (sandbox.DomainDecision, bool) {
	a.domainMu.Lock()
	defer a.domainMu.Unlock()
	if a.refusedDomains[hostPortOf(q)] {
		return sandbox.DomainRefuse, true
	}
	d, ok := a.sessionDomains[q.Grant]
	return d, ok
}

func (a *chatApp) askDomain(ctx context.Context, q sandbox.DomainQuestion) (sandbox.DomainDecision, error) {
	if d, ok := a.knownDomain(q); ok {
		return d, nil
	}
	// One question on the screen at a time, a call's approval included.
	a.approveMu.Lock()
	defer a.approveMu.Unlock()
	if err := ctx.Err(); err != nil {
		return sandbox.DomainRefuse, err
	}
	if d, ok := a.knownDomain(q); ok { // answered while we waited
		return d, nil
	}
	if err := a.domainBudget.Take(); err != nil {
		return sandbox.DomainRefuse, err // the 403 says it was not asked
	}
	reply := make(chan sandbox.DomainDecision, 1)
	a.prog.Send(domainAskMsg{q: q, reply: reply, cancel: ctx.Done()})
	select {
	case d := <-reply:
		a.domainMu.Lock()
		switch d {
		case sandbox.DomainAllowSession, sandbox.DomainAllowAlways:
			if a.sessionDomains == nil {
				a.sessionDomains = map[string]sandbox.DomainDecision{}
			}
			a.sessionDomains[q.Grant] = d
		case sandbox.DomainRefuse: // n, Esc, or Ctrl+C on the question
			if a.refusedDomains == nil {
				a.refusedDomains = map[string]bool{}
			}
			a.refusedDomains[hostPortOf(q)] = true
		}
		a.domainMu.Unlock()
		return d, nil
	case <-ctx.Done():
		return sandbox.DomainRefuse, ctx.Err()
	}
}

// showDomainAsk puts the question up, and takes it down when the proxy
// stops waiting (its timeout, or the command gave up).
func (m *chatModel) showDomainAsk(msg domainAskMsg) tea.Cmd {
	select {
	case <-msg.cancel:
		return nil
	default:
	}
	m.domainAsk, m.domainAskAt = &msg, ""
	ask := m.domainAsk
	return func() tea.Msg {
		<-ask.cancel
		return domainAskGone{ask}
	}
}

func (m *chatModel) domainAskGoneMsg(msg domainAskGone) tea.Cmd {
	if m.domainAsk != msg.ask {
		return nil // answered already
	}
	m.domainAsk = nil
	return m.say(styleDim("  no answer in time: " + esc(hostPortOf(msg.ask.q)) + " refused"))
}

func hostPortOf(q sandbox.DomainQuestion) string {
	if strings.Contains(q.Host, ":") {
		return fmt.Sprintf("[%s]:%d", q.Host, q.Port)
	}
	return fmt.Sprintf("%s:%d", q.Host, q.Port)
}

func (m *chatModel) answerDomain(d sandbox.DomainDecision, shown string) tea.Cmd {
	a := m.domainAsk
	m.domainAsk = nil
	a.reply <- d
	return m.say(styleDim("  " + shown + " " + esc(hostPortOf(a.q))))
}

func (m *chatModel) domainKey(k tea.KeyMsg) tea.Cmd {
	a := m.domainAsk
	if m.domainAskAt == "always" {
		switch k.String() {
		case "u":
			path, err := policies.AddAllowDomainToUserFile(a.q.Grant)
			if err != nil {
				m.domainAskAt = ""
				m.notice = "could not write the grant: " + field(err.Error(), 200)
				return nil
			}
			return m.answerDomain(sandbox.DomainAllowAlways, "allowed always ("+esc(a.q.Grant)+" added to allow_domains in "+esc(path)+"):")
		case "esc":
			m.domainAskAt = ""
		case "ctrl+c":
			m.domainAsk = nil
			a.reply <- sandbox.DomainRefuse
			return m.interrupt()
		}
		return nil
	}
	switch k.String() {
	case "y":
		return m.answerDomain(sandbox.DomainAllowOnce, "allowed once:")
	case "a":
		return m.answerDomain(sandbox.DomainAllowSession, "allowed for this session ("+esc(a.q.Grant)+"):")
	case "A":
		m.domainAskAt = "always"
	case "n", "esc":
		return m.answerDomain(sandbox.DomainRefuse, "denied:")
	case "ctrl+c":
		m.domainAsk = nil
		a.reply <- sandbox.DomainRefuse
		return m.interrupt()
	}
	// Enter, and every other key, does nothing: nothing but y, a or A allows.
	return nil
}

func (m *chatModel) domainAskView() string {
	a := m.domainAsk
	var b strings.Builder
	fmt.Fprintf(&b, "? a command wants to reach %s — not in the sandbox's allowed domains\n", esc(hostPortOf(a.q)))
	if a.q.Note != "" {
		b.WriteString(styleErr("  "+esc(a.q.Host)+" is "+field(a.q.Note, 120)+": allowing it reaches that address") + "\n")
	}
	fmt.Fprintf(&b, "  %s\n", networkGrant(m.app.opts.Sandbox, 200))
	if m.domainAskAt == "always" {
		user, _ := policies.UserFile()
		fmt.Fprintf(&b, "\nallow always %s — write it to allow_domains in:\n[u] your policy file %s\n[Esc] back\n(not the workspace's file: under strict it may only narrow the sandbox)",
			esc(a.q.Grant), esc(user))
	} else {
		fmt.Fprintf(&b, "\n[y] allow once  [a] allow for this session (%s)  [A] allow always  [n] deny", esc(a.q.Grant))
	}
	return m.box(b.String())
}
