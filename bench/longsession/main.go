// Command longsession measures a long coding session against a local fake
// of the Messages API (internal/fakeapi) that enforces a 200,000-token
// window and accounts for prompt caching as the API does: about seventy
// turns, each reading a different ~14 KB file — more than the window in
// all. It reports whether the session finished and its billed input
// (input + 1.25 × cache writes + 0.1 × cache reads), beside Claude Code
// 2.1's on the same session, measured once against a fake of the same kind
// (1,167,540; -claude measures it again, side by side).
//
//	go run ./bench/longsession [-files 70] [-size 14000] [-window 200000] [-tell-window=false] [-claude PATH]
//
// With -claude, Claude Code runs the same session first, against a fake of
// its own, and lite-agent is compared with what it measured.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/lite-agent/lite-agent/internal/fakeapi"
	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/provider/anthropic"
)

// claudeCode is Claude Code 2.1's billed input on the same session,
// measured once against the same kind of fake (BENCHMARKS.md, "A long
// session against a windowed, caching fake of the API"); -claude measures
// it again.
const claudeCode = 1_167_540

func main() {
	files := flag.Int("files", 70, "files to read, one per turn")
	size := flag.Int("size", 14_000, "bytes per file")
	window := flag.Int64("window", 200_000, "the context window the fake enforces")
	claude := flag.String("claude", "", "also run Claude Code (the claude binary at this path, e.g. from npm i @anthropic-ai/claude-code) on the same session against its own fake, and compare")
	tell := flag.Bool("tell-window", true, "give the kernel the window (--context-window); false leaves it the model family's 200,000, so that a smaller window is met only by the API's 400 \"prompt is too long\"")
	flag.Parse()
	ref, refName := float64(claudeCode), "Claude Code (model-facts.md)"
	if *claude != "" {
		billed, err := runClaude(*claude, *files, *size, *window)
		if err != nil {
			fmt.Fprintln(os.Stderr, "longsession: claude code:", err)
			os.Exit(1)
		}
		ref, refName = billed, "Claude Code (measured here)"
	}
	if err := run(*files, *size, *window, *tell, ref, refName); err != nil {
		fmt.Fprintln(os.Stderr, "longsession:", err)
		os.Exit(1)
	}
}

// source makes a file of plausible Go code, different for each i, so that
// no two reads are alike.
func source(i, size int) string {
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	words := []string{"ctx", "err", "buf", "path", "opts", "conn", "req", "resp", "cfg", "state", "item", "key", "value", "index", "count"}
	var b strings.Builder
	fmt.Fprintf(&b, "// Package pkg%03d is file %d of the long-session benchmark.\npackage pkg%03d\n\n", i, i, i)
	for n := 0; b.Len() < size; n++ {
		w1, w2 := words[rng.IntN(len(words))], words[rng.IntN(len(words))]
		fmt.Fprintf(&b, "// handle%d_%d checks %s against %s and returns the first problem.\nfunc handle%d_%d(%s, %s string) error {\n\tif %s == %s {\n\t\treturn fmt.Errorf(\"%s %%q equals %s\", %s)\n\t}\n\treturn nil\n}\n\n",
			i, n, w1, w2, i, n, w1, w2+"2", w1, w2+"2", w1, w2, w1)
	}
	return b.String()[:size]
}

// workspace writes the session's files into a new directory.
func workspace(files, size int) (string, error) {
	ws, err := os.MkdirTemp("", "longsession-ws-")
	if err != nil {
		return "", err
	}
	for i := range files {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("pkg%03d.go", i)), []byte(source(i, size)), 0o644); err != nil {
			return "", err
		}
	}
	return ws, nil
}

