package bench

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// Memory is the bounded-memory workload: a table of large files, then a
// copy-on-write delete that rewrites one whole file: every row of the
// window must be seen at once by net changes, and every row of the
// rewritten file by the rewrite's carry-over cancellation.
type Memory struct {
	// Warehouse is the warehouse that holds the table (WriteMemoryCached).
	Warehouse string `json:"-"`
	Table     string
	Base      int64 // the last append
	End       int64 // the copy-on-write delete
	Rows      int   // rows appended
	// FileRows is the size of the rewritten file.
	FileRows int
}

// WriteMemory writes rows rows in files of fileRows rows, then deletes
// 1,000 rows of the first file copy-on-write (rewriting its other rows).
func WriteMemory(ctx context.Context, cat *catalog.Catalog, name string, rows, fileRows int) (*Memory, error) {
	tbl, err := tablewrite.CreateTable(ctx, cat, name, Schema(),
		icecatalog.WithProperties(iceberg.Properties{"format-version": "2",
			"write.parquet.row-group-limit": "65536", "write.target-file-size-bytes": "4294967296",
			table.WriteDeleteModeKey: table.WriteModeCopyOnWrite}))
	if err != nil {
		return nil, err
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return nil, err
	}
	for first := 0; first < rows; first += fileRows {
		n := min(fileRows, rows-first)
		// One file, built in chunks of at most 1Mi rows.
		var recs []arrow.RecordBatch
		for c := 0; c < n; c += 1 << 20 {
			recs = append(recs, Rows(memory.DefaultAllocator, sc, 3, int64(first+c+1), min(1<<20, n-c), false))
		}
		arrTbl := array.NewTableFromRecords(sc, recs)
		tbl, err = tbl.AppendTable(ctx, arrTbl, 1<<20, nil)
		arrTbl.Release()
		for _, r := range recs {
			r.Release()
		}
		if err != nil {
			return nil, err
		}
	}
	m := &Memory{Table: name, Base: tbl.CurrentSnapshot().SnapshotID, Rows: rows, FileRows: fileRows}
	if tbl, err = tbl.Delete(ctx, iceberg.LessThanEqual(iceberg.Reference("id"), int64(1000)), nil); err != nil {
		return nil, fmt.Errorf("copy-on-write delete: %w", err)
	}
	m.End = tbl.CurrentSnapshot().SnapshotID
	return m, nil
}

// WriteMemoryCached writes the bounded-memory workload into a warehouse of
// its own under root, or reuses the one an earlier run wrote the same way.
func WriteMemoryCached(ctx context.Context, root string, rows, fileRows int) (*Memory, error) {
	dir := filepath.Join(canonical(root), fmt.Sprintf("%d-%d", rows, fileRows))
	params := map[string]int{"rows": rows, "file_rows": fileRows}
	m, _, err := cached(ctx, dir, params, func(cat *catalog.Catalog) (*Memory, error) {
		return WriteMemory(ctx, cat, "bench.mem", rows, fileRows)
	})
	if err != nil {
		return nil, fmt.Errorf("bounded-memory workload: %w", err)
	}
	m.Warehouse = dir
	return m, nil
}
