package sluice

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/protobuf/proto"

	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
)

// Endpoint is one part of a window split for a parallel read (see
// Client.Endpoints): a ticket, and the replicas that serve it.
type Endpoint struct {
	// Ticket reads the part (Client.ReadTicket).
	Ticket []byte
	// Locations are the addresses of the replicas that serve the ticket,
	// the preferred one first; empty: the server that split the window.
	Locations []string
}

// Endpoints plans the window of req on the server and returns its output
// schema and endpoints: one, or with req.MaxEndpoints up to that many
// parts of the window. Read each with ReadTicket, on a client of one of
// its Locations, in parallel: the parts' rows concatenated in endpoint
// order are exactly the window's, in its order (docs/PROTOCOL.md, "Split
// windows").
func (c *Client) Endpoints(ctx context.Context, req ChangeRequest) (*arrow.Schema, []Endpoint, error) {
	const op = "Endpoints"
	desc, err := req.descriptor(op)
	if err != nil {
		return nil, nil, err
	}
	info, err := c.flight.GetFlightInfo(ctx, desc)
	if err != nil {
		return nil, nil, callError(ctx, op, err)
	}
	schema, err := flight.DeserializeSchema(info.GetSchema(), c.mem)
	if err != nil {
		return nil, nil, callError(ctx, op, protocolError("decode the schema of the flight: %v", err))
	}
	out := make([]Endpoint, 0, len(info.GetEndpoint()))
	for i, ep := range info.GetEndpoint() {
		if ep.GetTicket() == nil {
			return nil, nil, callError(ctx, op, protocolError("endpoint %d of the flight has no ticket", i))
		}
		e := Endpoint{Ticket: ep.GetTicket().GetTicket()}
		for _, l := range ep.GetLocation() {
			e.Locations = append(e.Locations, l.GetUri())
		}
		out = append(out, e)
	}
	return schema, out, nil
}

// partialTicket reports whether a ticket reads a part of a split window
// that ends inside a snapshot's files, whose stream ends without
// completing the snapshot (the part holding its last file completes it).
func partialTicket(ticket []byte) bool {
	var req sluicev1.ChangeRequest
	if proto.Unmarshal(ticket, &req) != nil {
		return false
	}
	pt := req.GetPart()
	return pt != nil && pt.GetFileCount() > 0 && pt.GetEndFile() < pt.GetFileCount()
}

// ReadTicket streams the changes of a ticket from Endpoints. ctx governs
// the whole read; the caller must Release the reader. The read of a part
// that ends inside a snapshot's files ends with a batch whose
// SnapshotComplete is false: the part holding the snapshot's last file
// completes it.
func (c *Client) ReadTicket(ctx context.Context, ticket []byte) (*ChangeReader, error) {
	const op = "ReadTicket"
	if len(ticket) == 0 {
		return nil, invalidArgument(op, "empty ticket")
	}
	rctx, cancel := context.WithCancel(ctx)
	r := &ChangeReader{op: op, ctx: rctx, cancel: cancel, flight: c.flight, mem: c.mem,
		tickets: [][]byte{ticket}, partial: partialTicket(ticket)}
	if err := r.open(); err != nil {
		r.Release()
		return nil, err
	}
	return r, nil
}
