package feed_test

import (
	"context"
	"errors"
	"iter"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicefeed/sluice/feed"
)

// TestCloseReportsLeakedReads: a read whose sequence a caller neither
// finished nor stopped is reported by Close; once stopped, Close is clean.
func TestCloseReportsLeakedReads(t *testing.T) {
	h := newHistory(t, 3, 2)
	eng := feed.New(h.cat, feed.Options{})
	ctx := context.Background()
	p, err := eng.Plan(ctx, feed.Request{Table: tableName, NetChanges: true})
	if err != nil {
		t.Fatal(err)
	}
	next, stop := iter.Pull2(eng.Read(ctx, p))
	b, err, ok := next()
	if !ok || err != nil {
		t.Fatalf("first batch: %v %v", ok, err)
	}
	b.Record.Release()
	if err := eng.Close(); !errors.Is(err, feed.ErrLeakedReads) {
		t.Fatalf("Close with a read half taken: err = %v, want ErrLeakedReads", err)
	}
	stop()
	if err := eng.Close(); err != nil {
		t.Fatalf("Close after the read stopped: %v", err)
	}
	for b, err := range eng.Read(ctx, p) {
		if err != nil {
			t.Fatal(err)
		}
		b.Record.Release()
	}
	if err := eng.Close(); err != nil {
		t.Fatalf("Close after a whole read: %v", err)
	}
}

// TestUnwritableSpillDirectoryFailsTheRead: a read over its budget whose
// spill directory cannot be made fails with ErrSpill (ResourceExhausted on
// the wire), never with a partial feed that looks whole.
func TestUnwritableSpillDirectoryFailsTheRead(t *testing.T) {
	h := newHistory(t, 3, 5)
	blocker := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eng := feed.New(h.cat, feed.Options{MemoryBudget: 1, SpillDir: filepath.Join(blocker, "spill")})
	ctx := context.Background()
	p, err := eng.Plan(ctx, feed.Request{Table: tableName, NetChanges: true})
	if err != nil {
		t.Fatal(err)
	}
	var got error
	for b, err := range eng.Read(ctx, p) {
		if err != nil {
			got = err
			break
		}
		b.Record.Release()
	}
	if !errors.Is(got, feed.ErrSpill) {
		t.Fatalf("read with an unwritable spill directory: err = %v, want ErrSpill", got)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
}
