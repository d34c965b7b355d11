package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAttachFiles: @path attaches the workspace file to the prompt the
// model gets (before, only the literal "@notes.txt" went), through
// read_file's rules: a deny rule for read_file, a symlink out of the
// workspace and a file outside are not attached, each with a line that
// says why; a word that names no file stays text, unmentioned.
func TestAttachFiles(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	writeTestFile(t, filepath.Join(ws, "notes.txt"), "alpha\nbeta\n")
	writeTestFile(t, filepath.Join(ws, "secret.env"), "TOKEN=1\n")
	writeTestFile(t, filepath.Join(outside, "key"), "PRIVATE\n")
	if err := os.Symlink(filepath.Join(outside, "key"), filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "s.json")
	writeTestFile(t, script, `{"turns": [{"text": "ok"}]}`)
	f := runFlags{workspace: ws, stateDir: t.TempDir(), script: script, disallowedTools: "read_file(secret.env)"}
	model, name, err := buildModel(&f)
	if err != nil {
		t.Fatal(err)
	}
	app := &chatApp{f: f, set: map[string]bool{}, model: model, modelName: name, stateDir: f.stateDir}
	if err := app.rebuild(); err != nil {
		t.Fatal(err)
	}
	prompt, notes := app.attachFiles(context.Background(), "summarise @notes.txt, @secret.env and @link; mail me@example")
	if !strings.Contains(prompt, `<attached-file path="notes.txt">`) || !strings.Contains(prompt, "alpha") || !strings.Contains(prompt, "beta") {
		t.Errorf("notes.txt not attached:\n%s", prompt)
	}
	if strings.Contains(prompt, "TOKEN") || strings.Contains(prompt, "PRIVATE") {
		t.Errorf("a denied or outside file was attached:\n%s", prompt)
	}
	joined := strings.Join(notes, "\n")
	for _, want := range []string{"attached @notes.txt (", "@secret.env not attached: ", "@link not attached: "} {
		if !strings.Contains(joined, want) {
			t.Errorf("notes lack %q:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "example") {
		t.Errorf("a word naming no file was mentioned:\n%s", joined)
	}
	if !strings.HasPrefix(prompt, "summarise @notes.txt, @secret.env and @link; mail me@example") {
		t.Errorf("the typed prompt is not kept as typed:\n%s", prompt)
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
