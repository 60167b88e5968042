package catalog_test

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// TestLoadKeepsParsedMetadata loads a table of an sql catalog twice and
// after a commit: while the catalog points the table at the same metadata
// file, a load shares the parsed metadata (each gets a table of its own);
// after the commit, a load sees the new file.
func TestLoadKeepsParsedMetadata(t *testing.T) {
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	if _, err := tablewrite.CreateTable(ctx, cat, "ns.t", sc); err != nil {
		t.Fatal(err)
	}
	a, err := cat.LoadTable(ctx, "ns.t")
	if err != nil {
		t.Fatal(err)
	}
	b, err := cat.LoadTable(ctx, "ns.t")
	if err != nil {
		t.Fatal(err)
	}
	if a == b || a.Metadata() != b.Metadata() {
		t.Fatalf("two loads of one metadata file: tables %p and %p, metadata shared %v; want two tables over one "+
			"parsed metadata", a, b, a.Metadata() == b.Metadata())
	}
	next, err := tablewrite.Append(ctx, a, []tablewrite.Row{{"id": 1}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := cat.LoadTable(ctx, "ns.t")
	if err != nil {
		t.Fatal(err)
	}
	if c.MetadataLocation() != next.MetadataLocation() || c.CurrentSnapshot() == nil ||
		c.CurrentSnapshot().SnapshotID != next.CurrentSnapshot().SnapshotID {
		t.Fatalf("after a commit the load reads %s, want the committed %s", c.MetadataLocation(), next.MetadataLocation())
	}
}
