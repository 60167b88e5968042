package feed_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
	"github.com/sluicefeed/sluice/internal/testkit/deltafx"
	"github.com/sluicefeed/sluice/internal/testkit/histgen"
)

// flatRow is a change row rendered for comparison: its image's values in
// column order, its change type, commit version and commit time.
type flatRow struct {
	values  []string
	change  string
	version int64
	ts      int64
}

func (r flatRow) String() string {
	return fmt.Sprintf("%s%v@%d/%d", r.change, r.values, r.version, r.ts)
}

// batchShape is what a batch says besides its rows.
type batchShape struct {
	snapshot int64
	complete bool
	rows     int64
}

// cellValue renders one value, with its Go type, so that an int64 and an
// int32 of the same number differ.
func cellValue(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "null"
	}
	return fmt.Sprintf("%T:%s", a, a.ValueStr(i))
}

var flatChangeOf = map[string]string{feed.OpInsert: feed.ChangeInsert, feed.OpDelete: feed.ChangeDelete,
	feed.OpUpdateBefore: feed.ChangeUpdatePreimage, feed.OpUpdateAfter: feed.ChangeUpdatePostimage}

// renderableRows reads a request in the renderable layout and renders each
// row as the flat layout must show it: the before-image of a delete or
// update_before, else the after-image.
func renderableRows(t *testing.T, seq func(func(feed.Batch, error) bool), schema *arrow.Schema) ([]flatRow, []batchShape) {
	t.Helper()
	var rows []flatRow
	var shapes []batchShape
	for b, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		rec := b.Record
		if !rec.Schema().Equal(schema) {
			t.Fatalf("batch schema %s; the plan says %s", rec.Schema(), schema)
		}
		shapes = append(shapes, batchShape{b.Snapshot.ID, b.SnapshotComplete, rec.NumRows()})
		ops := rec.Column(0).(*array.String)
		before, after := rec.Column(1).(*array.Struct), rec.Column(2).(*array.Struct)
		snaps, ts := rec.Column(3).(*array.Int64), rec.Column(4).(*array.Timestamp)
		for i := range int(rec.NumRows()) {
			img := after
			if ops.Value(i) == feed.OpDelete || ops.Value(i) == feed.OpUpdateBefore {
				img = before
			}
			if img.IsNull(i) {
				t.Fatalf("a %s row without its image", ops.Value(i))
			}
			r := flatRow{change: flatChangeOf[ops.Value(i)], version: snaps.Value(i), ts: int64(ts.Value(i))}
			if r.change == "" {
				t.Fatalf("op %q has no flat change type", ops.Value(i))
			}
			for j := range img.NumField() {
				r.values = append(r.values, cellValue(img.Field(j), i))
			}
			rows = append(rows, r)
		}
		rec.Release()
	}
	return rows, shapes
}

// flatRows reads a request in the flat layout, checking each batch's
// schema against want.
func flatRows(t *testing.T, seq func(func(feed.Batch, error) bool), want *arrow.Schema) ([]flatRow, []batchShape) {
	t.Helper()
	var rows []flatRow
	var shapes []batchShape
	for b, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		rec := b.Record
		if !rec.Schema().Equal(want) {
			t.Fatalf("flat batch schema %s; want %s", rec.Schema(), want)
		}
		shapes = append(shapes, batchShape{b.Snapshot.ID, b.SnapshotComplete, rec.NumRows()})
		n := int(rec.NumCols()) - 3
		types := rec.Column(n).(*array.String)
		versions, ts := rec.Column(n+1).(*array.Int64), rec.Column(n+2).(*array.Timestamp)
		for i := range int(rec.NumRows()) {
			if types.IsNull(i) || versions.IsNull(i) || ts.IsNull(i) {
				t.Fatalf("row %d of a flat batch has a null commit column", i)
			}
			r := flatRow{change: strings.Clone(types.Value(i)), version: versions.Value(i), ts: int64(ts.Value(i))}
			for j := range n {
				r.values = append(r.values, cellValue(rec.Column(j), i))
			}
			rows = append(rows, r)
		}
		rec.Release()
	}
	return rows, shapes
}

