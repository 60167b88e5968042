package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/feed"
	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
	"github.com/sluicefeed/sluice/progress"
	"github.com/sluicefeed/sluice/server"
)

const tableName = "shop.orders"

type fixture struct {
	srv       *server.Server
	cat       *catalog.Catalog
	tbl       *table.Table
	snapshots []int64
	client    flight.Client
	control   sluicev1.ControlServiceClient
	mem       *memory.CheckedAllocator
	addr      string // the server's address
}

// start writes a table of `commits` appends of `rows` rows (each with a
// payload string of payloadBytes) and serves it in-process on loopback.
func start(t *testing.T, commits, rows, payloadBytes int) *fixture {
	t.Helper()
	return startWith(t, commits, rows, payloadBytes, nil)
}

// testFollow are the follow options of the test servers: fast polls and
// heartbeats.
var testFollow = server.FollowOptions{PollInterval: 20 * time.Millisecond, HeartbeatInterval: 300 * time.Millisecond,
	MaxBackoff: 100 * time.Millisecond}

// startWith is start with the engine reading the catalog through wrap (nil:
// the catalog itself) and the server's options changed by opts.
func startWith(t testing.TB, commits, rows, payloadBytes int, wrap func(feed.Tables) feed.Tables,
	opts ...func(*server.Options)) *fixture {
	t.Helper()
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "country", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "payload", Type: iceberg.PrimitiveTypes.String},
	)
	tbl, err := tablewrite.CreateTable(ctx, cat, tableName, sc)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{cat: cat, tbl: tbl}
	for c := range commits {
		f.commit(t, c*rows, rows, payloadBytes)
	}

	f.mem = memory.NewCheckedAllocator(arrowpool.Shared())
	var tables feed.Tables = cat
	if wrap != nil {
		tables = wrap(cat)
	}
	engine := feed.New(tables, feed.Options{Allocator: f.mem})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	store, err := progress.Open(ctx, filepath.Join(t.TempDir(), "consumers.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	so := server.Options{Allocator: f.mem, Logger: quiet, Progress: store, Follow: testFollow}
	for _, o := range opts {
		o(&so)
	}
	srv := server.New(engine, so)
	f.srv = srv
	gs := grpc.NewServer(srv.ServerOptions()...)
	srv.Register(gs)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	f.addr = lis.Addr().String()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	f.client = flight.NewClientFromConn(conn, nil)
	f.control = sluicev1.NewControlServiceClient(conn)
	t.Cleanup(func() {
		conn.Close()
		gs.Stop()
		// Server-side streams finish asynchronously after a client goes away.
		deadline := time.Now().Add(5 * time.Second)
		for f.mem.CurrentAlloc() != 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		f.mem.AssertSize(t, 0)
	})
	return f
}

func (f *fixture) commit(t testing.TB, first, rows, payloadBytes int) {
	t.Helper()
	var batch []tablewrite.Row
	for i := range rows {
		id := first + i + 1
		batch = append(batch, tablewrite.Row{"id": id, "country": []string{"SE", "NO"}[id%2],
			"payload": strings.Repeat(string(rune('a'+id%26)), payloadBytes)})
	}
	tbl, err := tablewrite.Append(context.Background(), f.tbl, batch)
	if err != nil {
		t.Fatal(err)
	}
	f.tbl = tbl
	f.snapshots = append(f.snapshots, tbl.CurrentSnapshot().SnapshotID)
}

type meta struct {
	Snapshot         int64 `json:"snapshot"`
	CommitSeq        int64 `json:"commit_seq"`
	SnapshotComplete bool  `json:"snapshot_complete"`
	TimestampMs      int64 `json:"timestamp_ms"`
	Rows             int64 `json:"rows"`
}

type received struct {
	metas    []meta
	rows     int64
	messages []int // encoded size of every message
}

// doGet reads a ticket to the end, decoding every message.
func (f *fixture) doGet(t *testing.T, ctx context.Context, ticket []byte) (received, error) {
	t.Helper()
	stream, err := f.client.DoGet(ctx, &flight.Ticket{Ticket: ticket})
	if err != nil {
		return received{}, err
	}
	var got received
	var raw []*flight.FlightData
	for {
		fd, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return got, err
		}
		raw = append(raw, fd)
		got.messages = append(got.messages, proto.Size(fd))
	}
	if len(raw) == 0 {
		t.Fatal("stream sent no message, not even the schema")
	}
	if len(raw[0].AppMetadata) != 0 {
		t.Fatalf("the schema message carries app_metadata %q", raw[0].AppMetadata)
	}
	rdr, err := flight.NewRecordReader(&replay{msgs: raw})
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	for rdr.Next() {
		md := rdr.LatestAppMetadata()
		if len(md) == 0 {
			t.Fatal("a batch without app_metadata")
		}
		var m meta
		if err := json.Unmarshal(md, &m); err != nil {
			t.Fatalf("app_metadata %q: %v", md, err)
		}
		if m.Rows != rdr.RecordBatch().NumRows() {
			t.Fatalf("app_metadata says %d rows, batch has %d", m.Rows, rdr.RecordBatch().NumRows())
		}
		got.metas = append(got.metas, m)
		got.rows += rdr.RecordBatch().NumRows()
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	return got, nil
}

// replay feeds recorded messages to a flight record reader.
type replay struct{ msgs []*flight.FlightData }

func (r *replay) Recv() (*flight.FlightData, error) {
	if len(r.msgs) == 0 {
		return nil, io.EOF
	}
	m := r.msgs[0]
	r.msgs = r.msgs[1:]
	return m, nil
}

func TestDoGetTickets(t *testing.T) {
	f := start(t, 3, 4, 8)
	ctx := context.Background()
	binary, err := proto.Marshal(&sluicev1.ChangeRequest{Table: tableName})
	if err != nil {
		t.Fatal(err)
	}
	tickets := map[string][]byte{
		"json":            []byte(`{"table": "shop.orders"}`),
		"json camel case": []byte(fmt.Sprintf(`{"table": "shop.orders", "fromSnapshot": "%d"}`, f.snapshots[0])),
		"binary":          binary,
	}
	for name, tkt := range tickets {
		t.Run(name, func(t *testing.T) {
			got, err := f.doGet(t, ctx, tkt)
			if err != nil {
				t.Fatal(err)
			}
			want := int64(12)
			if name == "json camel case" {
				want = 8
			}
			if got.rows != want {
				t.Fatalf("got %d rows, want %d", got.rows, want)
			}
			last := got.metas[len(got.metas)-1]
			if !last.SnapshotComplete || last.Snapshot != f.snapshots[2] || last.CommitSeq != 3 {
				t.Fatalf("last batch metadata %+v", last)
			}
		})
	}
}

func TestFlightInfoPinsWindow(t *testing.T) {
	f := start(t, 2, 5, 8)
	ctx := context.Background()
	info, err := f.client.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD,
		Cmd: []byte(`{"table": "shop.orders", "columns": ["id"]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if info.TotalRecords != 10 || len(info.Endpoint) != 1 {
		t.Fatalf("info: %d records, %d endpoints", info.TotalRecords, len(info.Endpoint))
	}
	schema, err := flight.DeserializeSchema(info.Schema, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	if got := schema.Field(2).Type.String(); got != "struct<id: int64 nullable>" {
		t.Fatalf("after type %s", got)
	}
	// A commit after planning does not leak into the planned read.
	f.commit(t, 100, 7, 8)
	got, err := f.doGet(t, ctx, info.Endpoint[0].Ticket.Ticket)
	if err != nil {
		t.Fatal(err)
	}
	if got.rows != 10 {
		t.Fatalf("pinned ticket read %d rows, want the planned 10", got.rows)
	}
	unpinned, err := f.doGet(t, ctx, []byte(`{"table": "shop.orders"}`))
	if err != nil {
		t.Fatal(err)
	}
	if unpinned.rows != 17 {
		t.Fatalf("a new request read %d rows, want 17", unpinned.rows)
	}
}

func TestMessagesStayUnder4MiB(t *testing.T) {
	// 3 snapshots of 400 rows of 20 KiB: 24 MiB in all.
	f := start(t, 3, 400, 20<<10)
	got, err := f.doGet(t, context.Background(), []byte(`{"table": "shop.orders"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.rows != 1200 {
		t.Fatalf("got %d rows, want 1200", got.rows)
	}
	for i, size := range got.messages {
		if size >= server.MaxMessageBytes {
			t.Fatalf("message %d is %d bytes, not under 4 MiB", i, size)
		}
	}
	if len(got.messages) < 6 {
		t.Fatalf("24 MiB in %d messages", len(got.messages))
	}
}

func TestCompression(t *testing.T) {
	f := start(t, 1, 500, 1000)
	ctx := context.Background()
	plain, err := f.doGet(t, ctx, []byte(`{"table": "shop.orders"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"lz4", "zstd"} {
		t.Run(c, func(t *testing.T) {
			got, err := f.doGet(t, ctx, []byte(`{"table": "shop.orders", "compression": "`+c+`"}`))
			if err != nil {
				t.Fatal(err)
			}
			if got.rows != plain.rows {
				t.Fatalf("%d rows, want %d", got.rows, plain.rows)
			}
			sum := func(r received) (n int) {
				for _, m := range r.messages {
					n += m
				}
				return n
			}
			if sum(got) >= sum(plain)/2 {
				t.Fatalf("%s sent %d bytes, plain %d: not compressed", c, sum(got), sum(plain))
			}
		})
	}
}

func TestErrorCodes(t *testing.T) {
	f := start(t, 2, 1, 8)
	ctx := context.Background()
	tests := []struct {
		name   string
		ticket string
		code   codes.Code
		msg    string
	}{
		{"empty", ``, codes.InvalidArgument, "empty request"},
		{"malformed JSON", `{"table": `, codes.InvalidArgument, "malformed JSON"},
		{"unknown field", `{"tabel": "shop.orders"}`, codes.InvalidArgument, "tabel"},
		{"not a request", "\x00\x01garbage", codes.InvalidArgument, "malformed ChangeRequest"},
		{"no table", `{}`, codes.InvalidArgument, "table is required"},
		{"bad name", `{"table": "orders"}`, codes.InvalidArgument, "namespace.table"},
		{"unknown table", `{"table": "shop.nope"}`, codes.NotFound, "shop.nope"},
		{"unknown namespace", `{"table": "nope.orders"}`, codes.NotFound, "nope.orders"},
		{"unknown column", `{"table": "shop.orders", "columns": ["nope"]}`, codes.InvalidArgument, `"nope"`},
		{"bad filter", `{"table": "shop.orders", "filter": "id >"}`, codes.InvalidArgument, "position"},
		{"unknown snapshot", `{"table": "shop.orders", "from_snapshot": 12345}`, codes.NotFound, "12345"},
		{"reversed window", fmt.Sprintf(`{"table": "shop.orders", "from_snapshot": %d, "to_snapshot": %d}`,
			f.snapshots[1], f.snapshots[0]), codes.InvalidArgument, "not an ancestor"},
		{"bad compression", `{"table": "shop.orders", "compression": "gzip"}`, codes.InvalidArgument, "gzip"},
		{"follow with an end", `{"table": "shop.orders", "follow": true, "to_snapshot": 1}`, codes.InvalidArgument, "no end"},
		{"follow net changes", `{"table": "shop.orders", "follow": true, "net_changes": true}`, codes.InvalidArgument,
			"net_changes"},
		{"unknown start", `{"table": "shop.orders", "start": "earliest"}`, codes.InvalidArgument, "latest-full"},
		{"start without its snapshot", `{"table": "shop.orders", "start": "from-snapshot"}`, codes.InvalidArgument,
			"needs from_snapshot"},
		{"from_snapshot with start latest", `{"table": "shop.orders", "start": "latest", "from_snapshot": 1}`,
			codes.InvalidArgument, "from_snapshot goes with"},
		{"bad consumer", `{"table": "shop.orders", "consumer": "a b"}`, codes.InvalidArgument, "consumer id"},
		{"follow unknown table", `{"table": "shop.nope", "follow": true}`, codes.NotFound, "shop.nope"},
		{"explain-only fields", `{"table": "shop.orders", "follow": true, "columns": ["nope"]}`, codes.InvalidArgument, `"nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.doGet(t, ctx, []byte(tt.ticket))
			checkStatus(t, err, tt.code, tt.msg)
			_, err = f.client.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(tt.ticket)})
			checkStatus(t, err, tt.code, tt.msg)
		})
	}
	t.Run("path descriptor", func(t *testing.T) {
		_, err := f.client.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"x"}})
		checkStatus(t, err, codes.InvalidArgument, "command descriptor")
	})
	t.Run("unknown action", func(t *testing.T) {
		_, err := f.action(ctx, "drop_table", `{}`)
		checkStatus(t, err, codes.InvalidArgument, "unknown action")
	})
	t.Run("action body with unknown field", func(t *testing.T) {
		_, err := f.action(ctx, "commit_seq", `{"table": "shop.orders", "x": 1}`)
		checkStatus(t, err, codes.InvalidArgument, "x")
	})
	t.Run("action without table", func(t *testing.T) {
		_, err := f.action(ctx, "list_snapshots", `{}`)
		checkStatus(t, err, codes.InvalidArgument, "table is required")
	})
	t.Run("control unknown table", func(t *testing.T) {
		_, err := f.control.CommitSeq(ctx, &sluicev1.CommitSeqRequest{Table: "shop.nope"})
		checkStatus(t, err, codes.NotFound, "shop.nope")
	})
}

