package feed_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// coalescedHistory writes appends of ids 1-2, 3-4 and 5-6, tags the first
// snapshot (as a protected consumer's tag does), then an upsert of 1 and a
// delete of 3 by equality deletes, and an append of 7; then expires every
// snapshot but the last, as expire_snapshots(older_than=now,
// retain_last=1) does. The tagged snapshot stays readable, its successors
// do not.
func coalescedHistory(t *testing.T) (h *history, tagged, expired, head int64) {
	t.Helper()
	ctx := context.Background()
	h = newHistory(t, 3, 2)
	tagged, expired = h.snapshots[0], h.snapshots[1]
	if _, _, err := h.cat.Iceberg().CommitTable(ctx, h.tbl.Identifier(), nil,
		[]table.Update{table.NewSetSnapshotRefUpdate("sluice-consumer-c", tagged, table.TagRef, -1, -1, -1)}); err != nil {
		t.Fatal(err)
	}
	tbl, err := h.cat.Iceberg().LoadTable(ctx, h.tbl.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	keys := []tablewrite.Row{{"id": 1}, {"id": 3}}
	upsert := []tablewrite.Row{{"id": 1, "country": "XX", "amount": 99.5, "created": "2024-02-01T10:00:00Z"}}
	if tbl, err = tablewrite.EqualityDelete(ctx, tbl, "id", keys, upsert); err != nil {
		t.Fatal(err)
	}
	h.tbl = tbl
	h.appendRows(t, []tablewrite.Row{{"id": 7, "country": "SE", "amount": 1.0, "created": "2024-02-02T10:00:00Z"}})
	head = h.snapshots[len(h.snapshots)-1]
	tx := h.tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithRetainLast(1), table.WithOlderThan(0)); err != nil {
		t.Fatal(err)
	}
	if h.tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var kept []int64
	for _, s := range h.tbl.Metadata().Snapshots() {
		kept = append(kept, s.SnapshotID)
	}
	slices.Sort(kept)
	want := []int64{tagged, head}
	slices.Sort(want)
	if !slices.Equal(kept, want) {
		t.Fatalf("expiry kept %v, want the tagged snapshot and the head %v", kept, want)
	}
	return h, tagged, expired, head
}

// TestStreamCoalescesExpiredCommits: a consumer whose acknowledged
// snapshot is still readable (tagged) though every commit after it
// expired resumes exactly: one window of the net changes from its state to
// the current state, attributed to the current snapshot and marked
// coalesced, paired by identity; in memory and spilling, renderable and
// folded. A consumer whose own snapshot expired still gets the gap event.
func TestStreamCoalescesExpiredCommits(t *testing.T) {
	h, tagged, expired, head := coalescedHistory(t)
	for _, tc := range []struct {
		name   string
		budget int64
		fold   bool
		want   string
	}{
		{"in_memory", 0, false, "[insert 4 insert 5 insert 6 insert 7 update_after 1 update_before 1]"},
		{"spilling", 1, false, "[insert 4 insert 5 insert 6 insert 7 update_after 1 update_before 1]"},
		{"folded", 1, true, "[insert 4 insert 5 insert 6 insert 7 update 1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(arrowpool.Shared())
			defer mem.AssertSize(t, 0)
			eng := feed.New(fixedTable{tableName, h.tbl}, feed.Options{Allocator: mem, MaxBatchRows: 2,
				MemoryBudget: tc.budget, SpillDir: t.TempDir()})
			defer func() {
				if err := eng.Close(); err != nil {
					t.Error(err)
				}
			}()
			req := feed.StreamRequest{Request: feed.Request{Table: tableName, FoldUpdates: tc.fold},
				Resume: &feed.Resume{Consumer: "c", Snapshot: tagged, CommitSeq: 1}}
			ops, last, err := coalescedOps(t, eng, req, tagged, head)
			if err != nil {
				t.Fatalf("the stream ended with %v", err)
			}
			if fmt.Sprint(ops) != tc.want {
				t.Fatalf("changes %v, want %s", ops, tc.want)
			}
			if last != head {
				t.Fatalf("the stream ends at cursor %d, want the head %d", last, head)
			}
		})
	}

	// A plain window from the tagged snapshot cannot be read commit by
	// commit: resync required, saying that a stream coalesces.
	eng := feed.New(fixedTable{tableName, h.tbl}, feed.Options{})
	if _, err := eng.Plan(context.Background(), feed.Request{Table: tableName, FromSnapshot: &tagged}); !errors.Is(err,
		feed.ErrResyncRequired) || !strings.Contains(err.Error(), "coalesced window") {
		t.Fatalf("a window from the tagged snapshot: %v, want ErrResyncRequired naming the coalesced stream", err)
	}

	// The consumer's own snapshot expired: the gap, as before.
	got, gaps := gapEvents(t, eng, feed.StreamRequest{Request: feed.Request{Table: tableName},
		Resume: &feed.Resume{Consumer: "d", Snapshot: expired, CommitSeq: 2}}, nil)
	if !errors.Is(got.err, feed.ErrResyncRequired) || len(gaps) != 1 || gaps[0].Lost != expired {
		t.Fatalf("a consumer whose snapshot expired: %+v %+v, want the gap event then ErrResyncRequired", got, gaps)
	}
}

