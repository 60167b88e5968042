package feed_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/feed"
	icebergformat "github.com/sluicefeed/sluice/format/iceberg"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
)

// fastFollow are quick polls and heartbeats for tests.
var fastFollow = feed.FollowOptions{PollInterval: time.Millisecond, HeartbeatInterval: 10 * time.Millisecond,
	MaxBackoff: 20 * time.Millisecond}

// streamed is what a stream yielded, in order.
type streamed struct {
	kinds   []feed.StreamEventKind
	ids     []int64 // the ids of the rows, in order
	cursors []int64 // the cursor after each event
	start   string
	err     error
}

// collect runs a stream until it ends or until stop says so after an event
// (it then cancels the stream), releasing every batch.
func collect(t *testing.T, eng *feed.Engine, req feed.StreamRequest, stop func(streamed) bool) streamed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out streamed
	for ev, err := range eng.Stream(ctx, req) {
		if err != nil {
			out.err = err
			break
		}
		out.kinds = append(out.kinds, ev.Kind)
		out.cursors = append(out.cursors, ev.Cursor.ID)
		if ev.Kind == feed.StreamStarted {
			out.start = ev.Start
			if ev.Batch.Record != nil || ev.Schema == nil {
				t.Fatalf("started with a batch or without a schema: %+v", ev)
			}
			continue
		}
		rec := ev.Batch.Record
		if !rec.Schema().Equal(ev.Schema) {
			t.Fatalf("a %s batch of schema %s in a stream of %s", ev.Kind, rec.Schema(), ev.Schema)
		}
		after := rec.Column(2).(*array.Struct)
		for i := range int(rec.NumRows()) {
			out.ids = append(out.ids, after.Field(0).(*array.Int64).Value(i))
		}
		rec.Release()
		if stop != nil && stop(out) {
			break
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("the stream did not end in time: %v", out.err)
	}
	return out
}

func ids(lo, hi int) []int64 {
	var out []int64
	for i := lo; i <= hi; i++ {
		out = append(out, int64(i))
	}
	return out
}

func TestStreamStartModes(t *testing.T) {
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	h := newHistory(t, 3, 2) // ids 1-2, 3-4, 5-6
	eng := feed.New(h.cat, feed.Options{Allocator: mem})
	s := h.snapshots
	ts1 := h.tbl.SnapshotByID(s[1]).TimestampMs
	late := h.tbl.CurrentSnapshot().TimestampMs + 1
	for _, tt := range []struct {
		name    string
		req     feed.StreamRequest
		want    []int64
		kinds   string
		start   string
		resume  int64 // the last cursor
		started int64 // the cursor of StreamStarted
	}{
		{"latest-full (default)", feed.StreamRequest{}, ids(1, 6), "started state", "start latest-full", s[2], feed.NoSnapshot},
		{"latest", feed.StreamRequest{Start: feed.StartLatest}, nil, "started", "start latest", s[2], s[2]},
		{"from-snapshot", feed.StreamRequest{Request: feed.Request{FromSnapshot: &s[0]}}, ids(3, 6),
			"started changes", "start from-snapshot", s[2], s[0]},
		{"from-snapshot-full", feed.StreamRequest{Start: feed.StartFromSnapshotFull, Request: feed.Request{FromSnapshot: &s[1]}},
			ids(1, 6), "started state changes", "start from-snapshot-full", s[2], feed.NoSnapshot},
		{"from-timestamp", feed.StreamRequest{Request: feed.Request{FromTimestampMs: &ts1}}, ids(3, 6),
			"started changes", "start from-timestamp", s[2], s[0]},
		{"from-timestamp after every snapshot", feed.StreamRequest{Request: feed.Request{FromTimestampMs: &late}}, nil,
			"started", "start from-timestamp", s[2], s[2]},
		{"resume a consumer", feed.StreamRequest{Start: feed.StartLatest, Resume: &feed.Resume{Consumer: "c", Snapshot: s[1]}},
			ids(5, 6), "started changes", "consumer progress", s[2], s[1]},
		{"from_snapshot over progress", feed.StreamRequest{Request: feed.Request{FromSnapshot: &s[0]},
			Resume: &feed.Resume{Consumer: "c", Snapshot: s[1]}}, ids(3, 6), "started changes", "start from-snapshot", s[2], s[0]},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Table = tableName
			got := collect(t, eng, tt.req, nil)
			if got.err != nil {
				t.Fatal(got.err)
			}
			if tt.start != got.start {
				t.Errorf("started by %q, want %q", got.start, tt.start)
			}
			kinds := fmt.Sprint(slices.Compact(got.kinds))
			if kinds != "["+tt.kinds+"]" {
				t.Errorf("events %s, want [%s]", kinds, tt.kinds)
			}
			slices.Sort(got.ids)
			if fmt.Sprint(got.ids) != fmt.Sprint(tt.want) {
				t.Errorf("rows %v, want %v", got.ids, tt.want)
			}
			if got.cursors[0] != tt.started || got.cursors[len(got.cursors)-1] != tt.resume {
				t.Errorf("cursors %v: want %d first and %d last", got.cursors, tt.started, tt.resume)
			}
		})
	}
}

