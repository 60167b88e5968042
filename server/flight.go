package server

import (
	"context"
	"encoding/json"
	"iter"
	"log/slog"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	flightgen "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sluicefeed/sluice/feed"
)

// flightService implements the Arrow Flight RPCs.
type flightService struct {
	flight.BaseFlightServer
	s *Server
	// sql routes Flight SQL commands, tickets and actions (flightsql.go).
	sql flight.FlightServer
}

// plan plans an authorized window request.
func (s *Server) plan(ctx context.Context, r *request) (*feed.Plan, error) {
	if r.stream != nil {
		return nil, errStreamNotWindow
	}
	start := time.Now()
	p, err := s.engine.Plan(ctx, r.window)
	if err != nil {
		return nil, err
	}
	if s.metrics != nil {
		s.metrics.planSeconds.Observe(time.Since(start).Seconds())
	}
	if s.log.Enabled(ctx, slog.LevelDebug) {
		for _, sp := range p.Snapshots {
			s.log.DebugContext(ctx, "plan", "table", clipName(p.Table), "format", p.Format, "snapshot", sp.ID,
				"operation", sp.Operation, "strategy", sp.Strategy, "reason", sp.Reason, "files", len(sp.Files))
		}
	}
	return p, nil
}

// changeRequest runs the request pipeline of a call that carries a
// ChangeRequest's bytes: decode and validate once, authorize once. Its
// errors repeat the client's names cut short.
func (s *Server) changeRequest(ctx context.Context, b []byte) (*request, error) {
	r, err := parseRequest(b)
	if err != nil {
		return nil, err
	}
	if err := s.authorize(ctx, r); err != nil {
		return nil, clipNames(err, r.names()...)
	}
	return r, nil
}

func commandOf(desc *flight.FlightDescriptor) ([]byte, error) {
	if desc == nil {
		return nil, badRequestf("missing flight descriptor")
	}
	if desc.Type != flight.DescriptorCMD {
		return nil, badRequestf("descriptor of type %s: want a command descriptor holding a ChangeRequest "+
			"(FlightDescriptor.for_command)", desc.Type)
	}
	return desc.Cmd, nil
}

// GetFlightInfo plans the window of the ChangeRequest in the descriptor and
// returns one endpoint whose ticket pins the planned window, or, when the
// request asks for max_endpoints, the endpoints of its parts (see
// feed.Plan.Split), spread over the replicas.
func (f *flightService) GetFlightInfo(ctx context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	get := f.s.flightInfo
	if isSQLDescriptor(desc) {
		get = f.sql.GetFlightInfo
	}
	info, err := get(ctx, desc)
	if err != nil {
		return nil, f.s.fail(ctx, "GetFlightInfo", err)
	}
	return info, nil
}

func (s *Server) flightInfo(ctx context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	cmd, err := commandOf(desc)
	if err != nil {
		return nil, err
	}
	r, err := s.changeRequest(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if r.stream != nil {
		info, err := s.streamInfo(ctx, desc, r)
		return info, clipNames(err, r.names()...)
	}
	p, err := s.plan(ctx, r)
	if err != nil {
		return nil, clipNames(err, r.names()...)
	}
	var endpoints []*flight.FlightEndpoint
	if n := int(r.wire.GetMaxEndpoints()); n > 1 {
		if endpoints, err = s.splitInfo(ctx, r, p, p.Split(n)); err != nil {
			return nil, err
		}
	} else {
		ticket, err := pinnedTicket(r.wire, p, nil)
		if err != nil {
			return nil, err
		}
		endpoints = []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: ticket}}}
	}
	total := int64(-1)
	if exactRowCount(p) {
		total = p.RecordsRead
	}
	sum := planSummary(p)
	sum.Endpoints = len(endpoints)
	meta, err := json.Marshal(sum)
	if err != nil {
		return nil, err
	}
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(p.Schema(), s.mem),
		FlightDescriptor: desc,
		Endpoint:         endpoints,
		TotalRecords:     total,
		TotalBytes:       -1,
		Ordered:          true,
		AppMetadata:      meta,
	}, nil
}

