package e2e

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/auth"
	"github.com/sluicefeed/sluice/catalog"
	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// loadTable is the table of the load test.
const loadTable = "load.events"

// loadConfig sizes the load test (environment: SLUICE_LOAD_DURATION,
// SLUICE_LOAD_CONSUMERS).
type loadConfig struct {
	duration  time.Duration
	followers int // follow the table and apply it to a mirror
	pollers   int // poll commit_seq and read each new window into a mirror
	windows   int // read random windows, each checked against the writer's model
}

// state is a table's content: id -> row.
type state map[int64]mirrorRow

// modelWriter commits a random history (appends, merge-on-read deletes,
// upserts, compactions) and keeps the table's state after every commit.
type modelWriter struct {
	cat  *catalog.Catalog
	tbl  *table.Table
	r    *rand.Rand
	next int64
	ever []int64 // every id ever written

	// mu guards the fields below, which the readers use.
	mu        sync.Mutex
	snapshots []int64             // in commit order
	states    map[int64]state     // after each snapshot
	committed map[int64]time.Time // when each commit returned
	kinds     map[string]int
}

func newModelWriter(t *testing.T, dir string, seed uint64) *modelWriter {
	t.Helper()
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "grp", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "val", Type: iceberg.PrimitiveTypes.Int64},
	)
	tbl, err := tablewrite.CreateTable(ctx, cat, loadTable, sc, icecatalog.WithProperties(iceberg.Properties{
		"format-version": "2", table.WriteDeleteModeKey: table.WriteModeMergeOnRead,
	}))
	if err != nil {
		t.Fatal(err)
	}
	return &modelWriter{cat: cat, tbl: tbl, r: rand.New(rand.NewPCG(seed, 17)), next: 1,
		states: map[int64]state{}, committed: map[int64]time.Time{}, kinds: map[string]int{}}
}

func (w *modelWriter) rows(ids []int64) ([]tablewrite.Row, state) {
	out, st := make([]tablewrite.Row, len(ids)), state{}
	for i, id := range ids {
		row := mirrorRow{Grp: []string{"a", "b", "c", "d"}[w.r.IntN(4)], Val: w.r.Int64N(1_000_000)}
		out[i] = tablewrite.Row{"id": id, "grp": row.Grp, "val": row.Val}
		st[id] = row
	}
	return out, st
}

func (w *modelWriter) pick(n int) []int64 {
	var out []int64
	for range n {
		out = append(out, w.ever[w.r.IntN(len(w.ever))])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// current is the state after the last commit (empty before the first).
func (w *modelWriter) current() state {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.snapshots) == 0 {
		return state{}
	}
	return w.states[w.snapshots[len(w.snapshots)-1]]
}

// step commits one snapshot and records the state after it.
func (w *modelWriter) step(ctx context.Context, i int) error {
	st := maps.Clone(w.current())
	var next *table.Table
	var err error
	kind := ""
	switch op := w.r.IntN(10); {
	case i > 0 && i%25 == 0:
		kind = "compaction"
		next, err = tablewrite.Compact(ctx, w.tbl)
	case op < 5 || len(w.ever) == 0:
		kind = "append"
		var ids []int64
		for range 1 + w.r.IntN(40) {
			ids = append(ids, w.next)
			w.ever = append(w.ever, w.next)
			w.next++
		}
		rows, added := w.rows(ids)
		maps.Copy(st, added)
		next, err = tablewrite.Append(ctx, w.tbl, rows)
	case op < 7:
		kind = "delete"
		ids := w.pick(1 + w.r.IntN(5))
		for _, id := range ids {
			delete(st, id)
		}
		next, err = w.tbl.Delete(ctx, iceberg.IsIn(iceberg.Reference("id"), ids...), nil)
	default:
		kind = "upsert"
		ids := w.pick(1 + w.r.IntN(5))
		keys := make([]tablewrite.Row, len(ids))
		for k, id := range ids {
			keys[k] = tablewrite.Row{"id": id}
		}
		rows, upserted := w.rows(ids)
		maps.Copy(st, upserted)
		next, err = tablewrite.EqualityDelete(ctx, w.tbl, "id", keys, rows)
	}
	if err != nil {
		return fmt.Errorf("commit %d (%s): %w", i, kind, err)
	}
	snap := next.CurrentSnapshot()
	if snap == nil || (w.tbl.CurrentSnapshot() != nil && snap.SnapshotID == w.tbl.CurrentSnapshot().SnapshotID) {
		return nil // nothing to commit (a delete of ids no longer there)
	}
	w.tbl = next
	w.mu.Lock()
	defer w.mu.Unlock()
	w.snapshots = append(w.snapshots, snap.SnapshotID)
	w.states[snap.SnapshotID] = st
	w.committed[snap.SnapshotID] = time.Now()
	w.kinds[kind]++
	return nil
}

// scan reads the table's state with a plain iceberg-go scan.
func (w *modelWriter) scan(t *testing.T) state {
	t.Helper()
	ctx := context.Background()
	tbl, err := w.cat.LoadTable(ctx, loadTable)
	if err != nil {
		t.Fatal(err)
	}
	arr, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer arr.Release()
	out := state{}
	rdr := array.NewTableReader(arr, 1024)
	defer rdr.Release()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		ids := rec.Column(0).(*array.Int64)
		grps := rec.Column(1).(*array.String)
		vals := rec.Column(2).(*array.Int64)
		for i := range int(rec.NumRows()) {
			if _, dup := out[ids.Value(i)]; dup {
				t.Fatalf("id %d twice in the table", ids.Value(i))
			}
			out[ids.Value(i)] = mirrorRow{Grp: grps.Value(i), Val: vals.Value(i)}
		}
	}
	return out
}

