package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/feed"
	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// streamMeta is the app_metadata of a batch of a follow stream.
type streamMeta struct {
	meta
	Heartbeat bool `json:"heartbeat"`
	FullState bool `json:"full_state"`
}

// event is one batch of a live stream: its metadata, the ids and ops of its
// rows, and when it arrived; or the error that ended the stream (io.EOF for
// a clean end).
type event struct {
	meta streamMeta
	ids  []int64
	ops  []string
	at   time.Time
	err  error
}

// live reads a DoGet stream in the background.
type live struct {
	events chan event
	cancel context.CancelFunc
	done   chan struct{}
}

// open starts reading the stream of a ticket; the test ends it with stop.
func (f *fixture) open(t *testing.T, ticket string, opts ...grpc.CallOption) *live {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &live{events: make(chan event, 1000), cancel: cancel, done: make(chan struct{})}
	stream, err := f.client.DoGet(ctx, &flight.Ticket{Ticket: []byte(ticket)}, opts...)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		defer close(l.done)
		defer close(l.events)
		rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(memory.NewGoAllocator()))
		if err != nil {
			l.events <- event{err: err}
			return
		}
		defer rdr.Release()
		for rdr.Next() {
			rec := rdr.RecordBatch()
			var m streamMeta
			if err := json.Unmarshal(rdr.LatestAppMetadata(), &m); err != nil {
				l.events <- event{err: fmt.Errorf("app_metadata %q: %v", rdr.LatestAppMetadata(), err)}
				return
			}
			if m.Rows != rec.NumRows() {
				l.events <- event{err: fmt.Errorf("app_metadata %q for %d rows", rdr.LatestAppMetadata(), rec.NumRows())}
				return
			}
			ev := event{meta: m, at: time.Now()}
			ops := rec.Column(0).(*array.String)
			after := rec.Column(2).(*array.Struct)
			before := rec.Column(1).(*array.Struct)
			for i := range int(rec.NumRows()) {
				ev.ops = append(ev.ops, ops.Value(i))
				img := after
				if after.IsNull(i) {
					img = before
				}
				ev.ids = append(ev.ids, img.Field(0).(*array.Int64).Value(i))
			}
			l.events <- ev
		}
		err = rdr.Err()
		if err == nil {
			err = io.EOF
		}
		l.events <- event{err: err}
	}()
	t.Cleanup(l.stop)
	return l
}

// stop cancels the stream and waits for its reader.
func (l *live) stop() {
	l.cancel()
	<-l.done
}

// next returns the next event, failing after a timeout.
func (l *live) next(t *testing.T) event {
	t.Helper()
	select {
	case ev, ok := <-l.events:
		if !ok {
			t.Fatal("the stream's reader is done")
		}
		return ev
	case <-time.After(20 * time.Second):
		t.Fatal("no batch within 20s")
	}
	return event{}
}

// changes reads batches, skipping heartbeats, until n rows came and the
// last batch completed its snapshot; it returns the ids and the snapshots
// completed.
func (l *live) changes(t *testing.T, n int) (ids []int64, snapshots []int64, metas []streamMeta) {
	t.Helper()
	for {
		ev := l.next(t)
		if ev.err != nil {
			t.Fatalf("stream ended after %d of %d rows: %v", len(ids), n, ev.err)
		}
		if ev.meta.Heartbeat {
			if len(ev.ids) != 0 || ev.meta.SnapshotComplete {
				t.Fatalf("a heartbeat with rows or complete: %+v", ev.meta)
			}
			continue
		}
		ids = append(ids, ev.ids...)
		metas = append(metas, ev.meta)
		if ev.meta.SnapshotComplete {
			snapshots = append(snapshots, ev.meta.Snapshot)
			if len(ids) >= n {
				return ids, snapshots, metas
			}
		}
	}
}

// heartbeat waits for a heartbeat and returns it.
func (l *live) heartbeat(t *testing.T) event {
	t.Helper()
	for {
		ev := l.next(t)
		if ev.err != nil {
			t.Fatalf("stream ended: %v", ev.err)
		}
		if ev.meta.Heartbeat {
			return ev
		}
		if len(ev.ids) > 0 {
			t.Fatalf("unexpected rows %v while waiting for a heartbeat", ev.ids)
		}
	}
}

