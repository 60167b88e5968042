package spark

import (
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestFilterSQL(t *testing.T) {
	ts := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
	for _, tc := range []struct {
		name string
		expr Expr
		want string
	}{
		{"compare int", Compare{Column{"id"}, Gt, Int(10)}, "(`id` > 10L)"},
		{"min int", Compare{Column{"id"}, Ge, Int(math.MinInt64)}, "(`id` >= (-9223372036854775807L - 1L))"},
		{"string is hex", Compare{Column{"country"}, Eq, String("SE")}, "(`country` = CAST(X'5345' AS STRING))"},
		{"injection stays a value", Compare{Column{"c"}, Eq, String("x') OR 1=1 --")},
			"(`c` = CAST(X'782729204F5220313D31202D2D' AS STRING))"},
		{"quoted column", IsNull{Column: Column{"we`ird col"}}, "(`we``ird col` IS NULL)"},
		{"nested column", IsNull{Column: Column{"addr", "city"}, Negated: true}, "(`addr`.`city` IS NOT NULL)"},
		{"float", Compare{Column{"n"}, Lt, Float(1.5)}, "(`n` < 1.5E+00D)"},
		{"bool and decimal", And{Compare{Column{"b"}, Eq, Bool(true)}, Compare{Column{"d"}, Ne, Decimal("-12.50")}},
			"((`b` = TRUE) AND (`d` <> -12.50BD))"},
		{"in, not, or", Or{Not{In{Column: Column{"id"}, Values: []Value{Int(1), Int(2)}}},
			In{Column: Column{"id"}, Values: []Value{Int(3)}, Negated: true}},
			"((NOT (`id` IN (1L, 2L))) OR (`id` NOT IN (3L)))"},
		{"date", Compare{Column{"day"}, Eq, Date(ts)}, "(`day` = DATE '2024-05-06')"},
		{"timestamp", Compare{Column{"at"}, Le, Timestamp(ts.In(time.FixedZone("x", 3600)))},
			"(`at` <= TIMESTAMP '2024-05-06 07:08:09.123456Z')"},
		{"timestamp ntz", Compare{Column{"at"}, Le, TimestampNTZ(ts)}, "(`at` <= TIMESTAMP_NTZ '2024-05-06 07:08:09.123456')"},
		{"NaN compares false", NaNFalse{Compare{Column{"n"}, Ne, Float(2)}},
			"(CASE WHEN isnan(`n`) THEN FALSE ELSE (`n` <> 2E+00D) END)"},
		{"constants", Or{Const(false), Not{Const(true)}}, "(FALSE OR (NOT TRUE))"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FilterSQL(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestFilterSQLRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		expr Expr
	}{
		{"nil", nil},
		{"NaN", Compare{Column{"n"}, Eq, Float(math.NaN())}},
		{"infinity", Compare{Column{"n"}, Eq, Float(math.Inf(1))}},
		{"bad decimal", Compare{Column{"d"}, Eq, Decimal("1; DROP TABLE t")}},
		{"untyped value", Compare{Column{"d"}, Eq, Value{}}},
		{"bad operator", Compare{Column{"d"}, CompareOp("LIKE"), Int(1)}},
		{"empty column", IsNull{Column: Column{}}},
		{"empty part", IsNull{Column: Column{"a", ""}}},
		{"empty IN", In{Column: Column{"a"}}},
		{"half AND", And{Left: IsNull{Column: Column{"a"}}}},
		{"empty NOT", Not{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := FilterSQL(tc.expr); !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("FilterSQL = %q, %v; want ErrInvalidRequest", got, err)
			}
		})
	}
}

func TestParseTableName(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		sql  string
	}{
		{"spark_catalog.sales.orders", []string{"spark_catalog", "sales", "orders"}, "`spark_catalog`.`sales`.`orders`"},
		{"ice.`my.db`.t", []string{"ice", "my.db", "t"}, "`ice`.`my.db`.`t`"},
		{"`a``b`.c", []string{"a`b", "c"}, "`a``b`.`c`"},
	} {
		got, err := ParseTableName(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: got %q, want %q", tc.in, got, tc.want)
		}
		if sql, _ := got.SQL(); sql != tc.sql {
			t.Errorf("%s: SQL %s, want %s", tc.in, sql, tc.sql)
		}
		if again, err := ParseTableName(got.String()); err != nil || again.String() != got.String() {
			t.Errorf("%s: String %s does not parse back: %v", tc.in, got.String(), err)
		}
	}
	for _, bad := range []string{"", ".", "a..b", "a.", "`a", "`a`b.c"} {
		if _, err := ParseTableName(bad); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("ParseTableName(%q) = %v, want ErrInvalidRequest", bad, err)
		}
	}
}

