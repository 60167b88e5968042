package server_test

import (
	"context"
	"errors"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/sluicefeed/sluice/server"
)

// withStallTimeout sets the server's stall timeout.
func withStallTimeout(d time.Duration) func(*server.Options) {
	return func(o *server.Options) { o.Limits.StallTimeout = d }
}

// released waits until the server has released every buffer of its
// allocator and left no goroutine beyond those of baseline, while it goes
// on serving: what a stream held is freed when the stream ends, not when
// the server stops.
func (f *fixture) released(t *testing.T, baseline goleak.Option, ignore ...goleak.Option) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for f.mem.CurrentAlloc() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the server still holds %d bytes of its allocator after the stream ended", f.mem.CurrentAlloc())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := goleak.Find(append(ignore, baseline)...); err != nil {
		t.Fatalf("goroutines left after the stream ended: %v", err)
	}
}

// TestClientCancelFreesEverything cancels bounded and follow streams after
// their first batch, with and without the stall guard (which sends from a
// goroutine of its own), and checks that the running server is back to
// where it was: its checked allocator at zero and no goroutine left.
func TestClientCancelFreesEverything(t *testing.T) {
	for _, stall := range []time.Duration{0, time.Minute} {
		name := "no stall timeout"
		if stall > 0 {
			name = "stall timeout"
		}
		t.Run(name, func(t *testing.T) {
			checkLeaks(t)
			f := startWith(t, 4, 3000, 100, nil, withStallTimeout(stall))
			ctx := context.Background()
			// A first call sets up the connection, whose goroutines stay.
			if _, err := f.doGet(t, ctx, []byte(`{"table": "shop.orders", "to_snapshot": `+itoa(f.snapshots[0])+`}`)); err != nil {
				t.Fatal(err)
			}
			f.released(t, goleak.IgnoreCurrent())
			for _, tk := range []string{
				`{"table": "shop.orders"}`,
				`{"table": "shop.orders", "follow": true}`,
				`{"table": "shop.orders", "follow": true, "start": "from-snapshot", "from_snapshot": ` + itoa(f.snapshots[0]) + `}`,
			} {
				t.Run(tk, func(t *testing.T) {
					baseline := goleak.IgnoreCurrent()
					if err := f.cancelAfterFirstBatch(t, ctx, tk); err == nil {
						t.Fatal("a cancelled stream ended without an error")
					}
					f.released(t, baseline)
				})
			}
		})
	}
}

// TestCompleteStreamsLeaveNothing reads bounded streams to their end with
// the stall guard on: the server is back to its baseline after each.
func TestCompleteStreamsLeaveNothing(t *testing.T) {
	checkLeaks(t)
	f := startWith(t, 3, 200, 10, nil, withStallTimeout(time.Minute))
	ctx := context.Background()
	if _, err := f.doGet(t, ctx, []byte(`{"table": "shop.orders"}`)); err != nil {
		t.Fatal(err)
	}
	f.released(t, goleak.IgnoreCurrent())
	baseline := goleak.IgnoreCurrent()
	for range 5 {
		if _, err := f.doGet(t, ctx, []byte(`{"table": "shop.orders"}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.doGet(t, ctx, []byte(`{"table": "shop.orders", "start": "latest-full"}`)); err != nil {
			t.Fatal(err)
		}
	}
	f.released(t, baseline)
}

// TestStalledClientIsDropped opens a stream with a client that takes one
// batch and then stops reading. After the stall timeout the server gives
// the stream up: it frees the stream's buffers and goroutines while the
// client still holds the connection, and the client, reading on, gets what
// was in flight and then ResourceExhausted, never a clean end.
func TestStalledClientIsDropped(t *testing.T) {
	checkLeaks(t)
	const stall = 300 * time.Millisecond
	// 4 snapshots of 2000 rows of 1 KiB: 8 MiB, far more than the 64 KiB
	// flow-control windows of the client below.
	f := startWith(t, 4, 2000, 1<<10, nil, withStallTimeout(stall))
	conn, err := grpc.NewClient(f.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := flight.NewClientFromConn(conn, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := client.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD,
		Cmd: []byte(`{"table": "shop.orders"}`)}); err != nil {
		t.Fatal(err)
	}
	baseline := goleak.IgnoreCurrent()

	for _, tk := range []string{`{"table": "shop.orders"}`, `{"table": "shop.orders", "follow": true}`} {
		t.Run(tk, func(t *testing.T) {
			stream, err := client.DoGet(ctx, &flight.Ticket{Ticket: []byte(tk)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := stream.Recv(); err != nil { // the schema
				t.Fatal(err)
			}
			if _, err := stream.Recv(); err != nil { // a first batch
				t.Fatal(err)
			}
			// The client reads nothing more: the server must drop the
			// stream and free what it held, the connection staying open.
			// (The client's stream, unread, still has its goroutine.)
			f.released(t, baseline, goleak.IgnoreTopFunction("google.golang.org/grpc.newClientStreamWithParams.func4"))
			n := 0
			for {
				_, err := stream.Recv()
				if errors.Is(err, io.EOF) {
					t.Fatalf("the stream of a stalled client ended cleanly after %d more messages", n)
				}
				if err != nil {
					if st, _ := status.FromError(err); st.Code() != codes.ResourceExhausted {
						t.Fatalf("the stalled stream ended with %v, want ResourceExhausted", err)
					}
					break
				}
				n++
			}
			t.Logf("freed; %d messages were in flight", n)
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
