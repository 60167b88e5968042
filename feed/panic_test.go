package feed_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
	"github.com/sluicefeed/sluice/internal/testkit/faultio"
)

// TestPanicInAReadEndsThatReadOnly: a panic while reading a data file, in
// the engine's goroutines (those decoding data files included), ends that
// read with ErrInternal (a PanicError with its stack), and the next read of
// the same engine is served.
func TestPanicInAReadEndsThatReadOnly(t *testing.T) {
	ctx := context.Background()
	h := newHistory(t, 3, 4)
	// A copy-on-write delete: its snapshot reads through the engine's own
	// file readers, the appends through iceberg-go's scan.
	tbl, err := h.tbl.Delete(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err = tablewrite.Append(ctx, tbl, h.rows[0]); err != nil {
		t.Fatal(err)
	}
	armed := &atomic.Bool{}
	faulty := faultio.PanickingTable(tbl, armed)
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	eng := feed.New(fixedTable{tableName, faulty}, feed.Options{Allocator: mem})
	snaps := tbl.Metadata().Snapshots()
	for _, tc := range []struct {
		name     string
		from, to int64
	}{
		{"append (the engine's decoding goroutines)", snaps[0].SnapshotID, snaps[1].SnapshotID},
		{"rewrite (the engine's file readers)", snaps[2].SnapshotID, snaps[3].SnapshotID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := feed.Request{Table: tableName, FromSnapshot: &tc.from, ToSnapshot: &tc.to}
			armed.Store(true)
			var got error
			p, err := eng.Plan(ctx, req)
			if err == nil {
				for b, err := range eng.Read(ctx, p) {
					if err != nil {
						got = err
						break
					}
					b.Record.Release()
				}
			} else {
				got = err
			}
			var pe *feed.PanicError
			if !errors.Is(got, feed.ErrInternal) || !errors.As(got, &pe) || len(pe.Stack) == 0 {
				t.Fatalf("read with a panicking storage: err = %v, want a PanicError with its stack", got)
			}
			armed.Store(false)
			p, err = eng.Plan(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			rows := 0
			for b, err := range eng.Read(ctx, p) {
				if err != nil {
					t.Fatalf("the next read: %v", err)
				}
				rows += int(b.Record.NumRows())
				b.Record.Release()
			}
			if rows == 0 {
				t.Fatal("the next read returned no change")
			}
		})
	}
	mem.AssertSize(t, 0)
}