// apply applies a batch of change rows to a mirror keyed by id.
func apply(m state, rec arrow.RecordBatch) error {
	ops := rec.Column(0).(*array.String)
	image := func(col int, i int) (int64, mirrorRow, error) {
		s := rec.Column(col).(*array.Struct)
		if s.IsNull(i) {
			return 0, mirrorRow{}, fmt.Errorf("row %d (%s): null image %d", i, ops.Value(i), col)
		}
		st := s.DataType().(*arrow.StructType)
		idx := func(name string) int { i, _ := st.FieldIdx(name); return i }
		id := s.Field(idx("id")).(*array.Int64).Value(i)
		return id, mirrorRow{Grp: s.Field(idx("grp")).(*array.String).Value(i),
			Val: s.Field(idx("val")).(*array.Int64).Value(i)}, nil
	}
	for i := range int(rec.NumRows()) {
		switch op := ops.Value(i); op {
		case sluice.OpDelete, sluice.OpUpdateBefore:
			id, _, err := image(1, i)
			if err != nil {
				return err
			}
			delete(m, id)
		case sluice.OpInsert, sluice.OpUpdateAfter, sluice.OpUpdate:
			id, row, err := image(2, i)
			if err != nil {
				return err
			}
			m[id] = row
		default:
			return fmt.Errorf("row %d: op %q", i, op)
		}
	}
	return nil
}

func diffStates(got, want state) string {
	g, w := map[string]mirrorRow{}, map[string]mirrorRow{}
	for k, v := range got {
		g[strconv.FormatInt(k, 10)] = v
	}
	for k, v := range want {
		w[strconv.FormatInt(k, 10)] = v
	}
	return diffMirror(g, w)
}

// loadStats collects what the consumers saw.
type loadStats struct {
	mu           sync.Mutex // guards the fields below
	errors       []string
	firstBatch   []time.Duration // time to first batch of every read
	byKind       map[string][]time.Duration
	delivery     []time.Duration // commit to delivery to a follower
	reads        int
	windowChecks int
	rows         int64
}

func (s *loadStats) fail(who string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errors = append(s.errors, who+": "+err.Error())
}