func TestStreamRequestValidation(t *testing.T) {
	one := int64(1)
	for _, tt := range []struct {
		req  feed.StreamRequest
		want string
	}{
		{feed.StreamRequest{Request: feed.Request{ToSnapshot: &one}}, "no end"},
		{feed.StreamRequest{Request: feed.Request{NetChanges: true}}, "net_changes"},
		{feed.StreamRequest{Request: feed.Request{FromSnapshot: &one, FromTimestampMs: &one}}, "not both"},
		{feed.StreamRequest{Start: "earliest"}, `start "earliest": want latest-full, latest`},
		{feed.StreamRequest{Start: strings.Repeat("x", 100000)}, `…(100000 bytes)`},
		{feed.StreamRequest{Start: feed.StartFromSnapshot}, "needs from_snapshot"},
		{feed.StreamRequest{Start: feed.StartFromTimestamp}, "needs from_timestamp_ms"},
		{feed.StreamRequest{Start: feed.StartLatest, Request: feed.Request{FromSnapshot: &one}}, "from_snapshot goes with"},
		{feed.StreamRequest{Start: feed.StartLatest, Request: feed.Request{FromTimestampMs: &one}}, "from_timestamp_ms goes with"},
		{feed.StreamRequest{Request: feed.Request{Filter: "id >"}}, "position"},
		{feed.StreamRequest{Request: feed.Request{Table: " "}}, "table is required"},
	} {
		if tt.req.Table == "" {
			tt.req.Table = tableName
		}
		err := tt.req.Validate()
		if !errors.Is(err, feed.ErrInvalidRequest) && !errors.Is(err, feed.ErrInvalidFilter) {
			t.Errorf("%+v: err %v, want an invalid request", tt.req, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) || len(err.Error()) > 500 {
			t.Errorf("err %q, want it short and containing %q", err, tt.want)
		}
	}
}

// TestStreamFollows follows a table: heartbeats at the cursor while it is
// quiet, each new commit once it lands, and the cursor after each.
func TestStreamFollows(t *testing.T) {
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	h := newHistory(t, 1, 2)
	eng := feed.New(h.cat, feed.Options{Allocator: mem})
	var committed atomic.Bool
	got := collect(t, eng, feed.StreamRequest{Request: feed.Request{Table: tableName}, Follow: true,
		Start: feed.StartLatest, Options: fastFollow}, func(s streamed) bool {
		last := s.kinds[len(s.kinds)-1]
		if last == feed.StreamHeartbeat && !committed.Load() {
			if c := s.cursors[len(s.cursors)-1]; c != h.snapshots[0] {
				t.Fatalf("a heartbeat at %d, want the current snapshot %d", c, h.snapshots[0])
			}
			h.appendRows(t, h.rows[0][:1])
			committed.Store(true)
		}
		return len(s.ids) == 1 && last == feed.StreamHeartbeat
	})
	if got.err != nil || fmt.Sprint(got.ids) != "[1]" || got.cursors[len(got.cursors)-1] != h.snapshots[1] {
		t.Fatalf("follow: ids %v, cursors %v, err %v; want the new commit's row and the cursor at it", got.ids,
			got.cursors, got.err)
	}
}

func TestStreamEmptyTableWaits(t *testing.T) {
	h := newHistory(t, 0, 0)
	eng := feed.New(h.cat, feed.Options{})
	got := collect(t, eng, feed.StreamRequest{Request: feed.Request{Table: tableName}, Follow: true, Options: fastFollow},
		func(s streamed) bool {
			if len(h.snapshots) == 0 {
				h.appendRows(t, []map[string]any{{"id": 7}})
			}
			return len(s.ids) > 0
		})
	if got.err != nil || fmt.Sprint(got.ids) != "[7]" || got.cursors[1] != feed.NoSnapshot ||
		slices.Contains(got.kinds, feed.StreamState) {
		t.Fatalf("empty table: %+v; want a heartbeat at no snapshot, then the first commit as changes", got)
	}
	bounded := collect(t, eng, feed.StreamRequest{Request: feed.Request{Table: tableName}, Start: feed.StartLatest}, nil)
	if bounded.err != nil || fmt.Sprint(bounded.kinds) != "[started]" {
		t.Fatalf("a bounded stream that has nothing to send: %+v, want started only", bounded)
	}
}

func TestStreamExpiredStarts(t *testing.T) {
	h := newHistory(t, 5, 1)
	s := h.snapshots
	tbl := h.expireOldest(t, 2) // keeps 4 and 5; 3 is the expired parent of 4
	eng := feed.New(fixedTable{tableName, tbl}, feed.Options{})
	one := int64(1)
	for _, tt := range []struct {
		name string
		req  feed.StreamRequest
		want error
		msg  string
	}{
		{"expired snapshot", feed.StreamRequest{Request: feed.Request{FromSnapshot: &s[0]}}, feed.ErrResyncRequired,
			fmt.Sprintf("earliest snapshot a stream can start from is %d", s[2])},
		{"state of the expired parent", feed.StreamRequest{Start: feed.StartFromSnapshotFull, Request: feed.Request{FromSnapshot: &s[2]}},
			feed.ErrResyncRequired, "cannot be read"},
		{"expired progress", feed.StreamRequest{Resume: &feed.Resume{Consumer: "old", Snapshot: s[0], CommitSeq: 1}},
			feed.ErrResyncRequired, `consumer "old" acknowledged snapshot`},
		{"a time before the retained history", feed.StreamRequest{Request: feed.Request{FromTimestampMs: &one}},
			feed.ErrResyncRequired, "has expired"},
		{"unknown id", feed.StreamRequest{Request: feed.Request{FromSnapshot: &one}}, feed.ErrResyncRequired,
			"not among the retained snapshots"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Table = tableName
			got := collect(t, eng, tt.req, nil)
			if !errors.Is(got.err, tt.want) || !strings.Contains(got.err.Error(), tt.msg) {
				t.Fatalf("err %v, want %v saying %q", got.err, tt.want, tt.msg)
			}
			// The explicit gap event, then the error (OnGap unset).
			if fmt.Sprint(got.kinds) != "[started gap]" {
				t.Fatalf("events %v before the error, want [started gap]", got.kinds)
			}
		})
	}
	// The expired parent of the oldest retained snapshot is a start.
	got := collect(t, eng, feed.StreamRequest{Request: feed.Request{Table: tableName, FromSnapshot: &s[2]}}, nil)
	if got.err != nil || fmt.Sprint(got.ids) != "[4 5]" {
		t.Fatalf("from the expired parent: %+v", got)
	}
}

