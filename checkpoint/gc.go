package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"
)

// GCOptions bound the store. Zero fields set no bound; with all zero, gc
// only drops what nothing refers to (objects of removed checkpoints,
// duplicate copies, torn pack tails).
type GCOptions struct {
	// MaxAge drops rewind targets (checkpoints) sealed longer ago.
	MaxAge time.Duration
	// MaxCount keeps at most this many rewind targets per session, the
	// newest.
	MaxCount int
	// MaxSize drops the oldest rewind targets, across sessions, until the
	// store takes at most this many bytes (or only the newest checkpoint
	// of each session is left).
	MaxSize int64
	// Keep names sessions whose history is left whole (the session that
	// is opening, when the store cap runs gc).
	Keep []string
	// DryRun reports what would be removed and removes nothing.
	DryRun bool
	// Now is the time ages are measured from; zero means time.Now().
	Now time.Time
}

// GCReport says what gc removed (or, in a dry run, would remove).
type GCReport struct {
	Sessions int `json:"sessions"`
	// CheckpointsRemoved counts rewind targets dropped; Trimmed lists
	// "session: now from checkpoint N".
	CheckpointsRemoved int      `json:"checkpoints_removed"`
	Trimmed            []string `json:"trimmed,omitempty"`
	ObjectsRemoved     int      `json:"objects_removed"`
	BytesBefore        int64    `json:"bytes_before"`
	BytesAfter         int64    `json:"bytes_after"`
	// Corrupt are objects found corrupt while compacting: not copied.
	Corrupt []string `json:"corrupt,omitempty"`
}

type packInfo struct {
	name    string
	entries []packEntry
	garbage int64
	lost    int   // index entries without their bytes
	bytes   int64 // of the pack and its index
}

