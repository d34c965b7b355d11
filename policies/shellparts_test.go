package policies

import (
	"reflect"
	"testing"
)

func TestViewShellCommand(t *testing.T) {
	v := ViewShellCommand("git status && npm test | tee out.txt")
	if want := []string{"git status", "npm test", "tee out.txt"}; !reflect.DeepEqual(v.Parts, want) {
		t.Errorf("parts %q, want %q", v.Parts, want)
	}
	if v := ViewShellCommand(`bash -c "$X"`); len(v.Unproven) == 0 {
		t.Errorf("bash -c of a variable is not reported as unproven: %+v", v)
	}
}
