package sluice_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/grpc/codes"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

// readFlat reads a reader of the flat layout into rows rendered as
// "col=value ... _change_type@_commit_version", checking the commit
// columns against each batch's metadata.
func readFlat(t *testing.T, r interface {
	Next() bool
	Batch() sluice.ChangeBatch
	Err() error
}) []string {
	t.Helper()
	var rows []string
	for r.Next() {
		b := r.Batch()
		if b.Meta.Heartbeat {
			continue
		}
		rec := b.Record
		n := int(rec.NumCols()) - 3
		names := rec.Schema().Fields()
		types := rec.Column(n).(*array.String)
		versions := rec.Column(n + 1).(*array.Int64)
		ts := rec.Column(n + 2).(*array.Timestamp)
		for i := range int(rec.NumRows()) {
			if versions.Value(i) != b.Meta.Snapshot || int64(ts.Value(i)) != b.Meta.TimestampMs*1000 {
				t.Fatalf("row %d: version %d, time %d; the batch's metadata %+v", i, versions.Value(i), ts.Value(i),
					b.Meta)
			}
			parts := make([]string, n)
			for j := range n {
				parts[j] = fmt.Sprintf("%s=%v", names[j].Name, rec.Column(j).GetOneForMarshal(i))
			}
			rows = append(rows, fmt.Sprintf("%s %s@%d", strings.Join(parts, " "), types.Value(i), versions.Value(i)))
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestChangesFlat: Layout LayoutFlat reaches the server from Changes,
// Schema and Subscribe, and the rows are the flat layout's.
func TestChangesFlat(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	cols := []string{"country", "id"}
	req := sluice.ChangeRequest{Table: ordersTable, Columns: cols, Layout: sluice.LayoutFlat, FromSnapshot: &f.snaps[0].ID}
	var want []string
	for k := 1; k < len(history); k++ {
		for _, o := range history[k] {
			want = append(want, fmt.Sprintf("%s %s@%d", renderOrder(o, cols), sluice.ChangeInsert, f.snaps[k].ID))
		}
	}
	wantNames := []string{"country", "id", sluice.ColumnChangeType, sluice.ColumnCommitVersion,
		sluice.ColumnCommitTimestamp}

	schema, err := f.client.Schema(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fl := range schema.Fields() {
		names = append(names, fl.Name)
	}
	if !slices.Equal(names, wantNames) {
		t.Fatalf("Schema of a flat request: %v, want %v", names, wantNames)
	}
	if typ := schema.Field(4).Type; !arrow.TypeEqual(typ, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}) {
		t.Fatalf("%s is %s", sluice.ColumnCommitTimestamp, typ)
	}

	r, err := f.client.Changes(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !r.Schema().Equal(schema) {
		t.Fatalf("reader schema %s, Schema said %s", r.Schema(), schema)
	}
	if got := readFlat(t, r); !slices.Equal(got, want) {
		t.Fatalf("flat changes:\n got %v\nwant %v", got, want)
	}

	sub, err := f.client.Subscribe(ctx, sluice.SubscribeRequest{Table: ordersTable, Columns: cols,
		Layout: sluice.LayoutFlat, Start: sluice.StartFromSnapshot, FromSnapshot: &f.snaps[0].ID, NoFollow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Release()
	if got := readFlat(t, sub); !slices.Equal(got, want) {
		t.Fatalf("flat subscription:\n got %v\nwant %v", got, want)
	}
	if !sub.Schema().Equal(schema) {
		t.Fatalf("subscription schema %s, Schema said %s", sub.Schema(), schema)
	}

	for _, bad := range []sluice.ChangeRequest{
		{Table: ordersTable, Layout: "wide"},
		{Table: ordersTable, Layout: sluice.LayoutFlat, FoldUpdates: true},
		{Table: ordersTable, Layout: "fl\xffat"},
	} {
		_, err := f.client.Changes(ctx, bad)
		if sluice.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "layout") &&
			!strings.Contains(err.Error(), "fold_updates") {
			t.Errorf("%+v: %v; want InvalidArgument naming the layout", bad, err)
		}
	}
}
