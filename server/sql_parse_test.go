package server

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sluicefeed/sluice/internal/testkit/docmd"
)

func i64(v int64) *int64 { return &v }

func TestParseSQL(t *testing.T) {
	tests := []struct {
		name, sql string
		want      sqlQuery
	}{
		{"star", `SELECT * FROM table_changes('demo.orders')`, sqlQuery{Table: "demo.orders"}},
		{"window", `select * from TABLE_CHANGES('demo.orders', 1, 5)`,
			sqlQuery{Table: "demo.orders", From: i64(1), To: i64(5)}},
		{"from only and semicolon", "SELECT *\n FROM table_changes('demo.orders', 7) ;",
			sqlQuery{Table: "demo.orders", From: i64(7)}},
		{"null from", `SELECT * FROM table_changes('demo.orders', NULL, 9)`, sqlQuery{Table: "demo.orders", To: i64(9)}},
		{"columns", `SELECT id, "Country", ` + "`a``b`" + `, _change_type FROM table_changes('s.t')`,
			sqlQuery{Table: "s.t", Select: []string{"id", "Country", "a`b", "_change_type"}}},
		{"where", `SELECT id FROM table_changes('s.t') WHERE country = 'SE' AND (amount > 10 OR x IN (1, 2))`,
			sqlQuery{Table: "s.t", Select: []string{"id"}, Filter: "country = 'SE' AND (amount > 10 OR x IN (1, 2))"}},
		{"where with LIMIT in a string", `SELECT * FROM table_changes('s.t') WHERE note = 'LIMIT 3;' LIMIT 4;`,
			sqlQuery{Table: "s.t", Filter: "note = 'LIMIT 3;'", Limit: i64(4)}},
		{"limit", `SELECT * FROM table_changes('s.t') limit 0`, sqlQuery{Table: "s.t", Limit: i64(0)}},
		{"options", `SELECT * FROM table_changes('demo.orders', 1, 5, net_changes => true, identity => 'order_id')`,
			sqlQuery{Table: "demo.orders", From: i64(1), To: i64(5), NetChanges: true, Identity: []string{"order_id"}}},
		{"named window, several identity columns", `SELECT * FROM table_changes('s.t', TO_SNAPSHOT => 3, ` +
			`identity => 'a, b', from_snapshot => 2, NET_CHANGES => FALSE)`,
			sqlQuery{Table: "s.t", From: i64(2), To: i64(3), Identity: []string{"a", "b"}}},
		{"ref", `SELECT * FROM table_changes('s.t', 4, REF => 'audit')`,
			sqlQuery{Table: "s.t", From: i64(4), Ref: "audit"}},
		{"quoted table name", `SELECT * FROM table_changes('it''s.t')`, sqlQuery{Table: "it's.t"}},
		{"comment", "-- the orders\nSELECT * FROM table_changes('s.t')", sqlQuery{Table: "s.t"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSQL(tt.sql)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Fatalf("got %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func TestParseSQLErrors(t *testing.T) {
	tests := []struct{ name, sql, msg string }{
		{"empty", ``, "expected SELECT, found the end"},
		{"update", `UPDATE t SET a = 1`, `"UPDATE" statements are not supported`},
		{"insert", `insert into t values (1)`, `"INSERT" statements are not supported`},
		{"other table", `SELECT * FROM orders`, "expected table_changes"},
		{"no arguments", `SELECT * FROM table_changes()`, "table's name as a string"},
		{"table not a string", `SELECT * FROM table_changes(demo.orders)`, "table's name as a string"},
		{"bad bound", `SELECT * FROM table_changes('s.t', 'x')`, "snapshot id"},
		{"three bounds", `SELECT * FROM table_changes('s.t', 1, 2, 3)`, "takes a table, from_snapshot and to_snapshot"},
		{"positional after named", `SELECT * FROM table_changes('s.t', net_changes => true, 1)`, "positional arguments come first"},
		{"unknown option", `SELECT * FROM table_changes('s.t', fold => true)`, `unknown option "fold"`},
		{"twice", `SELECT * FROM table_changes('s.t', 1, from_snapshot => 2)`, `option "from_snapshot" is given twice`},
		{"bad net_changes", `SELECT * FROM table_changes('s.t', net_changes => 1)`, "TRUE or FALSE"},
		{"empty identity", `SELECT * FROM table_changes('s.t', identity => 'a,')`, "empty column"},
		{"ref not a string", `SELECT * FROM table_changes('s.t', ref => audit)`, "branch or tag as a string"},
		{"empty ref", `SELECT * FROM table_changes('s.t', ref => '')`, "branch or tag as a string"},
		{"unclosed", `SELECT * FROM table_changes('s.t'`, "expected ',' or ')'"},
		{"unterminated string", `SELECT * FROM table_changes('s.t)`, "unterminated string"},
		{"join", `SELECT * FROM table_changes('s.t') JOIN x`, "expected the end of the query"},
		{"group by", `SELECT * FROM table_changes('s.t') GROUP BY a`, "expected the end of the query"},
		{"empty where", `SELECT * FROM table_changes('s.t') WHERE LIMIT 1`, "a filter after WHERE"},
		{"bad limit", `SELECT * FROM table_changes('s.t') LIMIT -1`, "row count"},
		{"parameter", `SELECT * FROM table_changes('s.t', ?)`, "snapshot id"},
		{"two statements", `SELECT * FROM table_changes('s.t'); SELECT 1`, "expected the end of the query"},
		{"duplicate column", `SELECT a, a FROM table_changes('s.t')`, "selected twice"},
		{"expression", `SELECT count(*) FROM table_changes('s.t')`, "expected ',' or FROM"},
		{"dotted column", `SELECT a.b FROM table_changes('s.t')`, "top-level columns"},
		{"empty quoted", `SELECT "" FROM table_changes('s.t')`, "empty quoted identifier"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseSQL(tt.sql)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("got %v, want a bad request containing %q", err, tt.msg)
			}
			if !strings.Contains(err.Error(), "table_changes('<ns.table>'") && !strings.Contains(err.Error(), "limit of") {
				t.Fatalf("%v does not name what is supported", err)
			}
		})
	}
}

// TestParseSQLPosition reports positions in characters, 1-based.
func TestParseSQLPosition(t *testing.T) {
	_, err := parseSQL(`SELECT "é" FROM x`)
	if err == nil || !strings.Contains(err.Error(), "at position 17") {
		t.Fatalf("got %v, want position 17", err)
	}
}

// FuzzParseSQL checks that any text parses or fails as a bad request,
// and that what parses names a table and keeps its filter inside the
// query.
func FuzzParseSQL(f *testing.F) {
	for _, s := range []string{
		`SELECT * FROM table_changes('demo.orders', 1, 5) WHERE a = 'x' LIMIT 3;`,
		`select id, "b" from table_changes('s.t', net_changes => true, identity => 'id')`,
		`SELECT * FROM table_changes('s.t') WHERE (a IN (1,2)) AND NOT b IS NULL`,
		"SELECT `x` FROM table_changes('a''b.c', NULL, NULL)",
		`UPDATE t SET x = 1`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := parseSQL(s)
		if err != nil {
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("%q: error %v is not a bad request", s, err)
			}
			return
		}
		if q.Table == "" {
			t.Fatalf("%q parsed without a table", s)
		}
		if !strings.Contains(s, q.Filter) || !utf8.ValidString(q.Filter) {
			t.Fatalf("%q: filter %q is not part of the query", s, q.Filter)
		}
	})
}

