package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflightsql "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/testkit/histgen"
)

// TestFlightSQLGoADBC reads a real flightd through the ADBC Flight SQL
// driver for Go, with a bearer token: table_changes queries (the whole
// history of a merge-on-read table with updates and deletes, a window, a
// filter and projection, net changes) return exactly what the Go client's
// ChangeRequest of the same window returns in the flat layout; GetObjects
// lists the tables the token may read; bad SQL is InvalidArgument naming
// what is supported; a token without the table's grant is refused.
func TestFlightSQLGoADBC(t *testing.T) {
	fix := writeEvents(t, 4, 3)
	writeMOR(t, fix.Warehouse, 9)
	dir := t.TempDir()
	tokens := map[string]string{}
	file := "tokens:\n"
	for _, p := range []string{"analyst", "hr"} {
		tokens[p] = flightdTool(t, "", "new-token")
		file += flightdTool(t, tokens[p], "hash-token", "--principal", p) + "\n"
	}
	tokensFile := writeFile(t, dir, "tokens.yaml", file)
	rules := writeFile(t, dir, "rules.yaml", `auth:
  rules:
    - principals: [analyst]
      tables: ["e2e.*", "gen.*"]
    - principals: [hr]
      tables: ["hr.*"]
`)
	srv := startFlightd(t, "--warehouse", fix.Warehouse, "--config", rules, "--auth-mode", "token",
		"--auth-tokens-file", tokensFile)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	open := func(t *testing.T, token string) adbc.Connection {
		t.Helper()
		opts := map[string]string{adbc.OptionKeyURI: srv.URI()}
		if token != "" {
			opts[adbcflightsql.OptionAuthorizationHeader] = "Bearer " + token
		}
		db, err := adbcflightsql.NewDriver(mem).NewDatabase(opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		cnxn, err := db.Open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cnxn.Close() })
		return cnxn
	}
	analyst := open(t, tokens["analyst"])
	client := dialGo(t, ctx, srv.URI(), sluice.WithToken(tokens["analyst"]), sluice.WithAllocator(mem))
	snaps, err := client.Snapshots(ctx, histgen.Table)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) < 6 {
		t.Fatalf("%d snapshots of %s, want at least 6", len(snaps), histgen.Table)
	}
	from, to := snaps[1].ID, snaps[len(snaps)-2].ID

	tests := []struct {
		name  string
		query string
		req   sluice.ChangeRequest
		keep  []string
	}{
		{"whole history", fmt.Sprintf(`SELECT * FROM table_changes('%s')`, histgen.Table),
			sluice.ChangeRequest{Table: histgen.Table}, nil},
		{"window", fmt.Sprintf(`select * from table_changes('%s', %d, %d);`, histgen.Table, from, to),
			sluice.ChangeRequest{Table: histgen.Table, FromSnapshot: &from, ToSnapshot: &to}, nil},
		{"filter and projection", fmt.Sprintf(`SELECT _change_type, id, val FROM table_changes('%s', %d) WHERE id >= 3 AND val IS NOT NULL`,
			histgen.Table, from),
			sluice.ChangeRequest{Table: histgen.Table, FromSnapshot: &from, Columns: []string{"id", "val"},
				Filter: "id >= 3 AND val IS NOT NULL"}, []string{"_change_type", "id", "val"}},
		{"net changes", fmt.Sprintf(`SELECT * FROM table_changes('%s', %d, %d, net_changes => true, identity => 'id')`,
			histgen.Table, from, to),
			sluice.ChangeRequest{Table: histgen.Table, FromSnapshot: &from, ToSnapshot: &to, NetChanges: true,
				Identity: []string{"id"}}, nil},
	}
	types := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := adbcRows(t, ctx, analyst, tt.query)
			tt.req.Layout = sluice.LayoutFlat
			want := clientRows(t, ctx, client, tt.req, tt.keep)
			if len(want) == 0 {
				t.Fatal("the ChangeRequest returned no rows: nothing compared")
			}
			if !slices.Equal(got, want) {
				t.Fatalf("ADBC rows differ from the ChangeRequest's (%d vs %d):\n got %s\nwant %s", len(got), len(want),
					strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			for _, r := range got {
				var m map[string]any
				if err := json.Unmarshal([]byte(r), &m); err != nil {
					t.Fatal(err)
				}
				types[fmt.Sprint(m["_change_type"])] = true
			}
		})
	}
	for _, ct := range []string{"insert", "delete", "update_preimage", "update_postimage"} {
		if !types[ct] {
			t.Errorf("no %s row in any query: the fixture does not exercise the flat layout (%v)", ct, types)
		}
	}

	t.Run("GetObjects lists the granted tables", func(t *testing.T) {
		got := adbcTables(t, ctx, analyst)
		if want := []string{"e2e.events", histgen.Table}; !slices.Equal(got, want) {
			t.Fatalf("tables %v, want %v", got, want)
		}
		if got := adbcTables(t, ctx, open(t, tokens["hr"])); len(got) != 0 {
			t.Fatalf("hr sees %v", got)
		}
	})
	t.Run("errors", func(t *testing.T) {
		for _, tt := range []struct {
			name, query string
			status      adbc.Status
			msg         string
		}{
			{"other SQL", `SELECT * FROM gen.events`, adbc.StatusInvalidArgument, "table_changes('<ns.table>'"},
			{"update", `UPDATE gen.events SET val = 1`, adbc.StatusInvalidArgument, `"UPDATE" statements are not supported`},
			{"bad filter", fmt.Sprintf(`SELECT * FROM table_changes('%s') WHERE id >`, histgen.Table),
				adbc.StatusInvalidArgument, "position"},
			{"unknown table", `SELECT * FROM table_changes('gen.nope')`, adbc.StatusNotFound, "gen.nope"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				adbcFails(t, ctx, analyst, tt.query, tt.status, tt.msg)
			})
		}
	})
	t.Run("auth", func(t *testing.T) {
		adbcFails(t, ctx, open(t, tokens["hr"]), fmt.Sprintf(`SELECT * FROM table_changes('%s')`, histgen.Table),
			adbc.StatusUnauthorized, histgen.Table)
		adbcFails(t, ctx, open(t, "not-a-token"), fmt.Sprintf(`SELECT * FROM table_changes('%s')`, histgen.Table),
			adbc.StatusUnauthenticated, "")
	})
	t.Run("Python with a token", func(t *testing.T) {
		// As the README says: the token goes in db_kwargs.
		script := `import sys
import adbc_driver_flightsql.dbapi as flightsql
import adbc_driver_manager
uri, token, table = sys.argv[1:]
with flightsql.connect(uri, db_kwargs={"adbc.flight.sql.authorization_header": "Bearer " + token},
                       autocommit=True) as conn, conn.cursor() as cur:
    cur.execute(f"SELECT id FROM table_changes('{table}')")
    print(cur.fetch_arrow_table().num_rows)
try:
    with flightsql.connect(uri, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT id FROM table_changes('{table}')")
    print("read without a token")
except adbc_driver_manager.Error as e:
    print("refused:", type(e).__name__, str(e).splitlines()[0])
`
		out, err := exec.CommandContext(ctx, python(t), "-c", script, srv.URI(), tokens["analyst"], histgen.Table).CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		want := len(clientRows(t, ctx, client, sluice.ChangeRequest{Table: histgen.Table, Layout: sluice.LayoutFlat}, nil))
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 2 || lines[0] != fmt.Sprint(want) || !strings.HasPrefix(lines[1], "refused:") ||
			!strings.Contains(lines[1], "UNAUTHENTICATED") {
			t.Fatalf("got %q, want %d rows with the token and UNAUTHENTICATED without", out, want)
		}
	})
}

