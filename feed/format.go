package feed

import (
	"context"

	"github.com/sluicefeed/sluice/lake"
)

// Table formats a table can have (TableInfo.Format, Table.Format).
const (
	FormatIceberg = lake.FormatIceberg
	FormatDelta   = lake.FormatDelta
)

// Table is one table as its format presents it to the engine (package
// lake's seam): its lineage of commits, per commit the file-level change,
// and readers of its files. Values come from IcebergTable and
// DeltaSource.Load; a Table is one loaded state of its table, immutable,
// and safe for concurrent use.
type Table = lake.Table

// FormatTables is implemented by a Tables that serves tables of any format:
// the engine then loads tables with Load instead of LoadTable.
type FormatTables interface {
	Tables
	// Load loads the current state of the table "namespace.table".
	Load(ctx context.Context, name string) (Table, error)
}
