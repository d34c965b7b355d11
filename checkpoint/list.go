package checkpoint

import (
	"path/filepath"
	"sort"
	"time"
)

// Checkpoint describes one checkpoint of a session: a state of the
// workspace that the session can be rewound to. Checkpoint N's Files are
// the changes that led from checkpoint N-1 to it; rewinding to N undoes the
// changes of every later checkpoint.
type Checkpoint struct {
	Number int       `json:"number"`
	Time   time.Time `json:"time"`
	// Reason is one of the Reason constants, or "session_start" for an
	// implicit checkpoint 0 and "unsealed" for changes of a checkpoint
	// that was never sealed (a running or crashed session).
	Reason     string `json:"reason"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	// UserTurn is the user turn (from 0) this checkpoint begins (reason
	// user_turn) or belongs to; -1 when unknown.
	UserTurn int `json:"user_turn"`
	// RewindTo is the checkpoint a rewind restored (reason rewind), else -1.
	RewindTo int `json:"rewind_to"`
	// Sealed is false for the changes of an unsealed checkpoint.
	Sealed bool `json:"sealed"`
	// Pruned: gc removed what is needed to rewind to earlier checkpoints;
	// this one is the earliest rewind target left.
	Pruned bool `json:"pruned,omitempty"`
	// Files are the changed paths, sorted.
	Files []FileChange `json:"files,omitempty"`
	// Ignored are the paths changed in this checkpoint that it does not
	// cover (ignore rules, size cap, special files): a rewind leaves them
	// as they are.
	Ignored []IgnoredPath `json:"ignored,omitempty"`
	// External are changes made outside the agent, noticed after this
	// checkpoint and before the next.
	External []ExternalChange `json:"external,omitempty"`
	// Incomplete says why external-change tracking may have missed
	// changes after this checkpoint (for example an fsnotify overflow).
	Incomplete []string `json:"incomplete,omitempty"`
	// Detail is a note, e.g. on a recovered checkpoint.
	Detail string `json:"detail,omitempty"`
}

// FileChange is one changed path of a checkpoint.
type FileChange struct {
	Path string `json:"path"`
	// Change is "created", "deleted", "modified", "mode" (mode bits only)
	// or "replaced" (the type changed, e.g. file to symlink).
	Change string `json:"change"`
	From   Kind   `json:"from"`
	To     Kind   `json:"to"`
	// Lines says Added and Removed are known: both sides are text of at
	// most 1 MiB. Binary files have no counts.
	Lines   bool `json:"lines"`
	Added   int  `json:"added"`
	Removed int  `json:"removed"`
}

// ExternalChange is a change made outside the agent to a path the session
// had recorded.
type ExternalChange struct {
	Path string    `json:"path"`
	Time time.Time `json:"time"`
	// Now is what the path became.
	Now Kind `json:"now"`
}

// List returns the checkpoints of a session, oldest first, from
// checkpoint 0 (the state before the session's first change, or the
// earliest left by gc). It reads the log without locking it, so it works
// while the session runs.
func List(stateDir, sessionID string) ([]Checkpoint, error) {
	if err := checkSessionID(sessionID); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, err
	}
	h, err := readHistory(logPath(abs, sessionID))
	if err != nil {
		return nil, err
	}
	return listHistory(h), nil
}

func listHistory(h *history) []Checkpoint {
	var out []Checkpoint
	base := h.header.Base
	for n := base; n <= h.last; n++ {
		if s := h.seal(n); s != nil || n == 0 {
			out = append(out, checkpointOf(h, n))
		}
	}
	if len(h.tail) > 0 {
		cp := Checkpoint{Number: h.tailCP, Reason: "unsealed", UserTurn: -1, RewindTo: -1,
			Detail: "changes recorded but never sealed: the session is running, or stopped without sealing; they are sealed as 'recovered' when the session is next opened or rewound"}
		seen := map[string]bool{}
		for _, pr := range h.tail {
			if !seen[string(pr.Path)] {
				seen[string(pr.Path)] = true
				cp.Files = append(cp.Files, FileChange{Path: string(pr.Path), Change: "recorded", From: pr.State.Kind})
			}
		}
		out = append(out, cp)
	}
	return out
}

func checkpointOf(h *history, n int) Checkpoint {
	cp := Checkpoint{Number: n, UserTurn: -1, RewindTo: -1, Sealed: true}
	if s := h.seal(n); s != nil {
		cp.Time, cp.Reason, cp.ToolCallID, cp.ToolName = s.Time, s.Reason, s.ToolID, s.Tool
		cp.Pruned, cp.Detail = s.Pruned, s.Detail
		if s.Turn != nil {
			cp.UserTurn = *s.Turn
		}
		if s.RewindTo != nil {
			cp.RewindTo = *s.RewindTo
		}
		for _, e := range s.Entries {
			cp.Files = append(cp.Files, fileChangeOf(e))
		}
		cp.Ignored = s.Ignored
	} else {
		cp.Time, cp.Reason, cp.UserTurn = h.header.Time, "session_start", 0
	}
	for _, x := range h.after[n] {
		switch x.T {
		case "ext":
			cp.External = append(cp.External, ExternalChange{Path: string(x.Path), Time: x.Time, Now: x.State.Kind})
		case "incomplete":
			cp.Incomplete = append(cp.Incomplete, x.Detail)
		}
	}
	sort.Slice(cp.Files, func(i, j int) bool { return cp.Files[i].Path < cp.Files[j].Path })
	return cp
}

func fileChangeOf(e entry) FileChange {
	fc := FileChange{Path: string(e.Path), From: e.Pre.Kind, To: e.Post.Kind, Lines: e.Lines, Added: e.Added, Removed: e.Removed}
	switch {
	case e.Pre.Kind == KindAbsent:
		fc.Change = "created"
	case e.Post.Kind == KindAbsent:
		fc.Change = "deleted"
	case e.Pre.Kind != e.Post.Kind:
		fc.Change = "replaced"
	case e.Pre.Kind == KindDir, e.Pre.Kind == KindFile && e.Pre.Hash == e.Post.Hash && !e.Pre.Unrecorded:
		fc.Change = "mode"
	default:
		fc.Change = "modified"
	}
	return fc
}
