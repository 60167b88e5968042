package feed_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/internal/tablewrite"
)

// genConfig shapes a random history.
type genConfig struct {
	formatVersion int    // 2 or 3
	deleteMode    string // copy-on-write or merge-on-read
	partitioned   bool   // identity partition on grp
	commits       int
	schemaChanges bool
}

func (c genConfig) String() string {
	p := "unpartitioned"
	if c.partitioned {
		p = "partitioned"
	}
	if c.schemaChanges {
		p += "+schema"
	}
	return fmt.Sprintf("v%d/%s/%s", c.formatVersion, c.deleteMode, p)
}

// generated is a table with a random history, every commit written by
// iceberg-go's own writers.
type generated struct {
	cat       *catalog.Catalog
	tbl       *table.Table
	snapshots []int64 // in commit order, all on main's lineage
	log       []string
}

// genTable is the name of generated tables.
const genTable = "gen.events"

// generate writes a seeded random history: appends, copy-on-write or
// merge-on-read deletes, equality deletes (of live keys, deleted keys and
// keys that never existed), upserts in one commit, filtered overwrites,
// compactions and schema changes.
func generate(t *testing.T, seed uint64, cfg genConfig) *generated {
	t.Helper()
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "grp", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "val", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 4, Name: "note", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 5, Name: "small", Type: iceberg.PrimitiveTypes.Int32},
	)
	opts := []icecatalog.CreateTableOpt{icecatalog.WithProperties(iceberg.Properties{
		"format-version":                fmt.Sprint(cfg.formatVersion),
		table.WriteDeleteModeKey:        cfg.deleteMode,
		"write.update.mode":             cfg.deleteMode,
		"write.merge.mode":              cfg.deleteMode,
		"write.parquet.row-group-limit": "50",
	})}
	if cfg.partitioned {
		spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000,
			Name: "grp", Transform: iceberg.IdentityTransform{}})
		opts = append(opts, icecatalog.WithPartitionSpec(&spec))
	}
	tbl, err := tablewrite.CreateTable(ctx, cat, genTable, sc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	g := &generated{cat: cat, tbl: tbl}
	r := rand.New(rand.NewPCG(seed, 99))
	nextID := int64(1)
	var everIDs []int64
	renamed, added := false, false

	newRows := func(n int, ids []int64) []tablewrite.Row {
		var rows []tablewrite.Row
		for i := range n {
			id := nextID
			if ids != nil {
				id = ids[i]
			} else {
				nextID++
				everIDs = append(everIDs, id)
			}
			row := tablewrite.Row{"id": id, "grp": []string{"a", "b", "c"}[r.IntN(3)], "val": r.Int64N(1000)}
			noteCol := "note"
			if renamed {
				noteCol = "comment"
			}
			if r.IntN(4) > 0 {
				row[noteCol] = fmt.Sprintf("n%d-%d", id, r.IntN(100))
			}
			if r.IntN(3) > 0 {
				row["small"] = r.IntN(100)
			}
			if added && r.IntN(2) == 0 {
				row["extra"] = r.Float64()
			}
			rows = append(rows, row)
		}
		return rows
	}
	pickIDs := func(n int) []int64 {
		var out []int64
		for range n {
			switch {
			case len(everIDs) > 0 && r.IntN(6) > 0:
				out = append(out, everIDs[r.IntN(len(everIDs))])
			default:
				out = append(out, nextID+1000+r.Int64N(1000)) // never existed
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	idIn := func(ids []int64) iceberg.BooleanExpression {
		return iceberg.IsIn(iceberg.Reference("id"), ids...)
	}

	commit := func(what string, fn func() (*table.Table, error)) {
		t.Helper()
		before := g.tbl.CurrentSnapshot()
		next, err := fn()
		if err != nil {
			t.Fatalf("seed %d %s: commit %d (%s): %v\nlog: %s", seed, cfg, len(g.log), what, err, strings.Join(g.log, "; "))
		}
		g.tbl = next
		if cur := next.CurrentSnapshot(); cur != nil && (before == nil || cur.SnapshotID != before.SnapshotID) {
			g.snapshots = append(g.snapshots, cur.SnapshotID)
			g.log = append(g.log, fmt.Sprintf("%d:%s(%s)", len(g.snapshots), what, cur.Summary.Operation))
		} else {
			g.log = append(g.log, what+"(no snapshot)")
		}
	}

	commit("append", func() (*table.Table, error) { return tablewrite.Append(ctx, g.tbl, newRows(20+r.IntN(20), nil)) })
	for len(g.snapshots) < cfg.commits {
		switch op := r.IntN(10); {
		case op < 3:
			commit("append", func() (*table.Table, error) { return tablewrite.Append(ctx, g.tbl, newRows(1+r.IntN(25), nil)) })
		case op == 3:
			ids := pickIDs(1 + r.IntN(6))
			commit(fmt.Sprintf("delete id in %v", ids), func() (*table.Table, error) {
				return g.tbl.Delete(ctx, idIn(ids), nil)
			})
		case op == 4:
			limit := r.Int64N(200)
			commit(fmt.Sprintf("delete val < %d", limit), func() (*table.Table, error) {
				return g.tbl.Delete(ctx, iceberg.LessThan(iceberg.Reference("val"), limit), nil)
			})
		case op == 5:
			ids := pickIDs(1 + r.IntN(6))
			commit(fmt.Sprintf("equality delete %v", ids), func() (*table.Table, error) {
				return tablewrite.EqualityDelete(ctx, g.tbl, "id", keyRows(g.tbl, ids), nil)
			})
		case op == 6:
			ids := pickIDs(1 + r.IntN(5))
			rows := newRows(len(ids), ids)
			commit(fmt.Sprintf("upsert %v", ids), func() (*table.Table, error) {
				return tablewrite.EqualityDelete(ctx, g.tbl, "id", keyRows(g.tbl, ids), rows)
			})
		case op == 7:
			grp := []string{"a", "b", "c"}[r.IntN(3)]
			rows := newRows(1+r.IntN(5), nil)
			for _, row := range rows {
				row["grp"] = grp
			}
			commit(fmt.Sprintf("overwrite grp = %s", grp), func() (*table.Table, error) {
				rec, err := tablewrite.Record(g.tbl, rows)
				if err != nil {
					return nil, err
				}
				defer rec.Release()
				rdr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
				if err != nil {
					return nil, err
				}
				defer rdr.Release()
				return g.tbl.Overwrite(ctx, rdr, nil,
					table.WithOverwriteFilter(iceberg.EqualTo(iceberg.Reference("grp"), grp)))
			})
		case op == 8:
			commit("compact", func() (*table.Table, error) { return tablewrite.Compact(ctx, g.tbl) })
		case op == 9 && cfg.schemaChanges:
			switch {
			case !added:
				added = true
				commit("add column extra", func() (*table.Table, error) {
					tx := g.tbl.NewTransaction()
					if err := tx.UpdateSchema(true, false).AddColumn([]string{"extra"}, iceberg.PrimitiveTypes.Float64, "", false, nil).Commit(); err != nil {
						return nil, err
					}
					return tx.Commit(ctx)
				})
			case !renamed:
				renamed = true
				commit("rename note to comment", func() (*table.Table, error) {
					tx := g.tbl.NewTransaction()
					if err := tx.UpdateSchema(true, false).RenameColumn([]string{"note"}, "comment").Commit(); err != nil {
						return nil, err
					}
					return tx.Commit(ctx)
				})
			default:
				commit("promote small to long", func() (*table.Table, error) {
					field, ok := g.tbl.Schema().FindFieldByName("small")
					if !ok || field.Type.Equals(iceberg.PrimitiveTypes.Int64) {
						return g.tbl, nil
					}
					tx := g.tbl.NewTransaction()
					if err := tx.UpdateSchema(true, false).UpdateColumn([]string{"small"},
						table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.PrimitiveTypes.Int64}}).Commit(); err != nil {
						return nil, err
					}
					return tx.Commit(ctx)
				})
			}
		}
	}
	return g
}

// keyRows are the equality delete rows of ids: in a partitioned table each
// id is deleted in every group (where it is not, the delete hits nothing).
func keyRows(tbl *table.Table, ids []int64) []tablewrite.Row {
	groups := []string{"a", "b", "c"}
	var out []tablewrite.Row
	for _, id := range ids {
		if spec := tbl.Spec(); spec.NumFields() == 0 {
			out = append(out, tablewrite.Row{"id": id})
			continue
		}
		for _, g := range groups {
			out = append(out, tablewrite.Row{"id": id, "grp": g})
		}
	}
	return out
}