// TestStreamCoalescesRolledBackSnapshot: a consumer whose acknowledged
// snapshot a rollback left off the lineage, still readable, resumes with
// the net changes from its state to the new head's.
func TestStreamCoalescesRolledBackSnapshot(t *testing.T) {
	h := newHistory(t, 3, 1) // ids 1, 2, 3
	s := h.snapshots
	tx := h.tbl.NewTransaction()
	if err := tx.RollbackToSnapshot(s[0]); err != nil {
		t.Skipf("rollback: %v", err)
	}
	tbl, err := tx.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h.tbl = tbl
	h.appendRows(t, []tablewrite.Row{{"id": 70}})
	head := h.snapshots[len(h.snapshots)-1]
	eng := feed.New(fixedTable{tableName, h.tbl}, feed.Options{})
	ops, last, err := coalescedOps(t, eng, feed.StreamRequest{Request: feed.Request{Table: tableName},
		Resume: &feed.Resume{Consumer: "c", Snapshot: s[2], CommitSeq: 3}}, s[2], head)
	if err != nil || fmt.Sprint(ops) != "[delete 2 delete 3 insert 70]" || last != head {
		t.Fatalf("changes %v, cursor %d, err %v; want [delete 2 delete 3 insert 70] at %d", ops, last, err, head)
	}
}

// coalescedOps runs a stream to its end and returns its changes as sorted
// "op id" strings (the image's id), checking that every change event is
// the coalesced window from..to and the cursor of its last event.
func coalescedOps(t *testing.T, eng *feed.Engine, req feed.StreamRequest, from, to int64) ([]string, int64, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var ops []string
	var last int64
	complete := false
	for ev, err := range eng.Stream(ctx, req) {
		if err != nil {
			return ops, last, err
		}
		last = ev.Cursor.ID
		if ev.Kind == feed.StreamStarted {
			continue
		}
		rec := ev.Batch.Record
		if ev.Kind != feed.StreamChanges || ev.Coalesced == nil || ev.Coalesced.From != from ||
			ev.Coalesced.To != to || ev.Batch.Snapshot.ID != to {
			rec.Release()
			t.Fatalf("event %s of snapshot %d (coalesced %+v), want the coalesced changes %d..%d", ev.Kind,
				ev.Batch.Snapshot.ID, ev.Coalesced, from, to)
		}
		if !ev.Batch.SnapshotComplete && ev.Cursor.ID != from {
			t.Errorf("an incomplete batch's cursor is %d, want %d", ev.Cursor.ID, from)
		}
		complete = ev.Batch.SnapshotComplete
		op := rec.Column(0).(*array.String)
		before, after := rec.Column(1).(*array.Struct), rec.Column(2).(*array.Struct)
		for i := range int(rec.NumRows()) {
			img := after
			if after.IsNull(i) {
				img = before
			}
			ops = append(ops, fmt.Sprintf("%s %d", op.Value(i), img.Field(0).(*array.Int64).Value(i)))
		}
		rec.Release()
	}
	if !complete {
		t.Errorf("the coalesced window ended without a complete batch")
	}
	slices.Sort(ops)
	return ops, last, nil
}

