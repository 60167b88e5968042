package server

// These tests check what a running server returns against
// docs/PROTOCOL.md: the JSON results of the actions, the FlightInfo
// app_metadata, and the messages of DoGet streams.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
	"github.com/sluicefeed/sluice/progress"
)

// docServer is a server over a table of three appends, on loopback.
type docServer struct {
	client    flight.Client
	table     string
	snapshots []int64
}

func startDocServer(t *testing.T) *docServer {
	t.Helper()
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	d := &docServer{table: "shop.orders"}
	tbl, err := tablewrite.CreateTable(ctx, cat, d.table, iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "country", Type: iceberg.PrimitiveTypes.String}))
	if err != nil {
		t.Fatal(err)
	}
	for c := range 3 {
		rows := []tablewrite.Row{{"id": 2*c + 1, "country": "SE"}, {"id": 2*c + 2, "country": "NO"}}
		if tbl, err = tablewrite.Append(ctx, tbl, rows); err != nil {
			t.Fatal(err)
		}
		d.snapshots = append(d.snapshots, tbl.CurrentSnapshot().SnapshotID)
	}

	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	store, err := progress.Open(ctx, filepath.Join(t.TempDir(), "consumers.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	srv := New(feed.New(cat, feed.Options{Allocator: mem}), Options{Allocator: mem, Progress: store,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Follow: FollowOptions{PollInterval: 20 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond}})
	gs := grpc.NewServer(srv.ServerOptions()...)
	srv.Register(gs)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	d.client = flight.NewClientFromConn(conn, nil)
	t.Cleanup(func() {
		conn.Close()
		srv.Shutdown()
		gs.Stop()
		deadline := time.Now().Add(5 * time.Second)
		for mem.CurrentAlloc() != 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		mem.AssertSize(t, 0)
	})
	return d
}

// action runs a DoAction and returns its results, at most limit of them.
func (d *docServer) action(t *testing.T, name, body string, limit int) []json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := d.client.DoAction(ctx, &flight.Action{Type: name, Body: []byte(body)})
	if err != nil {
		t.Fatalf("%s %s: %v", name, body, err)
	}
	var out []json.RawMessage
	for len(out) < limit {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s %s: %v", name, body, err)
		}
		out = append(out, r.Body)
	}
	return out
}

// docShapes parses the lines "name: {shape}" of a block of the contract.
func docShapes(t *testing.T, doc, info string) map[string]*docShape {
	t.Helper()
	out := map[string]*docShape{}
	for _, line := range docBlock(t, doc, info) {
		name, text, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("```%s: line %q is not name: {shape}", info, line)
		}
		sh, err := parseDocShape(strings.TrimSpace(text))
		if err != nil {
			t.Fatalf("```%s: %s: %v", info, name, err)
		}
		out[strings.TrimSpace(name)] = sh
	}
	return out
}

// checkDocJSON checks a JSON object against a shape of the contract.
func checkDocJSON(t *testing.T, what string, sh *docShape, raw []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %s: %v", what, raw, err)
	}
	for _, problem := range sh.check(what, v) {
		if len(raw) > 300 {
			raw = append(raw[:300:300], "..."...)
		}
		t.Errorf("%s (in %s)", problem, raw)
	}
}

func TestProtocolDocActionResults(t *testing.T) {
	doc := readProtocolDoc(t)
	results := docShapes(t, doc, "text results")
	d := startDocServer(t)
	table := fmt.Sprintf(`"table": %q`, d.table)
	ack := fmt.Sprintf(`{"consumer": "doc-1", %s, "snapshot": "%d"}`, table, d.snapshots[1])
	consumer := fmt.Sprintf(`{"consumer": "doc-1", %s}`, table)
	calls := []struct{ action, body string }{
		{ActionCommitSeq, "{" + table + "}"},
		{ActionListTables, ""},
		{ActionListSnapshots, "{" + table + "}"},
		{ActionExplain, fmt.Sprintf(`{%s, "from_snapshot": "%d"}`, table, d.snapshots[0])},
		{ActionExplain, fmt.Sprintf(`{%s, "filter": "country = 'SE'"}`, table)},
		{ActionExplain, fmt.Sprintf(`{%s, "net_changes": true, "identity": ["id"]}`, table)},
		{ActionAck, ack},
		{ActionConsumerProgress, consumer},
		{ActionListConsumers, "{" + table + "}"},
		{ActionResetConsumer, consumer},
		{ActionWatchCommits, "{" + table + "}"},
	}
	var called []string
	for _, c := range calls {
		called = append(called, c.action)
		sh, ok := results[c.action]
		if !ok {
			t.Errorf("the results block of %s has no line for %s", protocolDoc, c.action)
			continue
		}
		got := d.action(t, c.action, c.body, 1)
		if len(got) != 1 {
			t.Fatalf("%s %s: %d results", c.action, c.body, len(got))
		}
		checkDocJSON(t, c.action, sh, got[0])
	}
	for _, a := range actionTypes {
		if !slices.Contains(called, a.Type) {
			t.Errorf("no call of this test exercises the action %s", a.Type)
		}
	}
	for name := range results {
		if !slices.ContainsFunc(actionTypes, func(a *flight.ActionType) bool { return a.Type == name }) {
			t.Errorf("the results block of %s documents %s, which is not an action", protocolDoc, name)
		}
	}
}

