// Package bench builds the benchmark workloads of docs/BENCHMARKS.md with
// iceberg-go's own writers and measures Sluice against the limits of the
// same machine: raw Parquet decode of the same files, Flight loopback of
// pre-decoded batches, a full re-read, and the peer a Python user would
// pick (pyiceberg).
package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// Columns of the reference schema: 11 columns of the usual kinds.
var Columns = []string{"id", "customer_id", "country", "name", "email", "amount", "discount", "created_at",
	"updated_at", "active", "priority"}

// Schema is the reference schema; id is its identifier field.
func Schema() *iceberg.Schema {
	f := func(id int, name string, t iceberg.Type, req bool) iceberg.NestedField {
		return iceberg.NestedField{ID: id, Name: name, Type: t, Required: req}
	}
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		f(1, "id", iceberg.PrimitiveTypes.Int64, true),
		f(2, "customer_id", iceberg.PrimitiveTypes.Int64, false),
		f(3, "country", iceberg.PrimitiveTypes.String, false),
		f(4, "name", iceberg.PrimitiveTypes.String, false),
		f(5, "email", iceberg.PrimitiveTypes.String, false),
		f(6, "amount", iceberg.PrimitiveTypes.Float64, false),
		f(7, "discount", iceberg.PrimitiveTypes.Float64, false),
		f(8, "created_at", iceberg.PrimitiveTypes.TimestampTz, false),
		f(9, "updated_at", iceberg.PrimitiveTypes.TimestampTz, false),
		f(10, "active", iceberg.PrimitiveTypes.Bool, false),
		f(11, "priority", iceberg.PrimitiveTypes.Int32, false),
	)
}

var countries = []string{"DE", "DK", "ES", "FI", "FR", "IT", "NL", "NO", "PL", "SE", "SE", "SE"}

// Rows builds n deterministic rows with ids from first, sorted by country
// when clustered (about 25% of them are "SE"). The caller releases the
// record.
func Rows(mem memory.Allocator, sc *arrow.Schema, seed uint64, first int64, n int, clustered bool) arrow.RecordBatch {
	r := rand.New(rand.NewPCG(seed, uint64(first)))
	cs := make([]string, n)
	for i := range cs {
		cs[i] = countries[r.IntN(len(countries))]
	}
	if clustered {
		slices.Sort(cs)
	}
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	for i := range n {
		id := first + int64(i)
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.Int64Builder).Append(r.Int64N(1_000_000))
		b.Field(2).(*array.StringBuilder).Append(cs[i])
		b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("customer %d", r.IntN(100000)))
		b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("user%d@example.com", r.IntN(1_000_000)))
		b.Field(5).(*array.Float64Builder).Append(float64(r.IntN(1_000_000)) / 100)
		b.Field(6).(*array.Float64Builder).Append(r.Float64())
		b.Field(7).(*array.TimestampBuilder).Append(arrow.Timestamp(base + r.Int64N(365*24*3600*1_000_000)))
		b.Field(8).(*array.TimestampBuilder).Append(arrow.Timestamp(base + r.Int64N(365*24*3600*1_000_000)))
		b.Field(9).(*array.BooleanBuilder).Append(r.IntN(2) == 0)
		b.Field(10).(*array.Int32Builder).Append(int32(r.IntN(10)))
	}
	return b.NewRecordBatch()
}

// Reference is the reference workload: a table whose history is 4 appends
// of rows clustered on country (one data file each), then a snapshot of
// equality deletes of 3 keys.
type Reference struct {
	Table     string
	Appends   []int64 // the append snapshots
	Deletes   int64   // the equality delete snapshot
	DataFiles []string
}

// WriteReference writes the reference workload of rows rows into cat.
func WriteReference(ctx context.Context, cat *catalog.Catalog, name string, rows int) (*Reference, error) {
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
	ref := &Reference{Table: name}
	// One sorted run split in 4: each file holds a range of countries, so a
	// filter on country can skip files and row groups.
	all := Rows(memory.DefaultAllocator, sc, 1, 1, rows, true)
	defer all.Release()
	per := rows / 4
	for i := range 4 {
		part := all.NewSlice(int64(i*per), int64(min((i+1)*per, rows)))
		arrTbl := array.NewTableFromRecords(sc, []arrow.RecordBatch{part})
		tbl, err = tbl.AppendTable(ctx, arrTbl, int64(per)+1, nil)
		arrTbl.Release()
		part.Release()
		if err != nil {
			return nil, err
		}
		ref.Appends = append(ref.Appends, tbl.CurrentSnapshot().SnapshotID)
	}
	keys := []tablewrite.Row{{"id": 17}, {"id": int64(rows / 2)}, {"id": int64(rows - 5)}}
	if tbl, err = tablewrite.EqualityDelete(ctx, tbl, "id", keys, nil); err != nil {
		return nil, err
	}
	ref.Deletes = tbl.CurrentSnapshot().SnapshotID
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range tasks {
		ref.DataFiles = append(ref.DataFiles, t.File.FilePath())
	}
	return ref, nil
}
