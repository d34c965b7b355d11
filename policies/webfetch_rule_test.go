package policies

import (
	"encoding/json"
	"testing"
)

// TestWebFetchDomainRules: web_fetch(domain:PATTERN) matches the URL's
// host with the sandbox's grant grammar (one implementation).
func TestWebFetchDomainRules(t *testing.T) {
	rs, err := Compile([]Rule{
		MustParseRule(Deny, "web_fetch(domain:secret.example.com)"),
		MustParseRule(Allow, "WebFetch(domain:*.example.com)"),
		MustParseRule(Allow, "web_fetch(domain:docs.test:8080)"),
	}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		url  string
		want Behavior
	}{
		{"https://api.example.com/x", Allow},
		{"https://API.Example.COM./x", Allow},
		{"https://example.com/x", ""}, // *.example.com: subdomains only
		{"https://secret.example.com/", Deny},
		{"http://docs.test:8080/", Allow},
		{"http://docs.test/", ""},
		{"ftp://api.example.com/", Ask}, // no host a deny rule can be ruled out for: ask, as for an unreadable path
	} {
		in, _ := json.Marshal(map[string]string{"url": tc.url})
		if got := rs.Decide("web_fetch", in).Behavior; got != tc.want {
			t.Errorf("%s: %q, want %q", tc.url, got, tc.want)
		}
	}
	if s := rs.Call("web_fetch", json.RawMessage(`{"url":"https://x.test/a"}`)).Suggest(); len(s) != 1 || s[0] != "web_fetch(domain:x.test)" {
		t.Errorf("Suggest: %v", s)
	}
	for _, bad := range []string{"web_fetch(docs.example.com)", "web_fetch(domain:exa*mple.com)", "web_fetch(domain:)"} {
		if _, err := ParseRule(Allow, bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
