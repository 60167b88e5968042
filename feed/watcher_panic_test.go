package feed_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicefeed/sluice/feed"
)

// panickingTables panics in Load while armed, as a catalog client or
// a log replay with a bug would.
type panickingTables struct {
	feed.Tables
	armed atomic.Bool
}

func (p *panickingTables) Load(ctx context.Context, name string) (feed.Table, error) {
	if p.armed.Load() {
		panic("a bug in a table load")
	}
	return p.Tables.Load(ctx, name)
}

// TestWatcherPanicIsAnError: a panic in the watcher's table load (its own
// goroutine, which no read guards) becomes an error for the watcher's
// subscribers, a PanicError wrapping ErrInternal with its stack, instead
// of ending the process; once the load no longer panics, a new watch of
// the table is served.
func TestWatcherPanicIsAnError(t *testing.T) {
	h := newHistory(t, 1, 1)
	leaks := goleak.IgnoreCurrent()
	tables := &panickingTables{Tables: h.cat}
	eng := feed.New(tables, feed.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := feed.FollowOptions{PollInterval: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}

	tables.armed.Store(true)
	var got error
	for _, err := range eng.WatchCommits(ctx, tableName, opts, nil, nil) {
		if err != nil {
			got = err
			break
		}
		t.Fatal("a watch of a table whose load panics yielded a position")
	}
	var pe *feed.PanicError
	if !errors.Is(got, feed.ErrInternal) || !errors.As(got, &pe) || len(pe.Stack) == 0 {
		t.Fatalf("watch of a table whose load panics: err = %v, want a PanicError with its stack", got)
	}

	// A follow stream subscribed to the same kind of watcher gets the same.
	tables.armed.Store(false)
	tables.armed.Store(true)
	for _, err := range eng.Stream(ctx, feed.StreamRequest{Request: feed.Request{Table: tableName},
		Follow: true, Start: feed.StartLatest, Options: opts}) {
		if err != nil {
			if !errors.Is(err, feed.ErrInternal) {
				t.Fatalf("follow stream of a table whose load panics: %v, want ErrInternal", err)
			}
			break
		}
	}

	tables.armed.Store(false)
	for st, err := range eng.WatchCommits(ctx, tableName, opts, nil, nil) {
		if err != nil {
			t.Fatalf("watch after the panic: %v", err)
		}
		if st.CommitSeq != 1 {
			t.Fatalf("watch after the panic: commit_seq %d, want 1", st.CommitSeq)
		}
		break
	}
	goleak.VerifyNone(t, leaks)
}
