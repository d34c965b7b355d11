package checkpoint

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// AgentLink is a symlink that an agent created in a recorded session.
type AgentLink struct {
	// Path is the link as the caller named it: the path given to
	// AgentSymlink, or the ancestor of it that is the link.
	Path string
	// Real is where the link itself is, with the symlinks of its parent
	// directories resolved: a path inside the session's workspace.
	Real string
	// Target is the link's target, as stored in the link.
	Target string
	// Session and Checkpoint say where the link was recorded: the
	// checkpoint whose changes created it (or made it point where it now
	// points).
	Session    string
	Checkpoint int
}

// AgentSymlink reports whether path, or one of its ancestors, is a symlink
// that an agent created (or retargeted) inside the workspace of a session
// recorded in stateDir, and still points where that session left it. It
// returns nil when none is. The CLI uses it to refuse a workspace reached
// through such a link: an agent that plants `ws/project -> /home/user` in
// one session would otherwise be handed the target as its workspace in
// the next, by a user who thinks they are in ws/project.
//
// path should be absolute and logical — as the user named it, symlinks
// unresolved (filepath.Abs does this; EvalSymlinks would hide the link).
// A path with no symlink in it (the resolved path) never matches, so
// passing the resolved path is how a user accepts the target.
//
// The evidence is every sealed checkpoint of every session log (the
// changes the agent's tools and confined commands made, changes found
// outside a tool call, and the recovered changes of killed sessions; not
// a rewind's own changes, which restore earlier states) and the unsealed
// changes of a session that never sealed them, whose post-image is what is
// on disk now. A link the user has since replaced or retargeted is theirs,
// and does not match. gc may have removed old checkpoints, and with them
// the evidence: this answers from what the store still holds.
func AgentSymlink(stateDir, path string) (*AgentLink, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	// The candidates: each element of path, from the root down, that is a
	// symlink now, keyed by where the link itself is (its parent resolved).
	type candidate struct{ logical, real, target string }
	var cands []candidate
	for p := abs; ; p = filepath.Dir(p) {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if err != nil {
				return nil, fmt.Errorf("checkpoint: %w", err)
			}
			parent, err := filepath.EvalSymlinks(filepath.Dir(p))
			if err != nil {
				return nil, fmt.Errorf("checkpoint: %w", err)
			}
			cands = append(cands, candidate{p, filepath.Join(parent, filepath.Base(p)), target})
		}
		if filepath.Dir(p) == p {
			break
		}
	}
	if len(cands) == 0 {
		return nil, nil
	}
	dir := filepath.Join(ckptDir(stateDir), "sessions")
	names, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	// Outermost link first: it is the one the user walked through first.
	sort.SliceStable(cands, func(i, j int) bool { return len(cands[i].logical) < len(cands[j].logical) })
	for _, c := range cands {
		for _, de := range names {
			id, ok := strings.CutSuffix(de.Name(), ".jsonl")
			if !ok || checkSessionID(id) != nil {
				continue
			}
			lp := filepath.Join(dir, de.Name())
			ws, err := logWorkspace(lp)
			if err != nil || ws == "" {
				continue // not ours to judge: verify reports broken logs
			}
			rel, ok := paths.Rel(ws, c.real)
			if !ok || rel == "." {
				continue // the link is not inside this session's workspace
			}
			h, err := readHistory(lp)
			if err != nil {
				continue
			}
			if n, ok := createdLink(h, filepath.ToSlash(rel), c.target); ok {
				return &AgentLink{Path: c.logical, Real: c.real, Target: c.target, Session: id, Checkpoint: n}, nil
			}
		}
	}
	return nil, nil
}

// createdLink finds the latest checkpoint of h that left rel a symlink to
// target that it was not before.
func createdLink(h *history, rel, target string) (int, bool) {
	for n := len(h.seals) - 1; n >= 0; n-- {
		s := h.seals[n]
		if s == nil || s.Reason == ReasonRewind {
			continue
		}
		for _, e := range s.Entries {
			if string(e.Path) == rel && e.Post.Kind == KindSymlink && string(e.Post.Target) == target && !e.Pre.same(e.Post) {
				return n, true
			}
		}
	}
	// The open checkpoint of a session that never sealed it: its pre
	// records say the agent was about to change rel, and rel is now this
	// link; unless it was this link before, the agent made it.
	for _, pr := range h.tail {
		if path.Clean(string(pr.Path)) == rel && !(pr.State.Kind == KindSymlink && string(pr.State.Target) == target) {
			return h.tailCP, true
		}
	}
	return 0, false
}

// logWorkspace reads the workspace from a session log's header (its first
// line) without reading the rest.
func logWorkspace(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	// The header is one short line; a bound keeps a damaged log from
	// being read whole here.
	line, err := bufio.NewReader(io.LimitReader(f, 1<<16)).ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return "", err
	}
	var r record
	if err := json.Unmarshal(line, &r); err != nil || r.T != "session" {
		return "", fmt.Errorf("%s: no header", path)
	}
	return r.Workspace, nil
}
