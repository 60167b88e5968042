package server

import (
	"context"
	"regexp"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicefeed/sluice/feed"
)

// The Flight SQL metadata calls show one catalog, sqlCatalog; each
// namespace of a table the caller may read is a schema, each table a
// TABLE whose columns are its data columns (those of the current
// snapshot; table_changes adds _change_type, _commit_version and
// _commit_timestamp).

// sqlTable is a table as the metadata calls name it.
type sqlTable struct {
	name, schema, table string
}

// splitTable splits ns.table at its last dot.
func splitTable(name string) sqlTable {
	i := strings.LastIndexByte(name, '.')
	return sqlTable{name: name, schema: name[:max(i, 0)], table: name[i+1:]}
}

// likeMatcher compiles a SQL LIKE pattern (% any run, _ one character, \
// escapes); nil matches everything.
func likeMatcher(pattern *string) (func(string) bool, error) {
	if pattern == nil {
		return func(string) bool { return true }, nil
	}
	var sb strings.Builder
	sb.WriteString("^(?s:")
	escaped := false
	for _, r := range *pattern {
		switch {
		case escaped:
			sb.WriteString(regexp.QuoteMeta(string(r)))
			escaped = false
		case r == '\\':
			escaped = true
		case r == '%':
			sb.WriteString(".*")
		case r == '_':
			sb.WriteString(".")
		default:
			sb.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	sb.WriteString(")$")
	re, err := regexp.Compile(sb.String())
	if err != nil {
		return nil, badRequestf("filter pattern %s: %s", quoteName(*pattern), clipText(err.Error()))
	}
	return re.MatchString, nil
}

// catalogMatches reports whether a call's catalog (nil or "" for any)
// names sqlCatalog.
func catalogMatches(catalog *string) bool {
	return catalog == nil || *catalog == "" || *catalog == sqlCatalog
}

// sqlTables lists the tables the caller may read that the filters match.
func (s *Server) sqlTables(ctx context.Context, catalog, schemaPattern, tablePattern *string) ([]sqlTable, error) {
	if !catalogMatches(catalog) {
		return nil, nil
	}
	matchSchema, err := likeMatcher(schemaPattern)
	if err != nil {
		return nil, err
	}
	matchTable, err := likeMatcher(tablePattern)
	if err != nil {
		return nil, err
	}
	infos, err := s.tables(ctx)
	if err != nil {
		return nil, err
	}
	var out []sqlTable
	for _, t := range infos {
		st := splitTable(t.Name)
		if matchSchema(st.schema) && matchTable(st.table) {
			out = append(out, st)
		}
	}
	slices.SortFunc(out, func(a, b sqlTable) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// dataSchema returns a table's data columns as the caller may read them:
// the fields of its change row's after-image.
func (s *Server) dataSchema(ctx context.Context, table string) (*arrow.Schema, error) {
	req, err := s.authorizeShape(ctx, feed.Request{Table: table})
	if err != nil {
		return nil, err
	}
	schema, err := s.engine.Schema(ctx, req)
	if err != nil {
		return nil, err
	}
	i := schema.FieldIndices("after")
	if len(i) == 0 {
		return nil, status.Errorf(codes.Internal, "change row of %s has no after-image", clipName(table))
	}
	st, ok := schema.Field(i[0]).Type.(*arrow.StructType)
	if !ok {
		return nil, status.Errorf(codes.Internal, "after-image of %s is not a struct", clipName(table))
	}
	return arrow.NewSchema(st.Fields(), nil), nil
}

// metaStream streams one record of a metadata call's result.
func metaStream(ctx context.Context, schema *arrow.Schema, rec arrow.RecordBatch) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	defer rec.Release()
	rdr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		return nil, nil, err
	}
	ch := make(chan flight.StreamChunk)
	go flight.StreamChunksFromReader(ctx, rdr, ch)
	return schema, ch, nil
}

// GetFlightInfoCatalogs returns the ticket of GetCatalogs.
func (q *sqlService) GetFlightInfoCatalogs(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return q.s.sqlDescriptorInfo(desc, schema_ref.Catalogs), nil
}

// DoGetCatalogs lists the one catalog.
func (q *sqlService) DoGetCatalogs(ctx context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(q.s.mem, schema_ref.Catalogs)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append(sqlCatalog)
	return metaStream(ctx, schema_ref.Catalogs, b.NewRecordBatch())
}

// GetFlightInfoSchemas returns the ticket of GetDbSchemas.
func (q *sqlService) GetFlightInfoSchemas(_ context.Context, _ flightsql.GetDBSchemas,
	desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return q.s.sqlDescriptorInfo(desc, schema_ref.DBSchemas), nil
}

// DoGetDBSchemas lists the namespaces of the tables the caller may read.
func (q *sqlService) DoGetDBSchemas(ctx context.Context, cmd flightsql.GetDBSchemas) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	tables, err := q.s.sqlTables(ctx, cmd.GetCatalog(), cmd.GetDBSchemaFilterPattern(), nil)
	if err != nil {
		return nil, nil, err
	}
	b := array.NewRecordBuilder(q.s.mem, schema_ref.DBSchemas)
	defer b.Release()
	var last *string
	for _, t := range tables {
		if last != nil && *last == t.schema {
			continue
		}
		last = &t.schema
		b.Field(0).(*array.StringBuilder).Append(sqlCatalog)
		b.Field(1).(*array.StringBuilder).Append(t.schema)
	}
	return metaStream(ctx, schema_ref.DBSchemas, b.NewRecordBatch())
}

// GetFlightInfoTables returns the ticket of GetTables.
func (q *sqlService) GetFlightInfoTables(_ context.Context, cmd flightsql.GetTables,
	desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	schema := schema_ref.Tables
	if cmd.GetIncludeSchema() {
		schema = schema_ref.TablesWithIncludedSchema
	}
	return q.s.sqlDescriptorInfo(desc, schema), nil
}

// DoGetTables lists the tables the caller may read, with their data
// columns when asked.
func (q *sqlService) DoGetTables(ctx context.Context, cmd flightsql.GetTables) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	schema := schema_ref.Tables
	if cmd.GetIncludeSchema() {
		schema = schema_ref.TablesWithIncludedSchema
	}
	if types := cmd.GetTableTypes(); len(types) > 0 && !slices.ContainsFunc(types, func(t string) bool {
		return strings.EqualFold(t, sqlTableType)
	}) {
		return metaStream(ctx, schema, emptyRecord(q.s.mem, schema))
	}
	tables, err := q.s.sqlTables(ctx, cmd.GetCatalog(), cmd.GetDBSchemaFilterPattern(), cmd.GetTableNameFilterPattern())
	if err != nil {
		return nil, nil, err
	}
	b := array.NewRecordBuilder(q.s.mem, schema)
	defer b.Release()
	for _, t := range tables {
		var data *arrow.Schema
		if cmd.GetIncludeSchema() {
			data, err = q.s.dataSchema(ctx, t.name)
			if err != nil {
				if ctx.Err() != nil {
					return nil, nil, err
				}
				q.s.skipped(ctx, t.name, err)
				continue
			}
		}
		b.Field(0).(*array.StringBuilder).Append(sqlCatalog)
		b.Field(1).(*array.StringBuilder).Append(t.schema)
		b.Field(2).(*array.StringBuilder).Append(t.table)
		b.Field(3).(*array.StringBuilder).Append(sqlTableType)
		if data != nil {
			b.Field(4).(*array.BinaryBuilder).Append(flight.SerializeSchema(data, q.s.mem))
		}
	}
	return metaStream(ctx, schema, b.NewRecordBatch())
}

