package feed_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/format/paimon"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/internal/testkit/paimonfx"
	"github.com/sluicefeed/sluice/lake"
)

// unprunedTables serves Paimon sources whose planners are never given the
// filter's pruner: the same feed, computed from every file.
type unprunedTables map[string]*paimon.Source

func (t unprunedTables) Load(ctx context.Context, name string) (feed.Table, error) {
	tbl, err := paimonTables(t).Load(ctx, name)
	if err != nil {
		return nil, err
	}
	return unpruned{tbl}, nil
}

func (t unprunedTables) ListTables(ctx context.Context) ([]string, error) {
	return paimonTables(t).ListTables(ctx)
}

type unpruned struct{ lake.Table }

func (u unpruned) Planner(ctx context.Context, opts lake.PlanOptions) (lake.Planner, error) {
	opts.Prune = nil
	return u.Table.Planner(ctx, opts)
}

// paimonFeedRows reads req and renders its change rows as sorted canonical
// lines, and returns the files its plan skipped.
func paimonFeedRows(ctx context.Context, eng *feed.Engine, req feed.Request) ([]string, int64, error) {
	p, err := eng.Plan(ctx, req)
	if err != nil {
		return nil, 0, err
	}
	var skipped int64
	for _, sp := range p.Snapshots {
		skipped += sp.FilesSkipped
	}
	var out []string
	for b, err := range eng.Read(ctx, p) {
		if err != nil {
			return nil, 0, err
		}
		lines, err := paimonfx.Rows([]arrow.RecordBatch{b.Record}, false)
		b.Record.Release()
		if err != nil {
			return nil, 0, err
		}
		out = append(out, lines...)
	}
	slices.Sort(out)
	return out, skipped, nil
}

// TestPaimonPrimaryKeyPruning filters the feeds of every primary-key
// fixture table. A filter over the primary key and partition columns
// skips files by their partition and key statistics, and its feed equals
// the feed computed from every file, and, applied to the writer's
// filtered state at the window's start, gives its filtered state at the
// end (such a filter keeps a key or drops it whatever its values). A
// filter that reads a value column skips a file only when its key part
// rules the file out: a file may hold an older version of a key that a
// newer file holds, so value statistics never prune (and with an OR over
// a value column, nothing is skipped), and its feed equals the unpruned
// one.
func TestPaimonPrimaryKeyPruning(t *testing.T) {
	fxs, err := paimonfx.Fixtures(paimonFixtureRoot)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	type row struct {
		DT string `json:"dt"`
		ID int64  `json:"id"`
	}
	filters := []struct {
		expr string
		// keep, for a filter over key and partition columns only, says
		// which state rows it keeps (nil: the filter reads values).
		keep func(row) bool
		// prunes: the filter must skip files somewhere; never: it must
		// skip none.
		prunes, never bool
	}{
		{"id < 60", func(r row) bool { return r.ID < 60 }, true, false},
		{"dt = '2026-01-02'", func(r row) bool { return r.DT == "2026-01-02" }, true, false},
		{"dt = '2026-01-01' AND id >= 150", func(r row) bool { return r.DT == "2026-01-01" && r.ID >= 150 }, true, false},
		{"id >= 120 AND v = 'ann'", nil, true, false},
		{"id < 20 OR v = 'bo'", nil, false, true},
		{"v IS NULL", nil, false, true},
	}
	// prunedAt counts, per table and filter, the files the plans skipped.
	prunedAt := map[string]int64{}
	for _, f := range fxs {
		dir := f.Dir
		probe, err := paimon.NewSource(ctx, os.DirFS(dir), "probe")
		if err != nil {
			t.Fatal(err)
		}
		latest, err := probe.Table().Latest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		schema, err := probe.Table().SnapshotSchema(ctx, latest)
		if err != nil {
			t.Fatal(err)
		}
		if len(schema.PrimaryKeys) == 0 {
			continue
		}
		if _, ok := schema.FieldByName("v"); !ok {
			continue // the aggregation table has no value column v
		}
		t.Run(f.DB+"."+f.Name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(arrowpool.Shared())
			defer mem.AssertSize(t, 0)
			eng, src, name := paimonEngine(t, f, mem, 7)
			defer eng.Close()
			plain := feed.New(unprunedTables{name: src}, feed.Options{Allocator: mem, MaxBatchRows: 7,
				SpillDir: t.TempDir()})
			defer plain.Close()
			var present []int64
			for _, s := range f.Meta.Snapshots {
				if !s.Expired {
					present = append(present, s.ID)
				}
			}
			// The whole history, and up to five windows of one snapshot
			// spread over it.
			windows := [][2]int64{{present[0], present[len(present)-1]}}
			step := max((len(present)-1)/5, 1)
			for i := 1; i < len(present); i += step {
				windows = append(windows, [2]int64{present[i-1], present[i]})
			}
			for _, fl := range filters {
				var skipped int64
				for _, w := range windows {
					from, to := w[0], w[1]
					req := feed.Request{Table: name, FromSnapshot: &from, ToSnapshot: &to, Filter: fl.expr}
					got, n, err := paimonFeedRows(ctx, eng, req)
					if err != nil {
						t.Fatalf("%s, window (%d, %d]: %v", fl.expr, from, to, err)
					}
					skipped += n
					want, _, err := paimonFeedRows(ctx, plain, req)
					if err != nil {
						t.Fatalf("%s, window (%d, %d], unpruned: %v", fl.expr, from, to, err)
					}
					if d := paimonfx.Diff(got, want); d != "" {
						t.Errorf("%s, window (%d, %d]: the pruned feed is not the unpruned one:\n%s", fl.expr, from, to, d)
					}
					if fl.keep == nil {
						continue
					}
					keep := func(st paimonfx.State) paimonfx.State {
						out := paimonfx.State{}
						for l, c := range st {
							var r row
							if err := json.Unmarshal([]byte(l), &r); err != nil {
								t.Fatal(err)
							}
							if fl.keep(r) {
								out[l] = c
							}
						}
						return out
					}
					st := keep(paimonLoadState(t, f, from, paimonColumns(t, src, to)))
					if err := paimonApply(ctx, eng, req, st); err != nil {
						t.Errorf("%s, window (%d, %d]: %v", fl.expr, from, to, err)
						continue
					}
					if d := st.Diff(keep(paimonLoadState(t, f, to, nil))); d != "" {
						t.Errorf("%s, window (%d, %d]: the filtered feed applied to the filtered state is not the "+
							"writer's filtered state:\n%s", fl.expr, from, to, d)
					}
				}
				t.Logf("%s: %d files skipped over %d windows", fl.expr, skipped, len(windows))
				if fl.never && skipped != 0 {
					t.Errorf("%s: %d files skipped; a filter a value column can satisfy must skip none", fl.expr, skipped)
				}
				prunedAt[fmt.Sprintf("%s|%s", f.Name, fl.expr)] = skipped
			}
		})
	}
	for _, fl := range filters {
		total := int64(0)
		for k, n := range prunedAt {
			if strings.HasSuffix(k, "|"+fl.expr) {
				total += n
			}
		}
		if fl.prunes && total == 0 {
			t.Errorf("%s: no file of any primary-key table skipped", fl.expr)
		}
	}
}
