package feed_test

// The Delta oracle: tables written by delta-rs (the deltalake Python
// package) in randomized histories, committed under
// testdata/delta/written with the full state delta-rs itself reads at every
// version (EXPECTED.json; the generator is testdata/delta/gen). For every
// window between two readable versions, the feed applied to the state at
// its start must give exactly the state at its end.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/format/delta"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/internal/testkit/deltafx"
)

type deltaWritten struct {
	Writer    string `json:"writer"`
	Snapshots []struct {
		Version  int64            `json:"version"`
		Readable bool             `json:"readable"`
		Columns  [][]string       `json:"columns"`
		Rows     []map[string]any `json:"rows"`
	} `json:"snapshots"`
}

func TestDeltaOracle(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(deltaFixtureDir, "written", "*", "EXPECTED.json"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no written Delta tables under %s: %v", deltaFixtureDir, err)
	}
	for _, path := range dirs {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var exp deltaWritten
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(f)
			dec.UseNumber()
			err = dec.Decode(&exp)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			name := "delta." + filepath.Base(dir)
			mem := memory.NewCheckedAllocator(arrowpool.Shared())
			defer mem.AssertSize(t, 0)
			for _, budget := range []int64{0, 1} {
				eng := feed.New(deltaTables{name: openDelta(t, dir, name)},
					feed.Options{Allocator: mem, MaxBatchRows: 3, MemoryBudget: budget, SpillDir: t.TempDir()})
				var readable []int
				for i, s := range exp.Snapshots {
					if s.Readable {
						readable = append(readable, i)
					}
				}
				windows := 0
				for a, i := range readable {
					for b, j := range readable[a+1:] {
						if budget > 0 && a > 0 && b > 0 {
							// Spilling on every window from the first readable
							// version and every consecutive pair; all pairs
							// without.
							continue
						}
						from, to := exp.Snapshots[i], exp.Snapshots[j]
						req := feed.Request{Table: name, FromSnapshot: &from.Version, ToSnapshot: &to.Version}
						cols := deltaColumns(to.Columns)
						state := deltaState(deltaRename(t, dir, from.Version, to.Version, from.Rows), cols)
						changes, err := deltaChanges(eng, req)
						if err != nil {
							t.Errorf("window (%d, %d]: %v", from.Version, to.Version, err)
							continue
						}
						if err := deltaApply(state, changes, cols); err != nil {
							t.Errorf("window (%d, %d]: %v", from.Version, to.Version, err)
							continue
						}
						if d := deltaStateDiff(state, deltaState(to.Rows, cols)); d != "" {
							t.Errorf("window (%d, %d] (budget %d): the feed applied to the state at %d is not "+
								"delta-rs's state at %d:\n%s", from.Version, to.Version, budget, from.Version,
								to.Version, d)
						}
						windows++
					}
				}
				t.Logf("budget %d: %d windows over %d readable versions", budget, windows, len(readable))
				if windows == 0 {
					// VACUUM left one readable version: the history before
					// it cannot be read, and a window over it must say so.
					last := exp.Snapshots[readable[len(readable)-1]].Version
					_, err := deltaChanges(eng, feed.Request{Table: name, ToSnapshot: &last})
					if !errors.Is(err, feed.ErrResyncRequired) {
						t.Fatalf("no window to check (%d readable versions), and the whole history up to %d "+
							"read with err %v, want ErrResyncRequired", len(readable), last, err)
					}
					t.Logf("the history up to %d, vacuumed: %v", last, err)
				}
			}
		})
	}
}

// deltaRename renames the columns of rows read at version from to their
// names at version to, by column mapping id (tables with column mapping
// rename columns; without it, names are identities).
func deltaRename(t *testing.T, dir string, from, to int64, rows []map[string]any) []map[string]any {
	t.Helper()
	ctx := context.Background()
	log, err := delta.Open(ctx, os.DirFS(dir), dir)
	if err != nil {
		t.Fatal(err)
	}
	ids := func(v int64) map[int]string {
		_, m, err := log.Metadata(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		st, err := delta.ParseSchema(m.SchemaString)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int]string{}
		for _, f := range st.Fields {
			if id, ok := f.FieldID(); ok {
				out[id] = f.Name
			}
		}
		return out
	}
	before, after := ids(from), ids(to)
	names := map[string]string{}
	for id, n := range before {
		if m, ok := after[id]; ok {
			names[n] = m
		} else {
			names[n] = "" // dropped
		}
	}
	if len(names) == 0 {
		return rows
	}
	out := make([]map[string]any, len(rows))
	for i, r := range rows {
		out[i] = map[string]any{}
		for k, v := range r {
			if n, ok := names[k]; !ok {
				out[i][k] = v
			} else if n != "" {
				out[i][n] = v
			}
		}
	}
	return out
}

func deltaColumns(cols [][]string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c[0]
	}
	return out
}

// deltaState is a multiset of rows, each encoded over the columns.
type deltaStateSet map[string]int

func deltaState(rows []map[string]any, cols []string) deltaStateSet {
	st := deltaStateSet{}
	for _, r := range rows {
		norm := map[string]string{}
		for k, v := range r {
			norm[k] = deltafx.JSONValue(v)
		}
		for _, c := range cols {
			if _, ok := norm[c]; !ok {
				norm[c] = "null" // a column added after the row was written
			}
		}
		st[deltafx.Key(norm, cols)]++
	}
	return st
}

type deltaChange struct {
	op            string
	before, after map[string]string
}

// deltaChanges reads a window's changes with both images.
func deltaChanges(eng *feed.Engine, req feed.Request) ([]deltaChange, error) {
	ctx := context.Background()
	p, err := eng.Plan(ctx, req)
	if err != nil {
		return nil, err
	}
	var out []deltaChange
	for b, err := range eng.Read(ctx, p) {
		if err != nil {
			return nil, err
		}
		rec := b.Record
		ops := rec.Column(0).(*array.String)
		image := func(col, i int) map[string]string {
			img := rec.Column(col).(*array.Struct)
			if img.IsNull(i) {
				return nil
			}
			st := img.DataType().(*arrow.StructType)
			row := map[string]string{}
			for f := range st.NumFields() {
				row[st.Field(f).Name] = deltafx.Value(img.Field(f), i)
			}
			return row
		}
		for i := range int(rec.NumRows()) {
			out = append(out, deltaChange{op: strings.Clone(ops.Value(i)), before: image(1, i), after: image(2, i)})
		}
		rec.Release()
	}
	return out, nil
}

func deltaApply(st deltaStateSet, changes []deltaChange, cols []string) error {
	for _, c := range changes {
		switch c.op {
		case feed.OpInsert, feed.OpUpdateAfter:
			st[deltafx.Key(c.after, cols)]++
		case feed.OpDelete, feed.OpUpdateBefore:
			k := deltafx.Key(c.before, cols)
			if st[k] == 0 {
				return fmt.Errorf("%s of a row not in the state: %s", c.op, k)
			}
			st[k]--
			if st[k] == 0 {
				delete(st, k)
			}
		default:
			return fmt.Errorf("unexpected op %q", c.op)
		}
	}
	return nil
}

func deltaStateDiff(got, want deltaStateSet) string {
	var lines []string
	for k, n := range want {
		if got[k] < n {
			lines = append(lines, fmt.Sprintf("missing %dx %s", n-got[k], k))
		}
	}
	for k, n := range got {
		if want[k] < n {
			lines = append(lines, fmt.Sprintf("extra %dx %s", n-want[k], k))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
