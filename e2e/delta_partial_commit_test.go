package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

// The tests of this file write a Delta table's newest commit file in two
// steps, as a local writer that writes the file in place does, while
// flightd follows the table: a half-written commit file is not yet a
// commit.

// partialCommitTable copies cdf-table-simple (versions 0-2) to root/name
// without its last commit, and returns the path of that commit file and
// its content.
func partialCommitTable(t *testing.T, root, name string) (string, []byte) {
	t.Helper()
	dir := filepath.Join(root, name)
	copyTree(t, filepath.Join(deltaFixtureDir, "cdf-table-simple"), dir)
	p := filepath.Join(dir, "_delta_log", "00000000000000000002.json")
	whole, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	return p, whole
}

// followFrom subscribes to table from its latest version, and waits for
// the stream's first heartbeat at version want.
func followFrom(t *testing.T, ctx context.Context, c *sluice.Client, table string, want int64) *sluice.Subscription {
	t.Helper()
	sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: table, Start: sluice.StartLatest, Heartbeats: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Release)
	if !sub.Next() || !sub.Batch().Meta.Heartbeat || sub.Batch().Meta.Snapshot != want {
		t.Fatalf("%s: the follow stream's first message: %+v, %v; want a heartbeat at version %d", table,
			sub.Batch().Meta, sub.Err(), want)
	}
	return sub
}

// TestDeltaPartialCommit: a follower of a table whose newest commit file
// is read half-written, and completed a moment later, gets that commit's
// changes and no error (it ended every follow stream with "corrupt log
// ... unexpected end of JSON input"); so does a window read of the latest
// version made meanwhile. A commit file that stays half-written past the
// grace (5 s) ends the stream with FailedPrecondition, naming the file.
func TestDeltaPartialCommit(t *testing.T) {
	root := t.TempDir()
	okPath, okWhole := partialCommitTable(t, root, "completed")
	badPath, badWhole := partialCommitTable(t, root, "stays_cut")
	srv := startFlightd(t, "--warehouse", t.TempDir(), "--create-catalog", "--delta-root", root,
		"--poll-interval", "100ms", "--heartbeat-interval", "200ms")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := dialGo(t, ctx, srv.URI())
	before, err := countChanges(ctx, c, sluice.ChangeRequest{Table: "delta.completed"})
	if err != nil {
		t.Fatal(err)
	}

	okSub := followFrom(t, ctx, c, "delta.completed", 1)
	badSub := followFrom(t, ctx, c, "delta.stays_cut", 1)
	writeFile(t, filepath.Dir(okPath), filepath.Base(okPath), string(okWhole[:len(okWhole)/2]))
	badStart := time.Now()
	writeFile(t, filepath.Dir(badPath), filepath.Base(badPath), string(badWhole[:len(badWhole)/2]))

	// A window read of the latest version while the file is cut waits
	// for it too.
	type result struct {
		n   int
		err error
	}
	read := make(chan result, 1)
	go func() {
		n, err := countChanges(ctx, c, sluice.ChangeRequest{Table: "delta.completed"})
		read <- result{n, err}
	}()
	time.Sleep(time.Second) // several polls and notifications of the cut file
	writeFile(t, filepath.Dir(okPath), filepath.Base(okPath), string(okWhole))

	n, err := countChanges(ctx, c, sluice.ChangeRequest{Table: "delta.completed", FromSnapshot: ptr(1)})
	if err != nil || n == 0 {
		t.Fatalf("the window (1, 2] once the commit is whole: %d rows, %v", n, err)
	}
	got := 0
	for got < n && okSub.Next() {
		b := okSub.Batch()
		if !b.Meta.Heartbeat && b.Meta.Snapshot == 2 {
			got += int(b.Record.NumRows())
		}
	}
	if got != n || okSub.Err() != nil {
		t.Errorf("the follower of the completed commit: %d rows of version 2, %v; want its %d rows and no error",
			got, okSub.Err(), n)
	}
	if r := <-read; r.err != nil || r.n != before+n {
		t.Errorf("a window read made while the commit was cut: %d rows, %v; want the %d of versions 0-2",
			r.n, r.err, before+n)
	}

	// The file that stays cut: an error, once the grace has passed.
	for badSub.Next() {
		if b := badSub.Batch(); !b.Meta.Heartbeat {
			t.Errorf("the follower of the cut commit got %+v", b.Meta)
		}
	}
	waited := time.Since(badStart)
	err = badSub.Err()
	if sluice.Code(err) != codes.FailedPrecondition || !strings.Contains(errString(err), "00000000000000000002.json") ||
		!strings.Contains(errString(err), "incomplete") {
		t.Errorf("the follower of a commit that stays cut: %v; want FailedPrecondition naming the file", err)
	}
	if waited < 4*time.Second {
		t.Errorf("the follower of a commit that stays cut failed after %v; want after the grace of 5s", waited)
	}
}
