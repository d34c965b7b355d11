package confined

import (
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/tools"
)

func noopTool(name string) *tools.Tool {
	return tools.Must(tools.New(name, "does nothing", func(*tools.Context, struct{}) (string, error) { return "", nil }, nil))
}

// withServed runs f with a fresh served set, restoring the test binary's
// afterwards (this package's tests never call Serve).
func withServed(t *testing.T, f func()) {
	t.Helper()
	served.Lock()
	called, byName, dup := served.called, served.byName, served.dup
	served.called, served.byName, served.dup = false, map[string]*tools.Tool{}, map[string]bool{}
	served.Unlock()
	defer func() {
		served.Lock()
		served.called, served.byName, served.dup = called, byName, dup
		served.Unlock()
	}()
	f()
}

// TestNewHasNoSideEffects: building a tool registers nothing — only what
// is handed to Serve can run confined.
func TestNewHasNoSideEffects(t *testing.T) {
	withServed(t, func() {
		a := noopTool("side_a")
		serve([]*tools.Tool{noopTool("side_b")})
		if got, _ := lookupServed("side_a"); got != nil {
			t.Fatalf("New put %s in the served set", a.Name())
		}
		if err := Check(a); err == nil || !strings.Contains(err.Error(), "not among the tools handed to confined.Serve") || !strings.Contains(err.Error(), "add it to that call") {
			t.Errorf("a tool not handed over: %v", err)
		}
	})
}

// TestCheck: every way a confined child would not find a tool
// is named, with its fix, before any process starts.
func TestCheck(t *testing.T) {
	withServed(t, func() {
		a, b, twin1, twin2 := noopTool("tool_a"), noopTool("tool_b"), noopTool("twin"), noopTool("twin")
		if err := Check(a); err == nil || !strings.Contains(err.Error(), "has not called confined.Serve") || !strings.Contains(err.Error(), "confined.Serve(tool_a, ...) first thing in main") {
			t.Errorf("without Serve: %v", err)
		}
		other := noopTool("tool_b") // same name as b, another tool
		serve([]*tools.Tool{a, b, twin1, twin2})
		if err := Check(a); err != nil {
			t.Errorf("a served tool: %v", err)
		}
		if err := Check(other); err == nil || !strings.Contains(err.Error(), "a different tool of the same name") {
			t.Errorf("a tool whose name was served as another tool: %v", err)
		}
		for _, tw := range []*tools.Tool{twin1, twin2} {
			if err := Check(tw); err == nil || !strings.Contains(err.Error(), "two different tools named twin") {
				t.Errorf("two served tools of one name: %v", err)
			}
		}
	})
}

// TestServeMisuse: a second call (its tools would never reach a child,
// which serves at the first), a nil tool, and a call with no tool at all
// panic where made. The last used to be accepted: the program started,
// and every custom tool was refused later, when a session started.
func TestServeMisuse(t *testing.T) {
	for _, tc := range []struct {
		what, want string
		f          func()
	}{
		{"twice", "called twice", func() { serve([]*tools.Tool{noopTool("one")}); serve([]*tools.Tool{noopTool("two")}) }},
		{"nil tool", "tool 1 is nil", func() { serve([]*tools.Tool{noopTool("ok"), nil}) }},
		{"no tool", "called with no tool", func() { Serve() }},
		{"an empty list", "called with no tool", func() { serve([]*tools.Tool{}) }},
	} {
		withServed(t, func() {
			defer func() {
				if v := recover(); v == nil || !strings.Contains(v.(string), tc.want) {
					t.Errorf("%s: panic %v, want one mentioning %q", tc.what, v, tc.want)
				}
			}()
			tc.f()
		})
	}
}

// TestForgottenServeFailsAtOnce: a program that never called Serve gets
// Call's refusal before any child starts (sb is nil: nothing is started).
// It used to run the program's own main in the sandbox until a 10 s
// handshake timeout.
func TestForgottenServeFailsAtOnce(t *testing.T) {
	withServed(t, func() {
		tool := noopTool("forgotten")
		start := time.Now()
		res := Call(&tools.Context{Call: tools.Call{ID: "c1", Name: "forgotten", Input: []byte(`{}`)}}, tool, nil, "")
		took := time.Since(start)
		if !res.IsError || !strings.Contains(res.TextOf(), "has not called confined.Serve") {
			t.Fatalf("result %+v, want the missing-Serve refusal", res)
		}
		t.Logf("a forgotten Serve fails in %s (was: the handshake timeout, %s)", took, handshakeTimeout)
		if took > time.Second {
			t.Errorf("refusal took %s; it must not start anything", took)
		}
	})
}
