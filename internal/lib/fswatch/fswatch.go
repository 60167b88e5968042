// Package fswatch tells subscribers when files in a local folder change,
// through the operating system's file notifications (fsnotify: inotify on
// Linux). It holds one notification watch per folder, shared by all the
// subscribers of that folder, added with the first and removed with the
// last, and coalesces the bursts of events that one write makes.
package fswatch

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDelay is how long after a matching event a subscriber is called:
// the events of that time (a commit writes and renames several files) are
// coalesced into one call.
const DefaultDelay = 5 * time.Millisecond

// Watcher watches folders for its subscribers. It is safe for concurrent
// use. The zero value is not usable: call New.
type Watcher struct {
	delay time.Duration

	// mu guards the fields below.
	mu sync.Mutex
	// fsw is the notification handle, made by the first Watch (nil
	// before, and after Close).
	fsw *fsnotify.Watcher
	// loop is closed when the event loop of fsw returns.
	loop chan struct{}
	// dirs are the folders watched, by clean absolute path.
	dirs   map[string]map[*sub]struct{}
	closed bool
	// errs receives the errors that fsnotify reports (a queue overflow:
	// events were lost); nil drops them.
	errs func(error)
}

// sub is one subscription.
type sub struct {
	match func(name string) bool
	fn    func()
	w     *Watcher

	// mu serializes the calls of fn with stop: no call starts after stop
	// returns.
	mu      sync.Mutex
	stopped bool
	// pending is set while a call is scheduled (guarded by Watcher.mu).
	pending bool
}

// New returns a watcher that calls a subscriber delay after the first
// matching event of a burst (0: DefaultDelay; a negative delay calls it
// at once on every event). onError, when not nil, receives the errors the
// notification reports after a watch is set (lost events).
func New(delay time.Duration, onError func(error)) *Watcher {
	if delay == 0 {
		delay = DefaultDelay
	}
	return &Watcher{delay: max(delay, 0), dirs: map[string]map[*sub]struct{}{}, errs: onError}
}

// ErrClosed is the error of Watch after Close.
var ErrClosed = errors.New("fswatch: watcher closed")

// Watch calls fn, from another goroutine, after each burst of changes
// (created, written, renamed or removed files) in the folder dir whose
// base name match accepts, until stop is called. No call of fn starts
// after stop returns. The folder must exist; a folder that cannot be
// watched (no such folder, the notification limits reached, a filesystem
// without notifications) is an error, and nothing is watched.
func (w *Watcher) Watch(dir string, match func(name string) bool, fn func()) (stop func(), err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	abs = filepath.Clean(abs)
	s := &sub{match: match, fn: fn, w: w}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, ErrClosed
	}
	if w.fsw == nil {
		fsw, err := fsnotify.NewWatcher()
		if err != nil {
			return nil, fmt.Errorf("file notifications: %w", err)
		}
		w.fsw, w.loop = fsw, make(chan struct{})
		go w.run(fsw, w.loop)
	}
	subs := w.dirs[abs]
	if subs == nil {
		if err := w.fsw.Add(abs); err != nil {
			return nil, fmt.Errorf("watch %s: %w", abs, err)
		}
		subs = map[*sub]struct{}{}
		w.dirs[abs] = subs
	}
	subs[s] = struct{}{}
	return sync.OnceFunc(func() { w.unwatch(abs, s) }), nil
}

// unwatch ends s, and the folder's watch with its last subscriber.
func (w *Watcher) unwatch(dir string, s *sub) {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	subs := w.dirs[dir]
	if _, ok := subs[s]; !ok {
		return
	}
	delete(subs, s)
	if len(subs) == 0 {
		delete(w.dirs, dir)
		if w.fsw != nil {
			// The folder may be gone already (its watch went with it).
			_ = w.fsw.Remove(dir)
		}
	}
}

// Watched returns the folders watched now.
func (w *Watcher) Watched() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.dirs))
	for d := range w.dirs {
		out = append(out, d)
	}
	return out
}

// Close stops every watch and waits for the event loop to return. The
// subscriptions' stop functions may still be called after it.
func (w *Watcher) Close() error {
	w.mu.Lock()
	fsw, loop := w.fsw, w.loop
	w.fsw, w.closed = nil, true
	w.dirs = map[string]map[*sub]struct{}{}
	w.mu.Unlock()
	if fsw == nil {
		return nil
	}
	err := fsw.Close()
	<-loop
	return err
}

// run dispatches fsw's events until it is closed.
func (w *Watcher) run(fsw *fsnotify.Watcher, done chan struct{}) {
	defer close(done)
	for {
		select {
		case ev, ok := <-fsw.Events:
			if !ok {
				return
			}
			if !ev.Has(fsnotify.Create) && !ev.Has(fsnotify.Write) && !ev.Has(fsnotify.Remove) &&
				!ev.Has(fsnotify.Rename) {
				continue // Chmod: no content changed
			}
			w.dispatch(filepath.Dir(ev.Name), filepath.Base(ev.Name))
		case err, ok := <-fsw.Errors:
			if !ok {
				return
			}
			if w.errs != nil {
				w.errs(err)
			}
		}
	}
}

// dispatch schedules the calls of the subscribers of dir that match name.
func (w *Watcher) dispatch(dir, name string) {
	w.mu.Lock()
	var now []*sub
	for s := range w.dirs[dir] {
		if !s.match(name) || s.pending {
			continue
		}
		if w.delay == 0 {
			now = append(now, s)
			continue
		}
		s.pending = true
		time.AfterFunc(w.delay, func() {
			w.mu.Lock()
			s.pending = false
			w.mu.Unlock()
			s.call()
		})
	}
	w.mu.Unlock()
	for _, s := range now {
		s.call()
	}
}

// call calls the subscriber's fn unless it stopped.
func (s *sub) call() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped {
		s.fn()
	}
}
