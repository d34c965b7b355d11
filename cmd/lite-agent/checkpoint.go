package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/internal/sandboxrun"
	"github.com/lite-agent/lite-agent/internal/termsafe"
	"github.com/lite-agent/lite-agent/kernel"
	"github.com/lite-agent/lite-agent/local"
	"github.com/lite-agent/lite-agent/sandbox"
)

// The session and checkpoint commands: sessions, checkpoints, rewind, gc,
// verify. They only read and write the state directory and the workspace;
// none of them talks to a model.

// stateDirOf returns the --state-dir value or the default one.
func stateDirOf(flagValue string) (string, error) {
	if flagValue != "" {
		return filepath.Abs(flagValue)
	}
	d, err := kernel.DefaultStateDir()
	if err != nil {
		return "", failf("%v", err)
	}
	return d, nil
}

func newFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lite-agent "+usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses interleaved flags and turns a flag error into a usage
// error (exit 2; -h exits 0).
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return nil, err // -h, or a usage error (exit 2) in one line
	}
	return pos, nil
}

// ckptErr turns an error of the checkpoint package into the CLI's.
func ckptErr(err error) error {
	return failf("%s", strings.TrimPrefix(err.Error(), "checkpoint: "))
}

func localTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// What these commands print as text quotes the agent: file names and
// contents, tool names and call ids, session prompts, notes. Each such
// string goes through termsafe (esc for one-line fields, termsafe.Text for
// a diff); the --json outputs carry the exact bytes.
var esc = termsafe.Escape

// ---- sessions ----

func cmdSessions(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sessions", "sessions [--workspace DIR] [--state-dir DIR] [--json]", stderr)
	workspace := fs.String("workspace", "", "only the sessions of this workspace")
	stateFlag := fs.String("state-dir", "", "where sessions are kept (default: $XDG_STATE_HOME/lite-agent)")
	asJSON := fs.Bool("json", false, "print JSON lines instead of a table")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("sessions takes no arguments (got %q)", pos[0])
	}
	stateDir, err := stateDirOf(*stateFlag)
	if err != nil {
		return err
	}
	ws := ""
	if *workspace != "" {
		abs, err := filepath.Abs(*workspace)
		if err != nil {
			return failf("--workspace %s: %v", *workspace, err)
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		ws = abs
	}
	headers, errs := kernel.ListSessions(stateDir)
	for _, e := range errs {
		fmt.Fprintln(stderr, "lite-agent: skipping an unreadable session:", esc(e.Error()))
	}
	type row struct {
		ID          string    `json:"session_id"`
		Started     time.Time `json:"started"`
		Workspace   string    `json:"workspace"`
		Prompt      string    `json:"prompt"`
		Checkpoints int       `json:"checkpoints"`
	}
	var rows []row
	for _, h := range headers {
		if ws != "" && h.Workspace != ws {
			continue
		}
		r := row{ID: h.SessionID, Started: h.Created, Workspace: h.Workspace, Prompt: h.Prompt}
		if cps, err := checkpoint.List(stateDir, h.SessionID); err == nil {
			for _, c := range cps {
				if c.Sealed {
					r.Checkpoints++
				}
			}
		}
		rows = append(rows, r)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return failf("writing output: %v", err)
			}
		}
		return nil
	}
	if len(rows) == 0 {
		fmt.Fprintln(stderr, "no sessions in", stateDir)
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSTARTED\tCHECKPOINTS\tPROMPT")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", esc(r.ID), localTime(r.Started), r.Checkpoints, esc(oneLine(r.Prompt, 60)))
	}
	return tw.Flush()
}

// oneLine shortens s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// ---- checkpoints ----