// GC removes old checkpoints and the objects only they needed. Only the
// oldest checkpoints of a session are ever removed (a rewind to a kept
// checkpoint needs every later one), the newest checkpoint of every session
// is kept, and no object a kept checkpoint needs is deleted. Sessions with
// an unsealed checkpoint are left whole. It needs the store to itself:
// while any session records, it fails with ErrStoreBusy.
func GC(stateDir string, opts GCOptions) (*GCReport, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, err
	}
	lock, err := lockStore(abs, true, false)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	rep := &GCReport{}
	if rep.BytesBefore, err = dirSize(ckptDir(abs)); err != nil {
		return nil, err
	}

	type sess struct {
		h       *history
		base    int // the new base
		frozen  bool
		logSize int64
	}
	logs, err := sessionLogs(abs)
	if err != nil {
		return nil, err
	}
	var sessions []*sess
	for _, lp := range logs {
		h, err := readHistory(lp)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: gc: %w (run 'lite-agent verify')", err)
		}
		fi, _ := os.Stat(lp)
		s := &sess{h: h, base: h.header.Base, frozen: len(h.tail) > 0 || h.torn || slices.Contains(opts.Keep, h.header.Session)}
		if fi != nil {
			s.logSize = fi.Size()
		}
		if !s.frozen {
			if opts.MaxCount > 0 {
				s.base = max(s.base, h.last-opts.MaxCount+1)
			}
			if opts.MaxAge > 0 {
				cut := now.Add(-opts.MaxAge)
				nb := h.last
				for n := s.base; n <= h.last; n++ {
					t := h.header.Time
					if r := h.seal(n); r != nil {
						t = r.Time
					}
					if !t.Before(cut) {
						nb = n
						break
					}
				}
				s.base = max(s.base, nb)
			}
		}
		sessions = append(sessions, s)
	}
	rep.Sessions = len(sessions)

	// Objects and their sizes, to know what dropping a checkpoint frees.
	objDir := filepath.Join(ckptDir(abs), "objects")
	objBytes, err := dirSize(objDir)
	if err != nil {
		return nil, err
	}
	var logBytes int64
	for _, s := range sessions {
		logBytes += s.logSize
	}
	// Lock files and the like stay as they are.
	otherBytes := rep.BytesBefore - objBytes - logBytes
	packs, err := listPacks(filepath.Join(objDir, "pack"))
	if err != nil {
		return nil, err
	}
	var packInfos []packInfo
	for _, p := range packs {
		entries, garbage, lost, err := readPackIndex(filepath.Join(objDir, "pack"), p)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: gc: %w (run 'lite-agent verify')", err)
		}
		// Index entries without their bytes make the pack unclean: it is
		// rewritten without them.
		pi := packInfo{name: p, garbage: garbage, lost: len(lost)}
		pf, err := os.Open(filepath.Join(objDir, "pack", p+".pack"))
		if err != nil {
			return nil, err
		}
		var packSize int64
		if fi, err := pf.Stat(); err == nil {
			packSize = fi.Size()
		}
		pi.bytes = packSize
		if ifi, err := os.Stat(filepath.Join(objDir, "pack", p+".idx")); err == nil {
			pi.bytes += ifi.Size()
		}
		for _, e := range entries {
			if hdr, err := readEntryHeader(pf, e.off, packSize); err == nil {
				e = hdr
			}
			pi.entries = append(pi.entries, e)
		}
		pf.Close()
		packInfos = append(packInfos, pi)
	}
	loose := map[Hash]string{}
	looseSize := map[Hash]int64{}
	dirs, _ := os.ReadDir(objDir)
	for _, d := range dirs {
		if !d.IsDir() || len(d.Name()) != 2 {
			continue
		}
		files, _ := os.ReadDir(filepath.Join(objDir, d.Name()))
		for _, fe := range files {
			h, err := parseHash(d.Name() + fe.Name())
			if err != nil {
				continue
			}
			loose[h] = filepath.Join(objDir, d.Name(), fe.Name())
			if fi, err := fe.Info(); err == nil {
				looseSize[h] = fi.Size()
			}
		}
	}

	liveAt := func(bases []int) map[Hash]bool {
		live := map[Hash]bool{}
		for i, s := range sessions {
			h := *s.h
			h.header.Base = bases[i]
			rs := map[Hash][]ref{}
			historyRefs(&h, rs)
			for k := range rs {
				live[k] = true
			}
		}
		return live
	}
	// outcome is what gc leaves with these bases: the size of the store
	// (byte for byte what the real run writes, short of corrupt objects it
	// cannot copy), the objects it removes, and the packs it rewrites. The
	// dry run reports it, and --max-size searches it.
	type outcome struct {
		bytes   int64
		removed int
		live    map[Hash]bool
		rewrite []packInfo
	}
	outcomeAt := func(bases []int) outcome {
		o := outcome{bytes: otherBytes, live: liveAt(bases)}
		for i, s := range sessions {
			if bases[i] > s.h.header.Base {
				o.bytes += int64(len(encodeLog(s.h, bases[i])))
			} else {
				o.bytes += s.logSize
			}
		}
		have := map[Hash]bool{}
		for h := range loose {
			if o.live[h] {
				have[h] = true
				o.bytes += looseSize[h]
			} else {
				o.removed++
			}
		}
		for _, pi := range packInfos {
			clean := pi.garbage == 0 && pi.lost == 0
			seen := map[Hash]bool{}
			for _, e := range pi.entries {
				if !o.live[e.hash] || have[e.hash] || seen[e.hash] {
					clean = false
				}
				seen[e.hash] = true
			}
			if clean {
				for h := range seen {
					have[h] = true
				}
				o.bytes += pi.bytes
				continue
			}
			o.rewrite = append(o.rewrite, pi)
		}
		copied := map[Hash]bool{}
		for _, pi := range o.rewrite {
			for _, e := range pi.entries {
				if !o.live[e.hash] {
					o.removed++
					continue
				}
				if have[e.hash] || copied[e.hash] {
					continue
				}
				copied[e.hash] = true
				o.bytes += e.hdrLen + e.storedLen + idxEntrySize
			}
		}
		return o
	}

	bases := make([]int, len(sessions))
	for i, s := range sessions {
		bases[i] = s.base
	}
	if opts.MaxSize > 0 {
		// The order in which --max-size drops rewind targets: always the
		// oldest left, across sessions. steps[k] is the session whose base
		// the k-th drop moves.
		var steps []int
		next := append([]int(nil), bases...)
		for {
			pick := -1
			var pickTime time.Time
			for i, s := range sessions {
				if s.frozen || next[i] >= s.h.last {
					continue
				}
				t := s.h.header.Time
				if r := s.h.seal(next[i]); r != nil {
					t = r.Time
				}
				if pick < 0 || t.Before(pickTime) {
					pick, pickTime = i, t
				}
			}
			if pick < 0 {
				break
			}
			steps = append(steps, pick)
			next[pick]++
		}
		basesAfter := func(k int) []int {
			b := append([]int(nil), bases...)
			for _, i := range steps[:k] {
				b[i]++
			}
			return b
		}
		// Each drop only shrinks the store, so the fewest drops that bring
		// it within the limit are found by bisection.
		k := sort.Search(len(steps)+1, func(k int) bool {
			return outcomeAt(basesAfter(k)).bytes <= opts.MaxSize
		})
		bases = basesAfter(min(k, len(steps)))
	}
	for i, s := range sessions {
		s.base = bases[i]
	}
	plan := outcomeAt(bases)

	// Rewrite the logs whose base moved.
	for _, s := range sessions {
		old := s.h.header.Base
		if s.base <= old {
			continue
		}
		dropped := 0
		for n := old; n < s.base; n++ {
			if s.h.seal(n) != nil || n == 0 {
				dropped++
			}
		}
		rep.CheckpointsRemoved += dropped
		rep.Trimmed = append(rep.Trimmed, fmt.Sprintf("%s: now from checkpoint %d (%d removed)", s.h.header.Session, s.base, dropped))
		if opts.DryRun {
			continue
		}
		if err := rewriteLog(s.h, s.base); err != nil {
			return nil, err
		}
	}
	if opts.DryRun {
		rep.ObjectsRemoved = plan.removed
		rep.BytesAfter = plan.bytes
		return rep, nil
	}
	live := plan.live
	rewrite := plan.rewrite

	// Compact the packs: keep each live object once, verified.
	have := map[Hash]bool{}
	for h, p := range loose {
		if !live[h] {
			if err := os.Remove(p); err == nil {
				rep.ObjectsRemoved++
			}
			continue
		}
		have[h] = true
	}
	for _, pi := range packInfos {
		if !slices.ContainsFunc(rewrite, func(r packInfo) bool { return r.name == pi.name }) {
			for _, e := range pi.entries {
				have[e.hash] = true
			}
		}
	}
	if len(rewrite) > 0 {
		st := newStore(objDir)
		st.loaded = true // dedupe against what is copied, not the old packs
		for h := range have {
			st.index[h] = objLoc{}
		}
		for _, pi := range rewrite {
			pf, err := os.Open(filepath.Join(objDir, "pack", pi.name+".pack"))
			if err != nil {
				st.close()
				return nil, err
			}
			for _, e := range pi.entries {
				if !live[e.hash] || have[e.hash] {
					if !live[e.hash] {
						rep.ObjectsRemoved++
					}
					continue
				}
				raw, err := readEntryData(pf, e)
				if err != nil {
					rep.Corrupt = append(rep.Corrupt, fmt.Sprintf("%s (pack %s offset %d): %s", e.hash, pi.name, e.off, trimErr(err)))
					continue
				}
				if _, err := st.put(raw); err != nil {
					pf.Close()
					st.close()
					return nil, err
				}
				have[e.hash] = true
			}
			pf.Close()
		}
		// The copies are durable before the originals go.
		if err := st.sync(); err != nil {
			st.close()
			return nil, err
		}
		if err := st.close(); err != nil {
			return nil, err
		}
		for _, pi := range rewrite {
			os.Remove(filepath.Join(objDir, "pack", pi.name+".pack"))
			os.Remove(filepath.Join(objDir, "pack", pi.name+".idx"))
		}
		if err := syncDir(filepath.Join(objDir, "pack")); err != nil {
			return nil, err
		}
	}
	// Temporary files of interrupted writes (nobody is writing now).
	os.RemoveAll(filepath.Join(objDir, "tmp"))
	if rep.BytesAfter, err = dirSize(ckptDir(abs)); err != nil {
		return nil, err
	}
	return rep, nil
}

