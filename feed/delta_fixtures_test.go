package feed_test

// Delta fixture tests: real Delta tables that delta-rs and delta-kernel-rs
// test against (testdata/delta at the repository root, with their
// provenance), and the change feeds those projects' own tests state
// (EXPECTED.json). Each query maps onto a Sluice window: Delta's inclusive
// start_version v is from_snapshot v-1, its inclusive start_timestamp T is
// from_timestamp_ms T-1, its end bounds are Sluice's. Sluice's changes are
// flattened into Delta CDF rows (insert, delete, update_preimage,
// update_postimage with _commit_version and _commit_timestamp) and compared
// as multisets over the query's columns.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/format/delta"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/internal/testkit/deltafx"
)

// deltaFixtureDir is where the Delta fixtures are.
const deltaFixtureDir = "../testdata/delta"

// deltaTables serves Delta tables by name.
type deltaTables map[string]*delta.Source

func (ts deltaTables) Load(ctx context.Context, name string) (feed.Table, error) {
	src, ok := ts[name]
	if !ok {
		return nil, fmt.Errorf("no table %s", name)
	}
	return src.Load(ctx)
}

func (ts deltaTables) ListTables(context.Context) ([]string, error) {
	var names []string
	for n := range ts {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// openDelta serves the Delta table in dir as name.
func openDelta(t *testing.T, dir, name string) *delta.Source {
	t.Helper()
	src, err := delta.NewSource(context.Background(), os.DirFS(dir), name)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func TestDeltaFixturesExpected(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(deltaFixtureDir, "*", "EXPECTED.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no Delta fixtures under %s: %v", deltaFixtureDir, err)
	}
	for _, path := range paths {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			exp, err := deltafx.Read(path)
			if err != nil {
				t.Fatal(err)
			}
			name := "delta." + filepath.Base(dir)
			mem := memory.NewCheckedAllocator(arrowpool.Shared())
			defer mem.AssertSize(t, 0)
			eng := feed.New(deltaTables{name: openDelta(t, dir, name)}, feed.Options{Allocator: mem, MaxBatchRows: 5})
			for _, q := range exp.Queries {
				t.Run(q.ID, func(t *testing.T) {
					w, err := q.Window()
					if err != nil {
						t.Fatal(err)
					}
					got, err := deltaRows(eng, feed.Request{Table: name, FromSnapshot: w.FromSnapshot,
						ToSnapshot: w.ToSnapshot, FromTimestampMs: w.FromTimestampMs, ToTimestampMs: w.ToTimestampMs,
						Filter: w.Filter})
					if q.ExpectError != nil {
						want, ok := deltafx.Refusals[q.ID]
						switch {
						case !ok:
							t.Fatalf("no Sluice answer recorded for the peer's error %v", q.ExpectError)
						case want.Empty:
							if err != nil || len(got) != 0 {
								t.Fatalf("got %d rows, err %v; want an empty window", len(got), err)
							}
						case err == nil || !strings.Contains(err.Error(), want.Says):
							t.Fatalf("got err %v, want one saying %q", err, want.Says)
						}
						t.Logf("peer: %v; Sluice: %v", q.ExpectError, err)
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					if d := deltafx.Compare(q, got); d != "" {
						t.Error(d)
					}
				})
			}
		})
	}
}

// deltaRows reads a window and flattens it into Delta CDF rows.
func deltaRows(eng *feed.Engine, req feed.Request) ([]map[string]string, error) {
	ctx := context.Background()
	p, err := eng.Plan(ctx, req)
	if err != nil {
		return nil, err
	}
	var out []map[string]string
	for b, err := range eng.Read(ctx, p) {
		if err != nil {
			return nil, err
		}
		rows, err := deltafx.Flatten(b.Record)
		b.Record.Release()
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

// TestDeltaStreamFromTimestampBeforeHistory: a stream starting at a time
// before the retained history of a Delta table (checkpoint-cdf-table:
// commits 0-2 cleaned up, commit 3 kept) starts after the expired parent of
// the oldest retained commit, as a window from that time does: it yields
// versions 3 to 5, then ends (no follow).
func TestDeltaStreamFromTimestampBeforeHistory(t *testing.T) {
	const name = "delta.checkpoint-cdf-table"
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	eng := feed.New(deltaTables{name: openDelta(t, filepath.Join(deltaFixtureDir, "checkpoint-cdf-table"), name)},
		feed.Options{Allocator: mem})
	ts := int64(0)
	var versions []int64
	for ev, err := range eng.Stream(context.Background(), feed.StreamRequest{
		Request: feed.Request{Table: name, FromTimestampMs: &ts}, Start: feed.StartFromTimestamp}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Batch.Record != nil {
			if ev.Kind == feed.StreamChanges && ev.Batch.SnapshotComplete {
				versions = append(versions, ev.Batch.Snapshot.ID)
			}
			ev.Batch.Record.Release()
		}
	}
	if fmt.Sprint(versions) != "[3 4 5]" {
		t.Fatalf("versions %v, want [3 4 5]", versions)
	}
}
