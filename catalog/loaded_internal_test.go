package catalog

import (
	"fmt"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TestLoadedTablesBound keeps tables of many snapshots: the kept tables
// never hold more than the bound's snapshots together, and the count
// follows evictions.
func TestLoadedTablesBound(t *testing.T) {
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	b, err := table.NewMetadataBuilder(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AddSchema(sc); err != nil {
		t.Fatal(err)
	}
	if err := b.SetCurrentSchemaID(0); err != nil {
		t.Fatal(err)
	}
	spec := iceberg.NewPartitionSpec()
	if err := b.AddPartitionSpec(&spec, true); err != nil {
		t.Fatal(err)
	}
	if err := b.SetDefaultSpecID(-1); err != nil {
		t.Fatal(err)
	}
	order := table.UnsortedSortOrder
	if err := b.AddSortOrder(&order); err != nil {
		t.Fatal(err)
	}
	if err := b.SetDefaultSortOrderID(-1); err != nil {
		t.Fatal(err)
	}
	if err := b.SetLoc("file:///t"); err != nil {
		t.Fatal(err)
	}
	// A table of n snapshots counts n+1: three fit.
	const bound, perTable = 300, 99
	var parent *int64
	for i := range perTable {
		id := int64(i + 1)
		s := table.Snapshot{SnapshotID: id, ParentSnapshotID: parent, SequenceNumber: id, TimestampMs: 1_700_000_000_000 + id,
			ManifestList: "file:///t/list.avro", Summary: &table.Summary{Operation: table.OpAppend}}
		if err := b.AddSnapshot(&s); err != nil {
			t.Fatal(err)
		}
		if err := b.SetSnapshotRef(table.MainBranch, id, table.BranchRef); err != nil {
			t.Fatal(err)
		}
		parent = &id
	}
	meta, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	l := newLoadedTablesOf(loadedTablesKept, bound)
	for i := range 5 {
		l.add(fmt.Sprintf("t%d", i), table.New(table.Identifier{"ns", fmt.Sprint(i)}, meta, "loc", nil, nil))
		if l.snapshots > bound || l.snapshots != l.tables.Len()*(perTable+1) {
			t.Fatalf("after %d tables: %d kept hold %d snapshots, want at most %d and %d each", i+1, l.tables.Len(),
				l.snapshots, bound, perTable+1)
		}
	}
	if l.tables.Len() != 3 {
		t.Errorf("%d tables kept, want 3", l.tables.Len())
	}
}