// rewriteLog replaces a session log by one whose earliest checkpoint is
// base: a temporary file, fsync, rename, fsync of the directory.
func rewriteLog(h *history, base int) error {
	lf, err := openLogFile(h.path, false, true)
	if err != nil {
		return err
	}
	defer lf.close()
	data := encodeLog(h, base)
	tmp := h.path + ".gc-tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("checkpoint: gc: %w", err)
	}
	f, err := os.Open(tmp)
	if err == nil {
		err = f.Sync()
		f.Close()
	}
	if err == nil {
		err = os.Rename(tmp, h.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("checkpoint: gc: rewriting %s: %w", h.path, err)
	}
	return syncDir(filepath.Dir(h.path))
}

// dirSize is the apparent size of the files below dir.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n, err
}

// encodeLog is the session log h with base as its earliest checkpoint.
func encodeLog(h *history, base int) []byte {
	var buf bytes.Buffer
	enc := func(r record) {
		b, err := json.Marshal(&r)
		if err != nil {
			// A record read back from JSON marshals again.
			panic(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	hdr := h.header
	hdr.Base = base
	enc(hdr)
	for n := base; n <= h.last; n++ {
		if r := h.seal(n); r != nil {
			c := *r
			if n == base {
				c.Entries, c.Pruned = nil, true
			}
			enc(c)
		}
		for _, x := range h.after[n] {
			enc(x)
		}
	}
	return buf.Bytes()
}
