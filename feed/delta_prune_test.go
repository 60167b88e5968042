package feed_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
)

// TestDeltaPushdown: a filter skips the added files that partition values
// and statistics rule out, and never a row it keeps: on every version of
// the writer-made tables that only adds files, the filtered feed equals
// the unfiltered feed's inserts whose id passes the filter.
func TestDeltaPushdown(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(deltaFixtureDir, "written", "*", "_delta_log"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no written Delta tables: %v", err)
	}
	ctx := context.Background()
	skipped, kept := 0, 0
	for _, d := range dirs {
		dir := filepath.Dir(d)
		name := "delta." + filepath.Base(dir)
		mem := memory.NewCheckedAllocator(arrowpool.Shared())
		eng := feed.New(deltaTables{name: openDelta(t, dir, name)}, feed.Options{Allocator: mem})
		snaps, err := eng.Snapshots(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range snaps {
			if s.ParentID == nil {
				continue
			}
			win := feed.Request{Table: name, FromSnapshot: s.ParentID, ToSnapshot: &s.ID}
			p, err := eng.Plan(ctx, win)
			if err != nil || len(p.Snapshots) != 1 || p.Snapshots[0].Strategy != feed.StrategyDeltaAdd {
				continue // vacuumed, or not an append
			}
			all, err := deltaChanges(eng, win)
			if errors.Is(err, feed.ErrResyncRequired) {
				continue // its files were vacuumed
			}
			if err != nil {
				t.Fatalf("%s version %d: %v", name, s.ID, err)
			}
			for _, bound := range []int64{0, 5, 12, 1 << 40} {
				filtered := win
				filtered.Filter = fmt.Sprintf("id < %d", bound)
				fp, err := eng.Plan(ctx, filtered)
				if err != nil {
					t.Fatalf("%s version %d: %v", name, s.ID, err)
				}
				skipped += int(fp.FilesSkipped)
				kept += int(fp.FilesRead)
				got, err := deltaChanges(eng, filtered)
				if err != nil {
					t.Fatalf("%s version %d, %s: %v", name, s.ID, filtered.Filter, err)
				}
				want := 0
				for _, c := range all {
					if id, err := strconv.ParseInt(c.after["id"], 10, 64); err == nil && id < bound {
						want++
					}
				}
				if len(got) != want {
					t.Errorf("%s version %d, %s: %d inserts, want %d (files skipped %d of %d)", name, s.ID,
						filtered.Filter, len(got), want, fp.FilesSkipped, fp.FilesSkipped+fp.FilesRead)
				}
			}
		}
		mem.AssertSize(t, 0)
	}
	t.Logf("files skipped %d, read %d", skipped, kept)
	if skipped == 0 || kept == 0 {
		t.Fatalf("files skipped %d, read %d: the filters should skip some appended files and keep others", skipped, kept)
	}
}
