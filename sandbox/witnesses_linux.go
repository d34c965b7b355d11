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
	hold      *witness.Hold
}

// withdraw takes the writer's hold and removes the witness, once; the
// hold lasts until the sandbox is released.
func (w *cacheWitness) withdraw() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.withdrawn {
		return nil
	}
	h, err := witness.Withdraw(w.dir, w.name)
	if err != nil {
		return err
	}
	w.hold, w.withdrawn = h, true
	return nil
}

// prepareWitnesses keeps the policy's cache witnesses whose cache lies
// within a read-write root (or holds one). Where the processes write the
// roots themselves — no change capture of every command with the roots
// read-only to their own Landlock domain (ownWrites) — each is withdrawn
// now, before any process exists; otherwise the capture's Changing
// withdraws it before the first change beneath the cache it makes
// (changing). A witness directory any process could write is refused:
// a process could leave a witness itself.
func (s *Sandbox) prepareWitnesses() error {
	lazy := s.ownWrites && s.capture && !testOwnWritesKeepRoots
	for _, cw := range s.pol.CacheWitnesses {
		root, dir := paths.Real(cw.Root), paths.Real(cw.Dir)
		applies := false
		for _, r := range s.rwRoots {
			if paths.Within(dir, r) {
				return fmt.Errorf("sandbox: the witness of the cache %s is kept in %s, beneath the writable %s: commands could leave it themselves", cw.Root, cw.Dir, r)
			}
			applies = applies || paths.Within(root, r) || paths.Within(r, root)
		}
		if !applies {
			continue
		}
		w := &cacheWitness{root: root, dir: cw.Dir, name: cw.Name}
		s.witnesses = append(s.witnesses, w)
		if !lazy {
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

// releaseWitnesses ends the holds: no process of the sandbox is left.
func (s *Sandbox) releaseWitnesses() {
	for _, w := range s.witnesses {
		w.mu.Lock()
		w.hold.Release()
		w.mu.Unlock()
	}
}
