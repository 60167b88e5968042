package sluice_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluicefeed/sluice/catalog"
	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
	"github.com/sluicefeed/sluice/progress"
	"github.com/sluicefeed/sluice/server"
)

// The test tables: shop.orders has three append snapshots of history;
// shop.empty has none.
const (
	ordersTable = "shop.orders"
	emptyTable  = "shop.empty"
)

// maxBatchRows is the engine's batch limit in the tests, small so that
// snapshots span several batches.
const maxBatchRows = 2

type order struct {
	ID       int64
	Customer string
	Country  string
	Amount   float64
}

var allColumns = []string{"id", "customer", "country", "amount"}

func (o order) value(col string) any {
	switch col {
	case "id":
		return o.ID
	case "customer":
		return o.Customer
	case "country":
		return o.Country
	case "amount":
		return o.Amount
	}
	panic("unknown column " + col)
}

func (o order) row() tablewrite.Row {
	return tablewrite.Row{"id": o.ID, "customer": o.Customer, "country": o.Country, "amount": o.Amount}
}

// history is the commits of shop.orders, oldest first.
var history = [][]order{
	{{1, "Astrid", "SE", 129.5}, {2, "Jonas", "NO", 42}, {3, "Mia", "FI", 310.25}},
	{{4, "Lars", "DK", 18.9}, {5, "Elin", "SE", 77.1}},
	{{6, "Oskar", "SE", 1450}, {7, "Ingrid", "NO", 64.35}, {8, "Aino", "FI", 12}},
}

func ordersSchema() *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "customer", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "country", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
	)
}

// newWarehouse opens a warehouse in a temporary directory.
func newWarehouse(t *testing.T) *catalog.Catalog {
	t.Helper()
	cat, err := tablewrite.OpenWarehouse(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	return cat
}

// createTable creates a format v2 orders table with one append snapshot
// per commit, a few milliseconds apart so that commit times differ.
func createTable(t *testing.T, cat *catalog.Catalog, name string, commits [][]order) {
	t.Helper()
	ctx := t.Context()
	tbl, err := tablewrite.CreateTable(ctx, cat, name, ordersSchema(),
		icecatalog.WithProperties(iceberg.Properties{"format-version": "2"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, commit := range commits {
		time.Sleep(5 * time.Millisecond)
		rows := make([]tablewrite.Row, len(commit))
		for i, o := range commit {
			rows[i] = o.row()
		}
		if tbl, err = tablewrite.Append(ctx, tbl, rows); err != nil {
			t.Fatal(err)
		}
	}
}

// appendOrders commits one more snapshot to a table.
func appendOrders(t *testing.T, cat *catalog.Catalog, name string, orders []order) {
	t.Helper()
	tbl, err := cat.LoadTable(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]tablewrite.Row, len(orders))
	for i, o := range orders {
		rows[i] = o.row()
	}
	time.Sleep(5 * time.Millisecond)
	if _, err := tablewrite.Append(t.Context(), tbl, rows); err != nil {
		t.Fatal(err)
	}
}

// authRecorder records the authorization metadata of every call.
type authRecorder struct {
	mu   sync.Mutex          // guards seen
	seen map[string][]string // full method name -> authorization values of its last call
}

func (a *authRecorder) record(ctx context.Context, method string) {
	md, _ := metadata.FromIncomingContext(ctx)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seen == nil {
		a.seen = map[string][]string{}
	}
	a.seen[method] = md.Get("authorization")
}

func (a *authRecorder) calls() map[string][]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string][]string, len(a.seen))
	for k, v := range a.seen {
		out[k] = slices.Clone(v)
	}
	return out
}

func (a *authRecorder) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo,
	handler grpc.UnaryHandler) (any, error) {
	a.record(ctx, info.FullMethod)
	return handler(ctx, req)
}

func (a *authRecorder) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo,
	handler grpc.StreamHandler) error {
	a.record(ss.Context(), info.FullMethod)
	return handler(srv, ss)
}

// testServer is the real Sluice server, serving a warehouse in-process.
type testServer struct {
	addr string
	auth *authRecorder
}

