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
	"github.com/apache/iceberg-go/table/compaction"

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

// EqualityDelete commits, as one snapshot, equality deletes on the column
// keyCol and the rows to insert (none for a plain delete; the same keys
// for an upsert). Each key row holds keyCol and, in a partitioned table,
// the partition's source columns: an equality delete applies within its
// partition.
func EqualityDelete(ctx context.Context, tbl *table.Table, keyCol string, keys, inserts []Row) (*table.Table, error) {
	sc := tbl.Schema()
	key, ok := sc.FindFieldByName(keyCol)
	if !ok {
		return nil, fmt.Errorf("no column %q", keyCol)
	}
	var fields []iceberg.NestedField
	for _, f := range sc.Fields() {
		if _, in := keys[0][f.Name]; in {
			fields = append(fields, f)
		}
	}
	delSchema := iceberg.NewSchema(0, fields...)
	delArrow, err := table.SchemaToArrowSchema(delSchema, nil, true, false)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(keys)
	if err != nil {
		return nil, err
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, delArrow, strings.NewReader(string(data)))
	if err != nil {
		return nil, fmt.Errorf("delete keys do not fit the schema: %w", err)
	}
	tx := tbl.NewTransaction()
	deletes, err := tx.WriteEqualityDeletes(ctx, []int{key.ID}, func(yield func(arrow.RecordBatch, error) bool) {
		yield(rec, nil)
	})
	rec.Release()
	if err != nil {
		return nil, err
	}
	rd := tx.NewRowDelta(nil)
	rd.AddDeletes(deletes...)
	if len(inserts) > 0 {
		rows, err := Record(tbl, inserts)
		if err != nil {
			return nil, err
		}
		for df, err := range table.WriteRecords(ctx, tbl, rows.Schema(), func(yield func(arrow.RecordBatch, error) bool) {
			yield(rows, nil)
		}) {
			if err != nil {
				return nil, err
			}
			rd.AddRows(df)
		}
	}
	if err := rd.Commit(ctx); err != nil {
		return nil, err
	}
	return tx.Commit(ctx)
}

// Expire expires, with iceberg-go's own ExpireSnapshots, every snapshot
// of the table but the last keep, and returns the table after the commit.
func Expire(ctx context.Context, tbl *table.Table, keep int) (*table.Table, error) {
	tx := tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithRetainLast(keep), table.WithOlderThan(0)); err != nil {
		return nil, err
	}
	return tx.Commit(ctx)
}

// LiveRows returns the live rows of the table's current snapshot whose
// column keyCol holds one of keys, keyed by column name with JSON values
// (timestamps as microseconds), so that they can be written again.
func LiveRows(ctx context.Context, tbl *table.Table, keyCol string, keys []int64) ([]Row, error) {
	if tbl.CurrentSnapshot() == nil {
		return nil, nil
	}
	// The whole table, filtered here: a scan's row filter is not relied on.
	data, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		return nil, err
	}
	defer data.Release()
	want := map[int64]bool{}
	for _, k := range keys {
		want[k] = true
	}
	var out []Row
	rdr := array.NewTableReader(data, 0)
	defer rdr.Release()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		idx := rec.Schema().FieldIndices(keyCol)
		if len(idx) != 1 {
			return nil, fmt.Errorf("no column %q", keyCol)
		}
		ids, ok := rec.Column(idx[0]).(*array.Int64)
		if !ok {
			return nil, fmt.Errorf("column %q is not int64", keyCol)
		}
		for i := range int(rec.NumRows()) {
			if ids.IsNull(i) || !want[ids.Value(i)] {
				continue
			}
			row := Row{}
			for c, f := range rec.Schema().Fields() {
				if col := rec.Column(c); !col.IsNull(i) {
					row[f.Name] = col.GetOneForMarshal(i)
				}
			}
			out = append(out, row)
		}
	}
	return out, rdr.Err()
}

// Compact rewrites the data files of each partition, with the deletes that
// apply to them, into new files: a replace snapshot. A table with fewer
// than two data files is returned as it is.
func Compact(ctx context.Context, tbl *table.Table) (*table.Table, error) {
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, err
	}
	if len(tasks) < 2 {
		return tbl, nil
	}
	cfg := compaction.Config{TargetFileSizeBytes: 64 << 20, MinFileSizeBytes: 32 << 20, MaxFileSizeBytes: 128 << 20,
		MinInputFiles: 2, DeleteFileThreshold: 1, PackingLookback: compaction.DefaultPackingLookback}
	plan, err := cfg.PlanCompaction(tasks)
	if err != nil {
		return nil, err
	}
	if len(plan.Groups) == 0 {
		return tbl, nil
	}
	groups := make([]table.CompactionTaskGroup, len(plan.Groups))
	for i, g := range plan.Groups {
		groups[i] = table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes}
	}
	res, err := tbl.RewriteDataFiles(ctx, groups, table.RewriteDataFilesOptions{})
	if err != nil {
		return nil, err
	}
	return res.Table, nil
}