func cmdCheckpoints(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("checkpoints", "checkpoints SESSION [--state-dir DIR] [--json]", stderr)
	stateFlag := fs.String("state-dir", "", "where sessions are kept (default: $XDG_STATE_HOME/lite-agent)")
	asJSON := fs.Bool("json", false, "print one JSON object per checkpoint")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("usage: lite-agent checkpoints SESSION [--state-dir DIR]")
	}
	stateDir, err := stateDirOf(*stateFlag)
	if err != nil {
		return err
	}
	cps, err := checkpoint.List(stateDir, pos[0])
	if err != nil {
		return ckptErr(err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, c := range cps {
			if err := enc.Encode(c); err != nil {
				return failf("writing output: %v", err)
			}
		}
		return nil
	}
	for _, c := range cps {
		fmt.Fprintf(stdout, "%-4d %s  %s\n", c.Number, localTime(c.Time), esc(cause(c)))
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		for _, f := range c.Files {
			counts := ""
			switch {
			case f.Lines:
				counts = fmt.Sprintf("+%d -%d", f.Added, f.Removed)
			case f.From == checkpoint.KindFile || f.To == checkpoint.KindFile:
				counts = "binary"
			}
			fmt.Fprintf(tw, "     \t%s\t%s\t%s\n", f.Change, esc(f.Path), counts)
		}
		tw.Flush()
		for _, ig := range c.Ignored {
			fmt.Fprintf(stdout, "     not covered: %s (%s)\n", esc(ig.Path), esc(ig.Reason))
		}
		if c.Detail != "" {
			fmt.Fprintf(stdout, "     note: %s\n", esc(c.Detail))
		}
		for _, x := range c.External {
			fmt.Fprintf(stdout, "     changed outside the agent afterwards: %s (%s, %s)\n", esc(x.Path), x.Now, localTime(x.Time))
		}
		for _, why := range c.Incomplete {
			fmt.Fprintf(stdout, "     external changes may be missing afterwards: %s\n", esc(why))
		}
	}
	return nil
}

// cause says in words why a checkpoint exists.
func cause(c checkpoint.Checkpoint) string {
	switch c.Reason {
	case checkpoint.ReasonUserTurn:
		return fmt.Sprintf("start of user turn %d", c.UserTurn)
	case checkpoint.ReasonToolCall:
		s := "tool call " + c.ToolName
		if c.ToolCallID != "" {
			s += " (" + c.ToolCallID + ")"
		}
		return s
	case checkpoint.ReasonRewind:
		return fmt.Sprintf("rewind to checkpoint %d (undo: rewind --to %d)", c.RewindTo, c.Number-1)
	case "session_start":
		return "session start (before any change)"
	case "unsealed":
		return "unsealed changes (the session is running, or stopped without sealing)"
	case checkpoint.ReasonRecovered:
		return "recovered after the session stopped mid-checkpoint"
	case checkpoint.ReasonSessionEnd:
		return "end of session"
	case checkpoint.ReasonExternal:
		return "changes outside a tool call"
	}
	return c.Reason
}

// ---- rewind ----

// pathFlags is the repeatable --path flag.
type pathFlags []string

func (s *pathFlags) String() string     { return strings.Join(*s, ",") }
func (s *pathFlags) Set(v string) error { *s = append(*s, v); return nil }

func cmdRewind(args []string, stdout, stderr io.Writer) error {
	_, err := rewindCmd(args, stdout, stderr)
	return err
}

// rewound is what a rewind did, for the interactive mode's undo: the
// checkpoint that records the files' rewind (-1: none), and where the
// conversation's cut turns were saved ("" if none were cut).
type rewound struct {
	filesCheckpoint int
	transcript      string
	saved           string
	paths           int // how many paths the files' rewind changed
}

