package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// VerifyReport is what Verify found.
type VerifyReport struct {
	Objects     int   `json:"objects"`
	Bytes       int64 `json:"bytes"` // content bytes re-hashed
	Sessions    int   `json:"sessions"`
	Checkpoints int   `json:"checkpoints"`
	// Problems are corruption: objects whose content does not match their
	// name, objects a checkpoint needs that are missing, unreadable logs.
	Problems []Problem `json:"problems,omitempty"`
	// Notes are harmless leftovers of crashes: a torn last log line (ignored),
	// a torn pack tail (never referenced; gc drops it), an unsealed
	// checkpoint (sealed as "recovered" at the next open or rewind).
	Notes []string `json:"notes,omitempty"`
}

// OK reports whether no problem was found.
func (r *VerifyReport) OK() bool { return len(r.Problems) == 0 }

// Problem is one piece of corruption.
type Problem struct {
	Object string `json:"object,omitempty"`
	// Where the object lives ("pack NAME offset N" or "loose"), or the
	// log file.
	Where string `json:"where,omitempty"`
	// UsedBy names the checkpoints that need the object: "session#N path".
	UsedBy []string `json:"used_by,omitempty"`
	Detail string   `json:"detail"`
}

func (p Problem) String() string {
	s := p.Detail
	if p.Object != "" {
		s = "object " + p.Object + ": " + s
	}
	if p.Where != "" {
		s += " (" + p.Where + ")"
	}
	if len(p.UsedBy) > 0 {
		s += "; needed by " + strings.Join(p.UsedBy, ", ")
	}
	return s
}

// ref is a use of an object by a checkpoint.
type ref struct {
	hard bool // a pre-image (needed to rewind); soft: an external change's content
	use  string
}

// sessionLogs lists the session logs under stateDir.
func sessionLogs(stateDir string) ([]string, error) {
	dir := filepath.Join(ckptDir(stateDir), "sessions")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".jsonl") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// historyRefs adds the objects h needs to refs: the pre-images of its
// sealed checkpoints from base on and of its unsealed tail (hard), and the
// content of external changes (soft).
func historyRefs(h *history, refs map[Hash][]ref) {
	id := h.header.Session
	add := func(st *pstate, hard bool, use string) {
		if st == nil || st.Kind != KindFile || st.Unrecorded || st.Hash == "" {
			return
		}
		if hh, err := parseHash(st.Hash); err == nil {
			refs[hh] = append(refs[hh], ref{hard: hard, use: use})
		}
	}
	for n := h.header.Base; n <= h.last; n++ {
		// Rewinding to checkpoint base or later needs the pre-images of
		// the checkpoints after base; those of base itself served only
		// earlier targets.
		if s := h.seal(n); s != nil && n > h.header.Base {
			for i := range s.Entries {
				add(&s.Entries[i].Pre, true, fmt.Sprintf("%s#%d %s", id, n, s.Entries[i].Path))
			}
		}
		for i := range h.after[n] {
			x := &h.after[n][i]
			add(x.State, false, fmt.Sprintf("%s after #%d %s (external change)", id, n, x.Path))
		}
	}
	for i := range h.tail {
		add(h.tail[i].State, true, fmt.Sprintf("%s#%d %s (unsealed)", id, h.tailCP, h.tail[i].Path))
	}
}

