package server

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	flightgen "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/sluicefeed/sluice/feed"
	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
	"github.com/sluicefeed/sluice/internal/lib/version"
)

// Flight SQL on the Flight service's port: a descriptor's command or a
// ticket that is a protobuf Any holding a Flight SQL message, and the
// Flight SQL actions, go to arrow-go's flightsql router over sqlService;
// everything else to Sluice's own handlers. Both run under the same
// interceptors (authentication, limits, metrics), and every call that names
// a table authorizes it as a ChangeRequest does.

// sqlTypePrefix starts the type URL of every Flight SQL message.
const sqlTypePrefix = "type.googleapis.com/arrow.flight.protocol.sql."

// sqlActions are the Flight SQL action types.
var sqlActions = map[string]bool{
	flightsql.CreatePreparedStatementActionType:     true,
	flightsql.ClosePreparedStatementActionType:      true,
	flightsql.CreatePreparedSubstraitPlanActionType: true,
	flightsql.CancelQueryActionType:                 true,
	flightsql.BeginSavepointActionType:              true,
	flightsql.BeginTransactionActionType:            true,
	flightsql.EndTransactionActionType:              true,
	flightsql.EndSavepointActionType:                true,
}

// sqlMessage decodes bytes that hold a Flight SQL message in a protobuf
// Any; ok is false for anything else (a ChangeRequest, JSON).
func sqlMessage(b []byte) (msg proto.Message, ok bool, err error) {
	var a anypb.Any
	if proto.Unmarshal(b, &a) != nil || !strings.HasPrefix(a.GetTypeUrl(), sqlTypePrefix) {
		return nil, false, nil
	}
	msg, err = a.UnmarshalNew()
	if err != nil {
		return nil, true, badRequestf("Flight SQL message %s: %s", quoteName(a.GetTypeUrl()),
			clipText(clipQuoted(err.Error())))
	}
	return msg, true, nil
}

// isSQLDescriptor reports whether a descriptor holds a Flight SQL command.
func isSQLDescriptor(desc *flight.FlightDescriptor) bool {
	if desc == nil || desc.Type != flight.DescriptorCMD {
		return false
	}
	_, ok, _ := sqlMessage(desc.Cmd)
	return ok
}

// sqlCatalog is the one catalog the Flight SQL metadata calls show; a
// table ns.t is the table t of the schema ns.
const sqlCatalog = "sluice"

// sqlTableType is the type of every table.
const sqlTableType = "TABLE"

// sqlService implements Flight SQL over the server: table_changes queries
// (sql_parse.go), prepared statements without parameters, and the
// metadata calls. It is stateless: a prepared statement's handle is its
// query, a statement's ticket its query and pinned window.
type sqlService struct {
	flightsql.BaseServer
	s *Server
}

func newSQLService(s *Server) *sqlService {
	q := &sqlService{s: s}
	q.Alloc = s.mem
	for id, v := range sqlInfoValues {
		if err := q.RegisterSqlInfo(id, v); err != nil {
			panic(err) // a programming error: the types of sqlInfoValues are fixed
		}
	}
	return q
}

// sqlInfoValues are the server's GetSqlInfo answers.
var sqlInfoValues = map[flightsql.SqlInfo]any{
	flightsql.SqlInfoFlightSqlServerName:                "sluice",
	flightsql.SqlInfoFlightSqlServerVersion:             version.Version(),
	flightsql.SqlInfoFlightSqlServerArrowVersion:        arrowVersion(),
	flightsql.SqlInfoFlightSqlServerReadOnly:            true,
	flightsql.SqlInfoFlightSqlServerSql:                 true,
	flightsql.SqlInfoFlightSqlServerSubstrait:           false,
	flightsql.SqlInfoFlightSqlServerSubstraitMinVersion: "",
	flightsql.SqlInfoFlightSqlServerSubstraitMaxVersion: "",
	flightsql.SqlInfoFlightSqlServerTransaction:         int32(flightsql.SqlTransactionNone),
	flightsql.SqlInfoFlightSqlServerCancel:              false,
	flightsql.SqlInfoFlightSqlServerBulkIngestion:       false,
	flightsql.SqlInfoTransactionsSupported:              false,
	flightsql.SqlInfoDDLCatalog:                         false,
	flightsql.SqlInfoDDLSchema:                          false,
	flightsql.SqlInfoDDLTable:                           false,
	flightsql.SqlInfoIdentifierQuoteChar:                `"`,
	flightsql.SqlInfoKeywords:                           []string{"TABLE_CHANGES", "NET_CHANGES", "IDENTITY"},
	flightsql.SqlInfoSupportsColumnAliasing:             false,
}

