package iceberg_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/feed"
	icebergformat "github.com/sluicefeed/sluice/format/iceberg"
	"github.com/sluicefeed/sluice/internal/lib/longhist"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
	"github.com/sluicefeed/sluice/lake"
)

// countingIO counts the Avro files (manifest lists and manifests) opened
// through it.
type countingIO struct {
	iceio.IO
	avro *atomic.Int64
}

func (c countingIO) Open(name string) (iceio.File, error) {
	if strings.HasSuffix(name, ".avro") {
		c.avro.Add(1)
	}
	return c.IO.Open(name)
}

// oneTable serves one table to the engine.
type oneTable struct{ tbl lake.Table }

func (o oneTable) Load(context.Context, string) (lake.Table, error) { return o.tbl, nil }
func (o oneTable) ListTables(context.Context) ([]string, error) {
	return []string{longhist.IcebergTable}, nil
}

// TestPlanningGrowsWithTheWindow plans the one-commit windows of a long
// history's last append and closing copy-on-write overwrite at two
// history lengths (and ten times the files), on a fresh cache, and counts
// the manifest lists and manifests read: a plan that reads the whole
// history (every manifest of a snapshot's scan plan) reads more of them
// as the history grows; one that reads the window's own reads the same
// number at every length.
func TestPlanningGrowsWithTheWindow(t *testing.T) {
	ctx := context.Background()
	reads := map[string][]int64{}
	for _, p := range []longhist.IcebergParams{
		{Snapshots: 40, Files: 80, MergeEvery: 10},
		{Snapshots: 400, Files: 800, MergeEvery: 10},
	} {
		cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cat.Close() })
		h, err := longhist.WriteIceberg(ctx, cat, p)
		if err != nil {
			t.Fatal(err)
		}
		loaded, err := cat.LoadTable(ctx, longhist.IcebergTable)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []struct {
			name string
			win  func() (int64, int64)
			// files is how many files the window's plan reads.
			files int64
		}{{"append", h.LastAppend, -1}, {"overwrite", h.LastOverwrite, 2}} {
			var avro atomic.Int64
			counted := table.New(loaded.Identifier(), loaded.Metadata(), loaded.MetadataLocation(),
				func(ctx context.Context) (iceio.IO, error) {
					fsys, err := loaded.FS(ctx)
					if err != nil {
						return nil, err
					}
					return countingIO{IO: fsys, avro: &avro}, nil
				}, nil)
			e := feed.New(oneTable{icebergformat.NewTable(counted, icebergformat.NewCache())}, feed.Options{})
			from, to := w.win()
			plan, err := e.Plan(ctx, feed.Request{Table: longhist.IcebergTable, FromSnapshot: &from, ToSnapshot: &to})
			if err != nil {
				t.Fatalf("%d snapshots, %s: %v", p.Snapshots, w.name, err)
			}
			if w.files >= 0 && plan.FilesRead != w.files {
				t.Errorf("%d snapshots, %s: the plan reads %d files, want %d", p.Snapshots, w.name, plan.FilesRead,
					w.files)
			}
			reads[w.name] = append(reads[w.name], avro.Load())
		}
	}
	for name, n := range reads {
		if n[0] != n[1] || n[1] > 2 {
			t.Errorf("%s window: planning read %d manifest lists and manifests at 40 snapshots, %d at 400; want the "+
				"window's own (its manifest list and manifest) at both", name, n[0], n[1])
		}
	}
}