// serve serves cat on a loopback port until the test ends, then stops the
// server and checks that the engine and the server freed their memory.
// Clients dialled after serve are closed before it stops.
func serve(t *testing.T, cat *catalog.Catalog, opts ...grpc.ServerOption) *testServer {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	engine := feed.New(cat, feed.Options{Allocator: mem, MaxBatchRows: maxBatchRows})
	store, err := progress.Open(t.Context(), filepath.Join(t.TempDir(), "consumers.db"))
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(engine, server.Options{Allocator: mem, Logger: slog.New(slog.DiscardHandler), Progress: store,
		Follow: server.FollowOptions{PollInterval: 20 * time.Millisecond, HeartbeatInterval: 200 * time.Millisecond}})
	rec := &authRecorder{}
	// As in flightd, a panic in a call fails the call with Internal.
	recover := recovery.WithRecoveryHandler(func(p any) error {
		return status.Errorf(codes.Internal, "panic in call: %v", p)
	})
	gs := grpc.NewServer(append([]grpc.ServerOption{
		grpc.ChainUnaryInterceptor(recovery.UnaryServerInterceptor(recover), rec.unary),
		grpc.ChainStreamInterceptor(recovery.StreamServerInterceptor(recover), rec.stream),
	}, opts...)...)
	srv.Register(gs)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	t.Cleanup(func() {
		defer store.Close()
		srv.Shutdown()
		stopped := make(chan struct{})
		go func() {
			gs.GracefulStop()
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			t.Error("the server did not stop gracefully: a call or a connection is still open")
			gs.Stop()
			<-stopped
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		mem.AssertSize(t, 0)
	})
	return &testServer{addr: lis.Addr().String(), auth: rec}
}

// dial returns a client of addr whose batches come from a checked
// allocator; when the test ends it closes the client and checks that every
// batch was released.
func dial(t *testing.T, addr string, opts ...sluice.Option) (*sluice.Client, *memory.CheckedAllocator) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	c, err := sluice.Dial(t.Context(), addr, append([]sluice.Option{sluice.WithAllocator(mem)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		mem.AssertSize(t, 0)
	})
	return c, mem
}

// fixture is a server of shop.orders and shop.empty with a client.
type fixture struct {
	srv    *testServer
	client *sluice.Client
	mem    *memory.CheckedAllocator
	snaps  []sluice.Snapshot // the lineage of shop.orders
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	cat := newWarehouse(t)
	createTable(t, cat, ordersTable, history)
	createTable(t, cat, emptyTable, nil)
	srv := serve(t, cat)
	c, mem := dial(t, srv.addr)
	snaps, err := c.Snapshots(t.Context(), ordersTable)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != len(history) {
		t.Fatalf("%s has %d snapshots, want %d", ordersTable, len(snaps), len(history))
	}
	for i := 1; i < len(snaps); i++ {
		if snaps[i].TimestampMs <= snaps[i-1].TimestampMs {
			t.Fatalf("snapshots %d and %d share a commit time; the timestamp tests need distinct ones", i-1, i)
		}
	}
	return &fixture{srv: srv, client: c, mem: mem, snaps: snaps}
}

// change is one change row, its images rendered as "col=value ...".
type change struct {
	Op       string
	Snapshot int64
	Before   string
	After    string
}

func (c change) String() string {
	return fmt.Sprintf("%s@%d before{%s} after{%s}", c.Op, c.Snapshot, c.Before, c.After)
}

// renderImage renders row i of an image column, or "null".
func renderImage(col arrow.Array, i int) string {
	st := col.(*array.Struct)
	if st.IsNull(i) {
		return "null"
	}
	typ := st.DataType().(*arrow.StructType)
	parts := make([]string, typ.NumFields())
	for f := range typ.NumFields() {
		parts[f] = fmt.Sprintf("%s=%v", typ.Field(f).Name, st.Field(f).GetOneForMarshal(i))
	}
	return strings.Join(parts, " ")
}

func renderOrder(o order, cols []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = fmt.Sprintf("%s=%v", c, o.value(c))
	}
	return strings.Join(parts, " ")
}

