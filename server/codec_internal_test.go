package server

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// TestFlightCodecMatchesProto: the codec's FlightData bytes are
// proto.Marshal's, for bodies, headers and app_metadata of every size
// (empty ones included, and sizes around the varint boundaries), pooled
// bodies or not; and a message it does not write by hand (a descriptor, or
// not a stream's batch) goes to gRPC's proto codec.
func TestFlightCodecMatchesProto(t *testing.T) {
	c := newFlightCodec()
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	sizes := []int{0, 1, 7, 127, 128, 129, 300, 16383, 16384, 70000, 2 << 20}
	n := 0
	for _, body := range sizes {
		for _, header := range []int{0, 1, 127, 128, 600} {
			for _, meta := range []int{0, 1, 130} {
				for _, pooled := range []bool{false, true} {
					fd := &flight.FlightData{DataHeader: fill(header), DataBody: fill(body), AppMetadata: fill(meta)}
					if header == 0 {
						fd.DataHeader = nil
					}
					if meta == 0 {
						fd.AppMetadata = nil
					}
					want, err := proto.Marshal(fd)
					if err != nil {
						t.Fatal(err)
					}
					d := ownedData{FlightData: fd}
					if pooled {
						buf := bodyPool.Get(body)
						copy(*buf, fd.DataBody)
						fd.DataBody = *buf
						d.pooled = &pooledBody{buf: buf}
					}
					got, err := c.Marshal(d)
					if err != nil {
						t.Fatal(err)
					}
					if b := got.Materialize(); !bytes.Equal(b, want) {
						t.Fatalf("body %d, header %d, app_metadata %d: %d bytes differ from proto.Marshal's %d",
							body, header, meta, len(b), len(want))
					}
					if body > 0 && len(got) != 2 {
						t.Fatalf("body %d: %d buffers, want the framing and the body as it is", body, len(got))
					}
					got.Free()
					var back flight.FlightData
					if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(want)}, &back); err != nil ||
						!bytes.Equal(back.DataBody, fd.DataBody) || !bytes.Equal(back.DataHeader, fd.DataHeader) {
						t.Fatalf("unmarshal: %v", err)
					}
					n++
				}
			}
		}
	}
	// Not written by hand: a descriptor, a plain FlightData, another message.
	for _, v := range []proto.Message{
		&flight.FlightData{FlightDescriptor: &flight.FlightDescriptor{Cmd: []byte("x")}, DataBody: []byte("body")},
		&flight.Ticket{Ticket: []byte("t")},
	} {
		var m any = v
		if fd, ok := v.(*flight.FlightData); ok {
			m = ownedData{FlightData: fd}
		}
		got, err := c.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := proto.Marshal(v)
		if !bytes.Equal(got.Materialize(), want) {
			t.Fatalf("%T: not proto.Marshal's bytes", v)
		}
	}
	// A server without the codec marshals an ownedData as its FlightData.
	fd := &flight.FlightData{DataHeader: []byte("h"), DataBody: fill(5000), AppMetadata: []byte("{}")}
	got, err := c.std.Marshal(ownedData{FlightData: fd, pooled: &pooledBody{buf: bodyPool.Get(5000)}})
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := proto.Marshal(fd); !bytes.Equal(got.Materialize(), want) {
		t.Fatal("gRPC's proto codec marshals an ownedData differently from its FlightData")
	}
	t.Logf("%d messages compared", n)
}

// BenchmarkFlightDataMarshal compares the codec with gRPC's proto codec
// on a stream's batch message of 1 MiB.
func BenchmarkFlightDataMarshal(b *testing.B) {
	fd := &flight.FlightData{DataHeader: make([]byte, 300), DataBody: make([]byte, 1<<20),
		AppMetadata: make([]byte, 120)}
	c := newFlightCodec()
	for _, arm := range []struct {
		name string
		msg  any
	}{{"proto", fd}, {"owned", ownedData{FlightData: fd}}} {
		b.Run(arm.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(fd.DataBody)))
			for b.Loop() {
				data, err := c.Marshal(arm.msg)
				if err != nil {
					b.Fatal(err)
				}
				data.Free()
			}
		})
	}
}
