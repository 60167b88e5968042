package delta

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sluicefeed/sluice/internal/lib/longhist"
)

// writeHistory writes a Delta history of 25 versions with checkpoints at
// 10 and 20 into a temporary folder.
func writeHistory(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := longhist.WriteDelta(dir, longhist.DeltaParams{Versions: 25, Files: 50, CheckpointEvery: 10},
		1_700_000_000_000); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeAppend writes commit v: an append of one file.
func writeAppend(t *testing.T, dir string, v int64) {
	t.Helper()
	mustWrite(t, logPath(dir, fmt.Sprintf("%020d.json", v)), fmt.Sprintf(`{"commitInfo":{"timestamp":%d,"operation":"WRITE"}}
{"add":{"path":"more-%d.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}
`, 1_800_000_000_000+v, v))
}

// sameAsFresh checks that tbl's versions, and the files of its latest
// state, are those of the table in dir opened afresh.
func sameAsFresh(t *testing.T, tbl *Table, dir string) Versions {
	t.Helper()
	ctx := context.Background()
	got, err := tbl.Versions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fresh := openDir(t, dir, "t")
	want, err := fresh.Versions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("Versions = %+v, want %+v (the log listed afresh)", got, want)
	}
	s, err := tbl.Snapshot(ctx, got.Latest)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := fresh.Snapshot(ctx, want.Latest)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Files) != len(ws.Files) {
		t.Fatalf("the state at %d holds %d files, %d read afresh", got.Latest, len(s.Files), len(ws.Files))
	}
	return got
}

// TestCurrentFollowsTheLog changes a table's log the ways a table changes
// and checks that the table's listing, kept and brought up to date,
// tells what a listing of the whole log tells: nothing listed while the
// log is unchanged, new commits, log cleanup, a commit file after a gap.
func TestCurrentFollowsTheLog(t *testing.T) {
	ctx := context.Background()
	dir := writeHistory(t)
	tbl := openDir(t, dir, "t")
	sameAsFresh(t, tbl, dir)
	known := tbl.known
	if _, err := tbl.Versions(ctx); err != nil || tbl.known != known {
		t.Errorf("an unchanged log was listed again (%v)", err)
	}

	writeAppend(t, dir, 25)
	writeAppend(t, dir, 26)
	if vs := sameAsFresh(t, tbl, dir); vs.Latest != 26 {
		t.Errorf("after two commits, the latest version is %d, want 26", vs.Latest)
	}
	if len(tbl.known.commits) != 27 || len(tbl.known.checkpoints) != 2 {
		t.Errorf("the listing holds %d commits and %d checkpoints, want 27 and 2", len(tbl.known.commits),
			len(tbl.known.checkpoints))
	}

	// A commit after a missing one is not a version yet: writers write
	// commits in order, so the missing one is on its way.
	writeAppend(t, dir, 28)
	if vs, err := tbl.Versions(ctx); err != nil || vs.Latest != 26 {
		t.Errorf("with commit 27 missing, Versions = %+v, %v; want the latest version 26", vs, err)
	}
	writeAppend(t, dir, 27)
	if vs := sameAsFresh(t, tbl, dir); vs.Latest != 28 {
		t.Errorf("after commit 27, the latest version is %d, want 28", vs.Latest)
	}

	// Log cleanup removes the oldest commits and checkpoint: the oldest
	// file is another one, and the log is listed whole.
	for v := range 11 {
		mustRemove(t, logPath(dir, fmt.Sprintf("%020d.json", v)))
	}
	mustRemove(t, logPath(dir, fmt.Sprintf("%020d.checkpoint.parquet", 10)))
	if vs := sameAsFresh(t, tbl, dir); vs.EarliestStart != 20 || vs.FirstCommit != 11 {
		t.Errorf("after cleanup, Versions = %+v, want the earliest start 20 and the first commit 11", vs)
	}
}

// TestCurrentCheckpointGone: a checkpoint the kept listing names is gone
// when the state is read (replaced, or removed): the log is listed whole
// and the state read from what is there.
func TestCurrentCheckpointGone(t *testing.T) {
	ctx := context.Background()
	dir := writeHistory(t)
	tbl := openDir(t, dir, "t")
	if _, err := tbl.Versions(ctx); err != nil {
		t.Fatal(err)
	}
	mustRemove(t, logPath(dir, fmt.Sprintf("%020d.checkpoint.parquet", 20)))
	s, err := tbl.Snapshot(ctx, 22)
	if err != nil {
		t.Fatal(err)
	}
	want, err := openDir(t, dir, "t").Snapshot(ctx, 22)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Files) != len(want.Files) || len(tbl.known.checkpoints) != 1 {
		t.Errorf("the state at 22 holds %d files, %d read afresh; the listing %d checkpoints, want 1", len(s.Files),
			len(want.Files), len(tbl.known.checkpoints))
	}

	// The whole log gone: the table is gone.
	for v := range 25 {
		mustRemove(t, logPath(dir, fmt.Sprintf("%020d.json", v)))
	}
	mustRemove(t, logPath(dir, fmt.Sprintf("%020d.checkpoint.parquet", 10)), logPath(dir, "_last_checkpoint"))
	if _, err := tbl.Versions(ctx); !errors.Is(err, ErrNotTable) {
		t.Errorf("Versions of an empty log: %v, want ErrNotTable", err)
	}
}