// end reads until the stream ends and returns its error (io.EOF: clean).
func (l *live) end(t *testing.T) error {
	t.Helper()
	for {
		ev := l.next(t)
		if ev.err != nil {
			return ev.err
		}
	}
}

func seq(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func sameIDs(t *testing.T, got, want []int64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ids %v, want %v", got, want)
	}
}

func ticket(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// checkLeaks fails the test when it leaves goroutines behind once all its
// cleanups (the server's stop among them) have run.
func checkLeaks(t *testing.T) {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

func TestStartModes(t *testing.T) {
	checkLeaks(t)
	// Three appends of 4 rows: ids 1-4, 5-8, 9-12. The snapshot ids and
	// times are the same in every subtest's fixture: the tickets name them
	// through these placeholders.
	tests := []struct {
		name   string
		ticket string
		// want: the ids before the next commit, whether they are a full
		// state, and the snapshots completed.
		want      []int64
		fullState bool
		snapshots []int64
	}{
		{"latest-full is the default", `{"table": "shop.orders", "follow": true}`, seq(1, 12), true, nil},
		{"latest-full", `{"table": "shop.orders", "follow": true, "start": "latest-full"}`, seq(1, 12), true, nil},
		{"latest", `{"table": "shop.orders", "follow": true, "start": "latest"}`, nil, false, nil},
		{"from-snapshot", `{"table": "shop.orders", "follow": true, "start": "from-snapshot", "from_snapshot": "S0"}`,
			seq(5, 12), false, []int64{1, 2}},
		{"from_snapshot alone", `{"table": "shop.orders", "follow": true, "from_snapshot": "S1"}`,
			seq(9, 12), false, []int64{2}},
		{"from-snapshot-full", `{"table": "shop.orders", "follow": true, "start": "from-snapshot-full", "from_snapshot": "S1"}`,
			seq(1, 12), false, []int64{1, 2}},
		{"from-timestamp", `{"table": "shop.orders", "follow": true, "start": "from-timestamp", "from_timestamp_ms": "T1"}`,
			seq(5, 12), false, []int64{1, 2}},
		{"from-timestamp later than every snapshot",
			`{"table": "shop.orders", "follow": true, "start": "from-timestamp", "from_timestamp_ms": "TLATE"}`, nil, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := start(t, 3, 4, 8)
			s := f.snapshots
			tkt := strings.NewReplacer("S0", fmt.Sprint(s[0]), "S1", fmt.Sprint(s[1]),
				"TLATE", fmt.Sprint(f.tbl.CurrentSnapshot().TimestampMs+1),
				"T1", fmt.Sprint(f.tbl.SnapshotByID(s[1]).TimestampMs)).Replace(tt.ticket)
			for i, x := range tt.snapshots {
				if x < 3 {
					tt.snapshots[i] = s[x]
				}
			}
			if len(tt.snapshots) == 0 && tt.want != nil {
				tt.snapshots = []int64{s[2]}
			}
			l := f.open(t, tkt)
			next := 13
			if tt.want != nil {
				ids, snaps, metas := l.changes(t, len(tt.want))
				if metas[0].FullState {
					// A state comes in file order.
					slices.Sort(ids[:min(len(ids), 4*len(s[:2]))])
					if tt.name != "from-snapshot-full" {
						slices.Sort(ids)
					}
				}
				sameIDs(t, ids, tt.want)
				if fmt.Sprint(snaps) != fmt.Sprint(tt.snapshots) {
					t.Fatalf("completed snapshots %v, want %v", snaps, tt.snapshots)
				}
				if tt.fullState && !metas[0].FullState {
					t.Fatalf("a full state without full_state: %+v", metas[0])
				}
				if tt.name == "from-snapshot-full" && (!metas[0].FullState || metas[len(metas)-1].FullState) {
					t.Fatalf("from-snapshot-full: state then changes, got %+v", metas)
				}
			}
			// Caught up: a heartbeat says where the stream stands.
			hb := l.heartbeat(t)
			if hb.meta.Snapshot != f.tbl.CurrentSnapshot().SnapshotID {
				t.Fatalf("heartbeat at snapshot %d, want the current %d", hb.meta.Snapshot, f.tbl.CurrentSnapshot().SnapshotID)
			}
			// A new commit arrives on the open stream.
			f.commit(t, next-1, 2, 8)
			ids, snaps, _ := l.changes(t, 2)
			sameIDs(t, ids, seq(int64(next), int64(next+1)))
			if snaps[0] != f.tbl.CurrentSnapshot().SnapshotID {
				t.Fatalf("the new commit as snapshot %d", snaps[0])
			}
			l.stop()
		})
	}
}

func TestBoundedStreams(t *testing.T) {
	f := start(t, 3, 4, 8)
	// Without follow, a stream ends once it has caught up.
	tests := []struct {
		name, ticket string
		want         []int64
	}{
		{"latest-full", `{"table": "shop.orders", "start": "latest-full"}`, seq(1, 12)},
		{"latest", `{"table": "shop.orders", "start": "latest"}`, nil},
		{"from-snapshot-full", ticket(`{"table": "shop.orders", "start": "from-snapshot-full", "from_snapshot": "%d"}`, f.snapshots[0]), seq(1, 12)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.doGet(t, context.Background(), []byte(tt.ticket))
			if err != nil {
				t.Fatal(err)
			}
			if got.rows != int64(len(tt.want)) {
				t.Fatalf("%d rows, want %d", got.rows, len(tt.want))
			}
		})
	}
}