func rewindCmd(args []string, stdout, stderr io.Writer) (rewound, error) {
	done := rewound{filesCheckpoint: -1}
	fs := newFlags("rewind", "rewind SESSION --to N [--files-only|--conversation-only] [--dry-run] [--force] [--path P]...", stderr)
	to := fs.Int("to", -1, "the checkpoint to go back to (0: before the session's first change; with all files, it also empties the workspace's toolchain caches)")
	filesOnly := fs.Bool("files-only", false, "rewind the files, keep the conversation")
	convOnly := fs.Bool("conversation-only", false, "rewind the conversation, keep the files")
	dryRun := fs.Bool("dry-run", false, "print what would change (a unified diff) and change nothing")
	force := fs.Bool("force", false, "overwrite paths changed outside the agent since (conflicts)")
	var paths pathFlags
	fs.Var(&paths, "path", "restore only this path (a file or directory; repeatable); implies --files-only")
	stateFlag := fs.String("state-dir", "", "where sessions are kept (default: $XDG_STATE_HOME/lite-agent)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return done, err
	}
	switch {
	case len(pos) != 1:
		return done, usageErrorf("usage: lite-agent rewind SESSION --to N [--files-only|--conversation-only] [--dry-run] [--force] [--path P]")
	case *to < 0:
		return done, usageErrorf("rewind needs --to N (see 'lite-agent checkpoints %s'; 0 is before the session's first change)", pos[0])
	case *filesOnly && *convOnly:
		return done, usageErrorf("--files-only and --conversation-only exclude each other")
	case *convOnly && len(paths) > 0:
		return done, usageErrorf("--path restores files; it cannot go with --conversation-only")
	}
	id := pos[0]
	stateDir, err := stateDirOf(*stateFlag)
	if err != nil {
		return done, err
	}
	doFiles := !*convOnly
	doConv := !*filesOnly && len(paths) == 0

	turn := -1
	var transcript string
	if doConv {
		cps, err := checkpoint.List(stateDir, id)
		if err != nil {
			return done, ckptErr(err)
		}
		var target *checkpoint.Checkpoint
		var starts []string
		for i := range cps {
			c := &cps[i]
			if c.Number == *to && c.Sealed {
				target = c
			}
			if c.Reason == checkpoint.ReasonUserTurn || c.Reason == "session_start" {
				starts = append(starts, strconv.Itoa(c.Number))
			}
		}
		if target == nil {
			return done, failf("session %s has no checkpoint %d (see 'lite-agent checkpoints %s')", id, *to, id)
		}
		if target.Reason != checkpoint.ReasonUserTurn && target.Reason != "session_start" {
			return done, usageErrorf("checkpoint %d is in the middle of a user turn (%s); the conversation can only go back to the start of a turn (checkpoints %s). Use --files-only to rewind only the files to %d",
				*to, cause(*target), strings.Join(starts, ", "), *to)
		}
		turn = target.UserTurn
		if transcript, err = kernel.SessionPath(stateDir, id); err != nil {
			return done, failf("%v", err)
		}
		if _, err := checkpoint.TranscriptTurnOffset(transcript, turn); err != nil {
			return done, failf("%s (use --files-only to rewind only the files)", strings.TrimPrefix(err.Error(), "checkpoint: "))
		}
	}

	if doFiles {
		rep, err := checkpoint.Rewind(stateDir, id, *to, checkpoint.RewindOptions{Force: *force, DryRun: *dryRun, Paths: paths})
		if rep != nil && *dryRun {
			// The diff shows file contents the agent wrote: an OSC 52
			// sequence in one would set the user's clipboard.
			io.WriteString(stdout, termsafe.Text(rep.Diff))
		}
		if rep != nil {
			for _, k := range rep.Kept {
				fmt.Fprintf(stderr, "kept %s: it holds files the agent did not create\n", esc(k))
			}
			for _, s := range rep.Skipped {
				fmt.Fprintf(stderr, "not restored %s: %s\n", esc(s.Path), esc(s.Reason))
			}
		}
		if errors.Is(err, checkpoint.ErrConflict) {
			for _, c := range rep.Conflicts {
				fmt.Fprintf(stderr, "conflict: %s: %s\n", esc(c.Path), esc(c.Reason))
			}
			if *dryRun {
				return done, failf("%d path(s) were changed outside the agent since; a rewind would be refused (add --force to overwrite them)", len(rep.Conflicts))
			}
			return done, failf("%d path(s) were changed outside the agent since; nothing was changed. Rerun with --force to overwrite them (their current content is kept in the rewind's checkpoint, so even that can be undone)", len(rep.Conflicts))
		}
		if err != nil {
			return done, ckptErr(err)
		}
		if *to == 0 && len(paths) == 0 {
			if err := resetCaches(stateDir, id, *dryRun, stdout, stderr); err != nil {
				return done, err
			}
		}
		switch {
		case *dryRun:
			fmt.Fprintf(stderr, "dry run: %d path(s) would change; nothing was written\n", len(rep.Changes))
		case rep.Checkpoint < 0:
			fmt.Fprintf(stdout, "files already as at checkpoint %d: nothing to change\n", *to)
		default:
			done.filesCheckpoint, done.paths = rep.Checkpoint, len(rep.Changes)
			fmt.Fprintf(stdout, "rewound %d path(s) to checkpoint %d; recorded as checkpoint %d (undo: lite-agent rewind %s --to %d --files-only)\n",
				len(rep.Changes), *to, rep.Checkpoint, id, rep.Checkpoint-1)
		}
	}
	if doConv {
		if *dryRun {
			fmt.Fprintf(stdout, "would cut the conversation before user turn %d\n", turn)
			return done, nil
		}
		saved, err := checkpoint.TruncateTranscript(transcript, turn)
		if err != nil {
			return done, ckptErr(err)
		}
		done.transcript, done.saved = transcript, saved
		if saved == "" {
			fmt.Fprintf(stdout, "conversation already ends before user turn %d\n", turn)
		} else {
			fmt.Fprintf(stdout, "conversation cut before user turn %d (the removed turns are saved in %s); continue with: lite-agent run --resume %s PROMPT\n", turn, saved, id)
		}
	}
	return done, nil
}

