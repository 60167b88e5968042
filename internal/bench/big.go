package bench

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/internal/tablewrite"
)

// Big is the incremental workload: a large table, then a window of about
// 1% changes: a copy-on-write rewrite of one file, position deletes in
// another, and an append.
type Big struct {
	Table string
	Base  int64 // the last snapshot before the window
	End   int64 // the window's end
	Rows  int   // rows in the table at Base
}

// WriteBig writes the incremental workload: rows rows in files of
// rowsPerFile, then the 1% window.
func WriteBig(ctx context.Context, cat *catalog.Catalog, name string, rows, rowsPerFile int) (*Big, error) {
	tbl, err := tablewrite.CreateTable(ctx, cat, name, Schema(),
		icecatalog.WithProperties(iceberg.Properties{"format-version": "2",
			"write.parquet.row-group-limit": "65536", "write.target-file-size-bytes": "1073741824"}))
	if err != nil {
		return nil, err
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return nil, err
	}
	appendRows := func(first int64, n int) error {
		rec := Rows(memory.DefaultAllocator, sc, 2, first, n, false)
		defer rec.Release()
		arrTbl := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
		defer arrTbl.Release()
		tbl, err = tbl.AppendTable(ctx, arrTbl, int64(n)+1, nil)
		return err
	}
	for first := 0; first < rows; first += rowsPerFile {
		if err := appendRows(int64(first+1), min(rowsPerFile, rows-first)); err != nil {
			return nil, err
		}
	}
	b := &Big{Table: name, Base: tbl.CurrentSnapshot().SnapshotID, Rows: rows}
	setMode := func(mode string) error {
		tx := tbl.NewTransaction()
		if err := tx.SetProperties(iceberg.Properties{table.WriteDeleteModeKey: mode}); err != nil {
			return err
		}
		tbl, err = tx.Commit(ctx)
		return err
	}
	changes := rows / 100
	// A copy-on-write delete of rows of the first file: it rewrites the file.
	if err := setMode(table.WriteModeCopyOnWrite); err != nil {
		return nil, err
	}
	cow := int64(changes / 20)
	if tbl, err = tbl.Delete(ctx, iceberg.NewAnd(
		iceberg.GreaterThanEqual(iceberg.Reference("id"), int64(100)),
		iceberg.LessThan(iceberg.Reference("id"), 100+cow)), nil); err != nil {
		return nil, fmt.Errorf("copy-on-write delete: %w", err)
	}
	// Position deletes of rows of the second file.
	if err := setMode(table.WriteModeMergeOnRead); err != nil {
		return nil, err
	}
	pos := int64(rowsPerFile + 1000)
	if tbl, err = tbl.Delete(ctx, iceberg.NewAnd(
		iceberg.GreaterThanEqual(iceberg.Reference("id"), pos),
		iceberg.LessThan(iceberg.Reference("id"), pos+cow)), nil); err != nil {
		return nil, fmt.Errorf("position delete: %w", err)
	}
	// An append of new rows.
	if err := appendRows(int64(rows+1), changes-2*int(cow)); err != nil {
		return nil, err
	}
	b.End = tbl.CurrentSnapshot().SnapshotID
	return b, nil
}
