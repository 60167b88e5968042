package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/testkit/histgen"
	"github.com/sluicefeed/sluice/server"
)

// freeAddrs returns n loopback addresses free at the time of the call, for
// replicas that must know each other's address before they start.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var open []net.Listener
	for range n {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, lis)
		out = append(out, lis.Addr().String())
	}
	for _, l := range open {
		l.Close()
	}
	return out
}

// replicaFlags are the flags of replica i of addrs: its listen and
// advertised address, and every replica as its peers.
func replicaFlags(addrs []string, i int) []string {
	uris := make([]string, len(addrs))
	for k, a := range addrs {
		uris[k] = "grpc://" + a
	}
	return []string{"--listen", addrs[i], "--advertise", uris[i], "--peers", strings.Join(uris, ",")}
}

// readRows reads a ChangeReader to its end, each row rendered with its
// op, images and snapshot, and a line for each batch that completes its
// snapshot.
func readRows(r *sluice.ChangeReader) ([]string, error) {
	var out []string
	for b, err := range r.All() {
		if err != nil {
			return out, err
		}
		out = append(out, batchLines(b)...)
	}
	return out, nil
}

// batchLines renders a batch's rows as readRows does.
func batchLines(b sluice.ChangeBatch) []string {
	var out []string
	rec := b.Record
	ops := rec.Column(0).(*array.String)
	for i := range int(rec.NumRows()) {
		out = append(out, fmt.Sprintf("%s %s %s @%d", ops.Value(i), rec.Column(1).ValueStr(i),
			rec.Column(2).ValueStr(i), b.Meta.Snapshot))
	}
	if b.Meta.SnapshotComplete {
		out = append(out, fmt.Sprintf("snapshot %d complete", b.Meta.Snapshot))
	}
	return out
}

// fileParts counts the endpoints whose part is a range of a snapshot's
// files.
func fileParts(t *testing.T, eps []sluice.Endpoint) int {
	t.Helper()
	n := 0
	for _, ep := range eps {
		req, err := server.DecodeRequest(ep.Ticket)
		if err != nil {
			t.Fatal(err)
		}
		if req.GetPart().GetFileCount() > 0 {
			n++
		}
	}
	return n
}

// readSplit reads a window through a FlightInfo of up to n endpoints:
// each endpoint from its first location, all at once, by clients of their
// own; the rows concatenated in endpoint order. It returns the rows, the
// endpoints and how many distinct first locations they had.
func readSplit(ctx context.Context, c *sluice.Client, req sluice.ChangeRequest, n int) ([]string, []sluice.Endpoint, int, error) {
	req.MaxEndpoints = n
	_, eps, err := c.Endpoints(ctx, req)
	if err != nil {
		return nil, nil, 0, err
	}
	parts := make([][]string, len(eps))
	errs := make([]error, len(eps))
	firsts := map[string]bool{}
	var wg sync.WaitGroup
	for i, ep := range eps {
		if len(ep.Locations) == 0 {
			return nil, nil, 0, fmt.Errorf("endpoint %d has no location", i)
		}
		firsts[ep.Locations[0]] = true
		wg.Go(func() {
			pc, err := sluice.Dial(ctx, ep.Locations[0])
			if err != nil {
				errs[i] = err
				return
			}
			defer pc.Close()
			r, err := pc.ReadTicket(ctx, ep.Ticket)
			if err != nil {
				errs[i] = err
				return
			}
			defer r.Release()
			parts[i], errs[i] = readRows(r)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, nil, 0, fmt.Errorf("endpoint %d: %w", i, err)
		}
	}
	return slices.Concat(parts...), eps, len(firsts), nil
}

// readSingle reads a window in one stream.
func readSingle(ctx context.Context, c *sluice.Client, req sluice.ChangeRequest) ([]string, error) {
	r, err := c.Changes(ctx, req)
	if err != nil {
		return nil, err
	}
	defer r.Release()
	return readRows(r)
}

// TestSplitWindows: three replicas of one warehouse; random windows of an
// append-only table and of a partitioned merge-on-read table (deletes,
// updates, multi-file appends) read through multi-endpoint FlightInfos,
// the endpoints in parallel from the replicas their locations name, equal
// the single-stream reads, by Go and by pyarrow (python/test_split.py).
func TestSplitWindows(t *testing.T) {
	python(t)
	fix := writeEvents(t, 8, 5)
	mor := writeMOR(t, fix.Warehouse, 4)
	addrs := freeAddrs(t, 3)
	var uris []string
	for i := range addrs {
		srv := startFlightd(t, append([]string{"--warehouse", fix.Warehouse}, replicaFlags(addrs, i)...)...)
		uris = append(uris, srv.URI())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := dialGo(t, ctx, uris[0])
	r := rand.New(rand.NewPCG(5, 9))
	windows, endpoints, files := 0, 0, 0
	spread := map[int]int{}
	for _, table := range []string{fix.Table, histgen.Table} {
		snaps, err := c.Snapshots(ctx, table)
		if err != nil {
			t.Fatal(err)
		}
		for k := range 10 + len(snaps) {
			i, j := r.IntN(len(snaps)+1), r.IntN(len(snaps)+1)
			if i > j {
				i, j = j, i
			}
			if i == j {
				j = len(snaps)
			}
			if k >= 10 {
				i, j = k-10, k-9 // each snapshot alone: a large one splits by files
			}
			req := sluice.ChangeRequest{Table: table, ToSnapshot: &snaps[j-1].ID}
			if i > 0 {
				req.FromSnapshot = &snaps[i-1].ID
			}
			if table == histgen.Table && r.IntN(2) == 0 {
				req.Identity, req.FoldUpdates = []string{"id"}, r.IntN(2) == 0
			}
			n := 2 + r.IntN(7)
			got, eps, firsts, err := readSplit(ctx, c, req, n)
			files += fileParts(t, eps)
			if err != nil {
				t.Fatalf("window (%v, %d] of %s in %d endpoints: %v", req.FromSnapshot, *req.ToSnapshot, table, n, err)
			}
			want, err := readSingle(ctx, c, req)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("window (%v, %d] of %s: %d endpoints read %d rows, the single read %d; they differ",
					req.FromSnapshot, *req.ToSnapshot, table, len(eps), len(got), len(want))
			}
			windows++
			endpoints += len(eps)
			spread[firsts]++
		}
	}
	t.Logf("%d windows in %d endpoints (%d of them file ranges); windows by the replicas their endpoints start on: %v",
		windows, endpoints, files, spread)
	if endpoints <= windows || spread[3] == 0 || files == 0 {
		t.Fatalf("the windows were not split over the three replicas, by snapshots and files: %d windows, "+
			"%d endpoints (%d file ranges), %v", windows, endpoints, files, spread)
	}
	pytestPaths(t, ctx, map[string]string{
		"SLUICE_REPLICAS":    strings.Join(uris, ","),
		"SLUICE_E2E_FIXTURE": fix.save(t),
		"SLUICE_MOR_FIXTURE": mor,
	}, []string{"python/test_split.py"})
}
