package delta

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestCommitIncompleteNewest: the newest commit file, read while its
// writer is still writing it (cut in the middle of a line), is not yet a
// commit: a read waits for it within the grace, and gets the whole commit
// once it is written. One that stays cut past the grace is ErrCorrupt,
// and at once from then on. An older commit file cut the same way is
// ErrCorrupt at once: it is no commit being written.
func TestCommitIncompleteNewest(t *testing.T) {
	ctx := context.Background()
	dir := copyTestTable(t, "cdf-table-simple")
	p := logPath(dir, "00000000000000000002.json")
	whole, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	half := string(whole[:len(whole)/2])

	t.Run("completed within the grace", func(t *testing.T) {
		mustWrite(t, p, half)
		tbl := openDir(t, dir, "cdf-table-simple")
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(300 * time.Millisecond)
			mustWrite(t, p, string(whole))
		}()
		start := time.Now()
		c, err := tbl.Commit(ctx, 2)
		<-done
		if err != nil {
			t.Fatalf("Commit(2) of a commit file completed after %v: %v", time.Since(start), err)
		}
		if len(c.CDCs) != 2 || c.CommitInfo == nil || c.CommitInfo.Operation != "Manual Update" {
			t.Errorf("Commit(2) = %d cdcs, %+v; want the whole commit", len(c.CDCs), c.CommitInfo)
		}
		if s, err := tbl.Snapshot(ctx, 2); err != nil || s.Version != 2 {
			t.Errorf("Snapshot(2): %v", err)
		}
	})

	t.Run("still cut after the grace", func(t *testing.T) {
		mustWrite(t, p, half)
		tbl := openDir(t, dir, "cdf-table-simple", WithCommitGrace(300*time.Millisecond))
		start := time.Now()
		_, err := tbl.Commit(ctx, 2)
		if waited := time.Since(start); waited < 300*time.Millisecond || waited > 3*time.Second {
			t.Errorf("Commit(2) failed after %v; want after the grace of 300ms", waited)
		}
		wantErr(t, err, ErrCorrupt, "version 2", "00000000000000000002.json", "unexpected end of JSON input",
			"incomplete")
		start = time.Now()
		_, err = tbl.Snapshot(ctx, 2)
		wantErr(t, err, ErrCorrupt, "version 2")
		if waited := time.Since(start); waited > 200*time.Millisecond {
			t.Errorf("Snapshot(2) waited %v for a file past its grace; want the error at once", waited)
		}
		mustWrite(t, p, string(whole))
		if _, err := tbl.Commit(ctx, 2); err != nil {
			t.Errorf("Commit(2) once the file is whole: %v", err)
		}
	})

	t.Run("an older commit", func(t *testing.T) {
		mustWrite(t, p, string(whole))
		p1 := logPath(dir, "00000000000000000001.json")
		one, err := os.ReadFile(p1)
		if err != nil {
			t.Fatal(err)
		}
		mustWrite(t, p1, string(one[:len(one)/2]))
		defer mustWrite(t, p1, string(one))
		tbl := openDir(t, dir, "cdf-table-simple")
		start := time.Now()
		_, err = tbl.Commit(ctx, 1)
		wantErr(t, err, ErrCorrupt, "version 1", "unexpected end of JSON input")
		if waited := time.Since(start); waited > 500*time.Millisecond {
			t.Errorf("Commit(1) waited %v; an older commit file gets no grace", waited)
		}
	})
}
