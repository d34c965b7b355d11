package main

import (
	"bufio"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// isTerminalWriter reports whether w is a terminal: the screen of the
// interactive mode must be one.
func isTerminalWriter(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}

// maxHistory bounds the prompt history kept across sessions.
const maxHistory = 500

// loadHistory reads the prompts typed before (one JSON string a line, so
// a multi-line prompt is one entry). A bad line is skipped: the history is
// a convenience, never a reason not to start.
func loadHistory(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var s string
		if json.Unmarshal(sc.Bytes(), &s) == nil {
			out = append(out, s)
		}
	}
	if len(out) > maxHistory {
		out = out[len(out)-maxHistory:]
	}
	return out
}

// appendHistory adds a prompt to the history and its file (mode 0600: the
// prompts may hold what the user would not show).
func appendHistory(path string, h []string, s string) []string {
	if len(h) > 0 && h[len(h)-1] == s {
		return h
	}
	h = append(h, s)
	if b, err := json.Marshal(s); err == nil {
		_ = os.MkdirAll(filepath.Dir(path), 0o700)
		if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			f.Write(append(b, '\n'))
			f.Close()
		}
	}
	return h
}

// completePath completes the @path word before the cursor (Tab) with the
// workspace's files: the common prefix of the matches is inserted.
func (m *chatModel) completePath() bool {
	v := m.input.Value()
	// The word at the end of the input (the cursor is there when typing).
	i := strings.LastIndexAny(v, " \n\t")
	word := v[i+1:]
	if !strings.HasPrefix(word, "@") {
		return false
	}
	prefix := word[1:]
	matches := workspaceFiles(m.app.f.workspace, prefix, 50)
	if len(matches) == 0 {
		m.notice = "no workspace file starts with " + esc(prefix)
		return true
	}
	common := matches[0]
	for _, s := range matches[1:] {
		for !strings.HasPrefix(s, common) {
			common = common[:len(common)-1]
		}
	}
	if len(matches) > 1 {
		m.notice = field(strings.Join(matches, "  "), 300)
	}
	if len(common) > len(prefix) {
		m.input.InsertString(common[len(prefix):])
	}
	return true
}

// workspaceFiles are up to n workspace paths (slash-separated) starting
// with prefix, skipping .git and what cannot be read.
func workspaceFiles(ws, prefix string, n int) []string {
	var out []string
	seen := 0
	_ = filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		seen++
		if err != nil || seen > 20000 || len(out) >= n {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(ws, p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() && (paths.IsGitName(d.Name()) || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() && !strings.HasPrefix(rel, prefix) && !strings.HasPrefix(prefix, rel+"/") {
			return filepath.SkipDir
		}
		if strings.HasPrefix(rel, prefix) {
			if d.IsDir() {
				rel += "/"
			}
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out
}