func run(files, size int, window int64, tell bool, ref float64, refName string) error {
	ws, err := workspace(files, size)
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	state, err := os.MkdirTemp("", "longsession-state-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	next := 0
	srv := fakeapi.New(window, func(r *fakeapi.Request) fakeapi.Reply {
		if strings.Contains(r.LastText(), "about to be compacted") {
			return fakeapi.Reply{Text: fmt.Sprintf("Summary: pkg000.go to pkg%03d.go were read; each defines handleN_M functions comparing two strings. Next: read pkg%03d.go.", next-1, next)}
		}
		if next >= files {
			return fakeapi.Reply{Text: fmt.Sprintf("I read all %d files: each defines small handle functions that compare two strings and return an error when they are equal.", files)}
		}
		next++
		return fakeapi.Reply{Text: fmt.Sprintf("Reading pkg%03d.go.", next-1), ToolName: "read_file", ToolInput: fmt.Sprintf(`{"path":"pkg%03d.go"}`, next-1)}
	})
	defer srv.Close()
	model, err := anthropic.New(&anthropic.Options{APIKey: "sk-ant-bench", BaseURL: srv.URL, MaxRetries: -1})
	if err != nil {
		return err
	}
	opts := kernel.Options{
		Agent: kernel.Agent{
			Model:        model,
			ModelName:    "claude-sonnet-4-6",
			Workspace:    ws,
			StateDir:     state,
			AllowedTools: []string{"read_file"},
		},
		Prompt: fmt.Sprintf("Read the %d Go files pkg000.go … pkg%03d.go one by one and tell me what they have in common.", files, files-1),
	}
	if tell {
		opts.ContextWindow = int(window)
	}
	start := time.Now()
	var res kernel.Event
	compacts := map[string]int{}
	var runErr error
	for ev, err := range kernel.Query(context.Background(), opts) {
		if err != nil {
			runErr = err
		}
		switch ev.Type {
		case kernel.EventResult:
			res = ev
		case kernel.EventCompact:
			compacts[ev.Compaction.Kind]++
		}
	}
	elapsed := time.Since(start)
	u := srv.Usage()
	finished := runErr == nil && res.Result.Subtype == kernel.SubtypeSuccess && next == files
	fmt.Printf("session: %d files of %d bytes, window %d tokens, %d model requests, %s\n", files, size, window, u.Requests, elapsed.Round(time.Millisecond))
	fmt.Printf("finished: %v (%s)\n", finished, res.Result.Subtype)
	fmt.Printf("refused as too long: %d; largest prompt: %d tokens; most breakpoints in a request: %d\n", u.TooLong, u.MaxPrompt, u.Breakpoints)
	fmt.Printf("context edits: %d clearings of old tool results, %d summaries\n", compacts["clear_tool_results"], compacts["summary"])
	fmt.Printf("input %d, cache writes %d, cache reads %d, output %d\n", u.Input, u.CacheWrites, u.CacheReads, u.Output)
	fmt.Printf("billed input (input + 1.25×writes + 0.1×reads): lite-agent %.0f, %s %.0f: ratio %.2f\n", u.Billed(), refName, ref, u.Billed()/ref)
	if !finished {
		return fmt.Errorf("the session did not finish: %v %s", runErr, res.Result.Error)
	}
	if u.Billed() > ref {
		return fmt.Errorf("billed input %.0f is more than %s's %.0f", u.Billed(), refName, ref)
	}
	return nil
}

// runClaude runs Claude Code on the same session: the fake plays the model
// with Claude Code's Read tool, answers its side requests (titles and the
// like, which have no Read tool) with a word, and its compaction request
// with a summary.
func runClaude(bin string, files, size int, window int64) (float64, error) {
	ws, err := workspace(files, size)
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(ws)
	home, err := os.MkdirTemp("", "longsession-home-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(home)
	next, side := 0, 0
	srv := fakeapi.New(window, func(r *fakeapi.Request) fakeapi.Reply {
		hasRead := false
		for _, t := range r.Tools {
			if fakeapi.Decode(t).Name == "Read" {
				hasRead = true
			}
		}
		last := r.LastText()
		switch {
		case !hasRead:
			side++
			return fakeapi.Reply{Text: "Reading files"}
		case strings.Contains(last, "summary") && strings.Contains(strings.ToLower(last), "do not call any tools"):
			return fakeapi.Reply{Text: fmt.Sprintf("Summary: pkg000.go to pkg%03d.go were read; each defines handleN_M functions comparing two strings. Next: read pkg%03d.go.", next-1, next)}
		case next >= files:
			return fakeapi.Reply{Text: fmt.Sprintf("I read all %d files.", files)}
		}
		next++
		return fakeapi.Reply{Text: fmt.Sprintf("Reading pkg%03d.go.", next-1), ToolName: "Read", ToolInput: fmt.Sprintf(`{"file_path":%q}`, filepath.Join(ws, fmt.Sprintf("pkg%03d.go", next-1)))}
	})
	defer srv.Close()
	prompt := fmt.Sprintf("Read the %d Go files pkg000.go … pkg%03d.go one by one and tell me what they have in common.", files, files-1)
	cmd := exec.Command(bin, "-p", prompt, "--model", "claude-sonnet-4-6", "--allowedTools", "Read", "--output-format", "json")
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "HOME="+home, "ANTHROPIC_BASE_URL="+srv.URL, "ANTHROPIC_API_KEY=sk-ant-bench",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	u := srv.Usage()
	fmt.Printf("claude code: %d model requests (%d side requests), %s, files read %d of %d\n", u.Requests, side, time.Since(start).Round(time.Millisecond), next, files)
	fmt.Printf("claude code: refused as too long %d; largest prompt %d; most breakpoints %d\n", u.TooLong, u.MaxPrompt, u.Breakpoints)
	fmt.Printf("claude code: input %d, cache writes %d, cache reads %d, output %d; billed input %.0f\n", u.Input, u.CacheWrites, u.CacheReads, u.Output, u.Billed())
	if err != nil {
		return 0, fmt.Errorf("%v: %s", err, truncate(string(out), 2000))
	}
	if next < files {
		return 0, fmt.Errorf("it read %d of %d files: %s", next, files, truncate(string(out), 2000))
	}
	return u.Billed(), nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
