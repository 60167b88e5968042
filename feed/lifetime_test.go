package feed_test

import (
	"context"
	"errors"
	"iter"
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