// arrowVersion is the arrow-go module's version this binary was built with.
func arrowVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/apache/arrow-go/v18" {
				return strings.TrimPrefix(m.Version, "v")
			}
		}
	}
	return "18"
}

// unsupportedSQL refuses a Flight SQL feature Sluice does not offer.
func unsupportedSQL(what string) error {
	return badRequestf("%s is not supported: Sluice is a read-only change feed. %s; "+
		"prepared statements without parameters and the catalog metadata calls work too", what, sqlSupported)
}

// sqlTicketError returns nil for a Flight SQL message DoGet serves as a
// ticket (the metadata calls' commands, which their FlightInfo returns as
// tickets), else the InvalidArgument that GetFlightInfo gives the same
// feature: a ticket is what GetFlightInfo returned, and what Sluice does
// not offer is refused alike whichever call carries it. A
// TicketStatementQuery is served by serveSQL.
func sqlTicketError(msg proto.Message) error {
	switch msg.(type) {
	case *flightgen.CommandGetCatalogs, *flightgen.CommandGetDbSchemas, *flightgen.CommandGetTables,
		*flightgen.CommandGetTableTypes, *flightgen.CommandGetSqlInfo:
		return nil
	case *flightgen.CommandGetXdbcTypeInfo:
		return unsupportedSQL("GetXdbcTypeInfo")
	case *flightgen.CommandGetPrimaryKeys:
		return unsupportedSQL("GetPrimaryKeys")
	case *flightgen.CommandGetExportedKeys:
		return unsupportedSQL("GetExportedKeys")
	case *flightgen.CommandGetImportedKeys:
		return unsupportedSQL("GetImportedKeys")
	case *flightgen.CommandGetCrossReference:
		return unsupportedSQL("GetCrossReference")
	case *flightgen.CommandStatementSubstraitPlan:
		return unsupportedSQL("Substrait")
	}
	return badRequestf("a Flight SQL %s is not a ticket: DoGet takes the ticket GetFlightInfo returned for it",
		msg.ProtoReflect().Descriptor().Name())
}

// sqlHandle is the statement handle in a TicketStatementQuery: the query
// and the window GetFlightInfo planned, so that commits landing before
// DoGet do not leak into the read.
type sqlHandle struct {
	Query string `json:"query"`
	From  *int64 `json:"from_snapshot,omitempty"`
	To    *int64 `json:"to_snapshot"`
}

// sqlRequest parses a query and turns it into an authorized window request
// in the flat layout; pin, when set, replaces the query's window.
func (s *Server) sqlRequest(ctx context.Context, query string, pin *sqlHandle) (*sqlQuery, *request, error) {
	q, err := parseSQL(query)
	if err != nil {
		return nil, nil, err
	}
	wire := &sluicev1.ChangeRequest{Table: q.Table, FromSnapshot: q.From, ToSnapshot: q.To,
		Columns: q.dataColumns(), Filter: q.Filter, Identity: q.Identity, NetChanges: q.NetChanges, Ref: q.Ref,
		Layout: layoutFlat}
	if pin != nil {
		wire.FromSnapshot, wire.ToSnapshot = pin.From, pin.To
	}
	r, err := newRequest(wire)
	if err != nil {
		return nil, nil, err
	}
	fc, err := r.window.FilterColumns()
	if err != nil {
		return nil, nil, err
	}
	for _, c := range fc {
		if isFlatMeta(c) {
			return nil, nil, badRequestf("WHERE %s: the filter is over the data columns; %s, %s and %s are "+
				"columns table_changes adds, which it cannot filter", quoteName(c), colChangeType, colCommitVersion,
				colCommitTimestamp)
		}
	}
	if err := s.authorize(ctx, r); err != nil {
		return nil, nil, clipNames(err, r.names()...)
	}
	return q, r, nil
}

// layoutFlat is the ChangeRequest layout of Flight SQL results.
const layoutFlat = "flat"

// sqlProjection returns the output schema of a query over the flat
// schema, and the flat columns it takes, in order.
func sqlProjection(flat *arrow.Schema, q *sqlQuery) (*arrow.Schema, []int, error) {
	if q.Select == nil {
		idx := make([]int, flat.NumFields())
		for i := range idx {
			idx[i] = i
		}
		return flat, idx, nil
	}
	fields := make([]arrow.Field, 0, len(q.Select))
	idx := make([]int, 0, len(q.Select))
	for _, name := range q.Select {
		is := flat.FieldIndices(name)
		if len(is) == 0 {
			return nil, nil, fmt.Errorf("%w: column %s is not a column of table_changes(%s)", feed.ErrUnknownColumn,
				quoteName(name), quoteName(q.Table))
		}
		// A data column named like a flat column comes first; the flat
		// column is the last of the name.
		i := is[0]
		if isFlatMeta(name) {
			i = is[len(is)-1]
		}
		fields = append(fields, flat.Field(i))
		idx = append(idx, i)
	}
	md := flat.Metadata()
	return arrow.NewSchema(fields, &md), idx, nil
}