func TestEmptyTableWaitsForFirstCommit(t *testing.T) {
	for _, mode := range []string{`"start": "latest-full"`, `"start": "latest"`, `"start": "from-timestamp", "from_timestamp_ms": 1`,
		`"consumer": "new"`} {
		f := start(t, 0, 0, 0)
		l := f.open(t, `{"table": "shop.orders", "follow": true, `+mode+`}`)
		hb := l.heartbeat(t)
		if hb.meta.Snapshot != feed.NoSnapshot || hb.meta.CommitSeq != 0 {
			t.Fatalf("heartbeat on an empty table: %+v", hb.meta)
		}
		f.commit(t, 0, 3, 8)
		ids, _, metas := l.changes(t, 3)
		sameIDs(t, ids, seq(1, 3))
		if metas[0].FullState {
			t.Fatalf("%s: the first commit of an empty table came as a full state", mode)
		}
		l.stop()
	}
	f := start(t, 0, 0, 0)
	l := f.open(t, `{"table": "shop.orders", "follow": true, "from_snapshot": "5"}`)
	checkStatus(t, l.end(t), codes.NotFound, "has no snapshots")
}

func TestHeartbeatsOnIdleStream(t *testing.T) {
	f := start(t, 1, 2, 8)
	l := f.open(t, `{"table": "shop.orders", "follow": true, "start": "latest"}`)
	var at []time.Time
	for len(at) < 5 {
		hb := l.heartbeat(t)
		if hb.meta.CommitSeq != 1 || hb.meta.Snapshot != f.snapshots[0] {
			t.Fatalf("heartbeat %+v", hb.meta)
		}
		at = append(at, hb.at)
	}
	interval := testFollow.HeartbeatInterval
	for i := 1; i < len(at); i++ {
		gap := at[i].Sub(at[i-1])
		t.Logf("heartbeat gap %s (interval %s)", gap, interval)
		if gap < interval-20*time.Millisecond || gap > interval+250*time.Millisecond {
			t.Fatalf("heartbeats %s apart, want about %s", gap, interval)
		}
	}
}