// streamInfo is the FlightInfo of a stream request: its schema (that of
// the table's current snapshot) and one endpoint whose ticket is the
// request itself, since a stream starts where it is when DoGet opens it.
func (s *Server) streamInfo(ctx context.Context, desc *flight.FlightDescriptor, r *request) (*flight.FlightInfo, error) {
	schema, err := s.engine.Schema(ctx, r.shape())
	if err != nil {
		return nil, err
	}
	ticket, err := proto.MarshalOptions{Deterministic: true}.Marshal(r.wire)
	if err != nil {
		return nil, err
	}
	m := map[string]any{"table": r.stream.Table, "follow": r.stream.Follow, "start": r.stream.Start,
		"consumer": r.consumer}
	if r.stream.Ref != "" {
		// The branch (or tag) the stream follows, as the request names it.
		m["ref"] = r.stream.Ref
	}
	meta, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(schema, s.mem),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: ticket}}},
		TotalRecords:     -1,
		TotalBytes:       -1,
		Ordered:          true,
		AppMetadata:      meta,
	}, nil
}

// exactRowCount reports whether the plan's records read equal the rows it
// emits: appends only, without a filter.
func exactRowCount(p *feed.Plan) bool {
	if p.Filter != "" {
		return false
	}
	for _, sp := range p.Snapshots {
		switch sp.Strategy {
		case feed.StrategyAppend, feed.StrategyReplaceSkipped, feed.StrategyNoDataChange:
		default:
			return false
		}
	}
	return true
}

// summary is the FlightInfo's app_metadata: the pinned window.
type summary struct {
	Table     string `json:"table"`
	From      *int64 `json:"from_snapshot"`
	To        *int64 `json:"to_snapshot"`
	Snapshots int    `json:"snapshots"`
	CommitSeq int64  `json:"commit_seq"`
	Endpoints int    `json:"endpoints"`
	// Ref is the branch or tag the window runs on (nil: the main branch
	// of a request that named none).
	Ref *feed.Ref `json:"ref,omitempty"`
}

func planSummary(p *feed.Plan) summary {
	s := summary{Table: p.Table, From: p.From, To: p.To, Snapshots: len(p.Snapshots), Ref: p.Ref}
	if n := len(p.Snapshots); n > 0 {
		s.CommitSeq = p.Snapshots[n-1].CommitSeq
	}
	return s
}

// GetSchema returns the output schema of the ChangeRequest in the
// descriptor, without reading data.
func (f *flightService) GetSchema(ctx context.Context, desc *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	if isSQLDescriptor(desc) {
		res, err := f.sql.GetSchema(ctx, desc)
		if err != nil {
			return nil, f.s.fail(ctx, "GetSchema", err)
		}
		return res, nil
	}
	schema, err := f.s.schema(ctx, desc)
	if err != nil {
		return nil, f.s.fail(ctx, "GetSchema", err)
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(schema, f.s.mem)}, nil
}

func (s *Server) schema(ctx context.Context, desc *flight.FlightDescriptor) (*arrow.Schema, error) {
	cmd, err := commandOf(desc)
	if err != nil {
		return nil, err
	}
	r, err := s.changeRequest(ctx, cmd)
	if err != nil {
		return nil, err
	}
	schema, err := s.engine.Schema(ctx, r.shape())
	return schema, clipNames(err, r.names()...)
}

// DoGet streams the changes of a ticket: a pinned ticket from
// GetFlightInfo, or a ChangeRequest sent directly (a window or a stream).
func (f *flightService) DoGet(tkt *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	ctx := stream.Context()
	if msg, ok, err := sqlMessage(tkt.GetTicket()); ok {
		if err == nil {
			if st, statement := msg.(*flightgen.TicketStatementQuery); statement {
				err = f.s.serveSQL(ctx, st.GetStatementHandle(), stream)
			} else if err = sqlTicketError(msg); err == nil {
				err = f.sql.DoGet(tkt, stream)
			}
		}
		if err != nil {
			return f.s.fail(ctx, "DoGet", err)
		}
		return nil
	}
	r, err := f.s.changeRequest(ctx, tkt.GetTicket())
	if err != nil {
		return f.s.fail(ctx, "DoGet", err)
	}
	if r.stream != nil {
		err = f.s.serveStream(ctx, r, stream)
	} else {
		err = f.s.serveWindow(ctx, r, stream)
	}
	if err != nil {
		return f.s.fail(ctx, "DoGet", clipNames(err, r.names()...))
	}
	return nil
}

