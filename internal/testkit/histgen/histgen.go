// Package histgen writes seeded random table histories with iceberg-go's
// own writers (appends, copy-on-write and merge-on-read deletes, equality
// deletes, upserts, filtered overwrites, compactions, schema changes), for
// the engine's oracle tests and the end-to-end tests.
package histgen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// Config shapes a random history.
type Config struct {
	FormatVersion int    // 2 or 3
	DeleteMode    string // table.WriteModeCopyOnWrite or table.WriteModeMergeOnRead
	Partitioned   bool   // identity partition on grp
	Commits       int    // snapshots to write
	SchemaChanges bool   // add a column, rename one, promote int to long
}

func (c Config) String() string {
	p := "unpartitioned"
	if c.Partitioned {
		p = "partitioned"
	}
	if c.SchemaChanges {
		p += "+schema"
	}
	return fmt.Sprintf("v%d/%s/%s", c.FormatVersion, c.DeleteMode, p)
}

// History is a table with a random history.
type History struct {
	Catalog   *catalog.Catalog
	Table     *table.Table
	Snapshots []int64  // in commit order, all on main's lineage
	Log       []string // what each commit did
}

// Table is the name of the generated table.
const Table = "gen.events"

// Generate writes a seeded random history into the warehouse dir: the
// table gen.events with columns id (identifier), grp, val, note and small.
// The caller closes the returned catalog.
func Generate(ctx context.Context, dir string, seed uint64, cfg Config) (*History, error) {
	cat, err := tablewrite.OpenWarehouse(ctx, dir)
	if err != nil {
		return nil, err
	}
	h, err := generate(ctx, cat, seed, cfg)
	if err != nil {
		cat.Close()
		return nil, err
	}
	return h, nil
}

