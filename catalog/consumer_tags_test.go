package catalog_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// TestConsumerTags: SetTag commits a tag with its max-ref-age-ms through
// the catalog and moves it; expiry then keeps the tagged snapshot;
// DropTag removes it (twice is no error); a snapshot the table does not
// have is an error; a branch of the tag's name is not moved.
func TestConsumerTags(t *testing.T) {
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	const name = "ns.tagged"
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	tbl, err := tablewrite.CreateTable(ctx, cat, name, schema)
	if err != nil {
		t.Fatal(err)
	}
	var snaps []int64
	for i := range 4 {
		if tbl, err = tablewrite.Append(ctx, tbl, []tablewrite.Row{{"id": i}}); err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, tbl.CurrentSnapshot().SnapshotID)
	}
	tag := catalog.ConsumerTag("c/1")
	ref := func() *table.SnapshotRef {
		t.Helper()
		tbl, err := cat.LoadTable(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		for n, r := range tbl.Metadata().Refs() {
			if n == tag {
				return &r
			}
		}
		return nil
	}
	if err := cat.SetTag(ctx, name, tag, snaps[0], time.Hour); err != nil {
		t.Fatal(err)
	}
	r := ref()
	if r == nil || r.SnapshotID != snaps[0] || r.SnapshotRefType != table.TagRef || r.MaxRefAgeMs == nil ||
		*r.MaxRefAgeMs != time.Hour.Milliseconds() {
		t.Fatalf("tag after SetTag: %+v", r)
	}
	if err := cat.SetTag(ctx, name, tag, snaps[1], time.Hour); err != nil {
		t.Fatal(err)
	}
	if r := ref(); r == nil || r.SnapshotID != snaps[1] {
		t.Fatalf("tag after the move: %+v, want at %d", r, snaps[1])
	}
	// Expiry keeping only the last snapshot keeps the tagged one too.
	tbl, err = cat.LoadTable(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err = tablewrite.Expire(ctx, tbl, 1); err != nil {
		t.Fatal(err)
	}
	if tbl.Metadata().SnapshotByID(snaps[1]) == nil || tbl.Metadata().SnapshotByID(snaps[0]) != nil {
		t.Fatalf("after expiry: tagged %d kept %v, untagged %d kept %v", snaps[1],
			tbl.Metadata().SnapshotByID(snaps[1]) != nil, snaps[0], tbl.Metadata().SnapshotByID(snaps[0]) != nil)
	}
	if err := cat.SetTag(ctx, name, tag, snaps[0], time.Hour); !errors.Is(err, catalog.ErrTableNotFound) {
		t.Fatalf("a tag on an expired snapshot: %v, want ErrTableNotFound", err)
	}
	for range 2 {
		if err := cat.DropTag(ctx, name, tag); err != nil {
			t.Fatal(err)
		}
	}
	if r := ref(); r != nil {
		t.Fatalf("tag after DropTag: %+v", r)
	}
	if err := cat.CheckWritable(); err != nil {
		t.Fatalf("a local sql catalog: %v", err)
	}
}
