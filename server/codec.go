package server

import (
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// flightCodec is gRPC's proto codec, but for the FlightData of a stream's
// batches (ownedData), whose IPC body it sends as it is instead of copying
// it into the marshaled message: it writes the protobuf framing of the
// message's fields itself (the same bytes proto.Marshal writes, see
// TestFlightCodecMatchesProto) and references the body. Every other
// message goes to gRPC's proto codec. The server's streams use it (see
// Server.ServerOptions); a server without it marshals an ownedData as the
// FlightData it is, with a copy.
type flightCodec struct{ std encoding.CodecV2 }

func newFlightCodec() flightCodec { return flightCodec{std: encoding.GetCodecV2(grpcproto.Name)} }

// Name is the proto codec's: the codec replaces it on the server.
func (flightCodec) Name() string { return grpcproto.Name }

func (c flightCodec) Marshal(v any) (mem.BufferSlice, error) {
	if d, ok := v.(ownedData); ok && d.FlightDescriptor == nil && len(d.ProtoReflect().GetUnknown()) == 0 {
		return d.marshal(), nil
	}
	return c.std.Marshal(v)
}

func (c flightCodec) Unmarshal(data mem.BufferSlice, v any) error { return c.std.Unmarshal(data, v) }

// ownedData is a FlightData whose body belongs to the message alone: no
// one writes it once the message is sent, so gRPC may write it out from
// where it is after Send returned. pooled, when set, holds DataBody's
// buffer from bodyPool, which gets it back once gRPC has written the
// message (the first marshal takes it: a second one would copy).
type ownedData struct {
	*flight.FlightData
	pooled *pooledBody
}

// pooledBody is a body's buffer from bodyPool, until a marshal takes it.
type pooledBody struct{ buf *[]byte }

// FlightData's field numbers.
const (
	fieldDataHeader  = 2
	fieldAppMetadata = 3
	fieldDataBody    = 1000
)

// marshal returns the message's protobuf encoding: the framing and the
// header and app_metadata in a buffer of its own, then the body as it is.
// Like proto.Marshal, it writes the fields in the order of their numbers
// and leaves out empty ones.
func (d ownedData) marshal() mem.BufferSlice {
	n := len(d.DataHeader) + len(d.AppMetadata) + 3*(protowire.SizeTag(fieldDataBody)+binaryVarintMax)
	head := make([]byte, 0, n)
	if len(d.DataHeader) > 0 {
		head = protowire.AppendTag(head, fieldDataHeader, protowire.BytesType)
		head = protowire.AppendBytes(head, d.DataHeader)
	}
	if len(d.AppMetadata) > 0 {
		head = protowire.AppendTag(head, fieldAppMetadata, protowire.BytesType)
		head = protowire.AppendBytes(head, d.AppMetadata)
	}
	if len(d.DataBody) == 0 {
		return mem.BufferSlice{mem.SliceBuffer(head)}
	}
	head = protowire.AppendTag(head, fieldDataBody, protowire.BytesType)
	head = protowire.AppendVarint(head, uint64(len(d.DataBody)))
	body := mem.Buffer(mem.SliceBuffer(d.DataBody))
	if d.pooled != nil && d.pooled.buf != nil {
		if len(*d.pooled.buf) == len(d.DataBody) {
			body = mem.NewBuffer(d.pooled.buf, bodyPool)
		}
		d.pooled.buf = nil
	}
	return mem.BufferSlice{mem.SliceBuffer(head), body}
}

// binaryVarintMax is the longest varint.
const binaryVarintMax = 10
