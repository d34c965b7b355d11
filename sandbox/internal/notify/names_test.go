package notify

import "testing"

// TestRefusedGitPath: the one rule's table — a .git component anywhere,
// a last component .git (any case) or HEAD (exactly); nothing near them.
func TestRefusedGitPath(t *testing.T) {
	for p, want := range map[string]bool{
		"/ws/.git":                  true,
		"/ws/.git/":                 true,
		"/ws/a/b/.git/hooks/x":      true,
		"/ws/sub/.GIT/config":       true,
		".git/config":               true,
		"/ws/src/HEAD":              true,
		"HEAD":                      true,
		"/ws/src/HEAD/":             true,
		"/ws/src/head":              false,
		"/ws/src/ORIG_HEAD":         false,
		"/ws/src/HEAD.lock":         false,
		"/ws/HEAD/x":                false, // a directory named HEAD is no git directory's HEAD file
		"/ws/.gitignore":            false,
		"/ws/git/.github/workflows": false,
		"/ws/.git.bak/config":       false,
		"":                          false,
	} {
		if got := RefusedGitPath(p); got != want {
			t.Errorf("RefusedGitPath(%q) = %v, want %v", p, got, want)
		}
	}
}
