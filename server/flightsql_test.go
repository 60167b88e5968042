package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluicefeed/sluice/auth"
	"github.com/sluicefeed/sluice/server"
)

// sqlClient is a Flight SQL client of the fixture's server.
func (f *fixture) sqlClient(t *testing.T) *flightsql.Client {
	t.Helper()
	cl, err := flightsql.NewClient(f.addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// rowsOf reads every endpoint of a FlightInfo as JSON rows.
func rowsOf(ctx context.Context, cl *flightsql.Client, info *flight.FlightInfo) ([]map[string]any, *arrow.Schema, error) {
	var rows []map[string]any
	var schema *arrow.Schema
	for _, ep := range info.Endpoint {
		rdr, err := cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			return nil, nil, err
		}
		got, err := readRows(rdr)
		schema = rdr.Schema()
		rdr.Release()
		if err != nil {
			return nil, nil, err
		}
		rows = append(rows, got...)
	}
	return rows, schema, nil
}

func readRows(rdr array.RecordReader) ([]map[string]any, error) {
	var rows []map[string]any
	for rdr.Next() {
		var buf bytes.Buffer
		if err := array.RecordToJSON(rdr.RecordBatch(), &buf); err != nil {
			return nil, err
		}
		dec := json.NewDecoder(&buf)
		for dec.More() {
			var row map[string]any
			if err := dec.Decode(&row); err != nil {
				return nil, err
			}
			rows = append(rows, row)
		}
	}
	return rows, rdr.Err()
}

// sqlQuery runs a query through Flight SQL.
func sqlQuery(ctx context.Context, cl *flightsql.Client, query string) ([]map[string]any, *arrow.Schema, error) {
	info, err := cl.Execute(ctx, query)
	if err != nil {
		return nil, nil, err
	}
	return rowsOf(ctx, cl, info)
}

// changeRows reads a ChangeRequest (JSON) in the flat layout through
// Sluice's own Flight calls, keeping the named columns (all if none).
func (f *fixture) changeRows(t *testing.T, request string, keep ...string) []map[string]any {
	t.Helper()
	ctx := context.Background()
	stream, err := f.client.DoGet(ctx, &flight.Ticket{Ticket: []byte(request)})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	rows, err := readRows(rdr)
	if err != nil {
		t.Fatal(err)
	}
	if len(keep) > 0 {
		for i, row := range rows {
			kept := map[string]any{}
			for _, k := range keep {
				kept[k] = row[k]
			}
			rows[i] = kept
		}
	}
	return rows
}

func sameRows(t *testing.T, got, want []map[string]any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !bytes.Equal(g, w) {
		t.Fatalf("Flight SQL rows differ from the ChangeRequest's:\n got %s\nwant %s", g, w)
	}
}

// TestFlightSQLMatchesChangeRequest: a table_changes query returns what the
// ChangeRequest of the same window, filter, projection and options returns
// in the flat layout.
func TestFlightSQLMatchesChangeRequest(t *testing.T) {
	f := start(t, 4, 3, 8)
	cl := f.sqlClient(t)
	ctx := context.Background()
	s := f.snapshots
	tests := []struct {
		name, query, request string
		keep                 []string
	}{
		{"whole history", `SELECT * FROM table_changes('shop.orders')`, `{"table": "shop.orders", "layout": "flat"}`, nil},
		{"window", fmt.Sprintf(`select * from TABLE_CHANGES('shop.orders', %d, %d);`, s[0], s[2]),
			fmt.Sprintf(`{"table": "shop.orders", "layout": "flat", "from_snapshot": %d, "to_snapshot": %d}`, s[0], s[2]), nil},
		{"projection and filter", `SELECT _commit_version, "id", _change_type FROM table_changes('shop.orders') WHERE id >= 4 AND country IS NOT NULL`,
			`{"table": "shop.orders", "layout": "flat", "columns": ["id"], "filter": "id >= 4 AND country IS NOT NULL"}`,
			[]string{"_commit_version", "id", "_change_type"}},
		{"net changes and identity", fmt.Sprintf(`SELECT * FROM table_changes('shop.orders', %d, net_changes => true, identity => 'id')`, s[1]),
			fmt.Sprintf(`{"table": "shop.orders", "layout": "flat", "from_snapshot": %d, "net_changes": true, "identity": ["id"]}`, s[1]), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, schema, err := sqlQuery(ctx, cl, tt.query)
			if err != nil {
				t.Fatal(err)
			}
			want := f.changeRows(t, tt.request, tt.keep...)
			if len(want) == 0 {
				t.Fatal("the ChangeRequest returned no rows: the test compares nothing")
			}
			sameRows(t, got, want)
			if tt.keep != nil {
				var names []string
				for _, fl := range schema.Fields() {
					names = append(names, fl.Name)
				}
				if !slices.Equal(names, tt.keep) {
					t.Fatalf("columns %v, want %v", names, tt.keep)
				}
			}
		})
	}
	t.Run("limit", func(t *testing.T) {
		got, _, err := sqlQuery(ctx, cl, `SELECT id FROM table_changes('shop.orders') LIMIT 5`)
		if err != nil {
			t.Fatal(err)
		}
		sameRows(t, got, f.changeRows(t, `{"table": "shop.orders", "layout": "flat"}`, "id")[:5])
		got, _, err = sqlQuery(ctx, cl, `SELECT id FROM table_changes('shop.orders') LIMIT 0`)
		if err != nil || len(got) != 0 {
			t.Fatalf("LIMIT 0: %d rows, %v", len(got), err)
		}
	})
	t.Run("prepared statement", func(t *testing.T) {
		prep, err := cl.Prepare(ctx, `SELECT id, _change_type FROM table_changes('shop.orders') WHERE id < 3`)
		if err != nil {
			t.Fatal(err)
		}
		defer prep.Close(ctx)
		if names := prep.DatasetSchema().Fields(); len(names) != 2 || names[0].Name != "id" {
			t.Fatalf("prepared schema %v", prep.DatasetSchema())
		}
		if prep.ParameterSchema() != nil && prep.ParameterSchema().NumFields() > 0 {
			t.Fatalf("parameters %v", prep.ParameterSchema())
		}
		info, err := prep.Execute(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := rowsOf(ctx, cl, info)
		if err != nil {
			t.Fatal(err)
		}
		sameRows(t, got, f.changeRows(t, `{"table": "shop.orders", "layout": "flat", "columns": ["id"], "filter": "id < 3"}`,
			"id", "_change_type"))
	})
	t.Run("schema", func(t *testing.T) {
		res, err := cl.GetExecuteSchema(ctx, `SELECT _commit_timestamp, country FROM table_changes('shop.orders')`)
		if err != nil {
			t.Fatal(err)
		}
		schema, err := flight.DeserializeSchema(res.GetSchema(), f.mem)
		if err != nil {
			t.Fatal(err)
		}
		if schema.NumFields() != 2 || schema.Field(0).Type.ID() != arrow.TIMESTAMP || schema.Field(1).Name != "country" {
			t.Fatalf("schema %v", schema)
		}
	})
}

// TestFlightSQLPinsWindow: a statement's ticket reads the window planned
// at GetFlightInfo, not commits made before DoGet.
func TestFlightSQLPinsWindow(t *testing.T) {
	f := start(t, 2, 2, 8)
	cl := f.sqlClient(t)
	ctx := context.Background()
	info, err := cl.Execute(ctx, `SELECT id FROM table_changes('shop.orders')`)
	if err != nil {
		t.Fatal(err)
	}
	f.commit(t, 100, 2, 8)
	got, _, err := rowsOf(ctx, cl, info)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%d rows, want the 4 of the planned window", len(got))
	}
}

