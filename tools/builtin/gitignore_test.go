package builtin

import "testing"

func TestGitignoreWildMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"*.go", "main.go", true},
		{"*.go", "main.go.txt", false},
		{"*", "", true},
		{"*", "anything", true},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYY", false},
		{"?.txt", "a.txt", true},
		{"?.txt", "ab.txt", false},
		{"?.txt", "é.txt", true}, // '?' is one character, not one byte
		{"[abc].md", "b.md", true},
		{"[abc].md", "d.md", false},
		{"[a-c]x", "bx", true},
		{"[!a-c]x", "bx", false},
		{"[^a-c]x", "dx", true},
		{"[]]", "]", true},
		{"[", "[", true}, // unterminated class: a literal '['
		{`\*`, "*", true},
		{`\*`, "a", false},
		{`\#foo`, "#foo", true},
		{"foo**bar", "fooXbar", true}, // "**" inside a segment is "*"
		{"*.min.js", "app.min.js", true},
		{"Makefile", "makefile", false},
	} {
		if got := gitignoreWildMatch(tc.pattern, tc.name); got != tc.want {
			t.Errorf("gitignoreWildMatch(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

func TestGitignoreMatcher(t *testing.T) {
	const file = `
# comments and blank lines are skipped

*.log
!keep.log
build/
/root-only.txt
doc/*.html
**/gen/*.go
vendor/**
!vendor/keep/**
a/**/z
\#hash
\!bang
trailing   
escaped\ 
`
	m := parseGitignore([]byte(file))
	for _, tc := range []struct {
		path  string
		isDir bool
		want  bool // ignored
	}{
		{"x.log", false, true},
		{"deep/er/x.log", false, true},
		{"keep.log", false, false}, // negated later in the file
		{"deep/keep.log", false, false},
		{"build", true, true},
		{"build", false, false}, // dir-only pattern, a file named build
		{"sub/build", true, true},
		{"root-only.txt", false, true},
		{"sub/root-only.txt", false, false}, // leading '/' anchors
		{"doc/index.html", false, true},
		{"doc/api/index.html", false, false}, // '*' does not cross '/'
		{"sub/doc/index.html", false, false}, // a middle '/' anchors too
		{"gen/x.go", false, true},
		{"a/b/gen/x.go", false, true},
		{"a/b/gen/sub/x.go", false, false},
		{"vendor", true, false}, // "vendor/**" matches inside, not vendor itself
		{"vendor/lib/x.go", false, true},
		{"vendor/keep/x.go", false, false},
		{"a/z", false, true},
		{"a/b/c/z", false, true},
		{"b/a/z", false, false},
		{"#hash", false, true},
		{"!bang", false, true},
		{"trailing", false, true},
		{"escaped ", false, true},
		{"main.go", false, false},
	} {
		var n *gitignoreNode
		n = n.push("", m)
		if got := n.ignored(tc.path, tc.isDir); got != tc.want {
			t.Errorf("ignored(%q, dir=%v) = %v, want %v", tc.path, tc.isDir, got, tc.want)
		}
	}
}

func TestGitignoreNested(t *testing.T) {
	var n *gitignoreNode
	n = n.push("", parseGitignore([]byte("*.tmp\n/top.txt\nsecret*\n")))
	n = n.push("sub", parseGitignore([]byte("!important.tmp\n/local.txt\n")))
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"a.tmp", true},
		{"sub/a.tmp", true},
		{"sub/important.tmp", false}, // the deeper file re-includes it
		{"important.tmp", true},      // but only below sub
		{"top.txt", true},
		{"sub/top.txt", false},
		{"sub/local.txt", true}, // anchored to sub
		{"local.txt", false},
		{"sub/deeper/local.txt", false},
		{"sub/secret.key", true}, // the root file still applies below
		{"subway/local.txt", false},
	} {
		if got := n.ignored(tc.path, false); got != tc.want {
			t.Errorf("ignored(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}

func TestGitignoreParseEdgeCases(t *testing.T) {
	m := parseGitignore([]byte("\r\n#c\r\n/\r\n!\r\nfoo\r\n"))
	if len(m.patterns) != 1 || m.patterns[0].segs[0] != "foo" {
		t.Fatalf("patterns = %+v, want just foo (CRLF, comment, lone '/' and '!' dropped)", m.patterns)
	}
}