// Verify re-hashes every object of the store under stateDir and checks that
// every object a checkpoint needs is there. It reports corruption; it
// never repairs or deletes anything (a rewind refuses corrupt objects, and
// gc drops them when it compacts).
func Verify(stateDir string) (*VerifyReport, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, err
	}
	lock, err := lockStore(abs, false, true)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	rep := &VerifyReport{}

	// Logs first: an object a log line refers to was written before the
	// line, so it is on disk when the objects are read afterwards.
	refs := map[Hash][]ref{}
	logs, err := sessionLogs(abs)
	if err != nil {
		return nil, err
	}
	for _, lp := range logs {
		h, err := readHistory(lp)
		if err != nil {
			rep.Problems = append(rep.Problems, Problem{Where: lp, Detail: err.Error()})
			continue
		}
		rep.Sessions++
		for n := h.header.Base; n <= h.last; n++ {
			if h.seal(n) != nil || n == 0 {
				rep.Checkpoints++
			}
		}
		if h.torn {
			rep.Notes = append(rep.Notes, fmt.Sprintf("session %s: a torn last line (a crash mid-write) is ignored", h.header.Session))
		}
		if len(h.tail) > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("session %s: checkpoint %d was never sealed (a running or crashed session); it is sealed as 'recovered' when the session is next opened or rewound", h.header.Session, h.tailCP))
		}
		historyRefs(h, refs)
	}
	usedBy := func(h Hash) []string {
		var out []string
		for _, r := range refs[h] {
			out = append(out, r.use)
		}
		return out
	}

	objDir := filepath.Join(ckptDir(abs), "objects")
	present := map[Hash]bool{}
	var lostEntries []Problem
	packs, err := listPacks(filepath.Join(objDir, "pack"))
	if err != nil {
		return nil, err
	}
	for _, p := range packs {
		entries, garbage, lost, err := readPackIndex(filepath.Join(objDir, "pack"), p)
		if err != nil {
			rep.Problems = append(rep.Problems, Problem{Where: "pack " + p, Detail: err.Error()})
			continue
		}
		for _, e := range lost {
			lostEntries = append(lostEntries, Problem{Object: e.hash.String(), Where: fmt.Sprintf("pack %s offset %d", p, e.off), UsedBy: usedBy(e.hash),
				Detail: "its bytes are missing (the pack was cut short, as a power loss can leave it); only rewinds that need it fail; 'lite-agent gc' drops the entry"})
		}
		if garbage > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("pack %s ends with %d bytes of a write torn by a crash; nothing refers to them", p, garbage))
		}
		f, err := os.Open(filepath.Join(objDir, "pack", p+".pack"))
		if err != nil {
			rep.Problems = append(rep.Problems, Problem{Where: "pack " + p, Detail: err.Error()})
			continue
		}
		fi, _ := f.Stat()
		for _, e := range entries {
			where := fmt.Sprintf("pack %s offset %d", p, e.off)
			hdr, err := readEntryHeader(f, e.off, fi.Size())
			if err == nil && hdr.hash != e.hash {
				err = fmt.Errorf("the index says %s but the entry is %s", e.hash, hdr.hash)
			}
			var raw []byte
			if err == nil {
				raw, err = readEntryData(f, hdr)
			}
			rep.Objects++
			if err != nil {
				rep.Problems = append(rep.Problems, Problem{Object: e.hash.String(), Where: where, UsedBy: usedBy(e.hash), Detail: trimErr(err)})
				continue
			}
			rep.Bytes += int64(len(raw))
			present[e.hash] = true
		}
		f.Close()
	}
	dirs, err := os.ReadDir(objDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	for _, d := range dirs {
		if !d.IsDir() || len(d.Name()) != 2 {
			continue
		}
		files, err := os.ReadDir(filepath.Join(objDir, d.Name()))
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		for _, fe := range files {
			h, err := parseHash(d.Name() + fe.Name())
			if err != nil {
				rep.Notes = append(rep.Notes, fmt.Sprintf("a stray file in the object store: %s", filepath.Join(d.Name(), fe.Name())))
				continue
			}
			rep.Objects++
			f, err := os.Open(filepath.Join(objDir, d.Name(), fe.Name()))
			var n int64
			if err == nil {
				n, err = copyLoose(f, h, io.Discard)
				f.Close()
			}
			if err != nil {
				rep.Problems = append(rep.Problems, Problem{Object: h.String(), Where: "loose", UsedBy: usedBy(h), Detail: trimErr(err)})
				continue
			}
			rep.Bytes += n
			present[h] = true
		}
	}
	for _, pr := range lostEntries {
		if h, _ := parseHash(pr.Object); present[h] || len(pr.UsedBy) == 0 {
			// Stored again, or needed by nothing: only the index entry is
			// left, for gc to drop.
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: the bytes of object %s are missing (the pack was cut short); nothing needs them; 'lite-agent gc' drops the entry", pr.Where, pr.Object))
			continue
		}
		rep.Problems = append(rep.Problems, pr)
	}
	var missing []Hash
	for h, rs := range refs {
		if present[h] {
			continue
		}
		for _, r := range rs {
			if r.hard {
				missing = append(missing, h)
				break
			}
		}
	}
	sort.Slice(missing, func(i, j int) bool { return missing[i].String() < missing[j].String() })
	for _, h := range missing {
		var uses []string
		for _, r := range refs[h] {
			if r.hard {
				uses = append(uses, r.use)
			}
		}
		// A corrupt object was reported above; report it missing only if
		// it was not found at all.
		reported := false
		for _, p := range rep.Problems {
			if p.Object == h.String() {
				reported = true
			}
		}
		if !reported {
			rep.Problems = append(rep.Problems, Problem{Object: h.String(), UsedBy: uses, Detail: "missing from the store"})
		}
	}
	return rep, nil
}

// trimErr drops the package prefixes from an error for a report line.
func trimErr(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "checkpoint store: ")
	return strings.TrimPrefix(s, "corrupt object ")
}