func (s *loadStats) read(kind string, ttfb time.Duration, rows int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if ttfb > 0 {
		s.firstBatch = append(s.firstBatch, ttfb)
		if s.byKind == nil {
			s.byKind = map[string][]time.Duration{}
		}
		s.byKind[kind] = append(s.byKind[kind], ttfb)
	}
	s.rows += rows
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// readWindow reads a window into m, returning the time to its first batch
// and its rows.
func readWindow(ctx context.Context, c *sluice.Client, req sluice.ChangeRequest, m state) (time.Duration, int64, error) {
	start := time.Now()
	rdr, err := c.Changes(ctx, req)
	if err != nil {
		return 0, 0, err
	}
	defer rdr.Release()
	var ttfb time.Duration
	var rows int64
	for rdr.Next() {
		if ttfb == 0 {
			ttfb = time.Since(start)
		}
		b := rdr.Batch()
		rows += b.Record.NumRows()
		if err := apply(m, b.Record); err != nil {
			return 0, 0, err
		}
	}
	return ttfb, rows, rdr.Err()
}

// TestLoad is the load test of `make load` (run by `make bench`; skipped
// unless SLUICE_LOAD is set). 50 consumers, each with its own token, read
// one flightd on loopback for a bounded time while a writer commits
// appends, deletes, upserts and compactions: followers apply a follow
// stream to a mirror, pollers read each new window into a mirror, window
// readers read random windows and check each against the writer's model.
// At the end: no consumer saw an error, every mirror equals a plain scan of
// the table. It reports flightd's peak RSS and the p50/p99 time to first
// batch, and writes them to SLUICE_LOAD_OUT (docs/LOAD.md).
func TestLoad(t *testing.T) {
	if os.Getenv("SLUICE_LOAD") == "" {
		t.Skip("the load test runs with `make load` (SLUICE_LOAD=1)")
	}
	cfg := loadConfig{duration: 60 * time.Second, followers: 20, pollers: 20, windows: 10}
	if v := os.Getenv("SLUICE_LOAD_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		cfg.duration = d
	}
	if v := os.Getenv("SLUICE_LOAD_CONSUMERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 3 {
			t.Fatalf("SLUICE_LOAD_CONSUMERS=%q: want a number of at least 3", v)
		}
		cfg.followers, cfg.pollers = n*2/5, n*2/5
		cfg.windows = n - cfg.followers - cfg.pollers
	}
	consumers := cfg.followers + cfg.pollers + cfg.windows
	ctx := context.Background()
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	w := newModelWriter(t, dir, seed)
	for i := range 5 {
		if err := w.step(ctx, i); err != nil {
			t.Fatal(err)
		}
	}

	// One token per consumer: each is its own principal, with its own
	// limits, as distinct services would be.
	tokens := make([]string, consumers)
	file := "tokens:\n"
	for i := range tokens {
		tok, err := auth.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		tokens[i] = tok
		file += fmt.Sprintf("  - principal: consumer-%02d\n    sha256: %s\n", i, auth.HashToken(tok))
	}
	tokensFile := writeFile(t, t.TempDir(), "tokens.yaml", file)
	srv := startFlightd(t, "--warehouse", dir, "--auth-mode", "token", "--auth-tokens-file", tokensFile,
		"--metrics-listen", "127.0.0.1:0", "--log-level", "info")
	maddr := metricsAddr(t, srv)
	goroutinesAtStart := metric(t, maddr, "go_goroutines")

	stats := &loadStats{}
	var rssMu sync.Mutex
	var rssMax int64
	sampling, stopSampling := context.WithCancel(ctx)
	var samplerDone sync.WaitGroup
	samplerDone.Go(func() {
		for sampling.Err() == nil {
			rss, _ := rssKiB(t, srv.pid())
			rssMu.Lock()
			rssMax = max(rssMax, rss)
			rssMu.Unlock()
			select {
			case <-sampling.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	})

	// writing is done when the writer has made its last commit; final is
	// its snapshot.
	writing, stopWriting := context.WithCancel(ctx)
	var final int64
	var consumersDone sync.WaitGroup
	var clients []*sluice.Client
	dial := func(i int) *sluice.Client {
		c, err := sluice.Dial(ctx, srv.URI(), sluice.WithToken(tokens[i]))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		clients = append(clients, c)
		return c
	}
	mirrors := make([]state, cfg.followers+cfg.pollers)
	for i := range consumers {
		c := dial(i)
		who := fmt.Sprintf("consumer-%02d", i)
		r := rand.New(rand.NewPCG(seed, uint64(100+i)))
		switch {
		case i < cfg.followers:
			consumersDone.Go(func() {
				m, err := follow(ctx, writing, c, w, stats, &final)
				if err != nil {
					stats.fail(who+" (follow)", err)
				}
				mirrors[i] = m
			})
		case i < cfg.followers+cfg.pollers:
			consumersDone.Go(func() {
				m, err := poll(ctx, writing, c, r, stats, &final)
				if err != nil {
					stats.fail(who+" (poll)", err)
				}
				mirrors[i] = m
			})
		default:
			consumersDone.Go(func() {
				if err := randomWindows(ctx, writing, c, r, w, stats); err != nil {
					stats.fail(who+" (windows)", err)
				}
			})
		}
	}

	start := time.Now()
	commits := 0
	r := rand.New(rand.NewPCG(seed, 5))
	for time.Since(start) < cfg.duration {
		if err := w.step(ctx, 5+commits); err != nil {
			stopWriting()
			t.Fatal(err)
		}
		commits++
		// About three commits a second: a busy table (the cost of a commit
		// to the server grows with the followers and the history).
		time.Sleep(time.Duration(200+r.IntN(200)) * time.Millisecond)
	}
	w.mu.Lock()
	final = w.snapshots[len(w.snapshots)-1]
	kinds := maps.Clone(w.kinds)
	snapshots := len(w.snapshots)
	w.mu.Unlock()
	stopWriting()
	consumersDone.Wait()
	stopSampling()
	samplerDone.Wait()
	elapsed := time.Since(start)

	want := w.scan(t)
	if d := diffStates(w.current(), want); d != "" {
		t.Fatalf("the writer's model is not the table: %s", d)
	}
	equal := 0
	for i, m := range mirrors {
		if m == nil {
			continue // its consumer failed, which is reported
		}
		if d := diffStates(m, want); d != "" {
			stats.fail(fmt.Sprintf("consumer-%02d", i), fmt.Errorf("mirror != table: %s", d))
			continue
		}
		equal++
	}
	_, peak := rssKiB(t, srv.pid())
	goroutinesAtEnd := metric(t, maddr, "go_goroutines")
	streamedRows := metric(t, maddr, `sluice_rows_streamed_total{table="load.events"}`)
	streamedBytes := metric(t, maddr, `sluice_bytes_streamed_total{table="load.events"}`)
	cpu := cpuSeconds(t, srv.pid())
	hits, misses := metric(t, maddr, "sluice_plan_cache_hits_total"), metric(t, maddr, "sluice_plan_cache_misses_total")
	// Once the consumers have gone, flightd is back to its goroutines at
	// the start: nothing a stream or a connection started is left.
	for _, c := range clients {
		c.Close()
	}
	goroutinesAfter := metric(t, maddr, "go_goroutines")
	for deadline := time.Now().Add(10 * time.Second); goroutinesAfter > goroutinesAtStart+2 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		goroutinesAfter = metric(t, maddr, "go_goroutines")
	}
	if goroutinesAfter > goroutinesAtStart+2 {
		stats.fail("flightd", fmt.Errorf("%v goroutines once every client has gone, %v at the start",
			goroutinesAfter, goroutinesAtStart))
	}

	rep := loadReport{cfg: cfg, consumers: consumers, elapsed: elapsed, commits: snapshots, kinds: kinds,
		rows: len(want), errors: len(stats.errors), mirrors: equal, windowChecks: stats.windowChecks,
		reads: stats.reads, firstBatch: stats.firstBatch, byKind: stats.byKind, delivery: stats.delivery, peakRSSMiB: peak >> 10,
		maxRSSMiB: rssMax >> 10, goroutines: [3]float64{goroutinesAtStart, goroutinesAtEnd, goroutinesAfter},
		cacheHits: hits, cacheMisses: misses,
		streamedRows: streamedRows, streamedBytes: streamedBytes, cpuSeconds: cpu}
	md := rep.markdown()
	t.Log("\n" + md)
	for _, e := range stats.errors[:min(len(stats.errors), 20)] {
		t.Error(e)
	}
	if equal != len(mirrors) {
		t.Errorf("%d of %d mirrors equal the table", equal, len(mirrors))
	}
	if out := os.Getenv("SLUICE_LOAD_OUT"); out != "" && !t.Failed() {
		if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// follow follows the table from its full state into a mirror until, once
// writing is done, the mirror has the final snapshot.
func follow(ctx context.Context, writing context.Context, c *sluice.Client, w *modelWriter, stats *loadStats,
	final *int64) (state, error) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	// Heartbeats wake the follower up to see that the writer is done.
	sub, err := c.Subscribe(rctx, sluice.SubscribeRequest{Table: loadTable, Start: sluice.StartLatestFull,
		Heartbeats: true})
	if err != nil {
		return nil, err
	}
	defer sub.Release()
	m := state{}
	first := true
	var rows int64
	var applied int64
	for sub.Next() {
		b := sub.Batch()
		if first {
			stats.read("follow", time.Since(start), 0)
			first = false
		}
		rows += b.Record.NumRows()
		if err := apply(m, b.Record); err != nil {
			return nil, err
		}
		if b.Meta.SnapshotComplete {
			applied = b.Meta.Snapshot
			if !b.Meta.FullState {
				w.mu.Lock()
				at, ok := w.committed[applied]
				w.mu.Unlock()
				if ok {
					stats.mu.Lock()
					stats.delivery = append(stats.delivery, time.Since(at))
					stats.mu.Unlock()
				}
			}
		}
		if writing.Err() != nil && applied == *final {
			stats.mu.Lock()
			stats.rows += rows
			stats.mu.Unlock()
			return m, nil
		}
	}
	return nil, sub.Err()
}

// poll reads the history from its start into a mirror, then polls
// commit_seq and reads each new window, until, once writing is done, the
// mirror has the final snapshot.
func poll(ctx context.Context, writing context.Context, c *sluice.Client, r *rand.Rand, stats *loadStats,
	final *int64) (state, error) {
	m := state{}
	var at *int64
	for {
		done := writing.Err() != nil
		seq, err := c.CommitSeq(ctx, loadTable)
		if err != nil {
			return nil, err
		}
		if seq.Snapshot != nil && (at == nil || *seq.Snapshot != *at) {
			to := *seq.Snapshot
			ttfb, rows, err := readWindow(ctx, c, sluice.ChangeRequest{Table: loadTable, FromSnapshot: at, ToSnapshot: &to}, m)
			if err != nil {
				return nil, err
			}
			stats.read("poll", ttfb, rows)
			at = &to
		}
		if done && at != nil && *at == *final {
			return m, nil
		}
		time.Sleep(time.Duration(100+r.IntN(200)) * time.Millisecond)
	}
}

// randomWindows reads random windows of the lineage the writer made, with
// and without fold_updates and net_changes, and checks each: applied to the
// state at its start, it gives the state at its end.
func randomWindows(ctx context.Context, writing context.Context, c *sluice.Client, r *rand.Rand, w *modelWriter,
	stats *loadStats) error {
	for writing.Err() == nil {
		w.mu.Lock()
		snaps := slices.Clone(w.snapshots)
		w.mu.Unlock()
		j := r.IntN(len(snaps))
		i := r.IntN(j+1) - 1 // -1: from the start of history
		var from *int64
		m := state{}
		w.mu.Lock()
		if i >= 0 {
			from = &snaps[i]
			m = maps.Clone(w.states[snaps[i]])
		}
		want := w.states[snaps[j]]
		w.mu.Unlock()
		req := sluice.ChangeRequest{Table: loadTable, FromSnapshot: from, ToSnapshot: &snaps[j],
			FoldUpdates: r.IntN(3) == 0, NetChanges: r.IntN(3) == 0}
		ttfb, rows, err := readWindow(ctx, c, req, m)
		if err != nil {
			return fmt.Errorf("window %+v: %w", req, err)
		}
		if d := diffStates(m, want); d != "" {
			return fmt.Errorf("window (%v, %d] (fold %v, net %v) applied to the state at its start != the state at its end: %s",
				i, snaps[j], req.FoldUpdates, req.NetChanges, d)
		}
		stats.read("window", ttfb, rows)
		stats.mu.Lock()
		stats.windowChecks++
		stats.mu.Unlock()
		time.Sleep(time.Duration(50+r.IntN(200)) * time.Millisecond)
	}
	return nil
}

// cpuSeconds returns the CPU time (user and system) a process used.
func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command, which is in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // clock ticks: 100 per second on Linux
}

// loadReport is the result of a load run.
type loadReport struct {
	cfg                      loadConfig
	consumers                int
	elapsed                  time.Duration
	commits                  int
	kinds                    map[string]int
	rows                     int
	errors                   int
	mirrors                  int
	windowChecks             int
	reads                    int
	firstBatch, delivery     []time.Duration
	byKind                   map[string][]time.Duration
	peakRSSMiB, maxRSSMiB    int64
	goroutines               [3]float64
	cacheHits, cacheMisses   float64
	streamedRows, cpuSeconds float64
	streamedBytes            float64
}

func (r loadReport) markdown() string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	var b strings.Builder
	fmt.Fprintf(&b, `# Load test

`+"`make load`"+` (also run by `+"`make bench`"+`) runs e2e/load_test.go: one flightd
process on loopback, %d consumers for %s while a writer commits about
three times a second. Each consumer has a token of its own (its own
principal and limits, as separate services would have); flightd runs
otherwise at its defaults (limits, stall timeout, GC settings). The writer (iceberg-go, merge-on-read, identifier field
`+"`id`"+`) commits appends of 1-40 rows, position deletes, upserts
(equality deletes with new rows) and a compaction every 25 commits, and
keeps the table's state after every commit.

- %d followers follow the table (`+"`start: latest-full`"+`) and apply every
  change to a mirror keyed by id;
- %d pollers poll `+"`commit_seq`"+` every 100-300 ms and read each new window
  (from their last snapshot to the current one) into a mirror;
- %d window readers read random windows of the history (a third with
  `+"`fold_updates`"+`, a third with `+"`net_changes`"+`), and check each: applied to
  the writer's state at its start, it gives the state at its end.

At the end every mirror must equal a plain iceberg-go scan of the table and
no consumer may have seen an error. The time to first batch runs from the
call (planning included) to the first batch in hand; the 50 clients and
the writer run in the test process, on the same CPUs as flightd.

## Results

%s, %s/%s, %d CPUs, %s.

| | |
|---|---|
| consumers | %d (%d follow, %d poll windows, %d random windows) |
| duration | %s |
| commits | %d (%d appends, %d deletes, %d upserts, %d compactions) |
| rows in the table at the end | %d |
| errors | **%d** |
| mirrors equal to the table (plain scan) | **%d of %d** |
| random windows checked against the model | %d |
| reads (windows and follow streams) | %d |
| time to first batch, p50 / p99 | **%s / %s** |
| ... of a follow stream (its full state), p50 / p99 | %s / %s |
| ... of a poller's new window, p50 / p99 | %s / %s |
| ... of a random window, p50 / p99 | %s / %s |
| commit to delivery to a follower, p50 / p99 | %s / %s (poll interval 1 s) |
| flightd peak RSS | **%d MiB** (VmHWM, and VmRSS sampled every 250 ms) |
| flightd CPU time | %.1f s (%.0f%% of one CPU) |
| rows / bytes streamed | %.0f / %.1f MiB |
| snapshot plans from the engine's cache / read from manifests | %.0f / %.0f (%.0f read per commit) |
| flightd goroutines: start / end / once the clients have gone | %.0f / %.0f / %.0f |
`, r.consumers, r.cfg.duration, r.cfg.followers, r.cfg.pollers, r.cfg.windows,
		time.Now().UTC().Format("2006-01-02"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(),
		r.consumers, r.cfg.followers, r.cfg.pollers, r.cfg.windows, r.elapsed.Round(time.Second),
		r.commits, r.kinds["append"], r.kinds["delete"], r.kinds["upsert"], r.kinds["compaction"], r.rows,
		r.errors, r.mirrors, r.cfg.followers+r.cfg.pollers, r.windowChecks, r.reads,
		ms(percentile(r.firstBatch, 0.5)), ms(percentile(r.firstBatch, 0.99)),
		ms(percentile(r.byKind["follow"], 0.5)), ms(percentile(r.byKind["follow"], 0.99)),
		ms(percentile(r.byKind["poll"], 0.5)), ms(percentile(r.byKind["poll"], 0.99)),
		ms(percentile(r.byKind["window"], 0.5)), ms(percentile(r.byKind["window"], 0.99)),
		ms(percentile(r.delivery, 0.5)), ms(percentile(r.delivery, 0.99)),
		max(r.peakRSSMiB, r.maxRSSMiB), r.cpuSeconds, 100*r.cpuSeconds/r.elapsed.Seconds(),
		r.streamedRows, r.streamedBytes/(1<<20), r.cacheHits, r.cacheMisses, r.cacheMisses/float64(max(1, r.commits)),
		r.goroutines[0], r.goroutines[1], r.goroutines[2])
	return b.String()
}