func checkStatus(t *testing.T, err error, code codes.Code, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", code)
	}
	st, _ := status.FromError(err)
	if st.Code() != code || !strings.Contains(st.Message(), msg) {
		t.Fatalf("got %s %q, want %s containing %q", st.Code(), st.Message(), code, msg)
	}
}

func (f *fixture) action(ctx context.Context, name, body string) ([]byte, error) {
	stream, err := f.client.DoAction(ctx, &flight.Action{Type: name, Body: []byte(body)})
	if err != nil {
		return nil, err
	}
	var out []byte
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r.Body...)
	}
}

func TestActionsMatchControlService(t *testing.T) {
	f := start(t, 3, 2, 8)
	ctx := context.Background()

	body, err := f.action(ctx, "commit_seq", `{"table": "shop.orders"}`)
	if err != nil {
		t.Fatal(err)
	}
	var cs struct {
		Table       string `json:"table"`
		CommitSeq   int64  `json:"commit_seq"`
		Snapshot    int64  `json:"snapshot"`
		TimestampMs int64  `json:"timestamp_ms"`
	}
	if err := json.Unmarshal(body, &cs); err != nil {
		t.Fatal(err)
	}
	typed, err := f.control.CommitSeq(ctx, &sluicev1.CommitSeqRequest{Table: tableName})
	if err != nil {
		t.Fatal(err)
	}
	if cs.CommitSeq != 3 || cs.Snapshot != f.snapshots[2] || typed.CommitSeq != cs.CommitSeq ||
		typed.GetSnapshot() != cs.Snapshot || typed.TimestampMs != cs.TimestampMs {
		t.Fatalf("action %+v, typed %v", cs, typed)
	}

	body, err = f.action(ctx, "list_snapshots", `{"table": "shop.orders"}`)
	if err != nil {
		t.Fatal(err)
	}
	var ls struct {
		Snapshots []struct {
			Snapshot  int64  `json:"snapshot"`
			Operation string `json:"operation"`
		} `json:"snapshots"`
	}
	if err := json.Unmarshal(body, &ls); err != nil {
		t.Fatal(err)
	}
	typedSnaps, err := f.control.ListSnapshots(ctx, &sluicev1.ListSnapshotsRequest{Table: tableName})
	if err != nil {
		t.Fatal(err)
	}
	if len(ls.Snapshots) != 3 || len(typedSnaps.Snapshots) != 3 {
		t.Fatalf("%d and %d snapshots, want 3", len(ls.Snapshots), len(typedSnaps.Snapshots))
	}
	for i, s := range ls.Snapshots {
		if s.Snapshot != f.snapshots[i] || typedSnaps.Snapshots[i].Snapshot != s.Snapshot || s.Operation != "append" {
			t.Fatalf("snapshot %d: %+v / %v", i, s, typedSnaps.Snapshots[i])
		}
	}

	body, err = f.action(ctx, "list_tables", ``)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `"name":"shop.orders"`) {
		t.Fatalf("list_tables: %s", body)
	}

	req := fmt.Sprintf(`{"table": "shop.orders", "from_snapshot": "%d"}`, f.snapshots[0])
	body, err = f.action(ctx, "explain", req)
	if err != nil {
		t.Fatal(err)
	}
	var plan struct {
		Snapshots []struct {
			Snapshot int64 `json:"snapshot"`
			Strategy string
			Files    []struct{ Path, Role string }
		} `json:"snapshots"`
		FilesRead int64 `json:"files_read"`
	}
	if err := json.Unmarshal(body, &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.Snapshots) != 2 || plan.FilesRead != 2 || plan.Snapshots[0].Strategy != "append" ||
		plan.Snapshots[0].Files[0].Role != "added" {
		t.Fatalf("explain: %s", body)
	}
	typedPlan, err := f.control.Explain(ctx, &sluicev1.ChangeRequest{Table: tableName, FromSnapshot: &f.snapshots[0]})
	if err != nil {
		t.Fatal(err)
	}
	if len(typedPlan.Snapshots) != 2 || typedPlan.FilesRead != 2 {
		t.Fatalf("typed explain: %v", typedPlan)
	}
}