func TestShutdownEndsFollowStreams(t *testing.T) {
	f := start(t, 1, 2, 8)
	l := f.open(t, `{"table": "shop.orders", "follow": true}`)
	l.changes(t, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch, err := f.control.WatchCommits(ctx, &sluicev1.WatchCommitsRequest{Table: tableName})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Recv(); err != nil {
		t.Fatal(err)
	}
	f.srv.Shutdown()
	checkStatus(t, l.end(t), codes.Unavailable, "server shutting down")
	_, err = watch.Recv()
	checkStatus(t, err, codes.Unavailable, "server shutting down")
	// New follow streams are refused; bounded reads go on.
	checkStatus(t, f.open(t, `{"table": "shop.orders", "follow": true}`).end(t), codes.Unavailable, "shutting down")
	if got, err := f.doGet(t, context.Background(), []byte(`{"table": "shop.orders"}`)); err != nil || got.rows != 2 {
		t.Fatalf("a bounded read after shutdown: %d rows, %v", got.rows, err)
	}
}

func TestClientCancelsFollowStream(t *testing.T) {
	checkLeaks(t)
	f := start(t, 2, 500, 100)
	l := f.open(t, `{"table": "shop.orders", "follow": true}`)
	if ev := l.next(t); ev.err != nil {
		t.Fatal(ev.err)
	}
	l.stop()
	// The cleanup checks that the server released every buffer.
}

// flaky is a table source that fails with ErrUnavailable while down is set.
type flaky struct {
	feed.Tables
	down  atomic.Bool
	fails atomic.Int64
}

func (f *flaky) Load(ctx context.Context, name string) (feed.Table, error) {
	if f.down.Load() {
		f.fails.Add(1)
		return nil, fmt.Errorf("%w: injected", catalog.ErrUnavailable)
	}
	return f.Tables.Load(ctx, name)
}

func TestFollowRetriesUnavailableCatalog(t *testing.T) {
	var fl *flaky
	f := startWith(t, 1, 2, 8, func(t feed.Tables) feed.Tables {
		fl = &flaky{Tables: t}
		return fl
	})
	l := f.open(t, `{"table": "shop.orders", "follow": true, "start": "latest"}`)
	l.heartbeat(t)
	fl.down.Store(true)
	f.commit(t, 2, 3, 8)
	// Heartbeats go on while the catalog fails, with backoff between polls.
	l.heartbeat(t)
	l.heartbeat(t)
	fails := fl.fails.Load()
	if fails < 2 || fails > 20 {
		t.Fatalf("%d failed polls in two heartbeat intervals: want backoff up to %s", fails, testFollow.MaxBackoff)
	}
	fl.down.Store(false)
	ids, _, _ := l.changes(t, 3)
	sameIDs(t, ids, seq(3, 5))
}

func TestSchemaChangeEndsFollowStream(t *testing.T) {
	f := start(t, 1, 2, 8)
	l := f.open(t, `{"table": "shop.orders", "follow": true}`)
	l.changes(t, 2)
	tx := f.tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).RenameColumn([]string{"country"}, "land").Commit(); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f.tbl = tbl
	f.commit(t, 2, 1, 8)
	checkStatus(t, l.end(t), codes.FailedPrecondition, fmt.Sprintf("open a new stream from snapshot %d", f.snapshots[0]))
}

// expire commits n appends and expires every snapshot but the last keep.
func (f *fixture) expire(t *testing.T, keep int) {
	t.Helper()
	tbl, err := tablewrite.Expire(context.Background(), f.tbl, keep)
	if err != nil {
		t.Fatal(err)
	}
	f.tbl = tbl
	if f.tbl.SnapshotByID(f.snapshots[0]) != nil {
		t.Fatal("nothing expired")
	}
}

