package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the CPU time (user and system) of the calling thread,
// in seconds, up to the moment of the call (CLOCK_THREAD_CPUTIME_ID;
// getrusage of a thread lags behind by up to a scheduler tick).
func threadCPU() (float64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, fmt.Errorf("the thread's CPU clock: %w", err)
	}
	return time.Duration(ts.Nano()).Seconds(), nil
}

// socketChunk is the size of each write: gRPC's write buffer (32 KiB),
// which is what flightd's writes to a follower's socket are.
const socketChunk = 32 << 10

// socketFloor measures what the kernel alone costs a server that sends
// bytes to each of conns clients, rounds times: one thread writes them to
// conns loopback TCP connections in turn, in chunks of socketChunk, while
// other goroutines of this process read and drop them. It returns the
// writing thread's CPU time (its system calls; over loopback the kernel
// also delivers each segment to the receiving socket in the sender's
// thread, as it does for flightd) per connection and round, in seconds.
func socketFloor(ctx context.Context, conns int, bytes int64, rounds int) (float64, error) {
	if conns < 1 || bytes < 1 || rounds < 1 {
		return 0, fmt.Errorf("socket floor: %d connections, %d bytes, %d rounds", conns, bytes, rounds)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	var readers sync.WaitGroup
	defer readers.Wait()
	writers := make([]net.Conn, 0, conns)
	defer func() {
		for _, c := range writers {
			_ = c.Close()
		}
	}()
	var d net.Dialer
	for range conns {
		rc, err := d.DialContext(ctx, "tcp", ln.Addr().String())
		if err != nil {
			return 0, err
		}
		readers.Go(func() {
			defer rc.Close()
			_, _ = io.Copy(io.Discard, rc)
		})
		wc, err := ln.Accept()
		if err != nil {
			return 0, err
		}
		writers = append(writers, wc)
	}
	type result struct {
		cpu float64
		err error
	}
	done := make(chan result, 1)
	// The writes run on a thread of their own, so that its CPU time is
	// theirs alone.
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		buf := make([]byte, socketChunk)
		start, err := threadCPU()
		if err != nil {
			done <- result{err: err}
			return
		}
		for range rounds {
			for _, c := range writers {
				for left := bytes; left > 0; left -= socketChunk {
					if _, err := c.Write(buf[:min(left, socketChunk)]); err != nil {
						done <- result{err: fmt.Errorf("socket floor: %w", err)}
						return
					}
				}
			}
		}
		end, err := threadCPU()
		done <- result{cpu: end - start, err: err}
	}()
	res := <-done
	if res.err == nil && res.cpu <= 0 {
		res.err = errors.New("socket floor: the writing thread used no CPU time")
	}
	return res.cpu / float64(conns*rounds), res.err
}