func TestParseRemote(t *testing.T) {
	r, err := ParseRemote("sc://127.0.0.1:15003/;token=abc%3D;user_id=me")
	if err != nil {
		t.Fatal(err)
	}
	if r.Addr() != "127.0.0.1:15003" || r.Token != "abc=" || !r.TLS || r.UserID != "me" {
		t.Errorf("got %+v", r)
	}
	if r.String() != "sc://127.0.0.1:15003/;use_ssl=true" {
		t.Errorf("String() = %s: the token must not show", r)
	}
	r, err = ParseRemote("sc://localhost")
	if err != nil || r.Addr() != "localhost:15002" || r.TLS {
		t.Errorf("got %+v, %v", r, err)
	}
	for _, bad := range []string{"http://x", "sc://", "sc://h:0", "sc://h:x", "sc://h/;use_ssl=maybe", "sc://h/;nope=1",
		"sc://h/;session_id=1", "sc://h/;token", "sc://h/token=1"} {
		if _, err := ParseRemote(bad); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("ParseRemote(%q) = %v, want ErrInvalidRequest", bad, err)
		}
	}
}

func TestAtLeast(t *testing.T) {
	for v, want := range map[string]bool{"4.2.0": true, "4.1.4": false, "4.10.0": true, "5.0.0": true,
		"3.5.6": false, "4.2.0-SNAPSHOT": true, "4.2": true, "x": false, "": false} {
		if got := atLeast(v, 4, 2); got != want {
			t.Errorf("atLeast(%q, 4, 2) = %v", v, got)
		}
	}
}

func TestPinWindow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hist := []Commit{{Version: 3, Time: t0}, {Version: 4, Time: t0.Add(time.Minute)}, {Version: 5, Time: t0.Add(2 * time.Minute)}}
	for _, tc := range []struct {
		name  string
		w     Window
		want  changelogWindow
		empty bool
		err   error
	}{
		{"whole history", Window{}, changelogWindow{to: 5, first: 3}, false, nil},
		{"from a version", Window{From: AtVersion(3)}, changelogWindow{from: 3, hasFrom: true, to: 5, first: 3}, false, nil},
		{"to a version", Window{From: AtVersion(3), To: AtVersion(4)}, changelogWindow{from: 3, hasFrom: true, to: 4, first: 3}, false, nil},
		{"empty", Window{From: AtVersion(4), To: AtVersion(4)}, changelogWindow{}, true, nil},
		{"latest to latest", Window{From: AtVersion(5)}, changelogWindow{}, true, nil},
		{"times", Window{From: AtTime(t0.Add(30 * time.Second)), To: AtTime(t0.Add(2 * time.Minute))},
			changelogWindow{from: 3, hasFrom: true, to: 5, first: 3}, false, nil},
		{"from before the first", Window{From: AtTime(t0.Add(-time.Hour))}, changelogWindow{to: 5, first: 3}, false, nil},
		{"to before the first", Window{To: AtTime(t0.Add(-time.Hour))}, changelogWindow{}, true, nil},
		{"backwards", Window{From: AtVersion(5), To: AtVersion(3)}, changelogWindow{}, false, ErrInvalidRequest},
		{"unknown version", Window{From: AtVersion(9)}, changelogWindow{}, false, ErrVersionNotFound},
		{"expired version", Window{From: AtVersion(1)}, changelogWindow{}, false, ErrHistoryExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, empty, err := pinWindow(tc.w, hist)
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if empty != tc.empty || got != tc.want {
				t.Errorf("got %+v (empty %v), want %+v (empty %v)", got, empty, tc.want, tc.empty)
			}
		})
	}
}

