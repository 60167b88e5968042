package server

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"

	"github.com/sluicefeed/sluice/feed"
)

// poisoning is an allocator that overwrites what it frees, so that a
// buffer used after its release shows.
type poisoning struct{ memory.Allocator }

func (p poisoning) Free(b []byte) {
	for i := range b {
		b[i] = 0xEE
	}
	p.Allocator.Free(b)
}

func (p poisoning) Reallocate(size int, b []byte) []byte {
	out := p.Allocate(size)
	copy(out, b)
	p.Free(b)
	return out
}

// heldStream is a stream whose sends wait until it is let go, like one
// whose client stopped reading; a send checks, when it returns, that the
// message it was given was not changed meanwhile.
type heldStream struct {
	let     chan struct{}
	mu      sync.Mutex // guards changed
	changed bool
}

func (h *heldStream) Send(fd *flight.FlightData) error {
	header := bytes.Clone(fd.DataHeader)
	<-h.let
	h.mu.Lock()
	defer h.mu.Unlock()
	h.changed = h.changed || !bytes.Equal(header, fd.DataHeader)
	return errors.New("stream ended")
}

// TestStalledSendKeepsItsMessage: when a send is given up (the client
// stopped reading), the sender goroutine still holds the message in gRPC's
// Send; its header must stay intact until that send returns, and be
// released then, and the sender must end. (The writer used to release the
// header as soon as it gave the send up.)
func TestStalledSendKeepsItsMessage(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	mem := memory.NewCheckedAllocator(poisoning{memory.NewGoAllocator()})
	srv := New(nil, Options{Allocator: mem, Limits: Limits{StallTimeout: 50 * time.Millisecond}})
	stream := &heldStream{let: make(chan struct{})}
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	w := srv.newWriter(stream, "t", schema, "")
	rec := array.NewRecordBatch(schema, []arrow.Array{array.MakeArrayOfNull(mem, arrow.PrimitiveTypes.Int64, 0)}, 0)
	err := w.write(feed.Batch{Record: rec}, kindChanges)
	rec.Column(0).Release()
	rec.Release()
	if !errors.Is(err, ErrStalled) {
		t.Fatalf("a held send: %v, want ErrStalled", err)
	}
	w.release()
	if mem.CurrentAlloc() == 0 {
		t.Fatal("the held message's header was released while gRPC still sends it")
	}
	close(stream.let)
	deadline := time.Now().Add(5 * time.Second)
	for mem.CurrentAlloc() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	mem.AssertSize(t, 0)
	stream.mu.Lock()
	defer stream.mu.Unlock()
	if stream.changed {
		t.Fatal("the header of a message being sent changed under the send: it was released")
	}
}