// GetFlightInfoTableTypes returns the ticket of GetTableTypes.
func (q *sqlService) GetFlightInfoTableTypes(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return q.s.sqlDescriptorInfo(desc, schema_ref.TableTypes), nil
}

// DoGetTableTypes lists the one table type.
func (q *sqlService) DoGetTableTypes(ctx context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(q.s.mem, schema_ref.TableTypes)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append(sqlTableType)
	return metaStream(ctx, schema_ref.TableTypes, b.NewRecordBatch())
}

// DoGetSqlInfo returns the server's SqlInfo values; an id it has no value
// for is left out (a client asks many and takes what it gets).
func (q *sqlService) DoGetSqlInfo(ctx context.Context, cmd flightsql.GetSqlInfo) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	ids := cmd.GetInfo()
	if len(ids) == 0 {
		return q.BaseServer.DoGetSqlInfo(ctx, cmd)
	}
	known := make([]uint32, 0, len(ids))
	for _, id := range ids {
		if _, ok := sqlInfoValues[flightsql.SqlInfo(id)]; ok {
			known = append(known, id)
		}
	}
	if len(known) == 0 {
		return metaStream(ctx, schema_ref.SqlInfo, emptyRecord(q.s.mem, schema_ref.SqlInfo))
	}
	return q.BaseServer.DoGetSqlInfo(ctx, sqlInfoIDs(known))
}

// GetFlightInfoSqlInfo returns the ticket of GetSqlInfo.
func (q *sqlService) GetFlightInfoSqlInfo(_ context.Context, _ flightsql.GetSqlInfo,
	desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return q.s.sqlDescriptorInfo(desc, schema_ref.SqlInfo), nil
}

// sqlInfoIDs is a GetSqlInfo command of the given ids.
type sqlInfoIDs []uint32

func (ids sqlInfoIDs) GetInfo() []uint32 { return ids }

// emptyRecord is a record of no rows.
func emptyRecord(mem memory.Allocator, schema *arrow.Schema) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	return b.NewRecordBatch()
}
