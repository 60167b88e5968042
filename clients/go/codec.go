package sluice

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// flightCodec is the client's gRPC codec: protobuf, as gRPC's own, except
// that a received FlightData is decoded without copying its bytes again.
// gRPC's codec copies a message out of the transport's buffers and then
// protobuf copies each bytes field out of that; here the IPC body, header
// and app_metadata alias the one copy, which the decoded record batch's
// buffers then wrap (the garbage collector frees it with the batch). On a
// full-width read that is one memmove of every byte fewer.
type flightCodec struct{ proto encoding.CodecV2 }

func newFlightCodec() flightCodec { return flightCodec{proto: encoding.GetCodecV2("proto")} }

// Name is "proto": on the wire nothing changes.
func (flightCodec) Name() string { return "proto" }

func (c flightCodec) Marshal(v any) (mem.BufferSlice, error) { return c.proto.Marshal(v) }

func (c flightCodec) Unmarshal(data mem.BufferSlice, v any) error {
	fd, ok := v.(*flight.FlightData)
	if !ok {
		return c.proto.Unmarshal(data, v)
	}
	// data is the transport's, freed when Unmarshal returns: copy it once
	// into memory of our own.
	return unmarshalFlightData(data.Materialize(), fd)
}

// FlightData field numbers (Flight.proto).
const (
	fdDescriptor  = 1
	fdDataHeader  = 2
	fdAppMetadata = 3
	fdDataBody    = 1000
)

// unmarshalFlightData decodes b into fd, its bytes fields aliasing b.
func unmarshalFlightData(b []byte, fd *flight.FlightData) error {
	proto.Reset(fd)
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("decode FlightData: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.BytesType || (num != fdDescriptor && num != fdDataHeader && num != fdAppMetadata &&
			num != fdDataBody) {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("decode FlightData: field %d: %w", num, protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return fmt.Errorf("decode FlightData: field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		switch num {
		case fdDescriptor:
			if fd.FlightDescriptor == nil {
				fd.FlightDescriptor = &flight.FlightDescriptor{}
			}
			// A repeated message field merges, as protobuf does.
			if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(v, fd.FlightDescriptor); err != nil {
				return fmt.Errorf("decode FlightData: flight_descriptor: %w", err)
			}
		case fdDataHeader:
			fd.DataHeader = v
		case fdAppMetadata:
			fd.AppMetadata = v
		case fdDataBody:
			fd.DataBody = v
		}
	}
	return nil
}