// resetCaches empties the toolchain caches of the session's workspace
// (local.ResetWorkspaceCaches), for a whole-files rewind to checkpoint 0:
// the checkpoint store does not record them, and what the session left
// there — an edited module source that go would compile unchecked — must
// not outlive a rewind to the session's start.
func resetCaches(stateDir, id string, dryRun bool, stdout, stderr io.Writer) error {
	ws := ""
	heads, _ := kernel.ListSessions(stateDir)
	for _, h := range heads {
		if h.SessionID == id {
			ws = h.Workspace
		}
	}
	if ws == "" {
		return nil // no transcript (a checkpoint-only session): no profile ran
	}
	if _, err := os.Stat(ws); err != nil {
		return nil // no workspace, no cache of it (gc removes the orphans)
	}
	dirs, err := local.ResetWorkspaceCaches("", ws, dryRun)
	for _, d := range dirs {
		if dryRun {
			fmt.Fprintf(stderr, "would empty the toolchain cache %s\n", esc(d))
		} else {
			fmt.Fprintf(stdout, "emptied the toolchain cache %s (the tools fill it again)\n", esc(d))
		}
	}
	if err != nil {
		return failf("%v", err)
	}
	return nil
}

// ---- gc ----

func cmdGC(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("gc", "gc [--max-age D] [--max-count N] [--max-size SIZE] [--caches] [--dry-run] [--state-dir DIR]", stderr)
	caches := fs.Bool("caches", false, "also clear every workspace's toolchain caches (build caches, downloads) under $XDG_CACHE_HOME/lite-agent; without it, only those of workspaces that no longer exist")
	maxAge := fs.String("max-age", "", "drop checkpoints older than this (e.g. 720h or 30d)")
	maxCount := fs.Int("max-count", 0, "keep at most N checkpoints per session")
	maxSize := fs.String("max-size", "", "shrink the store to at most this size (e.g. 500M, 2G)")
	dryRun := fs.Bool("dry-run", false, "report what would be removed; remove nothing")
	stateFlag := fs.String("state-dir", "", "where sessions are kept (default: $XDG_STATE_HOME/lite-agent)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("gc takes no arguments (got %q)", pos[0])
	}
	var opts checkpoint.GCOptions
	opts.DryRun = *dryRun
	if opts.MaxAge, err = parseAge(*maxAge); err != nil {
		return usageErrorf("--max-age: %v", err)
	}
	if *maxCount < 0 {
		return usageErrorf("--max-count must be positive")
	}
	opts.MaxCount = *maxCount
	if opts.MaxSize, err = parseStoreSize(*maxSize); err != nil {
		return usageErrorf("--max-size: %v", err)
	}
	stateDir, err := stateDirOf(*stateFlag)
	if err != nil {
		return err
	}
	rep, err := checkpoint.GC(stateDir, opts)
	if err != nil {
		return ckptErr(err)
	}
	verb := "removed"
	if *dryRun {
		verb = "would remove"
	}
	for _, t := range rep.Trimmed {
		fmt.Fprintln(stdout, esc(t))
	}
	for _, c := range rep.Corrupt {
		fmt.Fprintln(stderr, "dropped a corrupt object:", esc(c))
	}
	fmt.Fprintf(stdout, "%s %d checkpoint(s) and %d object(s) in %d session(s); store %s -> %s\n",
		verb, rep.CheckpointsRemoved, rep.ObjectsRemoved, rep.Sessions, checkpoint.FormatSize(rep.BytesBefore), checkpoint.FormatSize(rep.BytesAfter))
	// The per-workspace toolchain caches (local.MachineHost).
	cacheDirs, err := local.RemoveWorkspaceCaches("", *caches, *dryRun)
	for _, d := range cacheDirs {
		fmt.Fprintln(stdout, verb, "the workspace cache", esc(d))
	}
	if err != nil {
		fmt.Fprintln(stderr, "lite-agent: gc: workspace caches:", esc(err.Error()))
	}
	if *dryRun {
		return nil
	}
	// The temporary directories of sandboxes whose agent was killed
	// (kill -9 leaves them behind; the next sandbox removes them too).
	stale, err := sandbox.RemoveStaleTempDirs()
	for _, p := range stale {
		fmt.Fprintln(stdout, "removed the stale sandbox temporary directory", esc(p))
	}
	if err != nil {
		fmt.Fprintln(stderr, "lite-agent: gc:", esc(err.Error()))
	}
	return nil
}