func isFlatMeta(name string) bool {
	for _, c := range flatMetaColumns {
		if c == name {
			return true
		}
	}
	return false
}

// sqlSchema plans nothing: it returns the output schema of a query.
func (s *Server) sqlSchema(ctx context.Context, query string) (*arrow.Schema, error) {
	q, r, err := s.sqlRequest(ctx, query, nil)
	if err != nil {
		return nil, err
	}
	flat, err := s.engine.Schema(ctx, r.shape())
	if err != nil {
		return nil, clipNames(err, r.names()...)
	}
	schema, _, err := sqlProjection(flat, q)
	return schema, clipNames(err, r.names()...)
}

// sqlFlightInfo plans a query's window and returns one endpoint whose
// ticket pins it.
func (s *Server) sqlFlightInfo(ctx context.Context, query string, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	q, r, err := s.sqlRequest(ctx, query, nil)
	if err != nil {
		return nil, err
	}
	p, err := s.plan(ctx, r)
	if err != nil {
		return nil, clipNames(err, r.names()...)
	}
	schema, _, err := sqlProjection(p.Schema(), q)
	if err != nil {
		return nil, clipNames(err, r.names()...)
	}
	h := sqlHandle{Query: query, From: p.From, To: p.To}
	if p.To == nil {
		empty := feed.NoSnapshot
		h.To = &empty
	}
	handle, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	ticket, err := flightsql.CreateStatementQueryTicket(handle)
	if err != nil {
		return nil, err
	}
	total := int64(-1)
	if exactRowCount(p) && !q.NetChanges {
		total = p.RecordsRead
		if q.Limit != nil {
			total = min(total, *q.Limit)
		}
	}
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(schema, s.mem),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: ticket}}},
		TotalRecords:     total,
		TotalBytes:       -1,
		Ordered:          true,
	}, nil
}

// serveSQL streams the changes of a statement ticket's pinned window in
// the flat layout, projected to the query's columns and cut at its LIMIT.
func (s *Server) serveSQL(ctx context.Context, handle []byte, stream flight.DataStreamWriter) error {
	var h sqlHandle
	if err := json.Unmarshal(handle, &h); err != nil || h.To == nil {
		return badRequestf("malformed Flight SQL statement ticket: use the ticket GetFlightInfo returned")
	}
	q, r, err := s.sqlRequest(ctx, h.Query, &h)
	if err != nil {
		return err
	}
	p, err := s.plan(ctx, r)
	if err != nil {
		return clipNames(err, r.names()...)
	}
	schema, idx, err := sqlProjection(p.Schema(), q)
	if err != nil {
		return clipNames(err, r.names()...)
	}
	w := s.newWriter(stream, p.Table, schema, "")
	defer w.release()
	left := int64(-1)
	if q.Limit != nil {
		left = *q.Limit
	}
	if left != 0 {
		for b, err := range s.engine.Read(ctx, p) {
			if err != nil {
				return clipNames(err, r.names()...)
			}
			rec := projectRecord(schema, b.Record, idx, left)
			b.Record.Release()
			b.Record = rec
			err = w.write(b, kindChanges)
			n := rec.NumRows()
			rec.Release()
			if err != nil {
				return sendError(ctx, err)
			}
			if left > 0 {
				if left -= n; left == 0 {
					break
				}
			}
		}
	}
	if err := w.close(); err != nil {
		return sendError(ctx, err)
	}
	return nil
}

// projectRecord returns the columns idx of rec as a record of schema, cut
// to at most limit rows (negative: no limit). The caller releases both.
func projectRecord(schema *arrow.Schema, rec arrow.RecordBatch, idx []int, limit int64) arrow.RecordBatch {
	cols := make([]arrow.Array, len(idx))
	for i, c := range idx {
		cols[i] = rec.Column(c)
	}
	out := array.NewRecordBatch(schema, cols, rec.NumRows())
	if limit >= 0 && out.NumRows() > limit {
		cut := out.NewSlice(0, limit)
		out.Release()
		return cut
	}
	return out
}

// GetFlightInfoStatement plans a table_changes query.
func (q *sqlService) GetFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery,
	desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if cmd.GetTransactionId() != nil {
		return nil, unsupportedSQL("a transaction")
	}
	return q.s.sqlFlightInfo(ctx, cmd.GetQuery(), desc)
}

