package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/testkit/histgen"
)

// TestFlatLayout reads a merge-on-read history (updates, deletes, upserts,
// overwrites, written by iceberg-go) through a real flightd with the Go
// client in both layouts: every flat row is its renderable row's image
// (the before-image of a delete or update_before, else the after-image)
// with _change_type, _commit_version and _commit_timestamp, in the same
// order and batches, for each snapshot, net changes, a filter, a
// projection and a stream from a full state. The pyarrow side, and Delta
// against delta-rs's load_cdf, is e2e/python/test_flat.py.
func TestFlatLayout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	h, err := histgen.Generate(ctx, dir, 11, histgen.Config{FormatVersion: 2, DeleteMode: table.WriteModeMergeOnRead,
		Commits: 10})
	if err != nil {
		t.Fatal(err)
	}
	h.Catalog.Close()
	srv := startFlightd(t, "--warehouse", dir, "--max-batch-rows", "5")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	client, err := sluice.Dial(ctx, srv.URI(), sluice.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		client.Close()
		mem.AssertSize(t, 0)
	}()

	types := map[string]string{sluice.OpInsert: sluice.ChangeInsert, sluice.OpDelete: sluice.ChangeDelete,
		sluice.OpUpdateBefore: sluice.ChangeUpdatePreimage, sluice.OpUpdateAfter: sluice.ChangeUpdatePostimage}
	// rows reads batches into rows rendered as the flat layout shows them.
	rows := func(t *testing.T, next func() (sluice.ChangeBatch, bool), flat bool) ([]string, []int64) {
		t.Helper()
		var out []string
		var sizes []int64
		for {
			b, ok := next()
			if !ok {
				return out, sizes
			}
			if b.Meta.Heartbeat {
				continue
			}
			rec := b.Record
			sizes = append(sizes, rec.NumRows())
			for i := range int(rec.NumRows()) {
				var cells []any
				var change string
				var version, ts int64
				if flat {
					n := int(rec.NumCols()) - 3
					for j := range n {
						cells = append(cells, rec.Column(j).GetOneForMarshal(i))
					}
					change = rec.Column(n).(*array.String).Value(i)
					version = rec.Column(n + 1).(*array.Int64).Value(i)
					ts = int64(rec.Column(n + 2).(*array.Timestamp).Value(i))
				} else {
					op := rec.Column(0).(*array.String).Value(i)
					img := rec.Column(2).(*array.Struct)
					if op == sluice.OpDelete || op == sluice.OpUpdateBefore {
						img = rec.Column(1).(*array.Struct)
					}
					for j := range img.NumField() {
						cells = append(cells, img.Field(j).GetOneForMarshal(i))
					}
					change = types[op]
					version = rec.Column(3).(*array.Int64).Value(i)
					ts = int64(rec.Column(4).(*array.Timestamp).Value(i))
				}
				if version != b.Meta.Snapshot || ts != b.Meta.TimestampMs*1000 {
					t.Fatalf("row %d: version %d, time %d in a batch of %+v", i, version, ts, b.Meta)
				}
				out = append(out, fmt.Sprintf("%v %s@%d", cells, change, version))
			}
		}
	}
	checkFlatSchema := func(t *testing.T, flat, plain *arrow.Schema) {
		t.Helper()
		image := plain.Field(2).Type.(*arrow.StructType)
		want := append(slices.Clone(image.Fields()),
			arrow.Field{Name: sluice.ColumnChangeType, Type: arrow.BinaryTypes.String},
			arrow.Field{Name: sluice.ColumnCommitVersion, Type: arrow.PrimitiveTypes.Int64},
			arrow.Field{Name: sluice.ColumnCommitTimestamp, Type: arrow.FixedWidthTypes.Timestamp_us})
		if !flat.Equal(arrow.NewSchema(want, nil)) {
			t.Fatalf("flat schema %s; want %s", flat, arrow.NewSchema(want, nil))
		}
	}
	read := func(t *testing.T, req sluice.ChangeRequest) ([]string, []int64, *arrow.Schema) {
		t.Helper()
		r, err := client.Changes(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Release()
		got, sizes := rows(t, func() (sluice.ChangeBatch, bool) { ok := r.Next(); return r.Batch(), ok }, req.Layout != "")
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		return got, sizes, r.Schema()
	}
	compare := func(t *testing.T, req sluice.ChangeRequest) int {
		t.Helper()
		want, wantSizes, plain := read(t, req)
		req.Layout = sluice.LayoutFlat
		got, gotSizes, flat := read(t, req)
		checkFlatSchema(t, flat, plain)
		if !slices.Equal(got, want) || !slices.Equal(gotSizes, wantSizes) {
			t.Fatalf("%+v:\nflat %v %v\nrenderable %v %v", req, got, gotSizes, want, wantSizes)
		}
		return len(got)
	}

	total := 0
	for i, s := range h.Snapshots {
		var from *int64
		if i > 0 {
			from = &h.Snapshots[i-1]
		}
		total += compare(t, sluice.ChangeRequest{Table: histgen.Table, FromSnapshot: from, ToSnapshot: &s,
			Identity: []string{"id"}})
	}
	mid := h.Snapshots[len(h.Snapshots)/2]
	for _, req := range []sluice.ChangeRequest{
		{Table: histgen.Table, NetChanges: true, Identity: []string{"id"}, FromSnapshot: &mid},
		{Table: histgen.Table, Identity: []string{"id"}, Filter: "grp = 'b'"},
		{Table: histgen.Table, Columns: []string{"val", "id"}, FromSnapshot: &mid},
	} {
		total += compare(t, req)
	}
	if total == 0 {
		t.Fatal("the windows held no rows")
	}

	// A stream: the full state at the middle snapshot, then the changes.
	sub := func(layout string) ([]string, []int64) {
		s, err := client.Subscribe(ctx, sluice.SubscribeRequest{Table: histgen.Table, Identity: []string{"id"},
			Start: sluice.StartFromSnapshotFull, FromSnapshot: &mid, NoFollow: true, Layout: layout})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Release()
		got, sizes := rows(t, func() (sluice.ChangeBatch, bool) { ok := s.Next(); return s.Batch(), ok }, layout != "")
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		return got, sizes
	}
	want, wantSizes := sub("")
	got, gotSizes := sub(sluice.LayoutFlat)
	if len(got) == 0 || !slices.Equal(got, want) || !slices.Equal(gotSizes, wantSizes) {
		t.Fatalf("stream:\nflat %v\nrenderable %v", got, want)
	}
}
