package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/peer"

	"github.com/sluicefeed/sluice/internal/lib/errclass"
)

// Limits bounds what callers may ask of the server at once. Exceeding one
// fails the call with ResourceExhausted. Zero values mean no limit.
type Limits struct {
	// MaxStreams bounds the streaming calls (DoGet, streaming actions,
	// WatchCommits) running at once, for all callers.
	MaxStreams int
	// MaxStreamsPerPrincipal bounds them per caller.
	MaxStreamsPerPrincipal int
	// CallsPerSecond is each caller's sustained call rate, with bursts of
	// twice as many; the Handshake is limited per client address instead.
	CallsPerSecond float64
	// StallTimeout ends a stream whose client has left a message untaken
	// for this long, so that a client that stops reading holds no server
	// memory. The server sees that through gRPC's flow control only once
	// the client's window and gRPC's queue are full (see stallGuard).
	StallTimeout time.Duration
}

// ErrLimit reports a call refused by a limit.
var ErrLimit = errclass.New(errclass.ResourceExhausted, "server: limit reached")

// limiter enforces Limits.
type limiter struct {
	l Limits
	// mu guards streams, total and buckets.
	mu      sync.Mutex
	streams map[string]int
	total   int
	buckets map[string]*bucket
}

func newLimiter(l Limits) *limiter {
	return &limiter{l: l, streams: map[string]int{}, buckets: map[string]*bucket{}}
}

// stream admits a streaming call; done releases its place.
func (lim *limiter) stream(ctx context.Context) (done func(), err error) {
	who := principalOf(ctx).Name
	lim.mu.Lock()
	defer lim.mu.Unlock()
	if lim.l.MaxStreams > 0 && lim.total >= lim.l.MaxStreams {
		return nil, fmt.Errorf("%w: the server runs its maximum of %d streams; retry later", ErrLimit, lim.l.MaxStreams)
	}
	if lim.l.MaxStreamsPerPrincipal > 0 && lim.streams[who] >= lim.l.MaxStreamsPerPrincipal {
		return nil, fmt.Errorf("%w: %s runs its maximum of %d streams", ErrLimit, who, lim.l.MaxStreamsPerPrincipal)
	}
	lim.total++
	lim.streams[who]++
	var once sync.Once
	return func() {
		once.Do(func() {
			lim.mu.Lock()
			defer lim.mu.Unlock()
			lim.total--
			if lim.streams[who]--; lim.streams[who] <= 0 {
				delete(lim.streams, who)
			}
		})
	}, nil
}

// call admits a call under the rate limit: per caller, or per client
// address for the Handshake (its caller is not known yet).
func (lim *limiter) call(ctx context.Context, method string) error {
	if lim.l.CallsPerSecond <= 0 {
		return nil
	}
	key := "principal:" + principalOf(ctx).Name
	if method == handshakeMethod {
		key = "peer:unknown"
		if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
			key = "peer:" + hostOf(p.Addr.String())
		}
	}
	now := time.Now()
	lim.mu.Lock()
	defer lim.mu.Unlock()
	b, ok := lim.buckets[key]
	if !ok {
		b = &bucket{tokens: 2 * lim.l.CallsPerSecond, at: now}
		lim.buckets[key] = b
		if len(lim.buckets) > 100_000 {
			lim.buckets = map[string]*bucket{key: b} // bounded memory; forgets idle callers
		}
	}
	if !b.take(now, lim.l.CallsPerSecond) {
		return fmt.Errorf("%w: more than %g calls per second", ErrLimit, lim.l.CallsPerSecond)
	}
	return nil
}

func hostOf(addr string) string {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			return addr[:i]
		}
	}
	return addr
}

// bucket is a token bucket of capacity twice the rate.
type bucket struct {
	tokens float64
	at     time.Time
}

func (b *bucket) take(now time.Time, rate float64) bool {
	b.tokens = min(2*rate, b.tokens+now.Sub(b.at).Seconds()*rate)
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