// cancelAfterFirstBatch opens a DoGet of ticket, takes its first batch,
// cancels the call and drains the reader; it returns how the reader ended.
func (f *fixture) cancelAfterFirstBatch(t *testing.T, ctx context.Context, ticket string) error {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := f.client.DoGet(ctx, &flight.Ticket{Ticket: []byte(ticket)})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	if !rdr.Next() {
		t.Fatalf("no first batch: %v", rdr.Err())
	}
	cancel()
	for rdr.Next() {
	}
	return rdr.Err()
}

func TestClientCancelMidStream(t *testing.T) {
	f := start(t, 4, 3000, 100)
	if err := f.cancelAfterFirstBatch(t, context.Background(), `{"table": "shop.orders"}`); err == nil {
		t.Fatal("a cancelled stream ended without an error")
	}
	// The fixture's cleanup asserts that the server released everything.
}

func TestEmptyTableTicketIsPinned(t *testing.T) {
	f := start(t, 0, 0, 0)
	ctx := context.Background()
	info, err := f.client.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD,
		Cmd: []byte(`{"table": "shop.orders"}`)})
	if err != nil {
		t.Fatal(err)
	}
	f.commit(t, 0, 3, 8)
	got, err := f.doGet(t, ctx, info.Endpoint[0].Ticket.Ticket)
	if err != nil {
		t.Fatal(err)
	}
	if got.rows != 0 || len(got.metas) != 0 {
		t.Fatalf("a window planned on an empty table read %d rows after a later commit", got.rows)
	}
}

