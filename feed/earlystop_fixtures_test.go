package feed_test

// Abandoned reads of the fixture tables of every format: a consumer that
// stops mid-window (breaks out of the read, or cancels its context) must
// leave nothing of the engine's allocator or the source's behind, as a read
// to its end does not.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/format/paimon"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/internal/testkit/paimonfx"
)

// TestPaimonEarlyStopReleasesMemory stops reads of every Paimon fixture
// table (the primary-key tables' windows are read by paimon-merge-diff).
func TestPaimonEarlyStopReleasesMemory(t *testing.T) {
	fxs, err := paimonfx.Fixtures(paimonFixtureRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fxs {
		t.Run(f.DB+"."+f.Name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(arrowpool.Shared())
			defer mem.AssertSize(t, 0)
			name := "paimon." + f.DB + "." + f.Name
			src, err := paimon.NewSource(context.Background(), os.DirFS(f.Dir), name, paimon.WithAllocator(mem))
			if err != nil {
				t.Fatal(err)
			}
			checkEarlyStops(t, mem, paimonTables{name: src}, name)
		})
	}
}

// TestIcebergEarlyStopReleasesMemory stops reads of every Iceberg fixture
// table.
func TestIcebergEarlyStopReleasesMemory(t *testing.T) {
	for _, name := range fxNames {
		t.Run(name, func(t *testing.T) {
			fx := fxLoad(t, name)
			mem := memory.NewCheckedAllocator(arrowpool.Shared())
			defer mem.AssertSize(t, 0)
			checkEarlyStops(t, mem, fxTables{fx.name: fx.tbl}, fx.name)
		})
	}
}

// TestDeltaEarlyStopReleasesMemory stops reads of every Delta table
// delta-rs wrote.
func TestDeltaEarlyStopReleasesMemory(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(deltaFixtureDir, "written", "*", "EXPECTED.json"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no written Delta tables under %s: %v", deltaFixtureDir, err)
	}
	for _, path := range dirs {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(arrowpool.Shared())
			defer mem.AssertSize(t, 0)
			name := "delta." + filepath.Base(dir)
			checkEarlyStops(t, mem, deltaTables{name: openDelta(t, dir, name)}, name)
		})
	}
}

// checkEarlyStops reads each one-snapshot window of the table's lineage and
// the window over all of it, with an engine on mem, to its end and then
// stopped after 1, 2, ... batches, by breaking out of the sequence and by
// cancelling its context; after each stop, nothing may be left allocated.
// A window the engine cannot plan (an expired or unreadable snapshot) is
// left to the oracle tests.
func checkEarlyStops(t *testing.T, mem *memory.CheckedAllocator, cat feed.Tables, name string) {
	t.Helper()
	ctx := context.Background()
	eng := feed.New(cat, feed.Options{Allocator: mem, MaxBatchRows: 5, SpillDir: t.TempDir()})
	defer func() {
		if err := eng.Close(); err != nil {
			t.Error(err)
		}
	}()
	lin, err := eng.Snapshots(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	var reqs []feed.Request
	for i := 1; i < len(lin); i++ {
		reqs = append(reqs, feed.Request{Table: name, FromSnapshot: &lin[i-1].ID, ToSnapshot: &lin[i].ID})
	}
	if n := len(lin); n > 2 {
		reqs = append(reqs, feed.Request{Table: name, FromSnapshot: &lin[0].ID, ToSnapshot: &lin[n-1].ID})
	}
	stops, planned := 0, 0
	for i, req := range reqs {
		p, err := eng.Plan(ctx, req)
		if err != nil {
			continue
		}
		planned++
		total, err := readStopping(ctx, eng, p, -1, false)
		if err != nil {
			continue
		}
		// Every stop point of a one-snapshot window; the whole history (the
		// last request) reads every snapshot again at each stop, so it stops
		// at its first batches and then at about six points spread over
		// the rest.
		step := 1
		if i == len(reqs)-1 && len(reqs) > 1 {
			step = max(1, total/6)
		}
		for k := 1; k < total; k = nextStop(k, step) {
			for _, cancel := range []bool{false, true} {
				if _, err := readStopping(ctx, eng, p, k, cancel); err != nil {
					t.Fatalf("window (%d, %d] stopped after %d of %d batches (cancel %v): %v",
						*req.FromSnapshot, *req.ToSnapshot, k, total, cancel, err)
				}
				stops++
				if n := mem.CurrentAlloc(); n != 0 {
					t.Fatalf("window (%d, %d] stopped after %d of %d batches (cancel %v): %d bytes left allocated",
						*req.FromSnapshot, *req.ToSnapshot, k, total, cancel, n)
				}
			}
		}
	}
	if planned == 0 && len(reqs) > 0 {
		t.Fatalf("no window of %s could be planned", name)
	}
	t.Logf("%d windows, %d planned, %d early stops", len(reqs), planned, stops)
}

// nextStop is the stop point after k: k+1 for the first four, then k+step.
func nextStop(k, step int) int {
	if k < 4 {
		return k + 1
	}
	return k + step
}

// readStopping reads p and stops after stop batches (never, if stop is
// negative): by breaking out of the sequence, or by cancelling the read's
// context and taking what the sequence still yields, as a server whose
// client went away does. It returns the number of batches taken, and the
// read's error unless it is the cancellation it caused.
func readStopping(ctx context.Context, eng *feed.Engine, p *feed.Plan, stop int, cancel bool) (int, error) {
	ctx, stopCtx := context.WithCancel(ctx)
	defer stopCtx()
	n := 0
	for b, err := range eng.Read(ctx, p) {
		if err != nil {
			if cancel && n >= stop && errors.Is(err, context.Canceled) {
				return n, nil
			}
			return n, err
		}
		b.Record.Release()
		n++
		if n == stop {
			if !cancel {
				break
			}
			stopCtx()
		}
	}
	return n, nil
}
