package feed_test

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/internal/testkit/histgen"
)

// TestState checks ReadState against the oracle: the live rows of every
// snapshot of random histories, as a plain iceberg-go scan reads them.
func TestState(t *testing.T) {
	for _, cfg := range []histgen.Config{
		{FormatVersion: 2, DeleteMode: table.WriteModeMergeOnRead, Partitioned: true, Commits: 10},
		{FormatVersion: 3, DeleteMode: table.WriteModeMergeOnRead, Commits: 10},
		{FormatVersion: 2, DeleteMode: table.WriteModeCopyOnWrite, Commits: 10},
	} {
		t.Run(cfg.String(), func(t *testing.T) {
			h := generate(t, 7, cfg)
			mem := memory.NewCheckedAllocator(arrowpool.Shared())
			defer mem.AssertSize(t, 0)
			eng := feed.New(h.Catalog, feed.Options{Allocator: mem, MaxBatchRows: 16})
			ctx := context.Background()
			for _, id := range h.Snapshots {
				sp, err := eng.PlanState(ctx, feed.Request{Table: histgen.Table, ToSnapshot: &id})
				if err != nil {
					t.Fatal(err)
				}
				want := scanState(t, h.Table, &id, h.Table.Schema())
				got := state{}
				batches, completes := 0, 0
				for b, err := range eng.ReadState(ctx, sp) {
					if err != nil {
						t.Fatal(err)
					}
					batches++
					if b.SnapshotComplete {
						completes++
					}
					if b.Snapshot.ID != id {
						t.Fatalf("a state batch of snapshot %d, want %d", b.Snapshot.ID, id)
					}
					ops := b.Record.Column(0).(*array.String)
					after := b.Record.Column(2).(*array.Struct)
					for i := range int(b.Record.NumRows()) {
						if ops.Value(i) != feed.OpInsert {
							t.Fatalf("a state row with op %s", ops.Value(i))
						}
						got[imageRow(after, i)]++
					}
					b.Record.Release()
				}
				if completes != 1 {
					t.Fatalf("%d batches, %d complete: want the last one only", batches, completes)
				}
				if d := diffStates(got, want); d != "" {
					t.Fatalf("state of snapshot %d differs from the scan: %s\nhistory %v", id, d, h.Log)
				}
			}
			// Projection and filter.
			last := h.Snapshots[len(h.Snapshots)-1]
			sp, err := eng.PlanState(ctx, feed.Request{Table: histgen.Table, Columns: []string{"id"}, Filter: "val < 500"})
			if err != nil {
				t.Fatal(err)
			}
			if sp.Snapshot.ID != last || len(sp.Columns) != 1 {
				t.Fatalf("plan: %+v", sp)
			}
			for b, err := range eng.ReadState(ctx, sp) {
				if err != nil {
					t.Fatal(err)
				}
				b.Record.Release()
			}
		})
	}
}

func TestStateErrors(t *testing.T) {
	h := generate(t, 1, histgen.Config{FormatVersion: 2, DeleteMode: table.WriteModeCopyOnWrite, Commits: 2})
	eng := feed.New(h.Catalog, feed.Options{})
	ctx := context.Background()
	from := h.Snapshots[0]
	if _, err := eng.PlanState(ctx, feed.Request{Table: histgen.Table, FromSnapshot: &from}); !errors.Is(err, feed.ErrInvalidRequest) {
		t.Fatalf("a window: %v", err)
	}
	bad := int64(42)
	if _, err := eng.PlanState(ctx, feed.Request{Table: histgen.Table, ToSnapshot: &bad}); !errors.Is(err, feed.ErrSnapshotNotFound) {
		t.Fatalf("unknown snapshot: %v", err)
	}
	if _, err := eng.PlanState(ctx, feed.Request{Table: histgen.Table, Columns: []string{"nope"}}); !errors.Is(err, feed.ErrUnknownColumn) {
		t.Fatalf("unknown column: %v", err)
	}
}
