package builtin

import (
	"encoding/json"
	"strings"
	"testing"
)

// asTheModelSeesIt is s after the JSON encoding that carries a tool result
// to the model: bytes that are not UTF-8 become U+FFFD there.
func asTheModelSeesIt(t *testing.T, s string) string {
	t.Helper()
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out string
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Names that a plain listing makes ambiguous — a newline (two lines), 0xff
// and 0xfe (both U+FFFD once encoded), a control character in a directory,
// a name that itself starts with a quote — are listed by glob and
// list_dir one per line, distinct, and each listed name read back by
// read_file and edited by edit_file reaches that very file. Before, glob
// printed "a\nb.txt" across two lines and both 0xff and 0xfe names as
// "\uFFFD.dat", and none of them could be named back.
func TestListedNamesRoundTrip(t *testing.T) {
	e := newFilesTestEnv(t)
	files := map[string]string{ // name → content
		"a\nb.txt":         "newline\n",
		"\xff.dat":         "ff\n",
		"\xfe.dat":         "fe\n",
		`"q".txt`:          "quoted\n",
		"d\x01ir/in\tside": "control dir\n",
		"plain.txt":        "plain\n",
		"é.txt":            "accent\n", // valid UTF-8: shown as it is
	}
	for name, content := range files {
		e.write(t, name, content, 0o644)
	}

	roundTrip := func(t *testing.T, listed []string, prefix string, want map[string]string) {
		t.Helper()
		if len(listed) != len(want) {
			t.Fatalf("%d lines %q, want %d entries", len(listed), listed, len(want))
		}
		seen := map[string]bool{}
		for _, name := range listed {
			if strings.ContainsRune(name, '\uFFFD') {
				t.Errorf("listed %q: U+FFFD stands for a byte the model cannot name back", name)
			}
			got := filesMustOK(t, e.ctx, ReadFile(), filesObj{"path": prefix + name})
			found := ""
			for file, content := range want {
				if strings.Contains(got, strings.TrimSuffix(content, "\n")) {
					found = file
				}
			}
			if found == "" || seen[found] {
				t.Errorf("read_file %q = %q: not the one file it lists", prefix+name, got)
			}
			seen[found] = true
		}
	}

	t.Run("glob", func(t *testing.T) {
		out := asTheModelSeesIt(t, filesMustOK(t, e.ctx, Glob(), filesObj{"pattern": "**"}))
		lines := strings.Split(out, "\n")
		for _, want := range []string{`"a\nb.txt"`, `"\xff.dat"`, `"\xfe.dat"`, `"\"q\".txt"`, `"d\x01ir"/"in\tside"`, "plain.txt", "é.txt"} {
			if !strings.Contains(out, want) {
				t.Errorf("glob output lacks %s:\n%s", want, out)
			}
		}
		roundTrip(t, lines, "", files)
	})
	t.Run("list_dir", func(t *testing.T) {
		out := asTheModelSeesIt(t, filesMustOK(t, e.ctx, ListDir(), filesObj{"path": "."}))
		var names []string
		top := map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasSuffix(line, "/") {
				continue // the directory: read below
			}
			name, _, ok := strings.Cut(line, " (")
			if !ok {
				t.Fatalf("line %q has no size", line)
			}
			names = append(names, name)
		}
		for name, content := range files {
			if !strings.Contains(name, "/") {
				top[name] = content
			}
		}
		roundTrip(t, names, "", top)
		if !strings.Contains(out, `"d\x01ir"/`) {
			t.Fatalf("list_dir output lacks the directory:\n%s", out)
		}
		inner := asTheModelSeesIt(t, filesMustOK(t, e.ctx, ListDir(), filesObj{"path": `"d\x01ir"`}))
		name, _, _ := strings.Cut(inner, " (")
		roundTrip(t, []string{name}, `"d\x01ir"/`, map[string]string{"d\x01ir/in\tside": "control dir\n"})
	})
	t.Run("edit_file and write_file", func(t *testing.T) {
		filesMustOK(t, e.ctx, EditFile(), filesObj{"path": `"\xff.dat"`, "old_string": "ff", "new_string": "FF"})
		filesMustOK(t, e.ctx, WriteFile(), filesObj{"path": `"a\nb.txt"`, "content": "rewritten\n"})
		if got := e.read(t, "\xff.dat"); got != "FF\n" {
			t.Errorf("0xff file = %q", got)
		}
		if got := e.read(t, "\xfe.dat"); got != "fe\n" {
			t.Errorf("0xfe file = %q: the edit reached the wrong file", got)
		}
		if got := e.read(t, "a\nb.txt"); got != "rewritten\n" {
			t.Errorf("newline file = %q", got)
		}
	})
	// A quoted form cannot reach outside the workspace: the name it
	// stands for is checked as any other.
	filesMustFail(t, e.ctx, ReadFile(), filesObj{"path": `"\x2e\x2e"/secret.txt`}, "outside the workspace")
	filesMustFail(t, e.ctx, ReadFile(), filesObj{"path": `"a\x00b"`}, "NUL")
	e.checkSecret(t)
}

func TestQuotePath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"src/main.go", "src/main.go"},
		{"src/é.go", "src/é.go"},
		{"a\nb", `"a\nb"`},
		{"dir/\xff", `dir/"\xff"`},
		{`"x"`, `"\"x\""`},
		{`a"b`, `a"b`}, // a quote inside is no ambiguity
		{"x\u2028y", `"x\u2028y"`},
		{"x\u0085y", `"x\u0085y"`},
	} {
		if got := quotePath(tc.in); got != tc.want {
			t.Errorf("quotePath(%q) = %s, want %s", tc.in, got, tc.want)
		}
		if back := unquotePath(quotePath(tc.in)); back != tc.in {
			t.Errorf("unquotePath(quotePath(%q)) = %q", tc.in, back)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{`"src/a\nb"`, "src/a\nb"},   // a whole path as one literal
		{`"unclosed`, `"unclosed`},   // not a literal: as it is
		{`"bad\q"`, `"bad\q"`},       // not a valid literal: as it is
		{`"\x2f"`, "/"},              // whole-path literal: a path, checked as one
		{`a/"\x2f"/b`, `a/"\x2f"/b`}, // a component never becomes two
	} {
		if got := unquotePath(tc.in); got != tc.want {
			t.Errorf("unquotePath(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// grep names a file as glob does, so that its output lines stay one per
// match and the path can be read back.
func TestGrepQuotesNames(t *testing.T) {
	e := newFilesTestEnv(t)
	e.write(t, "a\nb.txt", "needle\n", 0o644)
	e.write(t, "\xff.dat", "needle\n", 0o644)
	for mode, want := range map[string]string{
		"files_with_matches": "\"a\\nb.txt\"\n\"\\xff.dat\"",
		"count":              "\"a\\nb.txt\":1\n\"\\xff.dat\":1",
		"content":            "\"a\\nb.txt\":1:needle\n\"\\xff.dat\":1:needle",
	} {
		got := asTheModelSeesIt(t, filesMustOK(t, e.ctx, Grep(), filesObj{"pattern": "needle", "output_mode": mode}))
		if !strings.HasPrefix(got, want) {
			t.Errorf("%s: got\n%s\nwant it to start with\n%s", mode, got, want)
		}
	}
	filesMustOK(t, e.ctx, ReadFile(), filesObj{"path": `"\xff.dat"`})
}
