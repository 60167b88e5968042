package paimon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/internal/testkit/paimonfx"
)

// fixtureRoot holds the tables Paimon's own writers wrote and what their
// reads returned (testdata/paimon/README.md).
const fixtureRoot = "../../testdata/paimon"

type fixture struct {
	db, name, expected string
	meta               paimonfx.Table
}

func fixtures(t *testing.T) []fixture {
	t.Helper()
	fxs, err := paimonfx.Fixtures(fixtureRoot)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]fixture, len(fxs))
	for i, f := range fxs {
		out[i] = fixture{db: f.DB, name: f.Name, expected: f.Expected, meta: f.Meta}
	}
	return out
}

func (f fixture) open(t *testing.T, mem memory.Allocator) *Table {
	t.Helper()
	root := filepath.Join(fixtureRoot, "warehouse", f.db+".db", f.name)
	tbl, err := Open(context.Background(), os.DirFS(root), f.db+"."+f.name, WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func readLines(t *testing.T, p string) []string {
	t.Helper()
	out, err := paimonfx.ReadLines(p)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// refusedEngine is the merge engine a fixture's table uses that the
// package refuses, if any.
func refusedEngine(t *testing.T, tbl *Table) string {
	t.Helper()
	ids, err := tbl.SchemaIDs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s, err := tbl.Schema(context.Background(), ids[len(ids)-1])
	if err != nil {
		t.Fatal(err)
	}
	o, err := s.TableOptions()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.PrimaryKeys) > 0 && o.MergeEngine == MergeFirstRow {
		return o.MergeEngine
	}
	return ""
}

// TestFixtureStates reads every snapshot of every fixture table and
// compares its full state with what the writer's own read returned.
func TestFixtureStates(t *testing.T) {
	checked := 0
	for _, f := range fixtures(t) {
		t.Run(f.db+"."+f.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			tbl := f.open(t, mem)
			ctx := context.Background()
			engine := refusedEngine(t, tbl)
			for _, s := range f.meta.Snapshots {
				snap, err := tbl.Snapshot(ctx, s.ID)
				if s.Expired {
					if !errors.Is(err, ErrSnapshotExpired) {
						t.Errorf("snapshot %d: got %v, want ErrSnapshotExpired", s.ID, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("snapshot %d: %v", s.ID, err)
				}
				if snap.CommitKind != s.CommitKind || snap.SchemaID != s.SchemaID {
					t.Errorf("snapshot %d: %s schema %d, want %s schema %d", s.ID, snap.CommitKind, snap.SchemaID, s.CommitKind, s.SchemaID)
				}
				var batches []arrow.RecordBatch
				err = tbl.ReadSnapshot(ctx, snap, func(b arrow.RecordBatch) error {
					batches = append(batches, b)
					return nil
				})
				got := canonRows(t, batches, false)
				for _, b := range batches {
					b.Release()
				}
				if engine != "" {
					if !errors.Is(err, ErrUnsupportedMergeEngine) {
						t.Fatalf("snapshot %d: got %v, want ErrUnsupportedMergeEngine for %s", s.ID, err, engine)
					}
					continue
				}
				if err != nil {
					t.Fatalf("snapshot %d: %v", s.ID, err)
				}
				want := readLines(t, filepath.Join(f.expected, "state", strconv.FormatInt(s.ID, 10)+".jsonl"))
				if d := diffLines(got, want); d != "" {
					t.Errorf("snapshot %d (%s): state differs from %s's read:\n%s", s.ID, s.CommitKind, f.meta.Writer, d)
				}
				checked++
			}
		})
	}
	t.Logf("%d snapshot states checked", checked)
}
