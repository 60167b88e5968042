package delta_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/format/delta"
	"github.com/sluicefeed/sluice/internal/lib/longhist"
	"github.com/sluicefeed/sluice/internal/lib/storage"
	"github.com/sluicefeed/sluice/lake"
)

// countingFS counts what is read of a Delta table through it: the commit
// files opened, the checkpoint files opened and the log entries listed.
type countingFS struct {
	*storage.Local
	commits, checkpoints, listed atomic.Int64
}

func (c *countingFS) Open(name string) (fs.File, error) {
	switch {
	case strings.Contains(name, ".checkpoint."):
		c.checkpoints.Add(1)
	case strings.HasSuffix(name, ".json"):
		c.commits.Add(1)
	}
	return c.Local.Open(name)
}

func (c *countingFS) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := c.Local.ReadDir(name)
	c.listed.Add(int64(len(entries)))
	return entries, err
}

func (c *countingFS) ReadDirAfter(name, after string) ([]fs.DirEntry, error) {
	entries, err := c.Local.ReadDirAfter(name, after)
	c.listed.Add(int64(len(entries)))
	return entries, err
}

// reads returns the counts, and sets them to 0.
func (c *countingFS) reads() [3]int64 {
	return [3]int64{c.commits.Swap(0), c.checkpoints.Swap(0), c.listed.Swap(0)}
}

// deltaTable serves one Delta table to the engine.
type deltaTable struct{ src *delta.Source }

func (d deltaTable) Load(ctx context.Context, _ string) (lake.Table, error) { return d.src.Load(ctx) }
func (d deltaTable) ListTables(context.Context) ([]string, error)           { return []string{"t"}, nil }

// longHistory writes the Delta history p into a temporary folder.
func longHistory(tb testing.TB, p longhist.DeltaParams) (string, *longhist.Delta) {
	tb.Helper()
	dir := tb.TempDir()
	h, err := longhist.WriteDelta(dir, p, 1_700_000_000_000)
	if err != nil {
		tb.Fatal(err)
	}
	return dir, h
}

func benchmarkPlan(b *testing.B, p longhist.DeltaParams, cold bool) {
	ctx := context.Background()
	dir, h := longHistory(b, p)
	from, to := h.LastAppend()
	open := func() *feed.Engine {
		src, err := delta.NewSource(ctx, os.DirFS(dir), "t")
		if err != nil {
			b.Fatal(err)
		}
		return feed.New(deltaTable{src}, feed.Options{})
	}
	e := open()
	if !cold {
		// The first plan loads the table.
		if _, err := e.Plan(ctx, feed.Request{Table: "t", FromSnapshot: &from, ToSnapshot: &to}); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if cold {
			e = open()
		}
		if _, err := e.Plan(ctx, feed.Request{Table: "t", FromSnapshot: &from, ToSnapshot: &to}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPlanWarm10k(b *testing.B) {
	benchmarkPlan(b, longhist.DeltaParams{Versions: 10000, Files: 10000, CheckpointEvery: 100}, false)
}

func BenchmarkPlanCold10k(b *testing.B) {
	benchmarkPlan(b, longhist.DeltaParams{Versions: 10000, Files: 10000, CheckpointEvery: 100}, true)
}

// TestPlanningGrowsWithTheWindow serves long Delta histories of two
// lengths (and ten times the files) and counts what planning reads: the
// commit files and checkpoint files opened and the log entries listed.
// After the first load (which reads every commit once, for the lineage's
// commit times), a plan of a one-commit window reads nothing more when the
// table did not change, and after a new commit lists and reads only that
// commit's files: the same counts at both lengths.
func TestPlanningGrowsWithTheWindow(t *testing.T) {
	ctx := context.Background()
	var warm, grown [][3]int64
	for _, p := range []longhist.DeltaParams{
		{Versions: 40, Files: 80, CheckpointEvery: 10},
		{Versions: 400, Files: 800, CheckpointEvery: 10},
	} {
		dir := t.TempDir()
		h, err := longhist.WriteDelta(dir, p, 1_700_000_000_000)
		if err != nil {
			t.Fatal(err)
		}
		local, err := storage.OpenLocal(dir, dir, storage.LocalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cfs := &countingFS{Local: local}
		src, err := delta.NewSource(ctx, cfs, "t")
		if err != nil {
			t.Fatal(err)
		}
		e := feed.New(deltaTable{src}, feed.Options{})
		plan := func(from, to int64) *feed.Plan {
			t.Helper()
			plan, err := e.Plan(ctx, feed.Request{Table: "t", FromSnapshot: &from, ToSnapshot: &to})
			if err != nil {
				t.Fatalf("%d versions, window (%d, %d]: %v", p.Versions, from, to, err)
			}
			return plan
		}
		plan(h.LastAppend())
		cold := cfs.reads()
		t.Logf("%d versions: the first plan read %d commits and %d checkpoint files, and listed %d entries",
			p.Versions, cold[0], cold[1], cold[2])
		plan(h.LastRewrite())
		warm = append(warm, cfs.reads())

		// One more commit, an append of one file at a later time.
		next := h.Latest + 1
		ts := int64(1_800_000_000_000)
		commit := fmt.Sprintf(`{"commitInfo":{"timestamp":%d,"operation":"WRITE"}}`+"\n"+
			`{"add":{"path":"next.parquet","partitionValues":{},"size":1,"modificationTime":%d,"dataChange":true,`+
			`"stats":"{\"numRecords\":7}"}}`+"\n", ts, ts)
		if err := os.WriteFile(fmt.Sprintf("%s/_delta_log/%020d.json", dir, next), []byte(commit), 0o644); err != nil {
			t.Fatal(err)
		}
		got := plan(next-1, next)
		grown = append(grown, cfs.reads())
		if len(got.Snapshots) != 1 || got.Snapshots[0].ID != next || got.Snapshots[0].TimestampMs != ts ||
			got.Snapshots[0].Summary["added-records"] != "7" {
			t.Errorf("%d versions: the new commit's plan is %+v, want version %d at %d adding 7 records",
				p.Versions, got.Snapshots, next, ts)
		}
	}
	if warm[0] != warm[1] || warm[1] != [3]int64{} {
		t.Errorf("a plan of an unchanged table read (commits, checkpoint files, entries listed) %v at 40 versions, "+
			"%v at 400; want nothing at both", warm[0], warm[1])
	}
	// The new commit is read once (for its lineage entry, and its plan
	// from the cache), and the entries listed are the files of the version
	// before it and of its own, and _last_checkpoint (whose name sorts
	// after the versions').
	want := [3]int64{1, 0, 3}
	if grown[0] != grown[1] || grown[1] != want {
		t.Errorf("a plan of a new commit read (commits, checkpoint files, entries listed) %v at 40 versions, %v at "+
			"400; want %v at both", grown[0], grown[1], want)
	}
}

func BenchmarkPlanCold10k100k(b *testing.B) {
	benchmarkPlan(b, longhist.DeltaParams{Versions: 10000, Files: 100000, CheckpointEvery: 100}, true)
}
