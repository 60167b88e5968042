package server

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluicefeed/sluice/internal/lib/errclass"
)

// ErrStalled reports a client that took no message for the stall timeout.
var ErrStalled = errclass.New(errclass.ResourceExhausted, "server: client stopped reading")

// unprovenBytes is how much of what gRPC has accepted for a stream a
// client may not have taken while a send of the stream is held back by
// flow control: gRPC's write quota of a stream (64 KiB: a send waits once
// that much is queued and not written) and the smallest flow-control
// window a client has (65,535 bytes, HTTP/2's initial window: what was
// written and not taken). Every byte accepted before the last
// unprovenBytes has been written, and while the window is full (the client
// takes nothing) every byte written before the last window was taken;
// what came after has provably not been taken.
const unprovenBytes = 64<<10 + 65535

// acceptance is a message gRPC accepted: when, and where it starts in the
// stream's bytes.
type acceptance struct {
	at    time.Time
	start int64
}

// stallGuard sends a stream's messages from a goroutine of its own, so that
// a send that gRPC's flow control holds back — a client that stopped
// reading — can be given up: the call then ends (with ResourceExhausted),
// gRPC ends the stream, and the held send returns.
//
// The stall timeout counts from the oldest message the client has provably
// not taken, not from when the held send began: a client that stopped
// reading a quiet follow stream has its heartbeats (small, a few a minute)
// fill the flow-control window and gRPC's queue before any send waits, and
// counting from then would let it hold the stream for that long plus the
// timeout. While a send waits, every message accepted in the last
// unprovenBytes is one the client has not taken (see unprovenBytes): the
// stream is stalled once the first of them has waited the timeout. A send
// is taken as held back by flow control only after it has waited
// checkAfter, a tenth of the timeout but at least a second, far longer
// than any hiccup of the server's own.
//
// Like the stream it guards, it is used by one goroutine. Its sender
// releases each message's header once gRPC is done with it; stop joins the
// sender, but the sender of a stream that stalled ends only once gRPC ends
// the stream (right after the call returns), releasing the held message
// then.
type stallGuard struct {
	// out hands a message to gRPC (see sender).
	out        func(outMsg) error
	timeout    time.Duration
	checkAfter time.Duration

	// queue hands messages to the sender goroutine, which answers each on
	// done and closes exited when it ends. They are nil until the first
	// send; queue is closed by stop, or when the stream stalls.
	queue  chan outgoing
	done   chan error
	exited chan struct{}
	// stalled is set once the stream stalled, closed once the queue is.
	stalled, closed bool

	// accepted are the messages gRPC accepted, oldest first, as far back
	// as unprovenBytes before the last; sent counts the bytes of all.
	accepted []acceptance
	sent     int64
}

// outgoing is a message for the sender, with the release of its header.
type outgoing struct {
	m       outMsg
	release func()
}

func newStallGuard(out func(outMsg) error, timeout time.Duration) *stallGuard {
	return &stallGuard{out: out, timeout: timeout, checkAfter: min(timeout, max(timeout/10, time.Second))}
}

// send sends a message from the sender goroutine and returns once gRPC
// accepted it, or with ErrStalled once the stream stalled; the sender calls
// release when gRPC is done with the message, in either case.
func (g *stallGuard) send(m outMsg, release func()) error {
	if g.closed {
		release()
		if g.stalled {
			return fmt.Errorf("%w: no message taken for %v", ErrStalled, g.timeout)
		}
		return errors.New("server: send on a stream that ended")
	}
	if g.queue == nil {
		g.queue, g.done, g.exited = make(chan outgoing), make(chan error, 1), make(chan struct{})
		go g.sender()
	}
	begun := time.Now()
	g.queue <- outgoing{m: m, release: release}
	timer := time.NewTimer(g.checkAfter)
	defer timer.Stop()
	for {
		select {
		case err := <-g.done:
			if err == nil {
				g.accept(time.Now(), m.size+5) // 5: gRPC's message header
			}
			return err
		case now := <-timer.C:
			deadline := g.waitingSince(begun).Add(g.timeout)
			if now.Before(deadline) {
				timer.Reset(deadline.Sub(now))
				continue
			}
			g.stalled, g.closed = true, true
			close(g.queue) // the sender ends once gRPC ends the stream
			return fmt.Errorf("%w: no message taken for %v", ErrStalled, g.timeout)
		}
	}
}

// sender sends the queued messages until the queue closes.
func (g *stallGuard) sender() {
	defer close(g.exited)
	for m := range g.queue {
		err := g.out(m.m)
		m.release()
		g.done <- err
	}
}

// accept records a message gRPC accepted, and forgets those that came
// more than unprovenBytes before it.
func (g *stallGuard) accept(at time.Time, size int64) {
	g.accepted = append(g.accepted, acceptance{at: at, start: g.sent})
	g.sent += size
	i := 0
	for i < len(g.accepted)-1 && g.accepted[i+1].start <= g.sent-unprovenBytes {
		i++
	}
	g.accepted = g.accepted[i:]
}

// waitingSince returns since when the client has left a message untaken,
// as far as flow control proves it while a send (begun at begun) waits: the
// acceptance of the first message that began in the last unprovenBytes of
// the stream, or begun.
func (g *stallGuard) waitingSince(begun time.Time) time.Time {
	for _, a := range g.accepted {
		if a.start >= g.sent-unprovenBytes {
			return a.at
		}
	}
	return begun
}

// stop ends the sender goroutine and waits for it, unless the stream
// stalled: that sender ends when gRPC ends the stream. Every stream calls
// it when it ends, however it ends.
func (g *stallGuard) stop() {
	if g.closed {
		return
	}
	g.closed = true
	if g.queue != nil {
		close(g.queue)
		<-g.exited
	}
}
