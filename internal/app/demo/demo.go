// Package demo creates the demo table that `flightd --demo` serves: a small
// orders table with a realistic history, written with iceberg-go's own
// writers into the embedded warehouse.
package demo

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// Table is the name of the demo table.
const Table = "demo.orders"

// Schema is the demo table's schema; order_id is its identifier field.
func Schema() *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "order_id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "customer", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "country", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 5, Name: "status", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 6, Name: "created_at", Type: iceberg.PrimitiveTypes.TimestampTz},
	)
}

// arrivals are the demo's appends: a morning of orders arriving in
// batches.
var arrivals = [][]tablewrite.Row{
	{
		{"order_id": 1001, "customer": "Astrid Lindqvist", "country": "SE", "amount": 129.50, "status": "placed", "created_at": "2026-11-30T08:01:12Z"},
		{"order_id": 1002, "customer": "Jonas Berg", "country": "NO", "amount": 42.00, "status": "placed", "created_at": "2026-11-30T08:03:40Z"},
		{"order_id": 1003, "customer": "Mia Koskinen", "country": "FI", "amount": 310.25, "status": "placed", "created_at": "2026-11-30T08:04:05Z"},
	},
	{
		{"order_id": 1004, "customer": "Lars Nielsen", "country": "DK", "amount": 18.90, "status": "placed", "created_at": "2026-11-30T08:15:31Z"},
		{"order_id": 1005, "customer": "Elin Sandberg", "country": "SE", "amount": 77.10, "status": "placed", "created_at": "2026-11-30T08:16:02Z"},
	},
	{
		{"order_id": 1006, "customer": "Oskar Dahl", "country": "SE", "amount": 1450.00, "status": "placed", "created_at": "2026-11-30T08:30:44Z"},
		{"order_id": 1007, "customer": "Ingrid Haugen", "country": "NO", "amount": 64.35, "status": "placed", "created_at": "2026-11-30T08:31:09Z"},
		{"order_id": 1008, "customer": "Aino Virtanen", "country": "FI", "amount": 12.00, "status": "placed", "created_at": "2026-11-30T08:33:57Z"},
	},
	{
		{"order_id": 1009, "customer": "Freja Holm", "country": "DK", "amount": 230.00, "status": "placed", "created_at": "2026-11-30T08:45:20Z"},
		{"order_id": 1010, "customer": "Nils Ek", "country": "SE", "amount": 99.99, "status": "placed", "created_at": "2026-11-30T08:47:13Z"},
	},
}

// Ensure creates the demo table in cat when it is absent and returns it.
// An existing table is left as it is. Its history, written with iceberg-go's
// own writers on a merge-on-read table:
//
//  1. append orders 1001-1003
//  2. append orders 1004-1005
//  3. delete order 1002, cancelled (a position delete)
//  4. append orders 1006-1008
//  5. upsert order 1006, now shipped (an equality delete and the new row
//     in one commit: an update pair)
//  6. compaction (a replace snapshot: no change)
//  7. append orders 1009-1010
func Ensure(ctx context.Context, cat *catalog.Catalog) (*table.Table, error) {
	tbl, err := cat.LoadTable(ctx, Table)
	if err == nil {
		return tbl, nil
	}
	if !errors.Is(err, catalog.ErrTableNotFound) {
		return nil, err
	}
	tbl, err = tablewrite.CreateTable(ctx, cat, Table, Schema(),
		icecatalog.WithProperties(iceberg.Properties{"format-version": "2",
			table.WriteDeleteModeKey: table.WriteModeMergeOnRead}))
	if err != nil {
		return nil, fmt.Errorf("create demo table: %w", err)
	}
	shipped := tablewrite.Row{"order_id": 1006, "customer": "Oskar Dahl", "country": "SE", "amount": 1450.00,
		"status": "shipped", "created_at": "2026-11-30T08:30:44Z"}
	steps := []func() (*table.Table, error){
		func() (*table.Table, error) { return tablewrite.Append(ctx, tbl, arrivals[0]) },
		func() (*table.Table, error) { return tablewrite.Append(ctx, tbl, arrivals[1]) },
		func() (*table.Table, error) {
			return tbl.Delete(ctx, iceberg.EqualTo(iceberg.Reference("order_id"), int64(1002)), nil)
		},
		func() (*table.Table, error) { return tablewrite.Append(ctx, tbl, arrivals[2]) },
		func() (*table.Table, error) {
			return tablewrite.EqualityDelete(ctx, tbl, "order_id", []tablewrite.Row{{"order_id": 1006}},
				[]tablewrite.Row{shipped})
		},
		func() (*table.Table, error) { return tablewrite.Compact(ctx, tbl) },
		func() (*table.Table, error) { return tablewrite.Append(ctx, tbl, arrivals[3]) },
	}
	for i, step := range steps {
		if tbl, err = step(); err != nil {
			return nil, fmt.Errorf("demo commit %d: %w", i+1, err)
		}
	}
	return tbl, nil
}