// TestProtocolDocFlightSQL: the queries docs/PROTOCOL.md shows as accepted
// parse, and its grammar names exactly the options the parser takes.
func TestProtocolDocFlightSQL(t *testing.T) {
	doc := readProtocolDoc(t)
	for _, q := range docmd.Block(t, protocolDoc, doc, "sql flightsql-accepted") {
		if _, err := parseSQL(q); err != nil {
			t.Errorf("the doc's accepted query %q: %v", q, err)
		}
	}
	var names string
	for _, l := range docmd.Block(t, protocolDoc, doc, "text flightsql-grammar") {
		if rest, ok := strings.CutPrefix(l, "name"); ok {
			names = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), ":="))
		}
	}
	for _, n := range strings.Split(names, "|") {
		n = strings.TrimSpace(n)
		q := "SELECT * FROM table_changes('s.t', " + n + " => NULL)"
		switch n {
		case "net_changes":
			q = "SELECT * FROM table_changes('s.t', net_changes => true)"
		case "identity", "ref":
			q = "SELECT * FROM table_changes('s.t', " + n + " => 'a')"
		}
		if _, err := parseSQL(q); err != nil {
			t.Errorf("the doc's option %q: %v", n, err)
		}
	}
	_, err := parseSQL("SELECT * FROM table_changes('s.t', nope => 1)")
	for _, n := range strings.Split(names, "|") {
		if err == nil || !strings.Contains(err.Error(), strings.TrimSpace(n)) {
			t.Errorf("an unknown option's error does not name the doc's option %q: %v", n, err)
		}
	}
}
