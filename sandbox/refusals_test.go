package sandbox

import (
	"strings"
	"testing"
)

// TestExplainNetworkNamesTheSetting: a refused destination names the
// setting that reaches it; a name lookup (a resolver's port 53) names the
// domain grant, not the network mode that would reach the resolver alone
// (pip in a workspace without its profile was told "--network private
// reaches it" of 10.255.255.53:53).
func TestExplainNetworkNamesTheSetting(t *testing.T) {
	for _, tc := range []struct {
		op, target string
		mode       NetworkMode
		why, allow string
	}{
		{"connect", "10.255.255.53:53", NetworkNone, "no name is resolved", "--allow-domain HOST"},
		{"send", "192.0.2.1:53", NetworkLoopback, "no name is resolved", "--allow-domain HOST"},
		{"connect", "127.0.0.53:53", NetworkNone, "no name is resolved", "--network loopback reaches this resolver"},
		{"connect", "192.0.2.1:443", NetworkNone, "network none", "--allow-domain 192.0.2.1:443"},
		{"connect", "10.1.2.3:8080", NetworkNone, "network none", "--network private"},
		{"connect", "127.0.0.1:8080", NetworkNone, "only the sandbox's own servers", "--network loopback"},
		{"bind", "192.0.2.1:53", NetworkLoopback, "network loopback", "--network unrestricted"},
	} {
		r := explain("network", tc.op, tc.target, tc.mode)
		if !strings.Contains(r.Why, tc.why) || !strings.Contains(r.Allow, tc.allow) {
			t.Errorf("%s %s under %s: %q; want the reason to hold %q and the setting %q", tc.op, tc.target, tc.mode, r.String(), tc.why, tc.allow)
		}
	}
}
