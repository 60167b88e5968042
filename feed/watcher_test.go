package feed_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// countingTables counts the loads of a catalog, and fails them with a
// transient error while down is set.
type countingTables struct {
	feed.Tables
	loads, fails atomic.Int64
	down         atomic.Bool
}

func (c *countingTables) Load(ctx context.Context, name string) (feed.Table, error) {
	c.loads.Add(1)
	if c.down.Load() {
		c.fails.Add(1)
		return nil, fmt.Errorf("%w: %w", feed.ErrStorageUnavailable, errDown)
	}
	return c.Tables.Load(ctx, name)
}

// follower is one follow stream run by followAll.
type follower struct {
	mu      sync.Mutex // guards ids while the stream runs
	ids     []int64    // the ids of the rows, in order
	retries atomic.Int64
	err     error
	cancel  context.CancelFunc
}

// got returns the ids the stream has been sent so far.
func (f *follower) got() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.ids)
}

// followAll starts n follow streams of the table from its latest snapshot;
// each records the rows it is sent until it has want of them, or until
// stop(i, ids) says so (it then cancels its own context and reads on to
// the end). started is done once every stream has yielded StreamStarted.
func followAll(ctx context.Context, eng *feed.Engine, n, want int, opts feed.FollowOptions,
	stop func(i int, ids []int64) bool) (out []*follower, started, done *sync.WaitGroup) {
	started, done = &sync.WaitGroup{}, &sync.WaitGroup{}
	started.Add(n)
	done.Add(n)
	for i := range n {
		f := &follower{}
		out = append(out, f)
		sctx, cancel := context.WithCancel(ctx)
		f.cancel = cancel
		req := feed.StreamRequest{Request: feed.Request{Table: tableName}, Follow: true, Start: feed.StartLatest,
			Options: opts, Retrying: func(error, time.Duration) { f.retries.Add(1) }}
		go func() {
			defer done.Done()
			defer cancel()
			first := true
			defer func() {
				if first {
					started.Done()
				}
			}()
			for ev, err := range eng.Stream(sctx, req) {
				if err != nil {
					f.err = err
					return
				}
				if ev.Kind == feed.StreamStarted {
					first = false
					started.Done()
					continue
				}
				rec := ev.Batch.Record
				after := rec.Column(2).(*array.Struct)
				f.mu.Lock()
				for r := range int(rec.NumRows()) {
					f.ids = append(f.ids, after.Field(0).(*array.Int64).Value(r))
				}
				got := slices.Clone(f.ids)
				f.mu.Unlock()
				rec.Release()
				if stop != nil && stop(i, got) {
					cancel()
				}
				if len(got) >= want {
					return
				}
			}
		}()
	}
	return out, started, done
}

