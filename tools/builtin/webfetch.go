package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"

	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tools"
)

// Limits of web_fetch.
const (
	webFetchMaxBody     = 5 << 20 // bytes read from the server
	webFetchMaxOutput   = 100_000 // characters returned to the model
	webFetchTimeout     = 60 * time.Second
	webFetchMaxRedirect = 5
)

// WebFetch GETs a URL through the session sandbox's domain proxy — the
// same allowlist, the same decision (internal/netproxy) as the commands'
// — and returns HTML as Markdown. Without granted domains it fetches
// nothing unless the sandbox's network is unrestricted (the permissive
// preset): under strict and standard it reaches only allowed domains.
var WebFetch = sync.OnceValue(func() *tools.Tool {
	return tools.Must(tools.New("web_fetch",
		`Fetch a web page (HTTP GET) and return its content; HTML is converted to Markdown.

- url: an absolute http:// or https:// URL.

Only domains the sandbox allows can be fetched (the user grants them with --allow-domain or allow_domains in a policy file); a refused domain returns an error that names the grant that would allow it. Redirects are followed (at most 5), each checked the same way. At most 5 MB is read and 100000 characters returned. Non-text content (images, archives) is refused. Use this to read documentation or an API reference; to download files into the workspace use bash (curl) — it follows the same allowlist.`,
		runWebFetch,
		&tools.Options{
			Security:    &tools.Security{Network: tools.NetworkUnrestricted, Filesystem: tools.FilesystemNone, SideEffects: tools.SideEffectsNone},
			Timeout:     webFetchTimeout + 10*time.Second,
			Annotations: &tools.Annotations{Title: "Fetch web page", ReadOnlyHint: true, OpenWorldHint: tools.Bool(true)},
		}))
})

type webFetchInput struct {
	URL string `json:"url" jsonschema:"the absolute http:// or https:// URL to fetch"`
}

// errProxyRefused carries the proxy's explanation of a refusal.
type errProxyRefused struct{ msg string }

func (e *errProxyRefused) Error() string { return e.msg }

func runWebFetch(ctx *tools.Context, in webFetchInput) (string, error) {
	u, err := url.Parse(strings.TrimSpace(in.URL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("url %q: give an absolute http:// or https:// URL", in.URL)
	}
	client, err := webFetchClient(sessionSandbox(ctx))
	if err != nil {
		return "", err
	}
	defer client.CloseIdleConnections()
	c, cancel := context.WithTimeout(ctx.Context(), webFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(c, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("url %q: %w", in.URL, err)
	}
	req.Header.Set("User-Agent", "lite-agent web_fetch")
	req.Header.Set("Accept", "text/html, text/markdown, text/plain, application/json;q=0.9, */*;q=0.1")
	resp, err := client.Do(req)
	if err != nil {
		var refused *errProxyRefused
		if errors.As(err, &refused) {
			return "", refused
		}
		return "", fmt.Errorf("fetching %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, webFetchMaxBody+1))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", u, err)
	}
	if resp.Header.Get("X-Lite-Agent-Proxy") == "refused" {
		// A plain-http refusal arrives as the proxy's own response.
		return "", &errProxyRefused{strings.TrimSpace(string(body))}
	}
	truncatedBody := len(body) > webFetchMaxBody
	if truncatedBody {
		body = body[:webFetchMaxBody]
	}
	final := resp.Request.URL.String()
	ctype, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var text string
	switch {
	case ctype == "text/html" || ctype == "application/xhtml+xml" || (ctype == "" && looksHTML(body)):
		md, err := htmltomarkdown.ConvertString(string(body), converter.WithDomain(final))
		if err != nil {
			return "", fmt.Errorf("converting %s to Markdown: %w", final, err)
		}
		text = md
	case strings.HasPrefix(ctype, "text/") || ctype == "application/json" || strings.HasSuffix(ctype, "+json") || strings.HasSuffix(ctype, "+xml") || ctype == "application/xml" || ctype == "application/javascript" || (ctype == "" && utf8.Valid(body)):
		text = string(body)
	default:
		return "", fmt.Errorf("%s is %s, not text: web_fetch returns pages, not files (download it with bash: curl -o FILE URL)", final, ctype)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "URL: %s\nStatus: %s\n\n", final, resp.Status)
	if len(text) > webFetchMaxOutput {
		cut := webFetchMaxOutput
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		b.WriteString(text[:cut])
		fmt.Fprintf(&b, "\n\n[truncated: %d of %d characters shown]", cut, len(text))
	} else {
		b.WriteString(text)
	}
	if truncatedBody {
		b.WriteString("\n\n[the page is larger than 5 MB; only its beginning was read]")
	}
	if resp.StatusCode >= 400 {
		return "", errors.New(b.String())
	}
	return b.String(), nil
}

func looksHTML(b []byte) bool {
	head := strings.ToLower(string(b[:min(len(b), 512)]))
	return strings.Contains(head, "<html") || strings.Contains(head, "<!doctype html")
}

// webFetchClient is an HTTP client whose every connection goes through the
// sandbox's domain proxy. Without one, only an unrestricted sandbox
// fetches directly.
func webFetchClient(sb *sandbox.Sandbox) (*http.Client, error) {
	if sb == nil {
		return nil, errors.New("web_fetch needs the session's sandbox (tools.Context.Sandbox is nil)")
	}
	tr := &http.Transport{
		TLSHandshakeTimeout:   15 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	if p := sb.HTTPProxy(); p != "" {
		pu, err := url.Parse(p)
		if err != nil {
			return nil, fmt.Errorf("web_fetch: the sandbox's proxy %q: %w", p, err)
		}
		tr.Proxy = http.ProxyURL(pu)
		// A refused CONNECT (https) comes back as a 403 whose body says
		// why; net/http would keep only "Forbidden".
		tr.OnProxyConnectResponse = func(_ context.Context, _ *url.URL, _ *http.Request, res *http.Response) error {
			if res.StatusCode == http.StatusOK {
				return nil
			}
			b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
			if msg := strings.TrimSpace(string(b)); msg != "" {
				return &errProxyRefused{msg}
			}
			return nil
		}
	} else if sb.Policy().Network != sandbox.NetworkUnrestricted {
		return nil, fmt.Errorf("web_fetch reaches only the domains the sandbox allows, and none are allowed (network %q); the user can allow one with --allow-domain HOST or allow_domains in the [sandbox] table of a policy file", networkOf(sb.Policy().Network))
	} else {
		tr.Proxy = nil // unrestricted: direct, as the commands are
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= webFetchMaxRedirect {
				return fmt.Errorf("more than %d redirects", webFetchMaxRedirect)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("redirect to %s: not http or https", req.URL)
			}
			return nil
		},
	}, nil
}

func networkOf(m sandbox.NetworkMode) string {
	if m == "" {
		return string(sandbox.NetworkNone)
	}
	return string(m)
}