// readAll reads the rest of a reader, checking every batch against its
// metadata and the reader's schema.
func readAll(t *testing.T, r *sluice.ChangeReader) ([]change, []sluice.BatchMeta, error) {
	t.Helper()
	var changes []change
	var metas []sluice.BatchMeta
	for b, err := range r.All() {
		if err != nil {
			return changes, metas, err
		}
		rec := b.Record
		if !rec.Schema().Equal(r.Schema()) {
			t.Fatalf("batch schema %s, want the reader's %s", rec.Schema(), r.Schema())
		}
		if b.Meta.Rows != rec.NumRows() {
			t.Errorf("meta rows %d, batch rows %d", b.Meta.Rows, rec.NumRows())
		}
		ops := rec.Column(0).(*array.String)
		snaps := rec.Column(3).(*array.Int64)
		ts := rec.Column(4).(*array.Timestamp)
		for i := range int(rec.NumRows()) {
			if got := snaps.Value(i); got != b.Meta.Snapshot {
				t.Errorf("row %d: snapshot %d in a batch of snapshot %d", i, got, b.Meta.Snapshot)
			}
			if got, want := int64(ts.Value(i)), b.Meta.TimestampMs*1000; got != want {
				t.Errorf("row %d: ts %d, want the snapshot's commit time %d", i, got, want)
			}
			changes = append(changes, change{Op: ops.Value(i), Snapshot: snaps.Value(i),
				Before: renderImage(rec.Column(1), i), After: renderImage(rec.Column(2), i)})
		}
		metas = append(metas, b.Meta)
	}
	return changes, metas, nil
}

// checkMetas checks the batches of a window: every snapshot of the window
// in order, each ending with exactly one complete batch, with the
// snapshot's commit sequence and time.
func checkMetas(t *testing.T, metas []sluice.BatchMeta, window []sluice.Snapshot) {
	t.Helper()
	i := 0
	for _, s := range window {
		n := 0
		for ; i < len(metas) && metas[i].Snapshot == s.ID; i++ {
			m := metas[i]
			n++
			if m.CommitSeq != s.CommitSeq || m.TimestampMs != s.TimestampMs {
				t.Errorf("batch %d of snapshot %d: commit_seq %d ts %d, want %d %d",
					i, s.ID, m.CommitSeq, m.TimestampMs, s.CommitSeq, s.TimestampMs)
			}
			if m.Rows > maxBatchRows {
				t.Errorf("batch %d has %d rows, more than the engine's limit of %d", i, m.Rows, maxBatchRows)
			}
			last := i+1 == len(metas) || metas[i+1].Snapshot != s.ID
			if m.SnapshotComplete != last {
				t.Errorf("batch %d of snapshot %d: snapshot_complete %v, want %v", i, s.ID, m.SnapshotComplete, last)
			}
		}
		if n == 0 {
			t.Errorf("no batch for snapshot %d of the window", s.ID)
		}
	}
	if i != len(metas) {
		t.Errorf("%d batches after the window's last snapshot: %+v", len(metas)-i, metas[i:])
	}
}

// checkSchema checks the change row schema with images of cols.
func checkSchema(t *testing.T, s *arrow.Schema, cols []string) {
	t.Helper()
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	want := []string{sluice.ColumnOp, sluice.ColumnBefore, sluice.ColumnAfter, sluice.ColumnSnapshot, sluice.ColumnTs}
	if !slices.Equal(names, want) {
		t.Fatalf("schema columns %v, want %v", names, want)
	}
	for _, i := range []int{1, 2} {
		st := s.Field(i).Type.(*arrow.StructType)
		var got []string
		for _, f := range st.Fields() {
			got = append(got, f.Name)
		}
		if !slices.Equal(got, cols) {
			t.Errorf("%s image columns %v, want %v", s.Field(i).Name, got, cols)
		}
	}
	if !arrow.TypeEqual(s.Field(4).Type, arrow.FixedWidthTypes.Timestamp_us) {
		t.Errorf("ts type %s, want timestamp[us, UTC]", s.Field(4).Type)
	}
}

func eqPtr(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
