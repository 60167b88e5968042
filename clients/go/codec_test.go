package sluice

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// sameFlightData compares the fields the client reads.
func sameFlightData(a, b *flight.FlightData) bool {
	return bytes.Equal(a.DataHeader, b.DataHeader) && bytes.Equal(a.DataBody, b.DataBody) &&
		bytes.Equal(a.AppMetadata, b.AppMetadata) && proto.Equal(a.FlightDescriptor, b.FlightDescriptor)
}

func TestFlightCodecDecodesAsProtobufDoes(t *testing.T) {
	body := bytes.Repeat([]byte{7}, 70000)
	cases := []*flight.FlightData{
		{},
		{DataHeader: []byte("header"), DataBody: body, AppMetadata: []byte(`{"snapshot":1}`)},
		{FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte("cmd")},
			DataHeader: []byte{1}},
		{FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"a", "b"}}},
	}
	c := newFlightCodec()
	for i, want := range cases {
		b, err := proto.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		// An unknown field, and the message split over several buffers
		// as the transport hands it over.
		b = protowire.AppendVarint(protowire.AppendTag(b, 77, protowire.VarintType), 5)
		var data mem.BufferSlice
		for len(b) > 0 {
			n := min(len(b), 16384)
			data = append(data, mem.SliceBuffer(bytes.Clone(b[:n])))
			b = b[n:]
		}
		var got flight.FlightData
		if err := c.Unmarshal(data, &got); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !sameFlightData(&got, want) {
			t.Fatalf("case %d: got %v, want %v", i, &got, want)
		}
	}
	// Other messages go to protobuf's codec.
	in := &flight.Ticket{Ticket: []byte("t")}
	data, err := c.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out flight.Ticket
	if err := c.Unmarshal(data, &out); err != nil || !proto.Equal(in, &out) {
		t.Fatalf("ticket: %v %v", &out, err)
	}
}

// The decoder never panics, and agrees with protobuf on every input
// protobuf accepts.
func FuzzUnmarshalFlightData(f *testing.F) {
	for _, fd := range []*flight.FlightData{
		{DataHeader: []byte("h"), DataBody: []byte("body"), AppMetadata: []byte("{}")},
		{FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"x"}}},
	} {
		b, _ := proto.Marshal(fd)
		f.Add(b)
	}
	f.Add([]byte{0xc2, 0x3e, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		var got flight.FlightData
		err := unmarshalFlightData(bytes.Clone(b), &got)
		var want flight.FlightData
		if proto.Unmarshal(b, &want) != nil {
			return
		}
		if err != nil {
			t.Fatalf("protobuf decodes %x, the client's codec fails: %v", b, err)
		}
		if !sameFlightData(&got, &want) {
			t.Fatalf("%x: got %v, want %v", b, &got, &want)
		}
	})
}
