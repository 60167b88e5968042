package feed

import (
	"github.com/sluicefeed/sluice/lake"
)

// Table formats a table can have (TableInfo.Format, Table.Format).
const (
	FormatIceberg = lake.FormatIceberg
	FormatDelta   = lake.FormatDelta
	FormatPaimon  = lake.FormatPaimon
)

// Table is one table as its format presents it to the engine (package
// lake's seam): its lineage of commits, per commit the file-level change,
// and readers of its files. Values come from the format packages
// (format/iceberg.NewTable, format/delta.Source.Load); a Table is one
// loaded state of its table, immutable, and safe for concurrent use.
type Table = lake.Table