// TestWatcherOneLoadPerInterval: 200 follow streams of one table load it
// about once per poll interval between them, not once per stream; each
// sees every commit, in order, as a stream of its own does; streams that
// cancel on the way disturb none of the others; once all have ended, the
// watcher stops (no goroutine left, no more loads).
func TestWatcherOneLoadPerInterval(t *testing.T) {
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	h := newHistory(t, 1, 1)
	leaks := goleak.IgnoreCurrent()
	tables := &countingTables{Tables: h.cat}
	eng := feed.New(tables, feed.Options{Allocator: mem})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const streams, cancelled, commits = 200, 20, 8
	interval := 500 * time.Millisecond
	opts := feed.FollowOptions{PollInterval: interval, HeartbeatInterval: time.Minute}
	followers, started, done := followAll(ctx, eng, streams, commits, opts, func(i int, ids []int64) bool {
		return i < cancelled && len(ids) == commits/2
	})
	started.Wait()
	before := tables.loads.Load()
	if before > 5 {
		t.Errorf("%d streams starting at once loaded the table %d times; want a few loads shared", streams, before)
	}
	t0 := time.Now()
	for c := range commits {
		time.Sleep(interval * 2 / 3)
		h.appendRows(t, []tablewrite.Row{{"id": 100 + c}})
	}
	done.Wait()
	elapsed := time.Since(t0)
	loads := tables.loads.Load() - before
	want := ids(100, 100+commits-1)
	for i, f := range followers {
		switch {
		case i < cancelled:
			if !errors.Is(f.err, context.Canceled) || !slices.Equal(f.ids, want[:commits/2]) {
				t.Fatalf("cancelled stream %d: ids %v, err %v; want %v then its cancellation", i, f.ids, f.err,
					want[:commits/2])
			}
		case f.err != nil || !slices.Equal(f.ids, want):
			t.Fatalf("stream %d: ids %v, err %v; want %v", i, f.ids, f.err, want)
		}
	}
	most := int64(elapsed/interval) + 3
	t.Logf("%d streams, %d commits in %v: %d loads (poll interval %v)", streams, commits, elapsed, loads, interval)
	if loads > most || loads < 2 {
		t.Fatalf("%d streams over %v loaded the table %d times: want about one load per poll interval (at most %d)",
			streams, elapsed, loads, most)
	}
	if st := eng.Stats(); st.TableLoads != tables.loads.Load() || eng.TableLoads()[tableName] != st.TableLoads {
		t.Fatalf("the engine counted %d loads (%v by table), the catalog saw %d", st.TableLoads, eng.TableLoads(),
			tables.loads.Load())
	}
	// The last stream gone, the watcher stops: no goroutine, no load.
	goleak.VerifyNone(t, leaks)
	idle := tables.loads.Load()
	time.Sleep(3 * interval)
	if n := tables.loads.Load(); n != idle {
		t.Fatalf("%d loads with no stream left", n-idle)
	}
}