// wantFlatSchema is the flat layout of a renderable change schema, built
// here from the contract rather than by the engine.
func wantFlatSchema(renderable *arrow.Schema) *arrow.Schema {
	image := renderable.Field(1).Type.(*arrow.StructType)
	fields := slices.Clone(image.Fields())
	fields = append(fields,
		arrow.Field{Name: "_change_type", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "_commit_version", Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: "_commit_timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}})
	return arrow.NewSchema(fields, nil)
}

// compareLayouts reads req in both layouts and checks that every flat row
// is its renderable row's image with its change type, version and time,
// batch by batch.
func compareLayouts(t *testing.T, eng *feed.Engine, req feed.Request) int {
	t.Helper()
	ctx := context.Background()
	plain, err := eng.Plan(ctx, req)
	if err != nil {
		t.Fatalf("plan %+v: %v", req, err)
	}
	req.Layout = feed.LayoutFlat
	flat, err := eng.Plan(ctx, req)
	if err != nil {
		t.Fatalf("plan %+v: %v", req, err)
	}
	want := wantFlatSchema(plain.Schema())
	if !flat.Schema().Equal(want) {
		t.Fatalf("flat plan schema %s; want %s", flat.Schema(), want)
	}
	if s, err := eng.Schema(ctx, req); err != nil || !s.Equal(want) {
		t.Fatalf("Engine.Schema of the flat request: %v, %v; want %s", s, err, want)
	}
	wantRows, wantShapes := renderableRows(t, eng.Read(ctx, plain), plain.Schema())
	gotRows, gotShapes := flatRows(t, eng.Read(ctx, flat), want)
	checkSameRows(t, fmt.Sprintf("%+v", req), gotRows, wantRows, gotShapes, wantShapes)
	return len(gotRows)
}

func checkSameRows(t *testing.T, what string, got, want []flatRow, gotShapes, wantShapes []batchShape) {
	t.Helper()
	if fmt.Sprint(gotShapes) != fmt.Sprint(wantShapes) {
		t.Fatalf("%s: flat batches %v; renderable %v", what, gotShapes, wantShapes)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d flat rows, %d renderable", what, len(got), len(want))
	}
	for i := range got {
		if got[i].String() != want[i].String() {
			t.Fatalf("%s: row %d is %s in the flat layout; the renderable row says %s", what, i, got[i], want[i])
		}
	}
}

// TestFlatLayoutMatchesRenderable reads the same windows of random
// histories (merge-on-read and copy-on-write, updates paired by identity,
// schema evolution) in both layouts: every flat row is the image of its
// renderable row, with the same types, order and batches; so are net
// changes, filters, projections and full states. A small batch limit
// mixes update pairs, deletes and inserts within batches.
func TestFlatLayoutMatchesRenderable(t *testing.T) {
	configs := []histgen.Config{
		{FormatVersion: 2, DeleteMode: table.WriteModeMergeOnRead, Commits: 12, SchemaChanges: true},
		{FormatVersion: 3, DeleteMode: table.WriteModeCopyOnWrite, Partitioned: true, Commits: 12},
	}
	for _, cfg := range configs {
		t.Run(cfg.String(), func(t *testing.T) {
			t.Parallel()
			g := generate(t, 3, cfg)
			mem := memory.NewCheckedAllocator(arrowpool.Shared())
			defer mem.AssertSize(t, 0)
			eng := feed.New(g.Catalog, feed.Options{Allocator: mem, MaxBatchRows: 7})
			spilling := feed.New(g.Catalog, feed.Options{Allocator: mem, MaxBatchRows: 7, MemoryBudget: 1,
				SpillDir: t.TempDir()})
			defer func() {
				for _, e := range []*feed.Engine{eng, spilling} {
					if err := e.Close(); err != nil {
						t.Error(err)
					}
				}
			}()
			rows := 0
			last := g.Snapshots[len(g.Snapshots)-1]
			for i, s := range g.Snapshots {
				var from *int64
				if i > 0 {
					from = &g.Snapshots[i-1]
				}
				rows += compareLayouts(t, eng, feed.Request{Table: histgen.Table, FromSnapshot: from, ToSnapshot: &s})
				rows += compareLayouts(t, eng, feed.Request{Table: histgen.Table, FromSnapshot: from, ToSnapshot: &s,
					Identity: []string{"id"}})
			}
			mid := &g.Snapshots[len(g.Snapshots)/2]
			for _, req := range []feed.Request{
				{Table: histgen.Table, ToSnapshot: &last, Identity: []string{"id"}},
				{Table: histgen.Table, FromSnapshot: mid, ToSnapshot: &last, Identity: []string{"id"},
					Columns: []string{"grp", "id"}},
				{Table: histgen.Table, ToSnapshot: &last, Identity: []string{"id"}, Filter: "grp = 'a' OR id < 5"},
				{Table: histgen.Table, ToSnapshot: &last, NetChanges: true},
				{Table: histgen.Table, FromSnapshot: mid, ToSnapshot: &last, NetChanges: true, Identity: []string{"id"}},
			} {
				rows += compareLayouts(t, eng, req)
				if req.NetChanges {
					rows += compareLayouts(t, spilling, req)
				}
			}
			if rows == 0 {
				t.Fatal("the windows held no rows: the comparison saw nothing")
			}
			compareStates(t, eng, feed.Request{Table: histgen.Table, ToSnapshot: mid})
			compareStates(t, eng, feed.Request{Table: histgen.Table, ToSnapshot: &last, Columns: []string{"id"}})
		})
	}
}

// compareStates reads a full state in both layouts.
func compareStates(t *testing.T, eng *feed.Engine, req feed.Request) {
	t.Helper()
	ctx := context.Background()
	plain, err := eng.PlanState(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	req.Layout = feed.LayoutFlat
	flat, err := eng.PlanState(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	want := wantFlatSchema(plain.Schema())
	if !flat.Schema().Equal(want) {
		t.Fatalf("flat state schema %s; want %s", flat.Schema(), want)
	}
	wantRows, wantShapes := renderableRows(t, eng.ReadState(ctx, plain), plain.Schema())
	gotRows, gotShapes := flatRows(t, eng.ReadState(ctx, flat), want)
	if len(gotRows) == 0 {
		t.Fatal("the state held no rows")
	}
	checkSameRows(t, "state "+fmt.Sprint(*req.ToSnapshot), gotRows, wantRows, gotShapes, wantShapes)
}

// TestFlatLayoutStream: a stream in the flat layout (a full state, then
// the changes) yields the flat form of the renderable stream's batches,
// with the flat schema on every event.
func TestFlatLayoutStream(t *testing.T) {
	g := generate(t, 5, histgen.Config{FormatVersion: 2, DeleteMode: table.WriteModeMergeOnRead, Commits: 8})
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	eng := feed.New(g.Catalog, feed.Options{Allocator: mem, MaxBatchRows: 5})
	defer func() {
		if err := eng.Close(); err != nil {
			t.Error(err)
		}
	}()
	ctx := context.Background()
	from := g.Snapshots[2]
	read := func(layout string) ([]flatRow, []batchShape, *arrow.Schema) {
		req := feed.StreamRequest{Request: feed.Request{Table: histgen.Table, FromSnapshot: &from,
			Identity: []string{"id"}, Layout: layout}, Start: feed.StartFromSnapshotFull}
		var schema *arrow.Schema
		var batches []feed.Batch
		for ev, err := range eng.Stream(ctx, req) {
			if err != nil {
				t.Fatal(err)
			}
			if schema == nil {
				schema = ev.Schema
			} else if !ev.Schema.Equal(schema) {
				t.Fatalf("the stream's schema changed from %s to %s", schema, ev.Schema)
			}
			if ev.Batch.Record != nil {
				batches = append(batches, ev.Batch)
			}
		}
		seq := func(yield func(feed.Batch, error) bool) {
			for i, b := range batches {
				if !yield(b, nil) {
					for _, rest := range batches[i+1:] {
						rest.Record.Release()
					}
					return
				}
			}
		}
		if layout == feed.LayoutFlat {
			rows, shapes := flatRows(t, seq, schema)
			return rows, shapes, schema
		}
		rows, shapes := renderableRows(t, seq, schema)
		return rows, shapes, schema
	}
	wantRows, wantShapes, plain := read(feed.LayoutRenderable)
	gotRows, gotShapes, flat := read(feed.LayoutFlat)
	if want := wantFlatSchema(plain); !flat.Equal(want) {
		t.Fatalf("flat stream schema %s; want %s", flat, want)
	}
	if len(gotRows) == 0 {
		t.Fatal("the stream held no rows")
	}
	checkSameRows(t, "stream", gotRows, wantRows, gotShapes, wantShapes)
}

// TestFlatLayoutDeltaFixtures reads every change-feed query of the Delta
// fixtures (tables and expected rows from delta-rs and delta-kernel-rs) in
// the flat layout: its rows are those projects' own CDF rows (as
// TestDeltaFixturesExpected compares them), and the renderable rows'
// images, in the same order.
func TestFlatLayoutDeltaFixtures(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(deltaFixtureDir, "*", "EXPECTED.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no Delta fixtures under %s: %v", deltaFixtureDir, err)
	}
	compared := 0
	for _, path := range paths {
		dir := filepath.Dir(path)
		exp, err := deltafx.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		name := "delta." + filepath.Base(dir)
		mem := memory.NewCheckedAllocator(arrowpool.Shared())
		eng := feed.New(deltaTables{name: openDelta(t, dir, name)}, feed.Options{Allocator: mem, MaxBatchRows: 5})
		for _, q := range exp.Queries {
			if q.ExpectError != nil {
				continue
			}
			w, err := q.Window()
			if err != nil {
				t.Fatal(err)
			}
			req := feed.Request{Table: name, FromSnapshot: w.FromSnapshot, ToSnapshot: w.ToSnapshot,
				FromTimestampMs: w.FromTimestampMs, ToTimestampMs: w.ToTimestampMs, Filter: w.Filter}
			want, err := deltaRows(eng, req)
			if err != nil {
				t.Fatalf("%s %s: %v", name, q.ID, err)
			}
			req.Layout = feed.LayoutFlat
			got, err := deltaFlatRows(eng, req)
			if err != nil {
				t.Fatalf("%s %s: %v", name, q.ID, err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s %s: flat rows\n%v\nrenderable rows flattened\n%v", name, q.ID, got, want)
			}
			if d := deltafx.Compare(q, got); d != "" {
				t.Errorf("%s %s: %s", name, q.ID, d)
			}
			compared++
			if err := eng.Close(); err != nil {
				t.Error(err)
			}
		}
		mem.AssertSize(t, 0)
	}
	if compared == 0 {
		t.Fatal("no Delta query compared")
	}
}

// deltaFlatRows reads a window in the flat layout into Delta CDF rows,
// each value written as deltafx.Flatten writes it.
func deltaFlatRows(eng *feed.Engine, req feed.Request) ([]map[string]string, error) {
	ctx := context.Background()
	p, err := eng.Plan(ctx, req)
	if err != nil {
		return nil, err
	}
	var out []map[string]string
	for b, err := range eng.Read(ctx, p) {
		if err != nil {
			return nil, err
		}
		rec := b.Record
		for i := range int(rec.NumRows()) {
			row := map[string]string{}
			for j, f := range rec.Schema().Fields() {
				switch f.Name {
				case feed.ColCommitVersion:
					row[f.Name] = strconv.FormatInt(rec.Column(j).(*array.Int64).Value(i), 10)
				case feed.ColCommitTimestamp:
					row[f.Name] = time.UnixMicro(int64(rec.Column(j).(*array.Timestamp).Value(i))).UTC().
						Format("2006-01-02T15:04:05.000")
				case feed.ColChangeType:
					row[f.Name] = strings.Clone(rec.Column(j).(*array.String).Value(i))
				default:
					row[f.Name] = deltafx.Value(rec.Column(j), i)
				}
			}
			out = append(out, row)
		}
		rec.Release()
	}
	return out, nil
}

// TestFlatLayoutErrors: an unknown layout, fold_updates with the flat
// layout, and a table whose data column has the name of a column the flat
// layout adds are ErrInvalidRequest, naming what to do; the conflicting
// column projected away reads.
func TestFlatLayoutErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		req  feed.Request
		says string
	}{
		{feed.Request{Table: "a.b", Layout: "wide"}, `layout "wide": want "" (the renderable row, the default) or "flat"`},
		{feed.Request{Table: "a.b", Layout: "FLAT"}, `layout "FLAT"`},
		{feed.Request{Table: "a.b", Layout: feed.LayoutFlat, FoldUpdates: true}, "fold_updates"},
	} {
		_, err := tc.req.Parse()
		if !errors.Is(err, feed.ErrInvalidRequest) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%+v: %v; want ErrInvalidRequest saying %q", tc.req, err, tc.says)
		}
	}

	cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := tablewrite.CreateTable(ctx, cat, "shop.cdf", iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "_change_type", Type: iceberg.PrimitiveTypes.String}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tablewrite.Append(ctx, tbl, []tablewrite.Row{{"id": 1, "_change_type": "mine"}}); err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	eng := feed.New(cat, feed.Options{Allocator: mem})
	req := feed.Request{Table: "shop.cdf", Layout: feed.LayoutFlat}
	for what, call := range map[string]func() error{
		"Plan":      func() error { _, err := eng.Plan(ctx, req); return err },
		"Schema":    func() error { _, err := eng.Schema(ctx, req); return err },
		"PlanState": func() error { _, err := eng.PlanState(ctx, req); return err },
	} {
		err := call()
		if !errors.Is(err, feed.ErrInvalidRequest) || !strings.Contains(err.Error(), `column "_change_type"`) ||
			!strings.Contains(err.Error(), "leave it out of columns") {
			t.Errorf("%s of a table with a column _change_type in the flat layout: %v; want ErrInvalidRequest "+
				"naming the column", what, err)
		}
	}
	// Projected away, the column does not conflict; the default layout has
	// no such names.
	for _, r := range []feed.Request{{Table: "shop.cdf", Layout: feed.LayoutFlat, Columns: []string{"id"}},
		{Table: "shop.cdf"}} {
		p, err := eng.Plan(ctx, r)
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		n := 0
		for b, err := range eng.Read(ctx, p) {
			if err != nil {
				t.Fatal(err)
			}
			n += int(b.Record.NumRows())
			b.Record.Release()
		}
		if n != 1 {
			t.Errorf("%+v: %d rows, want 1", r, n)
		}
	}
	if err := eng.Close(); err != nil {
		t.Error(err)
	}
}