// serveWindow plans a window and streams its changes.
func (s *Server) serveWindow(ctx context.Context, r *request, stream flight.DataStreamWriter) error {
	p, err := s.plan(ctx, r)
	if err != nil {
		return err
	}
	w := s.newWriter(stream, p.Table, p.Schema(), r.compression)
	defer w.release()
	// A part that ends before its snapshot's last file does not complete
	// the snapshot (a consumer may checkpoint at a complete batch): the
	// part that holds the last file does.
	pt := r.window.Part
	partial := pt != nil && pt.FileCount > 0 && pt.EndFile < pt.FileCount
	rd := s.windowRead(p)
	if pt != nil {
		// A part's read is its own (its plan's ReadKey is "" too).
		rd.key = ""
		read := rd.read
		rd.read = func(ctx context.Context) iter.Seq2[feed.Batch, error] {
			return func(yield func(feed.Batch, error) bool) {
				for b, err := range read(ctx) {
					if partial {
						b.SnapshotComplete = false
					}
					if !yield(b, err) {
						return
					}
				}
			}
		}
	}
	if err := s.writeRead(ctx, w, rd, r.compression, nil); err != nil {
		return sendError(ctx, err)
	}
	if err := w.close(); err != nil {
		return sendError(ctx, err)
	}
	messages, bytes := w.sent()
	s.log.DebugContext(ctx, "stream done", "table", clipName(p.Table), "snapshots", len(p.Snapshots),
		"messages", messages, "bytes", bytes)
	return nil
}

// sendError reports a failed send: the client's cancellation when it went
// away, else the error itself.
func sendError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	return err
}

// ListFlights lists one flight per table the caller may read: its
// descriptor is the command {"table": "<name>"}, which reads the table's
// whole history. A table that cannot be read is left out (and logged).
func (f *flightService) ListFlights(_ *flight.Criteria, stream flight.FlightService_ListFlightsServer) error {
	ctx := stream.Context()
	tables, err := f.s.tables(ctx)
	if err != nil {
		return f.s.fail(ctx, "ListFlights", err)
	}
	for _, t := range tables {
		cmd, err := json.Marshal(map[string]string{"table": t.Name})
		if err != nil {
			return f.s.fail(ctx, "ListFlights", err)
		}
		req, err := f.s.authorizeShape(ctx, feed.Request{Table: t.Name})
		if err != nil {
			return f.s.fail(ctx, "ListFlights", err)
		}
		schema, err := f.s.engine.Schema(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return f.s.fail(ctx, "ListFlights", err)
			}
			f.s.skipped(ctx, t.Name, err)
			continue
		}
		info := &flight.FlightInfo{
			Schema:           flight.SerializeSchema(schema, f.s.mem),
			FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd},
			TotalRecords:     -1,
			TotalBytes:       -1,
		}
		if err := stream.Send(info); err != nil {
			return sendError(ctx, err)
		}
	}
	return nil
}

// DoPut is not offered: Sluice reads tables, it does not write them. A
// Flight SQL update, ingestion or parameter binding is refused as
// InvalidArgument naming what Flight SQL offers.
func (f *flightService) DoPut(stream flight.FlightService_DoPutServer) error {
	if first, err := stream.Recv(); err == nil && isSQLDescriptor(first.GetFlightDescriptor()) {
		return f.s.fail(stream.Context(), "DoPut", unsupportedSQL("DoPut (updates, ingestion, parameters)"))
	}
	return status.Error(codes.Unimplemented, "DoPut is not offered: Sluice serves change feeds and does not write tables")
}

// DoExchange is not offered.
func (f *flightService) DoExchange(flight.FlightService_DoExchangeServer) error {
	return status.Error(codes.Unimplemented, "DoExchange is not offered: read change feeds with DoGet")
}

// Handshake is Flight's authentication exchange: a client sends
// "authorization: Basic base64(user:password)" (pyarrow's
// authenticate_basic_token) and gets back the header
// "authorization: Bearer <token>" to send on later calls. With a bearer
// token, or in the mTLS mode, it only checks the caller.
func (f *flightService) Handshake(stream flight.FlightService_HandshakeServer) error {
	ctx := stream.Context()
	if f.s.authn == nil {
		return status.Error(codes.Unimplemented, "authentication is off on this server: call it without a handshake")
	}
	_, md, err := f.s.authn.Handshake(ctx)
	if err != nil {
		return f.s.fail(ctx, "Handshake", err)
	}
	if md != nil {
		if err := stream.SetHeader(md); err != nil {
			return f.s.fail(ctx, "Handshake", err)
		}
	}
	return nil
}