func generate(ctx context.Context, cat *catalog.Catalog, seed uint64, cfg Config) (*History, error) {
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "grp", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "val", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 4, Name: "note", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 5, Name: "small", Type: iceberg.PrimitiveTypes.Int32},
	)
	opts := []icecatalog.CreateTableOpt{icecatalog.WithProperties(iceberg.Properties{
		"format-version":                fmt.Sprint(cfg.FormatVersion),
		table.WriteDeleteModeKey:        cfg.DeleteMode,
		"write.update.mode":             cfg.DeleteMode,
		"write.merge.mode":              cfg.DeleteMode,
		"write.parquet.row-group-limit": "50",
	})}
	if cfg.Partitioned {
		spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000,
			Name: "grp", Transform: iceberg.IdentityTransform{}})
		opts = append(opts, icecatalog.WithPartitionSpec(&spec))
	}
	tbl, err := tablewrite.CreateTable(ctx, cat, Table, sc, opts...)
	if err != nil {
		return nil, err
	}
	g := &History{Catalog: cat, Table: tbl}
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

	var failed error
	commit := func(what string, fn func() (*table.Table, error)) {
		if failed != nil {
			return
		}
		before := g.Table.CurrentSnapshot()
		next, err := fn()
		if err != nil {
			failed = fmt.Errorf("seed %d %s: commit %d (%s): %w\nlog: %s", seed, cfg, len(g.Log), what, err,
				strings.Join(g.Log, "; "))
			return
		}
		g.Table = next
		if cur := next.CurrentSnapshot(); cur != nil && (before == nil || cur.SnapshotID != before.SnapshotID) {
			g.Snapshots = append(g.Snapshots, cur.SnapshotID)
			g.Log = append(g.Log, fmt.Sprintf("%d:%s(%s)", len(g.Snapshots), what, cur.Summary.Operation))
		} else {
			g.Log = append(g.Log, what+"(no snapshot)")
		}
	}

	commit("append", func() (*table.Table, error) { return tablewrite.Append(ctx, g.Table, newRows(20+r.IntN(20), nil)) })
	for failed == nil && len(g.Snapshots) < cfg.Commits {
		switch op := r.IntN(10); {
		case op < 3:
			commit("append", func() (*table.Table, error) { return tablewrite.Append(ctx, g.Table, newRows(1+r.IntN(25), nil)) })
		case op == 3:
			ids := pickIDs(1 + r.IntN(6))
			commit(fmt.Sprintf("delete id in %v", ids), func() (*table.Table, error) {
				return g.Table.Delete(ctx, idIn(ids), nil)
			})
		case op == 4:
			limit := r.Int64N(200)
			commit(fmt.Sprintf("delete val < %d", limit), func() (*table.Table, error) {
				return g.Table.Delete(ctx, iceberg.LessThan(iceberg.Reference("val"), limit), nil)
			})
		case op == 5:
			ids := pickIDs(1 + r.IntN(6))
			commit(fmt.Sprintf("equality delete %v", ids), func() (*table.Table, error) {
				return tablewrite.EqualityDelete(ctx, g.Table, "id", keyRows(g.Table, ids), nil)
			})
		case op == 6 && r.IntN(2) == 0:
			// An upsert that writes some live rows again unchanged (a
			// merge-on-read `UPDATE t SET c = c`): no change for those.
			ids := pickIDs(1 + r.IntN(5))
			commit(fmt.Sprintf("upsert unchanged %v", ids), func() (*table.Table, error) {
				rows, err := tablewrite.LiveRows(ctx, g.Table, "id", ids)
				if err != nil || len(rows) == 0 {
					return g.Table, err
				}
				if r.IntN(2) == 0 {
					rows[0]["val"] = r.Int64N(1000) // one row changes, the others do not
				}
				return tablewrite.EqualityDelete(ctx, g.Table, "id", keyRows(g.Table, ids), rows)
			})
		case op == 6:
			ids := pickIDs(1 + r.IntN(5))
			rows := newRows(len(ids), ids)
			commit(fmt.Sprintf("upsert %v", ids), func() (*table.Table, error) {
				return tablewrite.EqualityDelete(ctx, g.Table, "id", keyRows(g.Table, ids), rows)
			})
		case op == 7:
			grp := []string{"a", "b", "c"}[r.IntN(3)]
			rows := newRows(1+r.IntN(5), nil)
			for _, row := range rows {
				row["grp"] = grp
			}
			commit(fmt.Sprintf("overwrite grp = %s", grp), func() (*table.Table, error) {
				rec, err := tablewrite.Record(g.Table, rows)
				if err != nil {
					return nil, err
				}
				defer rec.Release()
				rdr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
				if err != nil {
					return nil, err
				}
				defer rdr.Release()
				return g.Table.Overwrite(ctx, rdr, nil,
					table.WithOverwriteFilter(iceberg.EqualTo(iceberg.Reference("grp"), grp)))
			})
		case op == 8:
			commit("compact", func() (*table.Table, error) { return tablewrite.Compact(ctx, g.Table) })
		case op == 9 && cfg.SchemaChanges:
			switch {
			case !added:
				added = true
				commit("add column extra", func() (*table.Table, error) {
					tx := g.Table.NewTransaction()
					if err := tx.UpdateSchema(true, false).AddColumn([]string{"extra"}, iceberg.PrimitiveTypes.Float64, "", false, nil).Commit(); err != nil {
						return nil, err
					}
					return tx.Commit(ctx)
				})
			case !renamed:
				renamed = true
				commit("rename note to comment", func() (*table.Table, error) {
					tx := g.Table.NewTransaction()
					if err := tx.UpdateSchema(true, false).RenameColumn([]string{"note"}, "comment").Commit(); err != nil {
						return nil, err
					}
					return tx.Commit(ctx)
				})
			default:
				commit("promote small to long", func() (*table.Table, error) {
					field, ok := g.Table.Schema().FindFieldByName("small")
					if !ok || field.Type.Equals(iceberg.PrimitiveTypes.Int64) {
						return g.Table, nil
					}
					tx := g.Table.NewTransaction()
					if err := tx.UpdateSchema(true, false).UpdateColumn([]string{"small"},
						table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.PrimitiveTypes.Int64}}).Commit(); err != nil {
						return nil, err
					}
					return tx.Commit(ctx)
				})
			}
		}
	}
	return g, failed
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
