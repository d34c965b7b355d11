package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/lite-agent/lite-agent/internal/paths"
)

// The watcher notices changes made outside the agent while a session runs.
//
// inotify watches one directory per watch, without recursion: every
// directory of the workspace is added at start (except .git and ignored
// directories), and new directories as they appear. Events come after the
// change and carry no process id, so the watcher cannot capture pre-images
// and cannot tell the agent's writes from anyone else's; it only passes the
// paths on to NoteExternal, whose rule decides (a path recorded in the open
// checkpoint is the agent's; for any other tracked path, a state different
// from the last known one is an external change). Events are batched for
// watchDebounce, so that an editor's save (several events) is one
// observation.
//
// When the kernel queue overflows (ErrEventOverflow), events were lost: the
// gap is recorded (Checkpoint.Incomplete) and every tracked path is
// re-checked, which is what matters for rewinds — untracked paths are
// never touched by a rewind anyway.

const watchDebounce = 25 * time.Millisecond

type watcher struct {
	r      *Recorder
	fw     *fsnotify.Watcher
	cancel context.CancelFunc
	done   chan struct{}

	once        sync.Once
	noSpaceOnce sync.Once
}

func startWatcher(ctx context.Context, r *Recorder) (*watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: starting the file watcher: %w", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &watcher{r: r, fw: fw, cancel: cancel, done: make(chan struct{})}
	if _, err := w.addTree(""); err != nil {
		cancel()
		fw.Close()
		return nil, err
	}
	go w.loop(wctx)
	return w, nil
}

// addTree watches directory rel ("" for the workspace) and every directory
// below it that is not ignored. It returns the paths found below rel (for a
// directory that appeared: whatever was created in it before its watch).
func (w *watcher) addTree(rel string) ([]string, error) {
	var found []string
	var walk func(rel string) error
	walk = func(rel string) error {
		abs := filepath.Join(w.r.workspace, filepath.FromSlash(rel))
		if err := w.fw.Add(abs); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				w.noSpaceOnce.Do(func() {
					w.r.noteIncomplete("the inotify watch limit (fs.inotify.max_user_watches) was reached; some directories are not watched")
				})
				return nil
			}
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				return nil // gone already
			}
			if rel == "" {
				return fmt.Errorf("checkpoint: watching the workspace: %w", err)
			}
			return nil
		}
		ents, err := os.ReadDir(abs)
		if err != nil {
			return nil
		}
		for _, e := range ents {
			p := e.Name()
			if rel != "" {
				p = rel + "/" + p
			}
			if _, _, ign := w.r.ign.ignored(p, e.IsDir()); ign {
				continue
			}
			found = append(found, p)
			if e.IsDir() {
				if err := walk(p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	err := walk(rel)
	return found, err
}

func (w *watcher) loop(ctx context.Context) {
	defer close(w.done)
	pending := map[string]bool{}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	flush := func() {
		if len(pending) == 0 {
			return
		}
		batch := make([]string, 0, len(pending))
		for p := range pending {
			batch = append(batch, p)
		}
		clear(pending)
		w.r.NoteExternal(batch)
	}
	add := func(rel string) {
		if len(pending) == 0 {
			timer.Reset(watchDebounce)
		}
		pending[rel] = true
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.fw.Events:
			if !ok {
				return
			}
			rel, ok := paths.Rel(w.r.workspace, ev.Name)
			if !ok || rel == "." {
				continue
			}
			rel = filepath.ToSlash(rel)
			if isGitPath(rel) {
				continue
			}
			if ev.Has(fsnotify.Create) {
				if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
					if _, _, ign := w.r.ign.ignored(rel, true); !ign {
						found, _ := w.addTree(rel)
						for _, p := range found {
							add(p)
						}
					}
				}
			}
			add(rel)
		case err, ok := <-w.fw.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.r.noteIncomplete("the file watcher's event queue overflowed; every tracked path was re-checked")
				for _, p := range w.r.trackedPaths() {
					add(p)
				}
				continue
			}
			w.r.noteIncomplete("the file watcher reported: " + err.Error())
		case <-timer.C:
			flush()
		}
	}
}

func (w *watcher) stop() {
	w.once.Do(func() {
		w.cancel()
		<-w.done
		w.fw.Close()
	})
}