// GetSchemaStatement returns a query's output schema.
func (q *sqlService) GetSchemaStatement(ctx context.Context, cmd flightsql.StatementQuery,
	_ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	schema, err := q.s.sqlSchema(ctx, cmd.GetQuery())
	if err != nil {
		return nil, err
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(schema, q.s.mem)}, nil
}

// CreatePreparedStatement prepares a query without parameters: the handle
// is the query itself, checked and authorized now and again when run.
func (q *sqlService) CreatePreparedStatement(ctx context.Context,
	req flightsql.ActionCreatePreparedStatementRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	if req.GetTransactionId() != nil {
		return flightsql.ActionCreatePreparedStatementResult{}, unsupportedSQL("a transaction")
	}
	schema, err := q.s.sqlSchema(ctx, req.GetQuery())
	if err != nil {
		return flightsql.ActionCreatePreparedStatementResult{}, err
	}
	return flightsql.ActionCreatePreparedStatementResult{Handle: []byte(req.GetQuery()), DatasetSchema: schema}, nil
}

// ClosePreparedStatement has nothing to free.
func (q *sqlService) ClosePreparedStatement(context.Context, flightsql.ActionClosePreparedStatementRequest) error {
	return nil
}

// GetFlightInfoPreparedStatement plans a prepared query.
func (q *sqlService) GetFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery,
	desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return q.s.sqlFlightInfo(ctx, string(cmd.GetPreparedStatementHandle()), desc)
}

// GetSchemaPreparedStatement returns a prepared query's output schema.
func (q *sqlService) GetSchemaPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery,
	_ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	schema, err := q.s.sqlSchema(ctx, string(cmd.GetPreparedStatementHandle()))
	if err != nil {
		return nil, err
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(schema, q.s.mem)}, nil
}

// The Flight SQL features Sluice does not offer, refused as InvalidArgument
// naming what it does.

func (q *sqlService) GetFlightInfoSubstraitPlan(context.Context, flightsql.StatementSubstraitPlan,
	*flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return nil, unsupportedSQL("Substrait")
}

func (q *sqlService) GetSchemaSubstraitPlan(context.Context, flightsql.StatementSubstraitPlan,
	*flight.FlightDescriptor) (*flight.SchemaResult, error) {
	return nil, unsupportedSQL("Substrait")
}

func (q *sqlService) CreatePreparedSubstraitPlan(context.Context,
	flightsql.ActionCreatePreparedSubstraitPlanRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	return flightsql.ActionCreatePreparedStatementResult{}, unsupportedSQL("Substrait")
}

func (q *sqlService) BeginTransaction(context.Context, flightsql.ActionBeginTransactionRequest) ([]byte, error) {
	return nil, unsupportedSQL("a transaction")
}

func (q *sqlService) BeginSavepoint(context.Context, flightsql.ActionBeginSavepointRequest) ([]byte, error) {
	return nil, unsupportedSQL("a savepoint")
}

func (q *sqlService) EndTransaction(context.Context, flightsql.ActionEndTransactionRequest) error {
	return unsupportedSQL("a transaction")
}

func (q *sqlService) EndSavepoint(context.Context, flightsql.ActionEndSavepointRequest) error {
	return unsupportedSQL("a savepoint")
}

func (q *sqlService) GetFlightInfoXdbcTypeInfo(context.Context, flightsql.GetXdbcTypeInfo,
	*flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return nil, unsupportedSQL("GetXdbcTypeInfo")
}

func (q *sqlService) GetFlightInfoPrimaryKeys(context.Context, flightsql.TableRef,
	*flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return nil, unsupportedSQL("GetPrimaryKeys")
}

func (q *sqlService) GetFlightInfoExportedKeys(context.Context, flightsql.TableRef,
	*flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return nil, unsupportedSQL("GetExportedKeys")
}

func (q *sqlService) GetFlightInfoImportedKeys(context.Context, flightsql.TableRef,
	*flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return nil, unsupportedSQL("GetImportedKeys")
}

func (q *sqlService) GetFlightInfoCrossReference(context.Context, flightsql.CrossTableRef,
	*flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return nil, unsupportedSQL("GetCrossReference")
}

// sqlDescriptorInfo is the FlightInfo of a metadata command: its ticket
// is the command itself, which DoGet answers.
func (s *Server) sqlDescriptorInfo(desc *flight.FlightDescriptor, schema *arrow.Schema) *flight.FlightInfo {
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(schema, s.mem),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: desc.Cmd}}},
		TotalRecords:     -1,
		TotalBytes:       -1,
	}
}