// TestWatcherTransientErrors: while the catalog fails, every follow stream
// and watch of the table is told of the failures and retries with its own
// backoff, without one load per stream; once the catalog is back, each
// gets the commit made meanwhile. A failure that is not transient ends
// every stream of its table.
func TestWatcherTransientErrors(t *testing.T) {
	h := newHistory(t, 1, 1)
	leaks := goleak.IgnoreCurrent()
	tables := &countingTables{Tables: h.cat}
	eng := feed.New(tables, feed.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const streams = 20
	interval := 50 * time.Millisecond
	opts := feed.FollowOptions{PollInterval: interval, HeartbeatInterval: 20 * time.Millisecond,
		MaxBackoff: 200 * time.Millisecond}
	followers, started, done := followAll(ctx, eng, streams, 1, opts, nil)
	started.Wait()

	// A watch of the same table shares the watcher.
	var watchRetries atomic.Int64
	watched := make(chan []int64, 1)
	go func() {
		var seqs []int64
		for st, err := range eng.WatchCommits(ctx, tableName, opts, nil,
			func(error, time.Duration) { watchRetries.Add(1) }) {
			if err != nil {
				break
			}
			if seqs = append(seqs, st.CommitSeq); len(seqs) == 2 {
				break
			}
		}
		watched <- seqs
	}()

	tables.down.Store(true)
	outage := time.Now()
	deadline := time.Now().Add(20 * time.Second)
	for {
		all := watchRetries.Load() >= 2
		for _, f := range followers {
			all = all && f.retries.Load() >= 2
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the streams were not told of the catalog's failures")
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.appendRows(t, []tablewrite.Row{{"id": 42}})
	tables.down.Store(false)
	lasted := time.Since(outage)
	done.Wait()
	for i, f := range followers {
		if f.err != nil || fmt.Sprint(f.ids) != "[42]" {
			t.Fatalf("stream %d after the outage: ids %v, err %v; want the commit made meanwhile", i, f.ids, f.err)
		}
	}
	if seqs := <-watched; fmt.Sprint(seqs) != "[1 2]" {
		t.Fatalf("the watch saw commit_seq %v, want [1 2]", seqs)
	}
	fails := tables.fails.Load()
	told := watchRetries.Load()
	for _, f := range followers {
		told += f.retries.Load()
	}
	t.Logf("%d streams and a watch, outage of %v: %d failed loads, %d retries told", streams, lasted, fails, told)
	if most := int64(lasted/interval) + 3; fails > most || fails < 2 {
		t.Fatalf("%d failed loads in an outage of %v: want at most one per poll interval (%d)", fails, lasted, most)
	}

	// A table that does not exist ends every stream of it, and its watcher.
	unknown := make(chan error, 5)
	for range cap(unknown) {
		go func() {
			for _, err := range eng.Stream(ctx, feed.StreamRequest{Request: feed.Request{Table: "shop.nope"},
				Follow: true, Options: opts}) {
				unknown <- err
				return
			}
			unknown <- nil
		}()
	}
	for range cap(unknown) {
		if err := <-unknown; err == nil || errors.Is(err, feed.ErrStorageUnavailable) {
			t.Fatalf("a stream of an unknown table: %v, want its load's error", err)
		}
	}
	goleak.VerifyNone(t, leaks)
}

// TestWatcherFreshAndPoke: a stream that arrives while the watcher's last
// load is fresh starts from it at once, without a load, and so does
// Status; Poke makes the watcher load at once, so a commit reaches the
// streams without waiting for the poll interval.
func TestWatcherFreshAndPoke(t *testing.T) {
	h := newHistory(t, 1, 1)
	leaks := goleak.IgnoreCurrent()
	tables := &countingTables{Tables: h.cat}
	eng := feed.New(tables, feed.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// An interval so long that only a first load, and Poke, load the table.
	opts := feed.FollowOptions{PollInterval: time.Hour, HeartbeatInterval: 20 * time.Millisecond}
	first, started, done := followAll(ctx, eng, 1, 1, opts, nil)
	started.Wait()
	if n := tables.loads.Load(); n != 1 {
		t.Fatalf("a stream's start loaded the table %d times, want 1", n)
	}
	more, started2, done2 := followAll(ctx, eng, 3, 1, opts, nil)
	started2.Wait()
	st, err := eng.Status(ctx, tableName)
	if err != nil || st.CommitSeq != 1 {
		t.Fatalf("status %+v, %v", st, err)
	}
	if n := tables.loads.Load(); n != 1 {
		t.Fatalf("streams and a status arriving while the state was fresh loaded the table %d more times", n-1)
	}
	h.appendRows(t, []tablewrite.Row{{"id": 5}})
	poked := time.Now()
	eng.Poke(tableName)
	done.Wait()
	done2.Wait()
	if took := time.Since(poked); took > 10*time.Second {
		t.Fatalf("the commit reached the streams %v after Poke", took)
	}
	for i, f := range append(first, more...) {
		if f.err != nil || fmt.Sprint(f.ids) != "[5]" {
			t.Fatalf("stream %d: ids %v, err %v; want the poked commit", i, f.ids, f.err)
		}
	}
	if n := tables.loads.Load(); n != 2 {
		t.Fatalf("%d loads, want the first and the poked one", n)
	}
	// No stream left: Status loads the table itself.
	goleak.VerifyNone(t, leaks)
	if st, err := eng.Status(ctx, tableName); err != nil || st.CommitSeq != 2 || tables.loads.Load() != 3 {
		t.Fatalf("status %+v, %v after %d loads; want commit_seq 2 from a load of its own", st, err,
			tables.loads.Load())
	}
}

// TestWatcherShortestIntervalWins: streams of one table that ask for
// different poll intervals share the shortest: a stream asking for an hour
// sees a commit as soon as one asking for 50ms does; when the fast stream
// leaves, the slow one's interval rules.
func TestWatcherShortestIntervalWins(t *testing.T) {
	h := newHistory(t, 1, 1)
	leaks := goleak.IgnoreCurrent()
	tables := &countingTables{Tables: h.cat}
	eng := feed.New(tables, feed.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	slowOpts := feed.FollowOptions{PollInterval: time.Hour, HeartbeatInterval: 20 * time.Millisecond}
	fastOpts := feed.FollowOptions{PollInterval: 50 * time.Millisecond, HeartbeatInterval: 20 * time.Millisecond}
	slow, slowStarted, slowDone := followAll(ctx, eng, 1, 2, slowOpts, nil)
	fast, fastStarted, fastDone := followAll(ctx, eng, 1, 1, fastOpts, nil)
	slowStarted.Wait()
	fastStarted.Wait()
	h.appendRows(t, []tablewrite.Row{{"id": 8}})
	fastDone.Wait()
	if f := fast[0]; f.err != nil || fmt.Sprint(f.ids) != "[8]" {
		t.Fatalf("the fast stream: ids %v, err %v", f.ids, f.err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(slow[0].got()) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the stream asking for an hour did not get the commit the 50ms poll found")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The fast stream gone, the watcher polls hourly: no more loads.
	time.Sleep(100 * time.Millisecond)
	n := tables.loads.Load()
	time.Sleep(500 * time.Millisecond)
	if m := tables.loads.Load(); m != n {
		t.Fatalf("%d loads in 500ms with only a stream asking for an hourly poll", m-n)
	}
	slow[0].cancel()
	slowDone.Wait()
	goleak.VerifyNone(t, leaks)
}

// notifyingTables is countingTables that tells of changes (a
// feed.ChangeNotifier): it records the running notifications.
type notifyingTables struct {
	*countingTables
	mu      sync.Mutex
	changed map[string]func() // by table, while notified
	starts  atomic.Int64
}

func (n *notifyingTables) NotifyChanges(table string, changed func()) func() {
	n.starts.Add(1)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.changed[table] != nil {
		panic("a second notification of " + table + " while the first runs")
	}
	n.changed[table] = changed
	return func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(n.changed, table)
	}
}

func (n *notifyingTables) notify(table string) bool {
	n.mu.Lock()
	fn := n.changed[table]
	n.mu.Unlock()
	if fn != nil {
		fn()
	}
	return fn != nil
}

// TestWatcherChangeNotifier: Tables that are a ChangeNotifier are asked to
// notify a table's changes once for all its streams, from its watcher's
// start to its stop; a notification loads the table at once, so a commit
// reaches the streams without waiting for the poll interval, and a burst
// of notifications during a load makes one more load, not one each.
func TestWatcherChangeNotifier(t *testing.T) {
	h := newHistory(t, 1, 1)
	leaks := goleak.IgnoreCurrent()
	tables := &notifyingTables{countingTables: &countingTables{Tables: h.cat}, changed: map[string]func(){}}
	eng := feed.New(tables, feed.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// An interval so long that only a first load, and notifications, load
	// the table.
	opts := feed.FollowOptions{PollInterval: time.Hour, HeartbeatInterval: 20 * time.Millisecond}
	streams, started, done := followAll(ctx, eng, 3, 2, opts, nil)
	started.Wait()
	if n := tables.starts.Load(); n != 1 {
		t.Fatalf("3 streams of one table started %d notifications, want 1", n)
	}
	for i, id := range []int64{5, 6} {
		h.appendRows(t, []tablewrite.Row{{"id": id}})
		before := tables.loads.Load()
		for range 20 { // a burst
			if !tables.notify(tableName) {
				t.Fatal("no notification runs while the table is followed")
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for !slices.Contains(streams[0].got(), id) {
			if time.Now().After(deadline) {
				t.Fatalf("commit %d: not streamed 10s after its notification", i+1)
			}
			time.Sleep(time.Millisecond)
		}
		if n := tables.loads.Load() - before; n > 3 {
			t.Fatalf("a burst of 20 notifications made %d loads", n)
		}
	}
	done.Wait()
	for i, f := range streams {
		if f.err != nil || fmt.Sprint(f.ids) != "[5 6]" {
			t.Fatalf("stream %d: ids %v, err %v; want the notified commits", i, f.ids, f.err)
		}
	}
	if tables.notify(tableName) {
		t.Fatal("the notification still runs after the last stream ended")
	}
	goleak.VerifyNone(t, leaks)
}