// TestStreamCoalescesExpiredCommitsOnBranch: a consumer of a branch (the
// write-audit-publish flow's audit branch) whose acknowledged snapshot a
// tag keeps (sluice-consumer-<id>#<ref>, as protection writes it) resumes
// on the branch with one coalesced window when the branch's commits after
// it expired; one whose own snapshot expired gets the gap event.
func TestStreamCoalescesExpiredCommitsOnBranch(t *testing.T) {
	ctx := context.Background()
	h := newHistory(t, 5, 1) // ids 1 to 5
	s := h.snapshots
	// The branch audit holds the five commits; main is set back to the
	// first, as before a publish; the consumer's tag keeps the second.
	if _, _, err := h.cat.Iceberg().CommitTable(ctx, h.tbl.Identifier(), nil, []table.Update{
		table.NewSetSnapshotRefUpdate("audit", s[4], table.BranchRef, -1, -1, -1),
		table.NewSetSnapshotRefUpdate(table.MainBranch, s[0], table.BranchRef, -1, -1, -1),
		table.NewSetSnapshotRefUpdate("sluice-consumer-c#audit", s[1], table.TagRef, -1, -1, -1),
	}); err != nil {
		t.Fatal(err)
	}
	tbl, err := h.cat.Iceberg().LoadTable(ctx, h.tbl.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithRetainLast(1), table.WithOlderThan(0)); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var kept []int64
	for _, sn := range tbl.Metadata().Snapshots() {
		kept = append(kept, sn.SnapshotID)
	}
	slices.Sort(kept)
	want := []int64{s[0], s[1], s[4]}
	slices.Sort(want)
	if !slices.Equal(kept, want) {
		t.Fatalf("expiry kept %v, want main's head, the tagged snapshot and the branch's head %v", kept, want)
	}
	eng := feed.New(fixedTable{tableName, tbl}, feed.Options{MaxBatchRows: 1})
	ops, last, err := coalescedOps(t, eng, feed.StreamRequest{Request: feed.Request{Table: tableName, Ref: "audit"},
		Resume: &feed.Resume{Consumer: "c", Snapshot: s[1], CommitSeq: 2}}, s[1], s[4])
	if err != nil || fmt.Sprint(ops) != "[insert 3 insert 4 insert 5]" || last != s[4] {
		t.Fatalf("on the branch: changes %v, cursor %d, err %v; want [insert 3 insert 4 insert 5] at %d", ops, last,
			err, s[4])
	}
	// A consumer whose snapshot expired, as did the commit after it: the
	// gap, on the branch's lineage (its head is the current snapshot).
	got, gaps := gapEvents(t, eng, feed.StreamRequest{Request: feed.Request{Table: tableName, Ref: "audit"},
		Resume: &feed.Resume{Consumer: "d", Snapshot: s[2], CommitSeq: 3}}, nil)
	if !errors.Is(got.err, feed.ErrResyncRequired) || len(gaps) != 1 || gaps[0].Lost != s[2] ||
		gaps[0].Current != s[4] {
		t.Fatalf("a branch consumer whose snapshot expired: %+v %+v, want the gap event then ErrResyncRequired", got,
			gaps)
	}
	// With on_gap resync, the full state is the branch's head's, not main's.
	got, _ = gapEvents(t, eng, feed.StreamRequest{Request: feed.Request{Table: tableName, Ref: "audit"},
		Resume: &feed.Resume{Consumer: "d", Snapshot: s[2], CommitSeq: 3}, OnGap: feed.OnGapResync}, nil)
	slices.Sort(got.ids)
	if got.err != nil || fmt.Sprint(got.ids) != "[1 2 3 4 5]" {
		t.Fatalf("a branch consumer's resync: ids %v, err %v; want the branch head's rows [1 2 3 4 5]", got.ids, got.err)
	}
}
