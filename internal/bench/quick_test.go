package bench

import (
	"context"
	"testing"
	"time"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/tablewrite"
)

func TestQuickThroughput(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ref, err := WriteReference(ctx, cat, "bench.ref", 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("write %v, files %d", time.Since(start), len(ref.DataFiles))
	for _, cols := range [][]string{nil, {"id", "amount"}} {
		start := time.Now()
		n, err := RawDecode(ctx, ref.DataFiles, cols, 2)
		if err != nil {
			t.Fatal(err)
		}
		d := time.Since(start)
		t.Logf("raw %v: %d rows in %v = %.2fM rows/s", cols, n, d, float64(n)/d.Seconds()/1e6)
	}
	eng := feed.New(cat, feed.Options{})
	lastAppend := ref.Appends[3]
	for _, req := range []feed.Request{{}, {Columns: []string{"id", "amount"}}, {ToSnapshot: &lastAppend}, {ToSnapshot: &lastAppend, Columns: []string{"id", "amount"}}, {FromSnapshot: &lastAppend}} {
		req.Table = "bench.ref"
		cols := req.Columns
		start = time.Now()
		p, err := eng.Plan(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		n := int64(0)
		for b, err := range eng.Read(ctx, p) {
			if err != nil {
				t.Fatal(err)
			}
			n += b.Record.NumRows()
			b.Record.Release()
		}
		d := time.Since(start)
		t.Logf("to %v from %v cols %v: %d rows in %v = %.2fM rows/s", req.ToSnapshot != nil, req.FromSnapshot != nil, cols, n, d, float64(n)/d.Seconds()/1e6)
		_ = cols
	}
}
