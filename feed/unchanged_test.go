package feed_test

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// TestRowsWrittenAgainUnchanged: within one snapshot, a row deleted and
// written again with every value unchanged is no change, whatever the
// write mode. Here a merge-on-read upsert by equality delete writes row 1
// again as it was and changes row 2: only row 2 changes, in each of the
// request's shapes.
func TestRowsWrittenAgainUnchanged(t *testing.T) {
	ctx := context.Background()
	for _, version := range []string{"2", "3"} {
		t.Run("v"+version, func(t *testing.T) {
			cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cat.Close() })
			tbl, err := tablewrite.CreateTable(ctx, cat, tableName, ordersSchema(),
				icecatalog.WithProperties(iceberg.Properties{"format-version": version,
					table.WriteDeleteModeKey: table.WriteModeMergeOnRead}))
			if err != nil {
				t.Fatal(err)
			}
			rows := []tablewrite.Row{
				{"id": 1, "country": "SE", "amount": 10.5, "created": "2024-01-01T10:00:00Z"},
				{"id": 2, "country": "NO", "amount": 20.5, "created": "2024-01-01T10:00:00Z"},
				{"id": 3, "country": "DK", "amount": 30.5, "created": "2024-01-01T10:00:00Z"},
			}
			if tbl, err = tablewrite.Append(ctx, tbl, rows); err != nil {
				t.Fatal(err)
			}
			first := tbl.CurrentSnapshot().SnapshotID
			changed := tablewrite.Row{"id": 2, "country": "NO", "amount": 99.5, "created": "2024-01-01T10:00:00Z"}
			tbl, err = tablewrite.EqualityDelete(ctx, tbl, "id", []tablewrite.Row{{"id": 1}, {"id": 2}},
				[]tablewrite.Row{rows[0], changed})
			if err != nil {
				t.Fatal(err)
			}
			upsert := tbl.CurrentSnapshot().SnapshotID
			eng := feed.New(cat, feed.Options{})
			window := feed.Request{Table: tableName, FromSnapshot: &first, ToSnapshot: &upsert}

			t.Run("by the table's identifier field", func(t *testing.T) {
				_, got, _ := read(t, eng, window)
				sameChanges(t, got, []change{
					{Op: feed.OpUpdateBefore, Before: rows[1], Snapshot: upsert},
					{Op: feed.OpUpdateAfter, After: changed, Snapshot: upsert},
				})
			})
			t.Run("by a column that is not a key", func(t *testing.T) {
				req := window
				req.Identity = []string{"country"}
				_, got, _ := read(t, eng, req)
				sameChanges(t, got, []change{
					{Op: feed.OpUpdateBefore, Before: rows[1], Snapshot: upsert},
					{Op: feed.OpUpdateAfter, After: changed, Snapshot: upsert},
				})
			})
			t.Run("net changes", func(t *testing.T) {
				req := window
				req.NetChanges = true
				req.Identity = []string{"id"}
				req.FoldUpdates = true
				_, got, _ := read(t, eng, req)
				sameChanges(t, got, []change{{Op: feed.OpUpdate, Before: rows[1], After: changed, Snapshot: upsert}})
			})
			t.Run("only the unchanged row", func(t *testing.T) {
				req := window
				req.Filter = "id = 1"
				_, got, _ := read(t, eng, req)
				sameChanges(t, got, nil)
			})
		})
	}
}
