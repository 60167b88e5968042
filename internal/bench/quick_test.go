package bench

import (
	"context"
	"testing"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/tablewrite"
)

// The workloads are what the report says, and the full re-read baseline
// finds the same changes as the feed.
func TestWorkloads(t *testing.T) {
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	ref, err := WriteReference(ctx, cat, "bench.ref", 8000)
	if err != nil {
		t.Fatal(err)
	}
	if len(ref.Appends) != 4 || len(ref.DataFiles) != 4 {
		t.Fatalf("%d appends, %d files", len(ref.Appends), len(ref.DataFiles))
	}
	n, err := RawDecode(ctx, ref.DataFiles, []string{"id", "amount"}, 2)
	if err != nil || n != 8000 {
		t.Fatalf("raw decode: %d rows, %v", n, err)
	}
	big, err := WriteBig(ctx, cat, "bench.big", 20000, 5000)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, big.Table)
	if err != nil {
		t.Fatal(err)
	}
	full, err := FullDiff(ctx, tbl, big.Base, big.End)
	if err != nil {
		t.Fatal(err)
	}
	eng := feed.New(cat, feed.Options{})
	p, err := eng.Plan(ctx, feed.Request{Table: big.Table, FromSnapshot: &big.Base, ToSnapshot: &big.End})
	if err != nil {
		t.Fatal(err)
	}
	var changes int64
	for b, err := range eng.Read(ctx, p) {
		if err != nil {
			t.Fatal(err)
		}
		changes += b.Record.NumRows()
		b.Record.Release()
	}
	if changes != full || full != 200 {
		t.Fatalf("the 1%% window: the feed has %d changes, the full diff %d, want 200", changes, full)
	}
}
