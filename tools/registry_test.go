package tools

import (
	"strings"
	"testing"
)

var earlyTool = Must(New("early_tool", "built at package level", func(*Context, struct{}) (string, error) { return "", nil }, nil))

// TestCheckConfinable: what a confined child would not find is named
// before any call. (A child stops inside ServeConfinedCall, so a tool
// built after it returned is never built there: the call would fail with
// "not defined in the confined child" — runInChild's message — at the
// model's first use of the tool.)
func TestCheckConfinable(t *testing.T) {
	registry.Lock()
	was := registry.served
	registry.served = false
	registry.Unlock()
	t.Cleanup(func() {
		registry.Lock()
		registry.served = was
		registry.Unlock()
	})
	if err := CheckConfinable(earlyTool); err == nil || !strings.Contains(err.Error(), "has not called tools.ServeConfinedCall()") {
		t.Errorf("without ServeConfinedCall: %v", err)
	}
	markServed()
	if err := CheckConfinable(earlyTool); err != nil {
		t.Errorf("a package-level tool: %v", err)
	}
	late := Must(New("late_tool", "built in main after ServeConfinedCall", func(*Context, struct{}) (string, error) { return "", nil }, nil))
	if err := CheckConfinable(late); err == nil || !strings.Contains(err.Error(), "built after tools.ServeConfinedCall() returned") || !strings.Contains(err.Error(), "Run-time state") {
		t.Errorf("a late tool: %v", err)
	}
	twin := Must(New("early_tool", "a second tool of the same name", func(*Context, struct{}) (string, error) { return "", nil }, nil))
	_ = twin
	if err := CheckConfinable(earlyTool); err == nil || !strings.Contains(err.Error(), "more than one tool named early_tool") {
		t.Errorf("two tools of one name: %v", err)
	}
}
