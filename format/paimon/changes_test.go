package paimon

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// snapshotChanges reads what Paimon's incremental read of snapshot s
// alone returns: its changelog files with a changelog producer; else, for
// an APPEND snapshot, the files its delta added (an append table's rows as
// +I), without the level-0 files of a table with deletion vectors (which
// Paimon's readers do not see), and nothing for COMPACT and OVERWRITE
// snapshots (Paimon's delta scan reads APPEND snapshots only). Rows come as
// canonical lines with their row kinds.
func snapshotChanges(t *testing.T, tbl *Table, s *Snapshot, mem memory.Allocator) []string {
	t.Helper()
	ctx := context.Background()
	target, err := tbl.SnapshotSchema(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := target.TableOptions()
	if err != nil {
		t.Fatal(err)
	}
	pk := len(target.PrimaryKeys) > 0
	var entries []ManifestEntry
	if pk && opts.ChangelogProducer != ChangelogNone {
		entries, err = tbl.Changelog(ctx, s)
	} else if s.CommitKind == CommitAppend {
		var delta []ManifestEntry
		delta, err = tbl.Delta(ctx, s)
		for _, e := range delta {
			if e.Kind == KindAdd && (!opts.DeletionVectors || e.File.Level > 0) {
				entries = append(entries, e)
			}
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	var batches []arrow.RecordBatch
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	for i := range entries {
		err := tbl.ReadFile(ctx, target, &entries[i], ReadOptions{SystemColumns: pk}, func(b arrow.RecordBatch) error {
			if !pk {
				b = withInsertKind(b, mem)
			}
			batches = append(batches, b)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return canonRows(t, batches, true)
}

// withInsertKind prepends a _VALUE_KIND column of +I to an append
// table's batch (taking it over).
func withInsertKind(b arrow.RecordBatch, mem memory.Allocator) arrow.RecordBatch {
	defer b.Release()
	kb := array.NewInt8Builder(mem)
	defer kb.Release()
	for range b.NumRows() {
		kb.Append(int8(RowInsert))
	}
	kinds := kb.NewArray()
	defer kinds.Release()
	fields := append([]arrow.Field{{Name: ValueKindColumn, Type: arrow.PrimitiveTypes.Int8}}, b.Schema().Fields()...)
	cols := append([]arrow.Array{kinds}, b.Columns()...)
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, b.NumRows())
}

// TestFixtureChanges compares, for every snapshot whose changes the
// writer's incremental read recorded, the changes read from the
// snapshot's changelog (or delta) files with that read.
func TestFixtureChanges(t *testing.T) {
	checked := 0
	for _, f := range fixtures(t) {
		t.Run(f.db+"."+f.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			tbl := f.open(t, mem)
			if refusedEngine(t, tbl) != "" {
				t.Skip("merge engine refused")
			}
			for _, s := range f.meta.Snapshots {
				p := filepath.Join(f.expected, "changes", strconv.FormatInt(s.ID, 10)+".jsonl")
				if s.Expired || !s.Changes {
					continue
				}
				if _, err := os.Stat(p); err != nil {
					continue
				}
				snap, err := tbl.Snapshot(context.Background(), s.ID)
				if err != nil {
					t.Fatal(err)
				}
				got := snapshotChanges(t, tbl, snap, mem)
				if d := diffLines(got, readLines(t, p)); d != "" {
					t.Errorf("snapshot %d (%s): changes differ from %s's incremental read:\n%s", s.ID, s.CommitKind, f.meta.Writer, d)
				}
				checked++
			}
		})
	}
	t.Logf("%d snapshot changes checked", checked)
}
