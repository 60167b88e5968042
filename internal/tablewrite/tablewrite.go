// Package tablewrite writes real Iceberg tables with iceberg-go's own
// writers, for tests, benchmarks and the demo. Rows are given as JSON
// objects keyed by column name and appended as one Arrow batch per commit.
package tablewrite

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/catalog"
)

// Row is one row, keyed by column name, with JSON-compatible values
// (timestamps as RFC 3339 strings or microseconds).
type Row = map[string]any

// OpenWarehouse opens (creating it when absent) the embedded SQL catalog of
// a local warehouse directory.
func OpenWarehouse(ctx context.Context, dir string) (*catalog.Catalog, error) {
	return catalog.Open(ctx, catalog.Config{Warehouse: dir})
}

// CreateTable creates the table "namespace.table", and its namespace when
// absent.
func CreateTable(ctx context.Context, cat *catalog.Catalog, name string, schema *iceberg.Schema,
	opts ...icecatalog.CreateTableOpt) (*table.Table, error) {
	ident, err := catalog.ParseName(name)
	if err != nil {
		return nil, err
	}
	ns := ident[:len(ident)-1]
	ice := cat.Iceberg()
	exists, err := ice.CheckNamespaceExists(ctx, ns)
	if err != nil {
		return nil, err
	}
	if !exists {
		if err := ice.CreateNamespace(ctx, ns, nil); err != nil {
			return nil, fmt.Errorf("create namespace %s: %w", strings.Join(ns, "."), err)
		}
	}
	return ice.CreateTable(ctx, ident, schema, opts...)
}

// Record builds an Arrow record of rows in the table's current schema. The
// caller releases it.
func Record(tbl *table.Table, rows []Row) (arrow.RecordBatch, error) {
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(rows)
	if err != nil {
		return nil, err
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(string(data)))
	if err != nil {
		return nil, fmt.Errorf("rows do not fit the schema of %s: %w", strings.Join(tbl.Identifier(), "."), err)
	}
	return rec, nil
}

// Append commits rows to the table as one append snapshot and returns the
// table after the commit.
func Append(ctx context.Context, tbl *table.Table, rows []Row) (*table.Table, error) {
	rec, err := Record(tbl, rows)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	arrTbl := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
	defer arrTbl.Release()
	return tbl.AppendTable(ctx, arrTbl, int64(len(rows))+1, nil)
}
