package sluice_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

func TestSubscribe(t *testing.T) {
	ctx := t.Context()
	cat := newWarehouse(t)
	createTable(t, cat, ordersTable, history)
	srv := serve(t, cat)
	c, _ := dial(t, srv.addr)

	sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: ordersTable, Consumer: "g1", Heartbeats: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Release()
	// The full state, in batches of at most 2 rows; acks only at the end.
	rows := int64(0)
	for rows < 8 {
		if !sub.Next() {
			t.Fatal(sub.Err())
		}
		b := sub.Batch()
		if b.Meta.Heartbeat {
			continue
		}
		if !b.Meta.FullState {
			t.Fatalf("latest-full batch without full_state: %+v", b.Meta)
		}
		rows += b.Record.NumRows()
		if !b.Meta.SnapshotComplete {
			if _, err := sub.Ack(ctx); !errors.Is(err, sluice.ErrNotCheckpoint) {
				t.Fatalf("ack of a partial snapshot: %v", err)
			}
		}
	}
	if p, err := sub.Ack(ctx); err != nil || p.LagCommits != 0 || p.CommitSeq != 3 {
		t.Fatalf("ack: %+v %v", p, err)
	}
	// Idle: a heartbeat, then a new commit.
	if !sub.Next() || !sub.Batch().Meta.Heartbeat || sub.Batch().Meta.CommitSeq != 3 {
		t.Fatalf("no heartbeat: %+v %v", sub.Batch().Meta, sub.Err())
	}
	appendOrders(t, cat, ordersTable, []order{{9, "Nils", "SE", 1}})
	for sub.Next() && sub.Batch().Meta.Heartbeat {
	}
	b := sub.Batch()
	if b.Meta.CommitSeq != 4 || b.Record.NumRows() != 1 || !b.Meta.SnapshotComplete || b.Meta.FullState {
		t.Fatalf("new commit: %+v", b.Meta)
	}
	sub.Release()

	// Resumes after the last ack: the commit not acknowledged comes again.
	again, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: ordersTable, Consumer: "g1", NoFollow: true})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for b, err := range again.All() {
		if err != nil {
			t.Fatal(err)
		}
		n += int(b.Record.NumRows())
		if b.Meta.SnapshotComplete {
			if _, err := again.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	again.Release()
	if n != 1 {
		t.Fatalf("resumed with %d rows, want the 1 not acknowledged", n)
	}

	list, err := c.ListConsumers(ctx, ordersTable)
	if err != nil || len(list) != 1 || list[0].CommitSeq != 4 || list[0].LagCommits != 0 {
		t.Fatalf("list: %+v %v", list, err)
	}
	if removed, err := c.ResetConsumer(ctx, "g1", ordersTable); err != nil || !removed {
		t.Fatalf("reset: %v %v", removed, err)
	}
	if _, err := c.ConsumerProgress(ctx, "g1", ordersTable); sluice.Code(err) != codes.NotFound {
		t.Fatalf("progress after reset: %v", err)
	}
	if _, err := c.Ack(ctx, "g1", ordersTable, 42); sluice.Code(err) != codes.InvalidArgument {
		t.Fatalf("ack off the lineage: %v", err)
	}
	if _, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: ordersTable, Start: "earliest"}); sluice.Code(err) != codes.InvalidArgument {
		t.Fatalf("bad start: %v", err)
	}
}

func TestWatchCommits(t *testing.T) {
	ctx := t.Context()
	cat := newWarehouse(t)
	createTable(t, cat, ordersTable, history)
	srv := serve(t, cat)
	c, _ := dial(t, srv.addr)
	var seqs []int64
	for cs, err := range c.WatchCommits(ctx, ordersTable) {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, cs.CommitSeq)
		if len(seqs) == 1 {
			appendOrders(t, cat, ordersTable, []order{{9, "Nils", "SE", 1}})
		}
		if len(seqs) == 2 {
			break
		}
	}
	if seqs[0] != 3 || seqs[1] != 4 {
		t.Fatalf("commit seqs %v", seqs)
	}
	for _, err := range c.WatchCommits(ctx, "shop.nope") {
		if sluice.Code(err) != codes.NotFound {
			t.Fatalf("watch of an unknown table: %v", err)
		}
	}
}

