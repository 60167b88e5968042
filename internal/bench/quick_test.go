package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/format/delta"
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

// The Delta workload is what the report says: appends of one file each,
// then one MERGE that rewrites one file, with a change data file of its
// changed rows when the feed is on; a second write reuses the tables. (The
// run itself checks that Sluice's feeds and delta-rs's agree.) It needs a
// Python with deltalake, numpy and pyarrow in SLUICE_PYTHON.
func TestDeltaWorkload(t *testing.T) {
	python := os.Getenv("SLUICE_PYTHON")
	if python == "" {
		t.Skip("SLUICE_PYTHON is not set")
	}
	ctx := context.Background()
	cfg := Config{Python: python}
	if _, err := deltalakeVersion(ctx, python); err != nil {
		t.Skip(err)
	}
	root := t.TempDir()
	p := NewDeltaParams(8000)
	wl, err := WriteDelta(ctx, cfg, root, p)
	if err != nil {
		t.Fatal(err)
	}
	if wl.Cached || wl.End != int64(p.Files) {
		t.Fatalf("first write: cached %v, window end %d, want written and %d", wl.Cached, wl.End, p.Files)
	}
	again, err := WriteDelta(ctx, cfg, root, p)
	if err != nil || !again.Cached || again.End != wl.End {
		t.Fatalf("second write: %+v, %v; want the tables reused", again, err)
	}
	for _, tc := range []struct {
		table string
		cdcs  int
	}{{DeltaTableCDF, 1}, {DeltaTableNoCDF, 0}} {
		log, err := delta.Open(ctx, os.DirFS(filepath.Join(root, tc.table)), tc.table)
		if err != nil {
			t.Fatal(err)
		}
		vs, err := log.Versions(ctx)
		if err != nil || vs.Latest != wl.End {
			t.Fatalf("%s: versions %+v, %v; want the latest %d", tc.table, vs, err, wl.End)
		}
		rows := int64(0)
		for v := range wl.End + 1 {
			c, err := log.Commit(ctx, v)
			if err != nil {
				t.Fatal(err)
			}
			adds, removes, cdcs := len(c.Adds), len(c.Removes), len(c.CDCs)
			if v < wl.End {
				if adds != 1 || removes != 0 || cdcs != 0 {
					t.Errorf("%s version %d: %d adds, %d removes, %d cdc files; want one add", tc.table, v, adds,
						removes, cdcs)
				}
				var st struct {
					NumRecords int64 `json:"numRecords"`
				}
				if err := json.Unmarshal([]byte(c.Adds[0].Stats), &st); err != nil {
					t.Fatal(err)
				}
				rows += st.NumRecords
				continue
			}
			if c.CommitInfo == nil || c.CommitInfo.Operation != "MERGE" || adds != 1 || removes != 1 || cdcs != tc.cdcs {
				t.Errorf("%s version %d: %d adds, %d removes, %d cdc files; want a MERGE of one add, one remove "+
					"and %d cdc files", tc.table, v, adds, removes, cdcs, tc.cdcs)
			}
		}
		if rows != int64(p.Rows) {
			t.Errorf("%s: %d rows appended, want %d", tc.table, rows, p.Rows)
		}
	}
}
