package server_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicefeed/sluice/server"
)

// TestQuietFollowStreamOfStoppedClientIsDropped: a client that stops
// reading a follow stream of a quiet table is dropped once it has left a
// message untaken for the stall timeout. Its heartbeats are small and fit
// in the flow-control window and gRPC's queue for a while before a send
// waits; the timeout counts from the first heartbeat the client provably
// did not take, not from the first send that waited. (It used to count from
// that send: the stream lived on for the time the heartbeats took to fill
// the window, and the timeout again.)
func TestQuietFollowStreamOfStoppedClientIsDropped(t *testing.T) {
	const stall = 4 * time.Second
	var logs logBuffer
	f := startWith(t, 1, 2, 8, nil, withStallTimeout(stall), func(o *server.Options) {
		// About 150 heartbeats fill the client's window and gRPC's queue:
		// 3 s of them.
		o.Follow.HeartbeatInterval = 20 * time.Millisecond
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := f.client.DoGet(ctx, &flight.Ticket{Ticket: []byte(`{"table": "shop.orders", "follow": true, "start": "latest"}`)})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the schema and a first heartbeat
		if _, err := stream.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	stopped := time.Now()
	dropped := func() bool {
		for _, l := range logs.lines("call failed") {
			if strings.Contains(l, "code=ResourceExhausted") {
				return true
			}
		}
		return false
	}
	for !dropped() {
		if time.Since(stopped) > 30*time.Second {
			t.Fatal("the stream of a client that stopped reading was not dropped within 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	after := time.Since(stopped)
	t.Logf("dropped %s after the client stopped reading (stall timeout %s)", after.Round(time.Millisecond), stall)
	// The upper margin allows for a loaded machine (it once took 1.5 s more
	// at a load average of 27); the drop must still come from the stall
	// timeout, not from the 30 s deadline above.
	if after < stall-time.Second || after > stall+3*time.Second {
		t.Fatalf("dropped %s after the client stopped reading, want about the stall timeout %s", after, stall)
	}
	for {
		if _, err := stream.Recv(); err != nil {
			if status.Code(err) != codes.ResourceExhausted {
				t.Fatalf("the dropped stream ended with %v, want ResourceExhausted", err)
			}
			break
		}
	}
}