func TestExpiredStarts(t *testing.T) {
	f := start(t, 5, 2, 8)
	ctx := context.Background()
	s := f.snapshots
	// The consumer acknowledged snapshot 1, then history before 4 expires.
	if _, err := f.control.Ack(ctx, &sluicev1.AckRequest{Consumer: "old", Table: tableName, Snapshot: s[0]}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.control.Ack(ctx, &sluicev1.AckRequest{Consumer: "recent", Table: tableName, Snapshot: s[3]}); err != nil {
		t.Fatal(err)
	}
	f.expire(t, 2) // keeps snapshots 4 and 5; 3 is the expired parent of 4
	tests := []struct {
		name, ticket string
		code         codes.Code
		msg          string
	}{
		{"snapshot below the earliest", ticket(`{"table": "shop.orders", "follow": true, "from_snapshot": "%d"}`, s[0]),
			codes.FailedPrecondition, fmt.Sprintf("earliest snapshot a stream can start from is %d", s[2])},
		{"state of an expired snapshot", ticket(`{"table": "shop.orders", "follow": true, "start": "from-snapshot-full", "from_snapshot": "%d"}`, s[2]),
			codes.FailedPrecondition, "resync required"},
		{"expired progress", `{"table": "shop.orders", "follow": true, "consumer": "old"}`,
			codes.FailedPrecondition, "reset the consumer"},
		{"timestamp before the retained history", `{"table": "shop.orders", "follow": true, "from_timestamp_ms": "1"}`,
			codes.FailedPrecondition, "resync required"},
		{"history from its start", `{"table": "shop.orders", "start": "from-snapshot", "from_snapshot": "1"}`,
			codes.FailedPrecondition, "resync required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkStatus(t, f.open(t, tt.ticket).end(t), tt.code, tt.msg)
		})
	}
	// The expired parent of the oldest retained snapshot is still a start.
	got, err := f.doGet(t, ctx, []byte(ticket(`{"table": "shop.orders", "from_snapshot": "%d", "start": "from-snapshot"}`, s[2])))
	if err != nil || got.rows != 4 {
		t.Fatalf("from the expired parent: %d rows, %v", got.rows, err)
	}
	// Progress still on the retained lineage resumes.
	got, err = f.doGet(t, ctx, []byte(`{"table": "shop.orders", "consumer": "recent"}`))
	if err != nil || got.rows != 2 {
		t.Fatalf("resume of recent: %d rows, %v", got.rows, err)
	}
	list, err := f.control.ListConsumers(ctx, &sluicev1.ListConsumersRequest{Table: tableName})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Consumers) != 2 || !list.Consumers[0].Expired || list.Consumers[1].Expired ||
		list.Consumers[0].LagCommits != 4 || list.Consumers[1].LagCommits != 1 {
		t.Fatalf("list: %v", list)
	}
	// Reset, the expired consumer starts again by its start mode.
	if _, err := f.action(ctx, "reset_consumer", `{"consumer": "old", "table": "shop.orders"}`); err != nil {
		t.Fatal(err)
	}
	got, err = f.doGet(t, ctx, []byte(`{"table": "shop.orders", "consumer": "old", "start": "latest-full"}`))
	if err != nil || got.rows != 10 {
		t.Fatalf("after reset: %d rows, %v", got.rows, err)
	}
}

func TestConsumerProgress(t *testing.T) {
	f := start(t, 3, 2, 8)
	ctx := context.Background()
	s := f.snapshots

	// A new consumer starts by its start mode; an ack moves it.
	got, err := f.doGet(t, ctx, []byte(`{"table": "shop.orders", "consumer": "c1", "start": "latest"}`))
	if err != nil || got.rows != 0 {
		t.Fatalf("new consumer, latest: %d rows, %v", got.rows, err)
	}
	body, err := f.action(ctx, "ack", fmt.Sprintf(`{"consumer": "c1", "table": "shop.orders", "snapshot": "%d"}`, s[0]))
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Snapshot   int64 `json:"snapshot"`
		CommitSeq  int64 `json:"commit_seq"`
		LagCommits int64 `json:"lag_commits"`
		LagMs      int64 `json:"lag_ms"`
		AckedAtMs  int64 `json:"acked_at_ms"`
		Expired    bool  `json:"expired"`
	}
	if err := json.Unmarshal(body, &info); err != nil {
		t.Fatal(err)
	}
	if info.Snapshot != s[0] || info.CommitSeq != 1 || info.LagCommits != 2 || info.Expired || info.AckedAtMs == 0 {
		t.Fatalf("ack: %s", body)
	}
	// Consumer progress wins over start; explicit from_snapshot over progress.
	got, err = f.doGet(t, ctx, []byte(`{"table": "shop.orders", "consumer": "c1", "start": "latest"}`))
	if err != nil || got.rows != 4 || got.metas[0].Snapshot != s[1] {
		t.Fatalf("resume: %d rows, %v", got.rows, err)
	}
	got, err = f.doGet(t, ctx, []byte(ticket(`{"table": "shop.orders", "consumer": "c1", "from_snapshot": "%d"}`, s[1])))
	if err != nil || got.rows != 2 {
		t.Fatalf("from_snapshot over progress: %d rows, %v", got.rows, err)
	}

	// The typed RPCs see the same progress.
	p, err := f.control.GetConsumerProgress(ctx, &sluicev1.ConsumerProgressRequest{Consumer: "c1", Table: tableName})
	if err != nil || p.Snapshot != s[0] || p.LagCommits != 2 {
		t.Fatalf("typed progress: %v %v", p, err)
	}
	if _, err := f.control.Ack(ctx, &sluicev1.AckRequest{Consumer: "c2", Table: tableName, Snapshot: s[2]}); err != nil {
		t.Fatal(err)
	}
	body, err = f.action(ctx, "list_consumers", `{"table": "shop.orders"}`)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Consumers []struct {
			Consumer   string `json:"consumer"`
			LagCommits int64  `json:"lag_commits"`
		} `json:"consumers"`
	}
	if err := json.Unmarshal(body, &list); err != nil || len(list.Consumers) != 2 ||
		list.Consumers[0].Consumer != "c1" || list.Consumers[1].LagCommits != 0 {
		t.Fatalf("list_consumers: %s %v", body, err)
	}

	// Errors.
	_, err = f.action(ctx, "ack", `{"consumer": "c1", "table": "shop.orders", "snapshot": 12345}`)
	checkStatus(t, err, codes.InvalidArgument, "not on the lineage")
	_, err = f.control.Ack(ctx, &sluicev1.AckRequest{Consumer: "c1", Table: tableName, Snapshot: 12345})
	checkStatus(t, err, codes.InvalidArgument, "not on the lineage")
	_, err = f.action(ctx, "ack", `{"consumer": "c1", "table": "shop.orders"}`)
	checkStatus(t, err, codes.InvalidArgument, "snapshot is required")
	_, err = f.action(ctx, "ack", `{"consumer": "c1", "table": "shop.nope", "snapshot": 1}`)
	checkStatus(t, err, codes.NotFound, "shop.nope")
	_, err = f.action(ctx, "consumer_progress", `{"consumer": "nobody", "table": "shop.orders"}`)
	checkStatus(t, err, codes.NotFound, "nobody")
	_, err = f.action(ctx, "ack", `{"consumer": "", "table": "shop.orders", "snapshot": 1}`)
	checkStatus(t, err, codes.InvalidArgument, "consumer is required")

	// Reset.
	r, err := f.control.ResetConsumer(ctx, &sluicev1.ResetConsumerRequest{Consumer: "c1", Table: tableName})
	if err != nil || !r.Removed {
		t.Fatalf("reset: %v %v", r, err)
	}
	body, err = f.action(ctx, "reset_consumer", `{"consumer": "c1", "table": "shop.orders"}`)
	if err != nil || string(body) != `{"consumer":"c1","table":"shop.orders","removed":false}` {
		t.Fatalf("second reset: %s %v", body, err)
	}
}

