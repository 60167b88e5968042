package server_test

import (
	"context"
	"errors"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
)

// BenchmarkDoGetWindow reads a table's whole history (200,000 rows of
// ~200 bytes in 4 commits, ~45 MB of IPC bodies) over loopback gRPC,
// receiving the messages without decoding them: the server's cost of
// planning, reading, encoding and sending a large window, with the client's
// receive. cpu-ns/op is the process's CPU time (server and client) per
// read, steadier than the wall time on a busy machine.
func BenchmarkDoGetWindow(b *testing.B) {
	f := startWith(b, 4, 50000, 200, nil)
	ctx := context.Background()
	var size int64
	b.ReportAllocs()
	before := cpuTime(b)
	for b.Loop() {
		stream, err := f.client.DoGet(ctx, &flight.Ticket{Ticket: []byte(`{"table": "shop.orders"}`)})
		if err != nil {
			b.Fatal(err)
		}
		size = 0
		for {
			fd, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			size += int64(len(fd.DataBody))
		}
	}
	b.SetBytes(size)
	b.ReportMetric(float64(cpuTime(b)-before)/float64(b.N), "cpu-ns/op")
}

// cpuTime returns the process's user and system CPU time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