// TestBuildQuery checks the SQL of window reads against the golden files
// in testdata/query (go test -run TestBuildQuery -update rewrites them).
func TestBuildQuery(t *testing.T) {
	delta := Table{Name: TableName{"spark_catalog", "default", "orders"}, Format: Delta}
	ice := Table{Name: TableName{"ice", "db", "orders"}, Format: Iceberg}
	data := []string{"id", "country", "amount", "a.b"}
	w := changelogWindow{from: 2, hasFrom: true, to: 5, first: 0}
	for _, tc := range []struct {
		name string
		req  Request
		w    changelogWindow
	}{
		{"delta_window", Request{Table: delta, Engine: EngineSparkNative}, w},
		{"delta_from_start", Request{Table: delta, Engine: EngineSparkNative}, changelogWindow{to: 5}},
		{"delta_projection_filter", Request{Table: delta, Engine: EngineSparkNative, Columns: []string{"id"},
			Filter: Compare{Column{"country"}, Eq, String("SE")}}, w},
		{"delta_net", Request{Table: delta, Engine: EngineSparkNative, NetChanges: true}, w},
		{"iceberg_view_identity", Request{Table: ice, Engine: EngineIcebergChangelogView, Identity: []string{"id"}}, w},
		{"iceberg_view_no_identity_filter", Request{Table: ice, Engine: EngineIcebergChangelogView,
			Filter: Compare{Column{"amount"}, Gt, Int(10)}}, w},
		{"delta_filter_dotted_name", Request{Table: delta, Engine: EngineSparkNative,
			Filter: Or{IsNull{Column: Column{"a", "b"}}, Compare{Column{"amount"}, Gt, Int(1)}}}, w},
		{"iceberg_view_net", Request{Table: ice, Engine: EngineIcebergChangelogView, NetChanges: true}, changelogWindow{to: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := buildQuery(tc.req, data, tc.w)
			if err != nil {
				t.Fatal(err)
			}
			got := q.call
			if q.view != "" {
				// The view's name is random.
				name := strings.Trim(q.view, "`")
				got = strings.ReplaceAll(got, name, "VIEW")
				q.sql = strings.ReplaceAll(q.sql, name, "VIEW")
			}
			got += "\n" + q.sql + "\n"
			golden := filepath.Join("testdata", "query", tc.name+".sql")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if got != string(want) {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestBuildQueryRefuses(t *testing.T) {
	delta := Table{Name: TableName{"spark_catalog", "default", "orders"}, Format: Delta}
	data := []string{"id", "country"}
	w := changelogWindow{to: 1}
	for _, tc := range []struct {
		name string
		req  Request
		data []string
	}{
		{"unknown column", Request{Table: delta, Engine: EngineSparkNative, Columns: []string{"nope"}}, data},
		{"twice", Request{Table: delta, Engine: EngineSparkNative, Columns: []string{"id", "id"}}, data},
		{"unknown filter column", Request{Table: delta, Engine: EngineSparkNative,
			Filter: IsNull{Column: Column{"nope"}}}, data},
		{"unknown identity", Request{Table: delta, Engine: EngineSparkNative, Identity: []string{"nope"}}, data},
		{"reserved column", Request{Table: delta, Engine: EngineSparkNative}, []string{"id", "__sluice_kind"}},
		{"native engine", Request{Table: delta, Engine: EngineNative}, data},
		{"iceberg without catalog", Request{Table: Table{Name: TableName{"db", "t"}, Format: Iceberg},
			Engine: EngineIcebergChangelogView}, data},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := buildQuery(tc.req, tc.data, w); !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("err = %v, want ErrInvalidRequest", err)
			}
		})
	}
}

func TestStringLiteral(t *testing.T) {
	if got := stringLiteral("db.orders"); got != "'db.orders'" {
		t.Errorf("got %s", got)
	}
	if got := stringLiteral("it's"); got != "CAST(X'6974277"+"3' AS STRING)" {
		t.Errorf("got %s", got)
	}
}
