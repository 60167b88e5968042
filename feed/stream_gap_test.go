package feed_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/sluicefeed/sluice/feed"
)

// gapEvents runs a stream to its end (or until stop), returning what it
// yielded and the gap events' descriptions.
func gapEvents(t *testing.T, eng *feed.Engine, req feed.StreamRequest, stop func(streamed) bool) (streamed, []feed.Gap) {
	t.Helper()
	var gaps []feed.Gap
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
			continue
		}
		if ev.Kind == feed.StreamGap {
			if ev.Gap == nil || ev.Batch.Record == nil || ev.Batch.Record.NumRows() != 0 || ev.Batch.SnapshotComplete {
				t.Fatalf("a gap event without its description or 0-row batch: %+v", ev)
			}
			gaps = append(gaps, *ev.Gap)
		}
		out.ids = append(out.ids, rowIDs(ev.Batch)...)
		ev.Batch.Record.Release()
		if stop != nil && stop(out) {
			break
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("the stream did not end in time: %v", out.err)
	}
	return out, gaps
}

// rowIDs are the after-images' ids of a batch.
func rowIDs(b feed.Batch) []int64 {
	var got []int64
	after := b.Record.Column(2).(*array.Struct)
	for i := range int(b.Record.NumRows()) {
		got = append(got, after.Field(0).(*array.Int64).Value(i))
	}
	return got
}

// TestStreamGapResync: a stream whose consumer's snapshot expired yields
// the gap event (what was lost, the earliest start, the current snapshot),
// then with on_gap resync the current full state and goes on from it;
// without on_gap it ends with ErrResyncRequired after the event; a bad
// on_gap is ErrInvalidRequest.
func TestStreamGapResync(t *testing.T) {
	h := newHistory(t, 5, 1)
	s := h.snapshots
	tbl := h.expireOldest(t, 2) // keeps 4 and 5; 3 is the expired parent of 4
	eng := feed.New(fixedTable{tableName, tbl}, feed.Options{})
	resume := &feed.Resume{Consumer: "lagging", Snapshot: s[0], CommitSeq: 1}
	want := feed.Gap{Lost: s[0], Earliest: s[2], Current: s[4]}

	got, gaps := gapEvents(t, eng, feed.StreamRequest{Request: feed.Request{Table: tableName}, Resume: resume,
		OnGap: feed.OnGapResync}, nil)
	slices.Sort(got.ids)
	if got.err != nil || kindsOf(got) != "[started gap state]" || !slices.Equal(got.ids, ids(1, 5)) {
		t.Fatalf("on_gap resync: %+v, want the gap event, then the full state of ids 1-5", got)
	}
	if len(gaps) != 1 || gaps[0].Lost != want.Lost || gaps[0].Earliest != want.Earliest ||
		gaps[0].Current != want.Current || !errors.Is(gaps[0].Reason, feed.ErrResyncRequired) {
		t.Fatalf("gap %+v, want %+v with a resync-required reason", gaps, want)
	}
	if last := got.cursors[len(got.cursors)-1]; last != s[4] {
		t.Fatalf("the cursor after the resync is %d, want the current snapshot %d", last, s[4])
	}

	got, gaps = gapEvents(t, eng, feed.StreamRequest{Request: feed.Request{Table: tableName}, Resume: resume}, nil)
	if !errors.Is(got.err, feed.ErrResyncRequired) || fmt.Sprint(got.kinds) != "[started gap]" || len(gaps) != 1 ||
		gaps[0].Lost != s[0] {
		t.Fatalf("without on_gap: %+v %+v, want the gap event then ErrResyncRequired", got, gaps)
	}

	// An explicit from_snapshot that expired is a gap as well.
	got, _ = gapEvents(t, eng, feed.StreamRequest{Request: feed.Request{Table: tableName, FromSnapshot: &s[1]},
		OnGap: feed.OnGapResync, Follow: false}, nil)
	if got.err != nil || kindsOf(got) != "[started gap state]" {
		t.Fatalf("from an expired from_snapshot with on_gap resync: %+v", got)
	}

	// A start that is readable has no gap.
	got, gaps = gapEvents(t, eng, feed.StreamRequest{Request: feed.Request{Table: tableName, FromSnapshot: &s[2]},
		OnGap: feed.OnGapResync}, nil)
	if got.err != nil || len(gaps) != 0 || !slices.Equal(got.ids, ids(4, 5)) {
		t.Fatalf("from the expired parent (a start): %+v %+v", got, gaps)
	}

	err := feed.StreamRequest{Request: feed.Request{Table: tableName}, OnGap: "skip"}.Validate()
	if !errors.Is(err, feed.ErrInvalidRequest) {
		t.Fatalf("on_gap skip: %v, want ErrInvalidRequest", err)
	}
}

// TestStreamGapMidStream: a follow stream whose cursor leaves the lineage
// under it, and expires, yields the gap event, then with on_gap resync the new current
// state, and follows on.
func TestStreamGapMidStream(t *testing.T) {
	h := newHistory(t, 3, 1)
	tables := &swappable{}
	tables.tbl.Store(h.tbl)
	eng := feed.New(tables, feed.Options{})
	var rolled bool
	got, gaps := gapEvents(t, eng, feed.StreamRequest{Request: feed.Request{Table: tableName,
		FromSnapshot: &h.snapshots[0]}, Follow: true, Options: fastFollow, OnGap: feed.OnGapResync},
		func(s streamed) bool {
			last := s.kinds[len(s.kinds)-1]
			if last == feed.StreamHeartbeat && !rolled {
				// Roll the table back to its first snapshot, commit
				// again and expire the rest: the stream's cursor is off
				// the new lineage, and gone.
				tx := h.tbl.NewTransaction()
				if err := tx.RollbackToSnapshot(h.snapshots[0]); err != nil {
					t.Skipf("rollback: %v", err)
				}
				tbl, err := tx.Commit(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				h.tbl = tbl
				h.appendRows(t, []map[string]any{{"id": 70}})
				// Expire the rolled-back snapshots: one that stayed
				// readable would be coalesced (stream_coalesce_test.go).
				h.tbl = h.expireOldest(t, 1)
				tables.tbl.Store(h.tbl)
				rolled = true
			}
			// Stop at the first heartbeat after the resync's state.
			return rolled && last == feed.StreamHeartbeat && slices.Contains(s.kinds, feed.StreamState)
		})
	if got.err != nil {
		t.Fatalf("the stream ended with %v", got.err)
	}
	i := slices.Index(got.kinds, feed.StreamGap)
	if i < 0 || len(gaps) != 1 || got.kinds[i+1] != feed.StreamState {
		t.Fatalf("events %v, want a gap then the state", got.kinds)
	}
	// Before: ids 2 and 3 (the changes after the first snapshot); after the
	// gap: the full state of the new lineage (1, then 70).
	slices.Sort(got.ids[2:])
	if fmt.Sprint(got.ids) != "[2 3 1 70]" {
		t.Fatalf("ids %v, want [2 3] then the state [1 70]", got.ids)
	}
	if gaps[0].Lost != h.snapshots[2] || gaps[0].Current != h.snapshots[len(h.snapshots)-1] {
		t.Fatalf("gap %+v, want lost %d, current %d", gaps[0], h.snapshots[2], h.snapshots[len(h.snapshots)-1])
	}
}

// kindsOf are the kinds of the events of a stream, each run of one kind
// once.
func kindsOf(s streamed) string {
	return fmt.Sprint(slices.Compact(slices.Clone(s.kinds)))
}
