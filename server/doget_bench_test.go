package server_test

import (
	"context"
	"errors"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/sluicefeed/sluice/server"
)

// BenchmarkDoGetWindow reads a table's whole history (200,000 rows of
// ~200 bytes in 4 commits, ~45 MB of IPC bodies) over loopback gRPC,
// receiving the messages without decoding them: the server's cost of
// planning, reading, encoding and sending a large window, with the client's
// receive. cpu-ns/op is the process's CPU time (server and client) per
// read, steadier than the wall time on a busy machine. With the decode
// cache off, and on with a bound below the window's size (flightd's default
// 32 MiB against a larger window): a read the cache cannot keep, shared
// with no other stream, which should cost about what it costs without it.
func BenchmarkDoGetWindow(b *testing.B) {
	for _, bc := range []struct {
		name  string
		bound int64
	}{{"cache=off", 0}, {"cache=8MiB", 8 << 20}} {
		b.Run(bc.name, func(b *testing.B) {
			f := startWith(b, 4, 50000, 200, nil, func(o *server.Options) { o.DecodeCacheBytes = bc.bound })
			benchmarkWindow(b, f)
		})
	}
}

func benchmarkWindow(b *testing.B, f *fixture) {
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
