package registry

import (
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/errclass"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// TestSparkLookup: a table's route is its tables entry, else its
// namespace's, with the backend choice of the table, else the namespace,
// else the server, else auto.
func TestSparkLookup(t *testing.T) {
	c := SparkConfig{Servers: []SparkServer{
		{Remote: "sc://a", Backend: BackendNative, Tables: map[string]SparkRoute{"delta.rt": {Name: "spark_catalog.default.rt"}}},
		{Remote: "sc://b", Namespaces: map[string]SparkRoute{"db": {Name: "ice.db", Backend: BackendSpark}, "x.y": {Name: "z"}}},
	}}
	for _, tc := range []struct {
		table, name, backend string
		server               int
		ok                   bool
	}{
		{"delta.rt", "spark_catalog.default.rt", BackendNative, 0, true},
		{"db.cow", "ice.db.cow", BackendSpark, 1, true},
		{"x.y.t", "z.t", BackendAuto, 1, true},
		{"delta.other", "", "", 0, false},
		{"dbx.cow", "", "", 0, false},
	} {
		r, ok := c.lookup(tc.table)
		if ok != tc.ok || ok && (r.name.String() != tc.name || r.backend != tc.backend || r.server != tc.server) {
			t.Errorf("%s: %+v %v, want %s %s on %d", tc.table, r, ok, tc.name, tc.backend, tc.server)
		}
	}
}

// TestSparkUnreachable: a table routed to a server that cannot be reached
// is served natively under auto, with a verdict that says it fell back and
// why (and a warning); backend spark makes its load Unavailable; backend
// native never asks the server.
func TestSparkUnreachable(t *testing.T) {
	ctx := t.Context()
	cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	for _, n := range []string{"auto.t", "forced.t", "off.t"} {
		if _, err := tablewrite.CreateTable(ctx, cat, n, sc); err != nil {
			t.Fatal(err)
		}
	}
	// A port that refuses connections.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	tables := New(cat, Options{})
	err = tables.ServeSpark(SparkConfig{Servers: []SparkServer{{Remote: "sc://" + addr, Namespaces: map[string]SparkRoute{
		"auto": {Name: "s.auto"}, "forced": {Name: "s.forced", Backend: BackendSpark},
		"off": {Name: "s.off", Backend: BackendNative}}}}}, memory.DefaultAllocator, log)
	if err != nil {
		t.Fatal(err)
	}
	defer tables.Close()
	eng := feed.New(tables, feed.Options{})

	p, err := eng.Plan(ctx, feed.Request{Table: "auto.t"})
	if err != nil {
		t.Fatal(err)
	}
	if v := p.Backend; v == nil || v.Backend != feed.BackendNative || !v.FellBack || !strings.Contains(v.Reason, "unavailable") {
		t.Fatalf("auto: verdict %+v", v)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "auto.t") {
		t.Fatalf("no warning of the fallback:\n%s", logs.String())
	}
	if _, err := eng.Plan(ctx, feed.Request{Table: "auto.t", Backend: feed.BackendSpark}); !isClass(err, errclass.FailedPrecondition) {
		t.Fatalf("auto, forced spark: %v", err)
	}
	if _, err := eng.Plan(ctx, feed.Request{Table: "forced.t"}); !isClass(err, errclass.Unavailable) {
		t.Fatalf("backend spark: %v, want Unavailable", err)
	}
	p, err = eng.Plan(ctx, feed.Request{Table: "off.t"})
	if err != nil || p.Backend == nil || p.Backend.FellBack || p.Backend.Backend != feed.BackendNative {
		t.Fatalf("backend native: %+v, %v", p, err)
	}
	// A routed name Sluice does not find would be served by Spark alone:
	// Unavailable while the server is; under backend native, not found.
	if _, err := eng.Plan(ctx, feed.Request{Table: "auto.ghost"}); !isClass(err, errclass.Unavailable) {
		t.Fatalf("a table only Spark could serve, server down: %v, want Unavailable", err)
	}
	if _, err := eng.Plan(ctx, feed.Request{Table: "off.ghost"}); !isClass(err, errclass.NotFound) {
		t.Fatalf("backend native, no such table: %v, want NotFound", err)
	}
	tabs, _, err := eng.ListTables(ctx, nil)
	if err != nil || len(tabs) != 2 {
		t.Fatalf("listing: %+v, %v (forced.t cannot be loaded)", tabs, err)
	}
	if !strings.Contains(logs.String(), "spark: cannot list a namespace") {
		t.Errorf("the namespaces Spark could not list are not in the log:\n%s", logs.String())
	}
	for _, ti := range tabs {
		if ti.Backend == nil {
			t.Errorf("%s listed without its verdict", ti.Name)
		}
	}
}

// isClass reports whether err has class c, as the server maps it to a
// gRPC code.
func isClass(err error, c errclass.Class) bool {
	got, ok := errclass.Of(err)
	return ok && got == c
}