func TestProtocolDocFlightInfo(t *testing.T) {
	doc := readProtocolDoc(t)
	shapes := docShapes(t, doc, "text flightinfo")
	d := startDocServer(t)
	ctx := context.Background()
	for _, c := range []struct{ kind, request string }{
		{"window", fmt.Sprintf(`{"table": %q, "from_snapshot": "%d"}`, d.table, d.snapshots[0])},
		{"window", fmt.Sprintf(`{"table": %q, "to_snapshot": "-1"}`, d.table)},
		{"stream", fmt.Sprintf(`{"table": %q, "follow": true, "consumer": "doc-2"}`, d.table)},
	} {
		sh, ok := shapes[c.kind]
		if !ok {
			t.Fatalf("the flightinfo block of %s has no line %s", protocolDoc, c.kind)
		}
		info, err := d.client.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD,
			Cmd: []byte(c.request)})
		if err != nil {
			t.Fatalf("%s: %v", c.request, err)
		}
		checkDocJSON(t, "the FlightInfo app_metadata of "+c.request, sh, info.AppMetadata)
		if len(info.Endpoint) != 1 || len(info.Endpoint[0].Location) != 0 || !info.Ordered || info.TotalBytes != -1 {
			t.Errorf("%s: the contract says one endpoint without locations, ordered, total_bytes -1; got %v",
				c.request, info)
		}
	}
}

// docRecorder keeps the raw messages of a DoGet stream as a reader takes them.
type docRecorder struct {
	stream flight.FlightService_DoGetClient
	msgs   []*flight.FlightData
}

func (r *docRecorder) Recv() (*flight.FlightData, error) {
	fd, err := r.stream.Recv()
	if err == nil {
		r.msgs = append(r.msgs, fd)
	}
	return fd, err
}

func TestProtocolDocStreamMessages(t *testing.T) {
	doc := readProtocolDoc(t)
	keys := map[string]string{} // app_metadata key -> the batches it is in
	for _, row := range docTable(t, doc, "key", "JSON type", "in", "meaning") {
		keys[row[0]] = row[2]
	}
	d := startDocServer(t)
	for _, c := range []struct {
		request string
		kinds   []string // the kinds of batches to see before the test stops reading
	}{
		{fmt.Sprintf(`{"table": %q, "from_snapshot": "%d"}`, d.table, d.snapshots[0]), nil},
		{fmt.Sprintf(`{"table": %q, "filter": "id > 100"}`, d.table), nil},
		{fmt.Sprintf(`{"table": %q, "follow": true}`, d.table), []string{"full-state batches", "heartbeats"}},
	} {
		// A follow stream never ends: the deadline ends one that never shows
		// every kind of batch the test waits for.
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		stream, err := d.client.DoGet(ctx, &flight.Ticket{Ticket: []byte(c.request)})
		if err != nil {
			t.Fatal(err)
		}
		rec := &docRecorder{stream: stream}
		rdr, err := flight.NewRecordReader(rec)
		if err != nil {
			t.Fatalf("%s: %v", c.request, err)
		}
		if len(rec.msgs) != 1 || len(rec.msgs[0].AppMetadata) != 0 {
			t.Errorf("%s: the schema message carries app_metadata %q", c.request, rec.msgs[0].AppMetadata)
		}
		seen := map[string]bool{}
		lastComplete, batches := false, 0
		for !sawKinds(seen, c.kinds) && rdr.Next() {
			batches++
			msg := rec.msgs[len(rec.msgs)-1]
			if len(rec.msgs) != batches+1 || len(msg.AppMetadata) == 0 {
				t.Fatalf("%s: message %d is not one batch with its app_metadata (%d batches read)", c.request,
					len(rec.msgs), batches)
			}
			m := map[string]any{}
			if err := json.Unmarshal(msg.AppMetadata, &m); err != nil {
				t.Fatal(err)
			}
			for key, in := range keys {
				_, present := m[key]
				if in == "every batch" && !present {
					t.Errorf("%s: app_metadata %s lacks %s, which is in every batch", c.request, msg.AppMetadata, key)
				}
				if in != "every batch" && present {
					seen[in] = true
				}
			}
			for key := range m {
				if _, ok := keys[key]; !ok {
					t.Errorf("%s: app_metadata %s has the undocumented key %s", c.request, msg.AppMetadata, key)
				}
			}
			if rows, _ := m["rows"].(float64); int64(rows) != rdr.RecordBatch().NumRows() {
				t.Errorf("%s: app_metadata %s for a batch of %d rows", c.request, msg.AppMetadata,
					rdr.RecordBatch().NumRows())
			}
			if size := len(msg.DataHeader) + len(msg.DataBody) + len(msg.AppMetadata); size >= MaxMessageBytes {
				t.Errorf("%s: a message of %d bytes", c.request, size)
			}
			lastComplete = m["snapshot_complete"] == true
		}
		if c.kinds == nil {
			if err := rdr.Err(); err != nil {
				t.Fatalf("%s: %v", c.request, err)
			}
			if batches == 0 || !lastComplete {
				t.Errorf("%s: a bounded stream of %d batches that does not end with a snapshot_complete batch",
					c.request, batches)
			}
		} else if !sawKinds(seen, c.kinds) {
			t.Errorf("%s: the stream ended (%v) before batches of every kind of %v", c.request, rdr.Err(), c.kinds)
		}
		rdr.Release()
		cancel()
	}
}

func sawKinds(seen map[string]bool, kinds []string) bool {
	for _, k := range kinds {
		if !seen[k] {
			return false
		}
	}
	return len(kinds) > 0
}
