package feed

import (
	"context"
	"sync"
	"time"
)

// A watcher polls one table's metadata for everyone who waits on it: the
// follow streams of the table, its WatchCommits calls, and Status while
// either runs. However many subscribe, the table is loaded from the
// catalog at most once per poll interval (the shortest interval among the
// subscribers), and every subscriber reads the state that load returned.
//
// The poller runs while the table has subscribers: the first starts it,
// and the last to leave stops it and waits for it to return. It loads only
// when a subscriber waits for a state newer than the latest one, no sooner
// than one interval after the previous load started (a subscriber that
// arrives when the latest state is older than that gets a load at once),
// or at once after Poke. A load's error is published like a state: each
// subscriber decides for itself whether to retry it and how long to back
// off, and then waits for a newer state, as a stream that loaded the table
// itself would have loaded it again.
type watcher struct {
	e     *Engine
	table string
	// cancel ends the poller's context; done is closed when it returns.
	cancel context.CancelFunc
	done   chan struct{}
	// kick wakes the poller to look at what is wanted (never blocks: one
	// pending wake is enough).
	kick chan struct{}

	// mu guards the fields below.
	mu sync.Mutex
	// subs are the subscribers with their poll intervals; interval is the
	// shortest of them.
	subs     map[*watchSub]time.Duration
	interval time.Duration
	// latest is the last state loaded (nil before the first load); seq
	// numbers the states published.
	latest *tableState
	seq    uint64
	// changed is closed, and replaced, when a state is published.
	changed chan struct{}
	// wanted is set while a subscriber waits for a state newer than
	// latest.
	wanted bool
	// pokedAt is when Poke was last called: a state loaded before it is
	// not fresh, and a load is due at once.
	pokedAt time.Time
}

// tableState is one load of a table: the table's state, or the error the
// load failed with. It is immutable and shared by every subscriber.
type tableState struct {
	// seq numbers the states of one watcher, from 1; 0 for a state loaded
	// directly (a bounded stream's).
	seq uint64
	tbl Table
	err error
	// start and done are when the load started and returned.
	start, done time.Time
	// history is tbl's main-branch history, computed once for all the
	// subscribers, who only read it.
	history func() History
}

func newTableState(seq uint64, tbl Table, err error, start time.Time) *tableState {
	st := &tableState{seq: seq, tbl: tbl, err: err, start: start, done: time.Now()}
	if tbl != nil {
		st.history = sync.OnceValue(func() History { return historyAt(tbl, nil) })
	}
	return st
}

// watchSub is one subscription to a table's watcher. Its methods are not
// safe for concurrent use: it belongs to one stream or watch.
type watchSub struct {
	w        *watcher
	interval time.Duration
}

// watch subscribes to the watcher of table, starting it when the table has
// none, with the poll interval the subscriber would poll at. The caller
// must close the subscription.
func (e *Engine) watch(table string, interval time.Duration) *watchSub {
	e.watchMu.Lock()
	defer e.watchMu.Unlock()
	w := e.watchers[table]
	if w == nil {
		ctx, cancel := context.WithCancel(context.Background())
		w = &watcher{e: e, table: table, cancel: cancel, done: make(chan struct{}), kick: make(chan struct{}, 1),
			subs: map[*watchSub]time.Duration{}, changed: make(chan struct{})}
		e.watchers[table] = w
		go w.run(ctx)
	}
	s := &watchSub{w: w, interval: interval}
	w.mu.Lock()
	w.subs[s] = interval
	w.interval = shortest(w.subs)
	w.mu.Unlock()
	w.wake()
	return s
}

// close ends the subscription; the last one stops the watcher and waits
// for its poller to return.
func (s *watchSub) close() {
	w, e := s.w, s.w.e
	e.watchMu.Lock()
	w.mu.Lock()
	delete(w.subs, s)
	last := len(w.subs) == 0
	if !last {
		w.interval = shortest(w.subs)
	}
	w.mu.Unlock()
	if last {
		delete(e.watchers, w.table)
		w.cancel()
	}
	e.watchMu.Unlock()
	if last {
		<-w.done
	}
}

func shortest(subs map[*watchSub]time.Duration) time.Duration {
	var out time.Duration
	for _, d := range subs {
		if out == 0 || d < out {
			out = d
		}
	}
	return out
}

// next returns the table's first state newer than state after (0: any)
// that is fresh: loaded at most one of the subscriber's poll intervals
// before next was called, and not before a Poke. When the latest state is
// not such a state, it asks the poller for one and calls idle with a
// channel closed when the next state is published; idle returns when it
// closes (or with an error that next returns: ctx's).
func (s *watchSub) next(after uint64, idle func(wake <-chan struct{}) error) (*tableState, error) {
	since := time.Now().Add(-s.interval)
	for {
		st, wake := s.poll(after, since)
		if st != nil {
			return st, nil
		}
		if err := idle(wake); err != nil {
			return nil, err
		}
	}
}

