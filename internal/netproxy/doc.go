// Package netproxy is lite-agent's domain proxy: the one way out to the
// internet for confined commands (and the web_fetch tool) when a policy
// grants domains.
//
// # Where it runs
//
// In the agent's own process, outside every sandbox, on 127.0.0.1 and a
// port the kernel picks. The sandbox package starts it for a policy with
// AllowDomains, points the child's proxy variables at it, and lets the
// child's kernel filter connect to that one address (sandbox/doc.go,
// "Network by domain"): a program that ignores HTTPS_PROXY gets EPERM, and
// nothing inside the sandbox resolves a name.
//
// # What it speaks
//
// HTTP/1.1 CONNECT host:port (TLS, and anything else tunnelled) and
// absolute-URI plain HTTP (GET http://host/path). SOCKS5 is not served: the
// tools we checked (go, npm, pip, cargo, git over https, curl, Maven and
// Gradle through JAVA_TOOL_OPTIONS) all take an HTTP proxy; git over SSH
// would need it and is not supported yet.
//
// # The decision (Rules)
//
// One function, Rules.Check, decides every connection of the proxy and of
// web_fetch: deny entries first (deny wins), then the allow list; a name
// grant ("example.com", "*.example.com" for its subdomains, either with an
// optional ":PORT") never admits an IP literal, and only an explicit IP or
// IP:PORT grant reaches a loopback, private, link-local (cloud metadata),
// multicast, unspecified, shared or reserved address. The proxy resolves
// names itself and dials exactly the addresses it checked, so a name that
// resolves to 127.0.0.1 (DNS rebinding) is refused, and the answer cannot
// change between the check and the connection.
//
// Rules.Direct is the same lookup for a connection that does not come
// through the proxy: a confined command going straight to a literal
// address, as a client does for a loopback mirror (NO_PROXY names
// loopback; Go never proxies it). Only a literal IP or IP:PORT allow
// entry admits it, deny entries win, nobody is asked and session answers
// do not count (the connection is a system call held in the kernel,
// where no 403 can explain a refusal). The sandbox hands it to its
// notification server, which performs the connect itself; a name grant
// never admits a direct connection.
//
// Plain HTTP is decided per request, so a second request on a kept-alive
// connection to another host is checked (and a new upstream dialled); a
// Host header that differs from the URL's host is refused, since a server
// that routes by Host would otherwise serve a host we never checked. A
// CONNECT tunnel is decided once: what flows inside is end-to-end TLS.
//
// # Asking about an unknown host
//
// With Options.Ask (an interactive session), a host that no allow or deny
// entry names is not refused at once: its connection is held and the
// asker is asked, once per host and port however many connections arrive
// while the question is open (they share the answer). AllowOnce admits the
// held connections to the host:port the question showed — a connection to
// another port of the host has a question of its own — AllowSession and AllowAlways add the grant (the name, every
// port; IP:PORT for an IP literal) to these Rules, and a refusal, an error,
// no answer within AskTimeout (DefaultAskTimeout, 2 minutes) or every
// waiter leaving refuses with the usual 403 naming the flag. A refusal by
// the person is remembered for that host:port as long as the session
// grants are (these Rules), and wins over a later "session" yes to the
// name; a timeout or an error is not a "no" and asks again. A new host is
// refused without a question while eight questions are open already, or
// once MaxRecentQuestions were raised within QuestionWindow
// (QuestionBudget): a command that tries host after host — a random
// subdomain each time — must not bury the person under questions until
// a tired yes. The 403 then says it was not asked about, and why. Deny entries
// win and are never asked about. A yes admits a name, not what it
// resolves to, so the rebinding check still applies; a yes to an IP
// literal is an explicit IP:PORT grant, so a question about a non-public
// one carries a Note saying what it is (a loopback address...).
// The event's Rule says "asked: allowed once", "asked: allowed for the
// session", "asked: allowed always", "asked: denied", "asked earlier:
// denied", "not asked: ..." or "asked: no answer (...)". Keeping an
// "always" answer (a policy file) is the asker's job.
//
// # Refusals and events
//
// A refusal is HTTP 403 with a plain-text body that names the host and
// the grant that would allow it (or the deny entry that refused it), and a
// header X-Lite-Agent-Proxy: refused. Every decided connection — a tunnel,
// or one plain-HTTP request — is reported once, after it ends, with the
// bytes each way.
package netproxy
