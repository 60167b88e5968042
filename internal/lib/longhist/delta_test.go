package longhist_test

import (
	"context"
	"os"
	"testing"

	"github.com/sluicefeed/sluice/format/delta"
	"github.com/sluicefeed/sluice/internal/lib/longhist"
)

// TestDeltaCheckpointsRead writes a short Delta history with checkpoints
// and reads its last state twice: from the last checkpoint and the commits
// after it, and, with the checkpoints removed, from the commits alone.
// Both hold every file the history left live.
func TestDeltaCheckpointsRead(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	p := longhist.DeltaParams{Versions: 35, Files: 66, CheckpointEvery: 10}
	h, err := longhist.WriteDelta(dir, p, 1_700_000_000_000)
	if err != nil {
		t.Fatal(err)
	}
	read := func() map[string]bool {
		tbl, err := delta.Open(ctx, os.DirFS(dir), "t")
		if err != nil {
			t.Fatal(err)
		}
		s, err := tbl.Snapshot(ctx, h.Latest)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, a := range s.Files {
			out[a.Path] = true
		}
		return out
	}
	withCheckpoints := read()
	if len(withCheckpoints) != p.Files {
		t.Fatalf("the last state holds %d files, want %d", len(withCheckpoints), p.Files)
	}
	for _, v := range []string{"10", "20", "30"} {
		if err := os.Remove(dir + "/_delta_log/000000000000000000" + v + ".checkpoint.parquet"); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(dir + "/_delta_log/_last_checkpoint"); err != nil {
		t.Fatal(err)
	}
	fromCommits := read()
	for path := range fromCommits {
		if !withCheckpoints[path] {
			t.Errorf("%s is live by the commits, not by the checkpoint", path)
		}
	}
	if len(fromCommits) != len(withCheckpoints) {
		t.Errorf("%d files live by the commits, %d by the checkpoint", len(fromCommits), len(withCheckpoints))
	}
}