// poll returns the latest state when it is newer than after and done no
// earlier than since; else it marks a state wanted and returns the
// channel that is closed when the next one is published.
func (s *watchSub) poll(after uint64, since time.Time) (*tableState, <-chan struct{}) {
	w := s.w
	w.mu.Lock()
	if st := w.latest; st != nil && st.seq > after && !st.done.Before(since) && !st.start.Before(w.pokedAt) {
		w.mu.Unlock()
		return st, nil
	}
	w.wanted = true
	wake := w.changed
	w.mu.Unlock()
	w.wake()
	return nil, wake
}

// newer returns the latest state when it loaded the table (not an error)
// and is newer than after, without waiting or asking for a load; else nil.
func (s *watchSub) newer(after uint64) *tableState {
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if st := w.latest; st != nil && st.seq > after && st.err == nil {
		return st
	}
	return nil
}

// fresh returns the watcher's latest state when it loaded the table less
// than the watcher's poll interval ago and no Poke came since; else nil.
func (w *watcher) fresh() *tableState {
	w.mu.Lock()
	defer w.mu.Unlock()
	if st := w.latest; st != nil && st.err == nil && !st.start.Before(w.pokedAt) && time.Since(st.done) < w.interval {
		return st
	}
	return nil
}

// wake tells the poller to look at what is wanted.
func (w *watcher) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// run is the poller: it loads the table when a state is wanted and one is
// due, and publishes each load's state, until ctx ends.
func (w *watcher) run(ctx context.Context) {
	defer close(w.done)
	// Changes that can be watched poke the watcher from the start (before
	// the first load), until the watcher stops: stop returns before done
	// is closed, so the notification ends with the watcher.
	if n, ok := w.e.tables.(ChangeNotifier); ok {
		var stop func()
		// A notifier that panics only costs the notifications: polling
		// finds the changes.
		_ = guard(func() error {
			stop = n.NotifyChanges(w.table, w.poke)
			return nil
		})
		if stop != nil {
			defer stop()
		}
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		w.mu.Lock()
		wait := time.Duration(-1) // nothing wanted: until kicked
		if w.wanted {
			wait = 0
			if st := w.latest; st != nil && !st.start.Before(w.pokedAt) {
				wait = max(0, time.Until(st.start.Add(w.interval)))
			}
		}
		w.mu.Unlock()
		if wait != 0 {
			var fire <-chan time.Time
			if wait > 0 {
				timer.Reset(wait)
				fire = timer.C
			}
			select {
			case <-ctx.Done():
				return
			case <-w.kick:
				timer.Stop()
				continue
			case <-fire:
			}
		}
		start := time.Now()
		// A load runs catalog clients and log replays on this goroutine,
		// which no read owns: a panic there is the subscribers' error, as
		// in a read's goroutines, never the end of the process.
		var tbl Table
		err := guard(func() (err error) {
			tbl, err = w.e.loadTable(ctx, w.table)
			return err
		})
		if ctx.Err() != nil {
			return
		}
		w.mu.Lock()
		w.seq++
		w.latest = newTableState(w.seq, tbl, err, start)
		w.wanted = false
		close(w.changed)
		w.changed = make(chan struct{})
		w.mu.Unlock()
	}
}

// Poke tells the table's watcher, when the table has one (a follow stream
// or WatchCommits runs on it), that the table may have changed: whoever
// waits for its next state gets it from a load made at once, not at the
// next poll interval, and the state loaded before is no longer reused. A
// change notification (of the catalog or the table's metadata files) can
// call it to cut the latency from commit to stream below the poll
// interval; without one the poll interval bounds it.
func (e *Engine) Poke(table string) {
	e.watchMu.Lock()
	w := e.watchers[table]
	e.watchMu.Unlock()
	if w != nil {
		w.poke()
	}
}

// poke marks the latest state stale and wakes the poller: a subscriber
// waiting for a newer state gets one loaded at once. A poke while a load
// runs makes the state that load publishes stale (it started before the
// poke), so the waiting subscribers get one more load after it: the last
// of a burst of pokes is always followed by a load that started after it.
func (w *watcher) poke() {
	w.mu.Lock()
	w.pokedAt = time.Now()
	w.mu.Unlock()
	w.wake()
}

// ChangeNotifier is an optional interface of Tables for those that can
// tell when a table may have changed (a file notification on a local
// catalog file or metadata folder): the engine then calls Poke's hook, and
// a commit reaches the table's follow streams and WatchCommits calls at
// once rather than at the next poll. Polling goes on as before: a
// notification only makes a load come sooner.
type ChangeNotifier interface {
	// NotifyChanges starts calling changed, from any goroutine and any
	// number of times, whenever the table may have changed, until stop is
	// called; stop stops the calls before it returns. The engine calls it
	// when a table's watcher starts (the first follow stream or
	// WatchCommits of the table) and stops it when the watcher stops. It
	// returns nil when the table's changes cannot be watched (polling
	// alone finds them); it must never block long nor fail the table's
	// streams.
	NotifyChanges(table string, changed func()) (stop func())
}