// TestStreamCursorLeavesLineage: a follow stream whose cursor expires
// while it waits ends with resync required, never a jump.
func TestStreamCursorLeavesLineage(t *testing.T) {
	h := newHistory(t, 3, 1)
	tables := &swappable{}
	tables.tbl.Store(h.tbl)
	eng := feed.New(tables, feed.Options{})
	got := collect(t, eng, feed.StreamRequest{Request: feed.Request{Table: tableName, FromSnapshot: &h.snapshots[0]},
		Follow: true, Options: fastFollow}, func(s streamed) bool {
		if s.kinds[len(s.kinds)-1] == feed.StreamHeartbeat && tables.tbl.Load() == h.tbl {
			// Roll the table back to its first snapshot, commit again and
			// expire the rest: the stream's cursor is off the new lineage,
			// and gone (one still readable is coalesced, see
			// stream_coalesce_test.go).
			tx := h.tbl.NewTransaction()
			if err := tx.RollbackToSnapshot(h.snapshots[0]); err != nil {
				t.Skipf("rollback: %v", err)
			}
			tbl, err := tx.Commit(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			h.tbl = tbl
			h.appendRows(t, h.rows[0])
			h.tbl = h.expireOldest(t, 1)
			tables.tbl.Store(h.tbl)
		}
		return false
	})
	if !errors.Is(got.err, feed.ErrResyncRequired) || !strings.Contains(got.err.Error(), "no longer on the lineage") {
		t.Fatalf("err %v, want resync required: the cursor left the lineage", got.err)
	}
}

// swappable serves one table, which a test may replace.
type swappable struct{ tbl atomic.Pointer[table.Table] }

func (s *swappable) LoadTable(context.Context, string) (*table.Table, error) {
	return s.tbl.Load(), nil
}

// Load serves the table as the engine reads an Iceberg table.
func (s *swappable) Load(ctx context.Context, name string) (feed.Table, error) {
	tbl, err := s.LoadTable(ctx, name)
	if err != nil {
		return nil, err
	}
	return icebergformat.NewTable(tbl, nil), nil
}

func (s *swappable) ListTables(context.Context) ([]string, error) { return []string{tableName}, nil }

// failing fails Load with a transient error while down is set.
type failing struct {
	feed.Tables
	down  atomic.Bool
	fails atomic.Int64
}

var errDown = errors.New("catalog down")

func (f *failing) Load(ctx context.Context, name string) (feed.Table, error) {
	if f.down.Load() {
		f.fails.Add(1)
		return nil, fmt.Errorf("%w: %w", feed.ErrStorageUnavailable, errDown)
	}
	return f.Tables.Load(ctx, name)
}

// TestStreamRetriesTransientErrors: a follow stream whose catalog fails
// keeps yielding heartbeats, retries with backoff, says so, and goes on
// once the catalog is back; a bounded stream fails at once.
func TestStreamRetriesTransientErrors(t *testing.T) {
	h := newHistory(t, 1, 1)
	tables := &failing{Tables: h.cat}
	eng := feed.New(tables, feed.Options{})
	var retries atomic.Int64
	heartbeats := 0
	got := collect(t, eng, feed.StreamRequest{Request: feed.Request{Table: tableName}, Follow: true, Start: feed.StartLatest,
		Options:  fastFollow,
		Retrying: func(err error, _ time.Duration) { retries.Add(1) }}, func(s streamed) bool {
		if s.kinds[len(s.kinds)-1] != feed.StreamHeartbeat {
			return len(s.ids) > 0
		}
		heartbeats++
		switch heartbeats {
		case 1:
			tables.down.Store(true)
		case 6:
			h.appendRows(t, h.rows[0])
			tables.down.Store(false)
		}
		return false
	})
	if got.err != nil || fmt.Sprint(got.ids) != "[1]" {
		t.Fatalf("after the outage: %+v, want the commit made meanwhile", got)
	}
	if n, f := retries.Load(), tables.fails.Load(); n == 0 || n != f || f > 40 {
		t.Fatalf("%d retries told of %d failed loads: want each told, with backoff", n, f)
	}
	tables.down.Store(true)
	bounded := collect(t, eng, feed.StreamRequest{Request: feed.Request{Table: tableName}}, nil)
	if !errors.Is(bounded.err, errDown) {
		t.Fatalf("a bounded stream with the catalog down: %v", bounded.err)
	}
}

func TestStreamSchemaChange(t *testing.T) {
	h := newHistory(t, 1, 1)
	eng := feed.New(h.cat, feed.Options{})
	got := collect(t, eng, feed.StreamRequest{Request: feed.Request{Table: tableName}, Follow: true, Options: fastFollow},
		func(s streamed) bool {
			if s.kinds[len(s.kinds)-1] == feed.StreamHeartbeat && len(h.snapshots) == 1 {
				tx := h.tbl.NewTransaction()
				if err := tx.UpdateSchema(true, false).RenameColumn([]string{"country"}, "land").Commit(); err != nil {
					t.Fatal(err)
				}
				tbl, err := tx.Commit(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				h.tbl = tbl
				h.appendRows(t, []map[string]any{{"id": 9}})
			}
			return false
		})
	want := fmt.Sprintf("open a new stream from snapshot %d", h.snapshots[0])
	if !errors.Is(got.err, feed.ErrSchemaChanged) || !strings.Contains(got.err.Error(), want) {
		t.Fatalf("err %v, want schema changed saying %q", got.err, want)
	}
}

func TestWatchCommits(t *testing.T) {
	h := newHistory(t, 1, 1)
	eng := feed.New(h.cat, feed.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var seqs []int64
	for st, err := range eng.WatchCommits(ctx, tableName, fastFollow, nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, st.CommitSeq)
		if *st.Snapshot != h.snapshots[len(seqs)-1] {
			t.Fatalf("position %d at snapshot %d, want %d", len(seqs), *st.Snapshot, h.snapshots[len(seqs)-1])
		}
		if len(seqs) == 1 {
			h.appendRows(t, h.rows[0])
			h.appendRows(t, h.rows[0])
		}
		if len(seqs) == 3 {
			break
		}
	}
	if fmt.Sprint(seqs) != "[1 2 3]" {
		t.Fatalf("commit_seq %v, want the current one then one per commit", seqs)
	}
	_, err := func() (feed.TableStatus, error) {
		for st, err := range eng.WatchCommits(ctx, "shop.nope", fastFollow, nil, nil) {
			return st, err
		}
		return feed.TableStatus{}, nil
	}()
	if err == nil {
		t.Fatal("watching an unknown table: no error")
	}
}