func TestFlightSQLErrors(t *testing.T) {
	f := start(t, 2, 1, 8)
	cl := f.sqlClient(t)
	ctx := context.Background()
	for _, tt := range []struct {
		name, query string
		code        codes.Code
		msg         string
	}{
		{"other SQL", `SELECT 1`, codes.InvalidArgument, "table_changes('<ns.table>'"},
		{"update statement", `DELETE FROM shop.orders`, codes.InvalidArgument, `"DELETE" statements are not supported`},
		{"unknown table", `SELECT * FROM table_changes('shop.nope')`, codes.NotFound, "shop.nope"},
		{"unknown column", `SELECT nope FROM table_changes('shop.orders')`, codes.InvalidArgument, `"nope"`},
		{"bad filter", `SELECT * FROM table_changes('shop.orders') WHERE id >`, codes.InvalidArgument, "position"},
		{"unknown snapshot", `SELECT * FROM table_changes('shop.orders', 12345)`, codes.NotFound, "12345"},
		{"filter on a flat column", `SELECT * FROM table_changes('shop.orders') WHERE _change_type = 'insert'`,
			codes.InvalidArgument, `WHERE "_change_type": the filter is over the data columns`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := sqlQuery(ctx, cl, tt.query)
			checkStatus(t, err, tt.code, tt.msg)
			_, err = cl.Prepare(ctx, tt.query)
			checkStatus(t, err, tt.code, tt.msg)
		})
	}
	t.Run("update", func(t *testing.T) {
		_, err := cl.ExecuteUpdate(ctx, `DELETE FROM shop.orders`)
		checkStatus(t, err, codes.InvalidArgument, "DoPut")
	})
	t.Run("substrait", func(t *testing.T) {
		_, err := cl.ExecuteSubstrait(ctx, flightsql.SubstraitPlan{Plan: []byte{1}, Version: "0.1"})
		checkStatus(t, err, codes.InvalidArgument, "Substrait is not supported")
	})
	t.Run("transaction", func(t *testing.T) {
		_, err := cl.BeginTransaction(ctx)
		checkStatus(t, err, codes.InvalidArgument, "a transaction is not supported")
	})
	t.Run("forged ticket", func(t *testing.T) {
		ticket, err := flightsql.CreateStatementQueryTicket([]byte("nope"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = readTicket(ctx, cl, ticket)
		checkStatus(t, err, codes.InvalidArgument, "malformed Flight SQL statement ticket")
	})
}

func readTicket(ctx context.Context, cl *flightsql.Client, ticket []byte) ([]map[string]any, error) {
	rdr, err := cl.DoGet(ctx, &flight.Ticket{Ticket: ticket})
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	return readRows(rdr)
}

// TestFlightSQLMetadata: the catalog calls list the tables a caller may
// read, with their data columns; another caller sees none of them and is
// refused their changes.
func TestFlightSQLMetadata(t *testing.T) {
	tokens := withTokens(t, auth.Config{Rules: []auth.Rule{
		{Principals: []string{"alice"}, Tables: []string{"shop.*"}},
		{Principals: []string{"bob"}, Tables: []string{"hr.*"}},
	}}, "alice", "bob")
	f := startWith(t, 2, 2, 8, nil, tokens)
	cl := f.sqlClient(t)
	alice, bob := as("alice"), as("bob")

	read := func(ctx context.Context, info *flight.FlightInfo, err error) []map[string]any {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		rows, _, err := rowsOf(ctx, cl, info)
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	info, err := cl.GetCatalogs(alice)
	if got := read(alice, info, err); len(got) != 1 || got[0]["catalog_name"] != "sluice" {
		t.Fatalf("catalogs %v", got)
	}
	info, err = cl.GetDBSchemas(alice, &flightsql.GetDBSchemasOpts{})
	if got := read(alice, info, err); len(got) != 1 || got[0]["db_schema_name"] != "shop" {
		t.Fatalf("schemas %v", got)
	}
	info, err = cl.GetDBSchemas(bob, &flightsql.GetDBSchemasOpts{})
	if got := read(bob, info, err); len(got) != 0 {
		t.Fatalf("bob sees schemas %v", got)
	}
	pattern := "ord%"
	info, err = cl.GetTables(alice, &flightsql.GetTablesOpts{TableNameFilterPattern: &pattern, IncludeSchema: true})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := cl.DoGet(alice, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for i := range int(rec.NumRows()) {
			tables = append(tables, rec.Column(1).(*array.String).Value(i)+"."+rec.Column(2).(*array.String).Value(i))
			schema, err := flight.DeserializeSchema(rec.Column(4).(*array.Binary).Value(i), f.mem)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, fl := range schema.Fields() {
				names = append(names, fl.Name)
			}
			if strings.Join(names, ",") != "id,country,payload" {
				t.Fatalf("table schema %v, want the data columns", names)
			}
		}
	}
	rdr.Release()
	if !slices.Equal(tables, []string{"shop.orders"}) {
		t.Fatalf("tables %v", tables)
	}
	nomatch := "x%"
	info, err = cl.GetTables(alice, &flightsql.GetTablesOpts{TableNameFilterPattern: &nomatch})
	if got := read(alice, info, err); len(got) != 0 {
		t.Fatalf("pattern x%% matched %v", got)
	}
	info, err = cl.GetTables(bob, &flightsql.GetTablesOpts{})
	if got := read(bob, info, err); len(got) != 0 {
		t.Fatalf("bob sees tables %v", got)
	}
	info, err = cl.GetTableTypes(alice)
	if got := read(alice, info, err); len(got) != 1 || got[0]["table_type"] != "TABLE" {
		t.Fatalf("table types %v", got)
	}
	info, err = cl.GetSqlInfo(alice, []flightsql.SqlInfo{flightsql.SqlInfoFlightSqlServerName,
		flightsql.SqlInfoFlightSqlServerReadOnly, flightsql.SqlInfoSearchStringEscape})
	if got := read(alice, info, err); len(got) != 2 {
		t.Fatalf("sql info %v: want the name and read-only, the unknown id left out", got)
	}

	if _, _, err := sqlQuery(bob, cl, `SELECT * FROM table_changes('shop.orders')`); err == nil {
		t.Fatal("bob read shop.orders")
	} else {
		checkStatus(t, err, codes.PermissionDenied, "shop.orders")
	}
	got, _, err := sqlQuery(alice, cl, `SELECT id FROM table_changes('shop.orders')`)
	if err != nil || len(got) != 4 {
		t.Fatalf("alice: %d rows, %v", len(got), err)
	}
	// Unauthenticated callers are refused as on every call.
	_, err = cl.GetCatalogs(context.Background())
	checkStatus(t, err, codes.Unauthenticated, "")
}

// TestFlightSQLMetricsAndLimits: Flight SQL reads count in the same
// metrics (rows streamed per table) and run under the same call-rate
// limit as the ChangeRequest calls.
func TestFlightSQLMetricsAndLimits(t *testing.T) {
	t.Run("metrics", func(t *testing.T) {
		m := server.NewMetrics(nil)
		f := startWith(t, 2, 3, 8, nil, func(o *server.Options) { o.Metrics = m })
		cl := f.sqlClient(t)
		got, _, err := sqlQuery(context.Background(), cl, `SELECT id FROM table_changes('shop.orders') LIMIT 4`)
		if err != nil || len(got) != 4 {
			t.Fatalf("%d rows, %v", len(got), err)
		}
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body := rec.Body.String()
		if !strings.Contains(body, `sluice_rows_streamed_total{table="shop.orders"} 4`) {
			t.Fatalf("the Flight SQL read is not in the rows streamed:\n%s", body)
		}
		if !strings.Contains(body, `grpc_method="GetFlightInfo"`) || !strings.Contains(body, `grpc_method="DoGet"`) {
			t.Fatalf("the Flight SQL calls are not in the gRPC metrics:\n%s", body)
		}
	})
	t.Run("call rate", func(t *testing.T) {
		f := startWith(t, 1, 1, 8, nil, func(o *server.Options) { o.Limits.CallsPerSecond = 0.01 })
		cl := f.sqlClient(t)
		ctx := context.Background()
		var err error
		for range 5 {
			if _, err = cl.Execute(ctx, `SELECT * FROM table_changes('shop.orders')`); err != nil {
				break
			}
		}
		checkStatus(t, err, codes.ResourceExhausted, "calls per second")
	})
}
