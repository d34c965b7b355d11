package checkpoint

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Sessions that share a workspace tell each other what they change.
//
// A confined command's writes are the agent's unless someone is seen
// writing the same path meanwhile (RecordForeignChange). The kernel tells
// who wrote only to a privileged listener (sandbox foreign_linux.go); but
// a second lite-agent session is cooperative, root or not: every session
// recording in a workspace appends what it is about to change to one
// journal per workspace, <stateDir>/workspaces/<hash>.jsonl (beside the
// store, not in it: it holds no rewind data, and gc's size accounting
// is the store's),
// one JSON line {"s": session, "p": path} per announcement (one write(2)
// with O_APPEND, so lines from concurrent sessions never interleave). At
// a seal, a path the sealing session changed that another session
// announced — that path or a directory above it — since this checkpoint
// began is not proven to be this session's: it takes the same path as a
// foreign write (an external record, a conflict on rewind, kept by
// --force). Sessions with different state directories do not see each
// other; an announcement made just before this checkpoint began, whose
// write lands after, is not seen. Rewinds announce what they overwrite
// too. The journal only grows (a line per announced path); gc does not
// trim it yet.

// testNoPeers turns the journal off: tests set it to show a second
// session's edit taken for a command's without it.
var testNoPeers bool

type peerLine struct {
	S string    `json:"s"`
	P exactName `json:"p"`
}

func peersPath(stateDir, workspace string) string {
	sum := sha256.Sum256([]byte(workspace))
	return filepath.Join(stateDir, "workspaces", hex.EncodeToString(sum[:12])+".jsonl")
}

// openPeers opens (creating) the workspace's journal for appending.
func openPeers(stateDir, workspace string) (*os.File, error) {
	p := peersPath(stateDir, workspace)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: the workspace journal: %w", err)
	}
	return f, nil
}

// announcePeers appends rels to the journal and, the first time in the
// open checkpoint, remembers where the checkpoint began in it. A failure
// is not the caller's: the change goes on, unannounced.
func (r *Recorder) announcePeers(rels []string) {
	if r.peers == nil || testNoPeers {
		return
	}
	var buf []byte
	for _, rel := range rels {
		b, err := json.Marshal(peerLine{S: r.id, P: exactName(rel)})
		if err != nil {
			continue
		}
		buf = append(append(buf, b...), '\n')
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.peersFrom < 0 {
		if fi, err := r.peers.Stat(); err == nil {
			r.peersFrom = fi.Size()
		}
	}
	r.peers.Write(buf)
}

// peerChanges returns, for every path of the open checkpoint that another
// session announced since the checkpoint began, why it is not proven to
// be this session's. Callers hold the barrier exclusively.
func (r *Recorder) peerChanges() map[string]string {
	if r.peers == nil || r.peersFrom < 0 {
		return nil
	}
	f, err := os.Open(r.peers.Name())
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(r.peersFrom, io.SeekStart); err != nil {
		return nil
	}
	// Who announced what: then each path of the checkpoint and its
	// directories are looked up, so the cost is lines + paths × depth.
	by := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l peerLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.S == r.id {
			continue
		}
		if _, ok := by[string(l.P)]; !ok {
			by[string(l.P)] = l.S
		}
	}
	if len(by) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, p := range r.order {
		for q := p; ; q = path.Dir(q) {
			if s, ok := by[q]; ok {
				out[p] = "session " + s + " announced a change to it during the tool call"
				break
			}
			if !strings.Contains(q, "/") {
				break
			}
		}
	}
	return out
}
