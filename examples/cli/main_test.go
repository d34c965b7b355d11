package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/tools/confined"
)

func TestMain(m *testing.M) {
	confined.Serve(weather, wordCount) // as main does
	os.Exit(m.Run())
}

// TestExample runs the agent on a workspace, offline and headless: both
// custom tools run confined (word_count reads the workspace), and the
// write the strict preset does not pre-approve is denied with a message.
func TestExample(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no user policy file
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("one two three\n"), 0o644)
	var out strings.Builder
	if err := run(context.Background(), []string{"-workspace", ws}, strings.NewReader(""), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"[result word_count (ok): notes.txt has 3 words]",
		"[result get_weather (ok): It's sunny in Tokyo.]",
		"[permission write_file: deny by headless",
		"[success] notes.txt has 3 words",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "answer.txt")); err == nil {
		t.Error("answer.txt was written without approval")
	}
}
