package sandbox

import (
	"fmt"
	"sync"

	"github.com/lite-agent/lite-agent/internal/paths"
	"github.com/lite-agent/lite-agent/internal/witness"
)

// cacheWitness is one of Policy.CacheWitnesses that this sandbox's
// processes can change: the writer's side of internal/witness's
// protocol.
type cacheWitness struct {
	root      string // canonical
	dir, name string
	mu        sync.Mutex
	withdrawn bool
}

// withdraw removes the witness, once: while the sandbox holds its
// shared lock (Sandbox.live), no check leaves it again.
func (w *cacheWitness) withdraw() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.withdrawn {
		return nil
	}
	if err := witness.Withdraw(w.dir, w.name); err != nil {
		return err
	}
	w.withdrawn = true
	return nil
}

// enterWitnesses is this sandbox's part in internal/witness's protocol,
// taken before any of its processes exists. Every sandbox holds the
// shared lock until its processes are gone (releaseWitnesses): a
// descriptor that writes a cache can reach any sandbox's process. One
// whose processes can outlive it marks the caches outlived. Then the
// policy's cache witnesses whose cache lies within a read-write root (or
// holds one) are kept; where the processes write the roots themselves —
// no change capture of every command with the roots read-only to their
// own Landlock domain (ownWrites) — or could write the witness's
// directory, each is withdrawn now; otherwise the capture's Changing
// withdraws it before the first change beneath the cache it makes
// (changing).
func (s *Sandbox) enterWitnesses() error {
	// An error leaves the sandbox without the lock: so is every check
	// run where its directory cannot be made or locked, and such a check
	// leaves no witness.
	s.live, _ = witness.Enter()
	if !s.cgroups.Tracks() && !s.newPID {
		if err := witness.MarkOutlived(); err != nil && len(s.pol.CacheWitnesses) > 0 {
			return fmt.Errorf("sandbox: marking the checked caches as possibly changed by processes that outlive this sandbox: %w", err)
		}
	}
	lazy := s.ownWrites && s.capture && !testOwnWritesKeepRoots
	for _, cw := range s.pol.CacheWitnesses {
		root, dir := paths.Real(cw.Root), paths.Real(cw.Dir)
		applies, dirWritable := false, false
		for _, r := range s.rwRoots {
			dirWritable = dirWritable || paths.Within(dir, r)
			applies = applies || paths.Within(root, r) || paths.Within(r, root)
		}
		if !applies && !dirWritable {
			continue
		}
		w := &cacheWitness{root: root, dir: cw.Dir, name: cw.Name}
		s.witnesses = append(s.witnesses, w)
		if !lazy || dirWritable {
			if err := w.withdraw(); err != nil {
				return fmt.Errorf("sandbox: withdrawing the checked mark of the cache %s: %w", cw.Root, err)
			}
		}
	}
	return nil
}

// changing is change capture's CaptureOptions.Changing: it withdraws the
// witness of every cache that one of paths (canonical) lies in, or holds
// (a rename or removal of a directory above a cache changes it too).
func (s *Sandbox) changing(changed []string) error {
	for _, w := range s.witnesses {
		for _, p := range changed {
			if p != "" && (paths.WithinClean(p, w.root) || paths.WithinClean(w.root, p)) {
				if err := w.withdraw(); err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}

// releaseWitnesses ends the sandbox's shared lock: none of its processes
// is left.
func (s *Sandbox) releaseWitnesses() {
	s.live.Release()
}