// TestFlightSQLADBCDisconnect: the ADBC driver closes its Flight session
// (a CloseSession action) whenever a connection closes; flightd, which
// keeps no session, says it is closed and logs no failed call.
func TestFlightSQLADBCDisconnect(t *testing.T) {
	fix := writeEvents(t, 2, 5)
	// A failed call is logged at info.
	srv := startFlightd(t, "--warehouse", fix.Warehouse, "--log-level", "info")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	db, err := adbcflightsql.NewDriver(mem).NewDatabase(map[string]string{adbc.OptionKeyURI: srv.URI()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for range 2 {
		cnxn, err := db.Open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rows := adbcRows(t, ctx, cnxn, `SELECT id FROM table_changes('e2e.events')`); len(rows) == 0 {
			t.Fatal("no rows read before the disconnect")
		}
		if err := cnxn.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Close returns once the session is closed: a failure is logged by then.
	for _, line := range strings.Split(srv.logs(), "\n") {
		if strings.Contains(line, "CloseSession") || strings.Contains(line, "call failed") {
			t.Errorf("flightd logged: %s", line)
		}
	}
}

// adbcRows runs a query through ADBC, returning its rows as JSON lines.
func adbcRows(t *testing.T, ctx context.Context, cnxn adbc.Connection, query string) []string {
	t.Helper()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(query); err != nil {
		t.Fatal(err)
	}
	rdr, _, err := stmt.ExecuteQuery(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var rows []string
	for rdr.Next() {
		rows = append(rows, jsonRows(t, rdr.RecordBatch())...)
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// adbcFails runs a query that must fail with the status and a message
// containing msg.
func adbcFails(t *testing.T, ctx context.Context, cnxn adbc.Connection, query string, status adbc.Status, msg string) {
	t.Helper()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(query); err != nil {
		t.Fatal(err)
	}
	rdr, _, err := stmt.ExecuteQuery(ctx)
	if err == nil {
		rdr.Release()
		t.Fatalf("%s: no error", query)
	}
	var ae adbc.Error
	if !errors.As(err, &ae) || ae.Code != status || !strings.Contains(ae.Msg, msg) {
		t.Fatalf("%s: got %v, want status %v containing %q", query, err, status, msg)
	}
}

// clientRows reads a ChangeRequest with the Go client as JSON lines,
// keeping the named columns in that order (all if none).
func clientRows(t *testing.T, ctx context.Context, c *sluice.Client, req sluice.ChangeRequest, keep []string) []string {
	t.Helper()
	rdr, err := c.Changes(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var rows []string
	for b, err := range rdr.All() {
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, jsonRows(t, b.Record)...)
	}
	if keep == nil {
		return rows
	}
	for i, r := range rows {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(r), &m); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(keep))
		for j, k := range keep {
			parts[j] = fmt.Sprintf("%q:%s", k, m[k])
		}
		rows[i] = "{" + strings.Join(parts, ",") + "}"
	}
	return rows
}

// jsonRows renders a record's rows as JSON objects with their keys in
// column order.
func jsonRows(t *testing.T, rec arrow.RecordBatch) []string {
	t.Helper()
	var rows []string
	for i := range int(rec.NumRows()) {
		parts := make([]string, rec.NumCols())
		for c := range parts {
			v, err := json.Marshal(rec.Column(c).GetOneForMarshal(i))
			if err != nil {
				t.Fatal(err)
			}
			parts[c] = fmt.Sprintf("%q:%s", rec.ColumnName(c), v)
		}
		rows = append(rows, "{"+strings.Join(parts, ",")+"}")
	}
	return rows
}

// adbcTables lists the tables GetObjects shows, as schema.table.
func adbcTables(t *testing.T, ctx context.Context, cnxn adbc.Connection) []string {
	t.Helper()
	rdr, err := cnxn.GetObjects(ctx, adbc.ObjectDepthTables, nil, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	var out []string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		schemas := rec.Column(1).(*array.List)
		schemaStruct := schemas.ListValues().(*array.Struct)
		schemaNames := schemaStruct.Field(0).(*array.String)
		tables := schemaStruct.Field(1).(*array.List)
		tableStruct := tables.ListValues().(*array.Struct)
		tableNames := tableStruct.Field(0).(*array.String)
		for i := range int(rec.NumRows()) {
			s0, s1 := schemas.ValueOffsets(i)
			for s := s0; s < s1; s++ {
				t0, t1 := tables.ValueOffsets(int(s))
				for tb := t0; tb < t1; tb++ {
					out = append(out, schemaNames.Value(int(s))+"."+tableNames.Value(int(tb)))
				}
			}
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestFlightSQLReadme runs the README's Flight SQL snippet (the ```python
// flightsql block, its address replaced by a real flightd's serving the
// demo table) with the venv's ADBC driver: the update of order 1006 shows
// as its three flat rows, pandas.read_sql reads net changes, and the table
// schema lists the demo's data columns.
func TestFlightSQLReadme(t *testing.T) {
	py := python(t)
	doc, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var code []string
	in := false
	for line := range strings.SplitSeq(string(doc), "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```python flightsql":
			in = true
		case in && strings.TrimSpace(line) == "```":
			in = false
		case in:
			code = append(code, line)
		}
	}
	if len(code) == 0 {
		t.Fatal("README.md has no ```python flightsql block")
	}
	script := strings.Join(code, "\n")
	const uri = "grpc://127.0.0.1:8815"
	if !strings.Contains(script, uri) {
		t.Fatalf("the README's snippet does not connect to %s:\n%s", uri, script)
	}
	srv := startFlightd(t, "--demo", "--warehouse", filepath.Join(t.TempDir(), "warehouse"))
	script = strings.ReplaceAll(script, uri, srv.URI())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, "-W", "error::Warning", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("the README's snippet: %v\n%s", err, out)
	}
	for _, want := range []string{"update_preimage", "update_postimage", "shipped", "_commit_version",
		"order_id: int64", "created_at: timestamp[us, tz=UTC]"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the README's snippet printed no %q:\n%s", want, out)
		}
	}
	if n := strings.Count(string(out), " 1006 "); n != 3 {
		t.Errorf("order 1006 in %d rows of the snippet's output, want its insert and update pair:\n%s", n, out)
	}
}