func TestWatchCommits(t *testing.T) {
	checkLeaks(t)
	f := start(t, 1, 1, 8)
	ctx, cancel := context.WithCancel(context.Background())
	watch, err := f.control.WatchCommits(ctx, &sluicev1.WatchCommitsRequest{Table: tableName})
	if err != nil {
		t.Fatal(err)
	}
	first, err := watch.Recv()
	if err != nil || first.CommitSeq != 1 || first.GetSnapshot() != f.snapshots[0] {
		t.Fatalf("first: %v %v", first, err)
	}
	// The same signal as a Flight DoAction stream.
	actx, acancel := context.WithCancel(context.Background())
	results, err := f.client.DoAction(actx, &flight.Action{Type: "watch_commits", Body: []byte(`{"table": "shop.orders"}`)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := results.Recv()
	if err != nil || string(r.Body) != fmt.Sprintf(`{"table":"shop.orders","commit_seq":1,"snapshot":%d,"timestamp_ms":%d}`,
		f.snapshots[0], first.TimestampMs) {
		t.Fatalf("action first: %s %v", r.GetBody(), err)
	}
	f.commit(t, 1, 1, 8)
	f.commit(t, 2, 1, 8)
	for i, want := range []int64{2, 3} {
		got, err := watch.Recv()
		if err != nil || got.CommitSeq != want || got.GetSnapshot() != f.snapshots[i+1] {
			t.Fatalf("commit %d: %v %v", want, got, err)
		}
		r, err := results.Recv()
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			CommitSeq int64 `json:"commit_seq"`
		}
		if err := json.Unmarshal(r.Body, &st); err != nil || st.CommitSeq != want {
			t.Fatalf("action commit %d: %s", want, r.Body)
		}
	}
	cancel()
	acancel()
	if _, err := watch.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("after cancel: %v", err)
	}
	for {
		if _, err := results.Recv(); err != nil {
			break
		}
	}
	nope, err := f.control.WatchCommits(context.Background(), &sluicev1.WatchCommitsRequest{Table: "shop.nope"})
	if err == nil {
		_, err = nope.Recv()
	}
	checkStatus(t, err, codes.NotFound, "shop.nope")
}