// parseAge reads a Go duration, or a number of days ("30d").
func parseAge(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(d, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%q is not a number of days", s)
		}
		return time.Duration(n * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a duration (e.g. 72h or 30d)", s)
	}
	return d, nil
}

// parseStoreSize reads a size: bytes, or with a K, M, G or T suffix
// (powers of 1024; "KiB", "MB" and so on are accepted too).
func parseStoreSize(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	u, shift := sandboxrun.SplitSizeUnit(s)
	v, err := strconv.ParseFloat(u, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("%q is not a size (e.g. 500M or 2G)", s)
	}
	return int64(v * float64(int64(1)<<shift)), nil
}

// parseStoreCap reads --checkpoint-max-size: a size, "none" (no cap, -1),
// or "" (the default, 0).
func parseStoreCap(s string) (int64, error) {
	if s == "none" {
		return -1, nil
	}
	return parseStoreSize(s)
}

// ---- verify ----

func cmdVerify(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("verify", "verify [--state-dir DIR]", stderr)
	stateFlag := fs.String("state-dir", "", "where sessions are kept (default: $XDG_STATE_HOME/lite-agent)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("verify takes no arguments (got %q)", pos[0])
	}
	stateDir, err := stateDirOf(*stateFlag)
	if err != nil {
		return err
	}
	rep, err := checkpoint.Verify(stateDir)
	if err != nil {
		return ckptErr(err)
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(stdout, "note:", esc(n))
	}
	for _, p := range rep.Problems {
		fmt.Fprintln(stdout, "CORRUPT:", esc(p.String()))
	}
	fmt.Fprintf(stdout, "%d object(s) (%s) re-hashed; %d session(s), %d checkpoint(s)\n", rep.Objects, checkpoint.FormatSize(rep.Bytes), rep.Sessions, rep.Checkpoints)
	if !rep.OK() {
		return failf("the checkpoint store has %d problem(s); a rewind refuses corrupt objects. Rewinds to checkpoints that do not need them still work", len(rep.Problems))
	}
	fmt.Fprintln(stdout, "ok")
	return nil
}
