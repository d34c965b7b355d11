package tools

import (
	"strings"
	"testing"
	"time"
)

func noopTool(name string) *Tool {
	return Must(New(name, "does nothing", func(*Context, struct{}) (string, error) { return "", nil }, nil))
}

// withServed runs f with a fresh served set, restoring the test binary's
// afterwards (this package's tests never call ServeConfinedCall).
func withServed(t *testing.T, f func()) {
	t.Helper()
	served.Lock()
	called, byName, dup := served.called, served.byName, served.dup
	served.called, served.byName, served.dup = false, map[string]*Tool{}, map[string]bool{}
	served.Unlock()
	defer func() {
		served.Lock()
		served.called, served.byName, served.dup = called, byName, dup
		served.Unlock()
	}()
	f()
}

// TestNewHasNoSideEffects: building a tool registers nothing — only what
// is handed to ServeConfinedCall can run confined.
func TestNewHasNoSideEffects(t *testing.T) {
	withServed(t, func() {
		a := noopTool("side_a")
		serve(nil)
		if got, _ := lookupServed("side_a"); got != nil {
			t.Fatalf("New put %s in the served set", a.Name())
		}
		if err := CheckConfinable(a); err == nil || !strings.Contains(err.Error(), "not among the tools handed to tools.ServeConfinedCall") || !strings.Contains(err.Error(), "add it to that call") {
			t.Errorf("a tool not handed over: %v", err)
		}
	})
}

// TestCheckConfinable: every way a confined child would not find a tool
// is named, with its fix, before any process starts.
func TestCheckConfinable(t *testing.T) {
	withServed(t, func() {
		a, b, twin1, twin2 := noopTool("tool_a"), noopTool("tool_b"), noopTool("twin"), noopTool("twin")
		if err := CheckConfinable(a); err == nil || !strings.Contains(err.Error(), "has not called tools.ServeConfinedCall") || !strings.Contains(err.Error(), "tools.ServeConfinedCall(tool_a, ...) first thing in main") {
			t.Errorf("without ServeConfinedCall: %v", err)
		}
		other := noopTool("tool_b") // same name as b, another tool
		serve([]*Tool{a, b, twin1, twin2})
		if err := CheckConfinable(a); err != nil {
			t.Errorf("a served tool: %v", err)
		}
		if err := CheckConfinable(other); err == nil || !strings.Contains(err.Error(), "a different tool of the same name") {
			t.Errorf("a tool whose name was served as another tool: %v", err)
		}
		for _, tw := range []*Tool{twin1, twin2} {
			if err := CheckConfinable(tw); err == nil || !strings.Contains(err.Error(), "two different tools named twin") {
				t.Errorf("two served tools of one name: %v", err)
			}
		}
	})
}

// TestServeConfinedCallMisuse: a second call (its tools would never reach
// a child, which serves at the first) and a nil tool panic where made.
func TestServeConfinedCallMisuse(t *testing.T) {
	for _, tc := range []struct {
		what, want string
		f          func()
	}{
		{"twice", "called twice", func() { serve(nil); serve(nil) }},
		{"nil tool", "tool 1 is nil", func() { serve([]*Tool{noopTool("ok"), nil}) }},
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

// TestForgottenServeFailsAtOnce: a program that never called
// ServeConfinedCall gets CallConfined's refusal before any child starts
// (sb is nil: nothing is started): a child would run the program's own
// main in the sandbox until the 10 s handshake timeout.
func TestForgottenServeFailsAtOnce(t *testing.T) {
	withServed(t, func() {
		tool := noopTool("forgotten")
		start := time.Now()
		res := tool.CallConfined(&Context{Call: Call{ID: "c1", Name: "forgotten", Input: []byte(`{}`)}}, nil, "")
		took := time.Since(start)
		if !res.IsError || !strings.Contains(res.TextOf(), "has not called tools.ServeConfinedCall") {
			t.Fatalf("result %+v, want the missing-ServeConfinedCall refusal", res)
		}
		t.Logf("a forgotten ServeConfinedCall fails in %s (was: the handshake timeout, %s)", took, handshakeTimeout)
		if took > time.Second {
			t.Errorf("refusal took %s; it must not start anything", took)
		}
	})
}