// TestReleaseWhileNextWaits releases a subscription from another goroutine
// while Next waits for the server: Next returns false at once, and nothing
// is left allocated (the race detector watches the rest).
func TestReleaseWhileNextWaits(t *testing.T) {
	ctx := t.Context()
	cat := newWarehouse(t)
	createTable(t, cat, ordersTable, history)
	srv := serve(t, cat)
	c, _ := dial(t, srv.addr)
	for range 3 {
		sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: ordersTable, Start: sluice.StartLatest})
		if err != nil {
			t.Fatal(err)
		}
		returned := make(chan bool)
		go func() { returned <- sub.Next() }() // no commit comes: Next waits
		time.Sleep(50 * time.Millisecond)
		sub.Release()
		select {
		case more := <-returned:
			if more {
				t.Fatal("Next returned a batch after Release")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Next still waits 10s after Release")
		}
		sub.Release() // idempotent
		if sub.Next() {
			t.Fatal("Next after Release")
		}
	}
}

// TestErrorsNameTheCall labels every error of a subscription by the call
// the user made, Subscribe, whether it is refused as it opens or fails
// later; a ChangeReader's stream errors keep the label Changes.
func TestErrorsNameTheCall(t *testing.T) {
	ctx := t.Context()
	cat := newWarehouse(t)
	createTable(t, cat, ordersTable, history)
	srv := serve(t, cat)
	c, _ := dial(t, srv.addr)
	check := func(t *testing.T, err error, op string, code codes.Code) {
		t.Helper()
		var e *sluice.Error
		if !errors.As(err, &e) || e.Op != op || e.Code != code || !strings.HasPrefix(err.Error(), "sluice: "+op+": ") {
			t.Fatalf("got %v; want an *Error of %s with code %s", err, op, code)
		}
	}
	refused := []struct {
		name string
		req  sluice.SubscribeRequest
		code codes.Code
	}{
		{"unknown table", sluice.SubscribeRequest{Table: "shop.nope"}, codes.NotFound},
		{"unknown column", sluice.SubscribeRequest{Table: ordersTable, Columns: []string{"nope"}}, codes.InvalidArgument},
		{"bad start", sluice.SubscribeRequest{Table: ordersTable, Start: "earliest"}, codes.InvalidArgument},
		{"bad compression", sluice.SubscribeRequest{Table: ordersTable, Compression: "gzip"}, codes.InvalidArgument},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			sub, err := c.Subscribe(ctx, tt.req)
			if err == nil {
				sub.Release()
			}
			check(t, err, "Subscribe", tt.code)
		})
	}
	t.Run("a cancelled stream", func(t *testing.T) {
		sctx, cancel := context.WithCancel(ctx)
		sub, err := c.Subscribe(sctx, sluice.SubscribeRequest{Table: ordersTable, Start: sluice.StartLatest, Reconnect: true})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Release()
		cancel()
		if sub.Next() {
			t.Fatal("Next after the context ended")
		}
		check(t, sub.Err(), "Subscribe", codes.Canceled)
		var last error
		for _, err := range sub.All() {
			last = err
		}
		check(t, last, "Subscribe", codes.Canceled)
	})
	t.Run("a cancelled read of Changes", func(t *testing.T) {
		rctx, cancel := context.WithCancel(ctx)
		r, err := c.Changes(rctx, sluice.ChangeRequest{Table: ordersTable})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Release()
		cancel()
		if r.Next() {
			t.Fatal("Next after the context ended")
		}
		check(t, r.Err(), "Changes", codes.Canceled)
	})
}