func TestGetSchemaReadsNoData(t *testing.T) {
	f := start(t, 1, 1, 8)
	res, err := f.client.GetSchema(context.Background(), &flight.FlightDescriptor{Type: flight.DescriptorCMD,
		Cmd: []byte(`{"table": "shop.orders", "columns": ["payload", "id"]}`)})
	if err != nil {
		t.Fatal(err)
	}
	schema, err := flight.DeserializeSchema(res.GetSchema(), memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	want := "op: type=utf8|before: type=struct<payload: utf8 nullable, id: int64 nullable>, nullable|" +
		"after: type=struct<payload: utf8 nullable, id: int64 nullable>, nullable|snapshot: type=int64, nullable|" +
		"ts: type=timestamp[us, tz=UTC], nullable"
	var got []string
	for _, fld := range schema.Fields() {
		got = append(got, fld.String())
	}
	if strings.Join(got, "|") != want {
		t.Fatalf("schema\n got %s\nwant %s", strings.Join(got, "|"), want)
	}
}

// TestExplainPairingAndLineage checks the wire of row lineage: explain
// says how updates pair (the test table, format v2 with identifier field
// id, pairs by identity), and "lineage": true on a table that keeps no row
// lineage is FailedPrecondition, on explain and on a read.
func TestExplainPairingAndLineage(t *testing.T) {
	f := start(t, 2, 10, 0)
	ctx := context.Background()
	body, err := f.action(ctx, "explain", `{"table": "shop.orders"}`)
	if err != nil {
		t.Fatal(err)
	}
	var plan struct{ Pairing string }
	if err := json.Unmarshal(body, &plan); err != nil {
		t.Fatal(err)
	}
	if plan.Pairing != feed.PairingIdentity {
		t.Errorf("explain: pairing %q, want %q (%s)", plan.Pairing, feed.PairingIdentity, body)
	}
	typed, err := f.control.Explain(ctx, &sluicev1.ChangeRequest{Table: tableName})
	if err != nil {
		t.Fatal(err)
	}
	if typed.GetPairing() != feed.PairingIdentity {
		t.Errorf("typed explain: pairing %q, want %q", typed.GetPairing(), feed.PairingIdentity)
	}
	req := `{"table": "shop.orders", "lineage": true}`
	if _, err := f.action(ctx, "explain", req); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("explain %s: %v, want FailedPrecondition", req, err)
	}
	if _, err := f.client.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD,
		Cmd: []byte(req)}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("GetFlightInfo %s: %v, want FailedPrecondition", req, err)
	}
}
