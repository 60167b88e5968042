package sluice_test

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/sluicefeed/sluice/catalog"
	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/progress"
	"github.com/sluicefeed/sluice/server"
)

// replica is a server over a warehouse that a test can stop.
type replica struct {
	addr string
	gs   *grpc.Server
}

func startReplica(t *testing.T, cat *catalog.Catalog, store *progress.Store) *replica {
	t.Helper()
	engine := feed.New(cat, feed.Options{MaxBatchRows: maxBatchRows})
	srv := server.New(engine, server.Options{Logger: slog.New(slog.DiscardHandler), Progress: store})
	gs := grpc.NewServer()
	srv.Register(gs)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(func() { srv.Shutdown(); gs.Stop(); engine.Close() })
	return &replica{addr: lis.Addr().String(), gs: gs}
}

// A client given several replicas skips one that does not answer, and
// when its replica stops, its next calls go to a survivor; a consumer's
// progress acknowledged on one resumes on the other.
func TestDialReplicas(t *testing.T) {
	cat := newWarehouse(t)
	createTable(t, cat, ordersTable, history)
	store, err := progress.Open(t.Context(), filepath.Join(t.TempDir(), "consumers.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	a, b := startReplica(t, cat, store), startReplica(t, cat, store)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := lis.Addr().String()
	lis.Close() // nothing answers here

	c, _ := dial(t, "grpc://"+dead+","+a.addr+","+b.addr)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	snaps, err := c.Snapshots(ctx, ordersTable)
	if err != nil {
		t.Fatalf("the first replica is down and the second up: %v", err)
	}
	if _, err := c.Ack(ctx, "mirror", ordersTable, snaps[0].ID); err != nil {
		t.Fatal(err)
	}
	a.gs.Stop() // the replica the client is connected to stops
	// A call racing the broken connection may fail with Unavailable, as
	// any call to a stopping server; the calls after it go to the third.
	var sub *sluice.Subscription
	for try := 0; ; try++ {
		sub, err = c.Subscribe(ctx, sluice.SubscribeRequest{Table: ordersTable, Consumer: "mirror", NoFollow: true})
		if err == nil {
			break
		}
		if sluice.Code(err) != codes.Unavailable || try == 2 {
			t.Fatalf("the second replica is down, the third up: %v (try %d)", err, try)
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer sub.Release()
	var seqs []int64
	for sub.Next() {
		seqs = append(seqs, sub.Batch().Meta.CommitSeq)
	}
	if err := sub.Err(); err != nil {
		t.Fatal(err)
	}
	if len(seqs) == 0 || seqs[0] != snaps[1].CommitSeq {
		t.Fatalf("the consumer acknowledged commit_seq %d on one replica and resumed at %v on another, want %d",
			snaps[0].CommitSeq, seqs, snaps[1].CommitSeq)
	}
}

// The endpoints of a split window, read in parallel by clients of their
// own, concatenated in endpoint order, are the window's single read.
func TestEndpointsParallel(t *testing.T) {
	fx := newFixture(t)
	ctx := t.Context()
	req := sluice.ChangeRequest{Table: ordersTable, MaxEndpoints: 8}
	_, eps, err := fx.client.Endpoints(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) < 2 || len(eps) > 8 {
		t.Fatalf("%d endpoints for %d snapshots and max_endpoints 8, want 2 to 8", len(eps), len(fx.snaps))
	}
	parts := make([][]change, len(eps))
	var wg sync.WaitGroup
	errs := make([]error, len(eps))
	for i, ep := range eps {
		wg.Go(func() {
			if len(ep.Locations) != 0 {
				errs[i] = errString("endpoint has locations on a server without replicas")
				return
			}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			c, err := sluice.Dial(ctx, fx.srv.addr, sluice.WithAllocator(mem))
			if err != nil {
				errs[i] = err
				return
			}
			defer c.Close()
			r, err := c.ReadTicket(ctx, ep.Ticket)
			if err != nil {
				errs[i] = err
				return
			}
			defer r.Release()
			parts[i], _, errs[i] = readAll(t, r)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	r, err := fx.client.Changes(ctx, sluice.ChangeRequest{Table: ordersTable})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	whole, _, err := readAll(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if union := slices.Concat(parts...); !slices.Equal(union, whole) || len(whole) == 0 {
		t.Fatalf("the endpoints' rows in order:\n%v\nthe single read's:\n%v", union, whole)
	}
	// Changes reads a split window's endpoints one after the other.
	r2, err := fx.client.Changes(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Release()
	seq, _, err := readAll(t, r2)
	if err != nil || !slices.Equal(seq, whole) {
		t.Fatalf("Changes of the split window: %v, %v; want the single read", seq, err)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
