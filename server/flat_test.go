package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
)

// flatRead is what a DoGet of the flat layout returned.
type flatRead struct {
	schema *arrow.Schema
	ids    []int64
	types  []string
	snaps  []int64
	metas  []meta
}

// readFlat reads a ticket to its end and decodes the flat rows.
func (f *fixture) readFlat(t *testing.T, ticket []byte) flatRead {
	t.Helper()
	stream, err := f.client.DoGet(context.Background(), &flight.Ticket{Ticket: ticket})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	out := flatRead{schema: rdr.Schema()}
	for rdr.Next() {
		rec := rdr.RecordBatch()
		var m meta
		if err := json.Unmarshal(rdr.LatestAppMetadata(), &m); err != nil {
			t.Fatal(err)
		}
		out.metas = append(out.metas, m)
		ids := rec.Column(0).(*array.Int64)
		n := int(rec.NumCols())
		types := rec.Column(n - 3).(*array.String)
		snaps := rec.Column(n - 2).(*array.Int64)
		ts := rec.Column(n - 1).(*array.Timestamp)
		for i := range int(rec.NumRows()) {
			out.ids = append(out.ids, ids.Value(i))
			out.types = append(out.types, types.Value(i))
			out.snaps = append(out.snaps, snaps.Value(i))
			if snaps.Value(i) != m.Snapshot || int64(ts.Value(i)) != m.TimestampMs*1000 {
				t.Fatalf("row %d: _commit_version %d, _commit_timestamp %d; its batch's app_metadata %+v", i,
					snaps.Value(i), ts.Value(i), m)
			}
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFlatLayout: "layout": "flat" in a ticket, a descriptor's command
// (GetSchema, GetFlightInfo and its pinned ticket) and a stream returns the
// flat layout, the same schema from each call.
func TestFlatLayout(t *testing.T) {
	f := start(t, 3, 4, 8)
	ctx := context.Background()
	wantNames := []string{"id", "country", "_change_type", "_commit_version", "_commit_timestamp"}
	names := func(s *arrow.Schema) []string {
		var out []string
		for _, fl := range s.Fields() {
			out = append(out, fl.Name)
		}
		return out
	}
	cmd := fmt.Sprintf(`{"table": "shop.orders", "layout": "flat", "columns": ["id", "country"], "from_snapshot": "%d"}`,
		f.snapshots[0])
	desc := &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(cmd)}
	res, err := f.client.GetSchema(ctx, desc)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := flight.DeserializeSchema(res.Schema, f.mem)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(schema); !slices.Equal(got, wantNames) {
		t.Fatalf("GetSchema of a flat request: columns %v, want %v", got, wantNames)
	}
	if ts := schema.Field(4).Type.(*arrow.TimestampType); ts.Unit != arrow.Microsecond || ts.TimeZone != "UTC" {
		t.Fatalf("_commit_timestamp is %s", ts)
	}

	direct := f.readFlat(t, []byte(cmd))
	if !direct.schema.Equal(schema) {
		t.Fatalf("DoGet schema %s; GetSchema said %s", direct.schema, schema)
	}
	if len(direct.ids) != 8 {
		t.Fatalf("%d rows, want the 8 inserts of the two later snapshots", len(direct.ids))
	}
	for i, id := range direct.ids {
		want := f.snapshots[1+i/4]
		if direct.types[i] != "insert" || direct.snaps[i] != want || id != int64(5+i) {
			t.Fatalf("row %d: id %d, %s at %d; want id %d, insert at %d", i, id, direct.types[i], direct.snaps[i],
				5+i, want)
		}
	}

	info, err := f.client.GetFlightInfo(ctx, desc)
	if err != nil {
		t.Fatal(err)
	}
	infoSchema, err := flight.DeserializeSchema(info.Schema, f.mem)
	if err != nil {
		t.Fatal(err)
	}
	if !infoSchema.Equal(schema) {
		t.Fatalf("FlightInfo schema %s; GetSchema said %s", infoSchema, schema)
	}
	pinned := f.readFlat(t, info.Endpoint[0].Ticket.Ticket)
	if !pinned.schema.Equal(schema) || !slices.Equal(pinned.ids, direct.ids) {
		t.Fatalf("the pinned ticket read %s %v; the command read %v", pinned.schema, pinned.ids, direct.ids)
	}

	// A stream: the full state of the first snapshot, then the changes.
	stream := f.readFlat(t, fmt.Appendf(nil, `{"table": "shop.orders", "layout": "flat", "columns": ["id", "country"], `+
		`"start": "from-snapshot-full", "from_snapshot": "%d"}`, f.snapshots[0]))
	if !stream.schema.Equal(schema) || len(stream.ids) != 12 {
		t.Fatalf("the stream read %d rows of %s", len(stream.ids), stream.schema)
	}
}

func TestFlatLayoutErrors(t *testing.T) {
	f := start(t, 1, 1, 8)
	ctx := context.Background()
	for _, tt := range []struct{ ticket, msg string }{
		{`{"table": "shop.orders", "layout": "wide"}`, `layout "wide": want "" (the renderable row, the default) or "flat"`},
		{`{"table": "shop.orders", "layout": "flat", "fold_updates": true}`, "fold_updates"},
		{`{"table": "shop.orders", "layout": "flat", "fold_updates": true, "follow": true}`, "fold_updates"},
	} {
		_, err := f.doGet(t, ctx, []byte(tt.ticket))
		checkStatus(t, err, codes.InvalidArgument, tt.msg)
		_, err = f.client.GetSchema(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(tt.ticket)})
		checkStatus(t, err, codes.InvalidArgument, tt.msg)
	}
}

// TestFlatLayoutFollow: a follow stream in the flat layout sends its
// heartbeats and each new commit's changes in the flat schema.
func TestFlatLayoutFollow(t *testing.T) {
	f := start(t, 1, 2, 8)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := f.client.DoGet(ctx, &flight.Ticket{Ticket: []byte(
		`{"table": "shop.orders", "follow": true, "start": "latest", "layout": "flat", "columns": ["id"]}`)})
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		meta  streamMeta
		rows  []string
		names []string
		err   error
	}
	events := make(chan got, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		rdr, err := flight.NewRecordReader(stream)
		if err != nil {
			events <- got{err: err}
			return
		}
		defer rdr.Release()
		for rdr.Next() {
			rec := rdr.RecordBatch()
			var g got
			if err := json.Unmarshal(rdr.LatestAppMetadata(), &g.meta); err != nil {
				events <- got{err: err}
				return
			}
			for _, fl := range rec.Schema().Fields() {
				g.names = append(g.names, fl.Name)
			}
			for i := range int(rec.NumRows()) {
				g.rows = append(g.rows, fmt.Sprintf("%d %s@%d", rec.Column(0).(*array.Int64).Value(i),
					rec.Column(1).(*array.String).Value(i), rec.Column(2).(*array.Int64).Value(i)))
			}
			events <- g
		}
		events <- got{err: rdr.Err()}
	}()
	defer func() {
		cancel()
		<-done
	}()
	next := func() got {
		t.Helper()
		select {
		case g := <-events:
			if g.err != nil {
				t.Fatal(g.err)
			}
			if want := []string{"id", "_change_type", "_commit_version", "_commit_timestamp"}; !slices.Equal(g.names, want) {
				t.Fatalf("a follow batch has the columns %v, want %v", g.names, want)
			}
			return g
		case <-time.After(20 * time.Second):
			t.Fatal("no batch within 20s")
		}
		return got{}
	}
	if g := next(); !g.meta.Heartbeat {
		t.Fatalf("first batch %+v, want a heartbeat", g.meta)
	}
	f.commit(t, 2, 2, 8)
	var rows []string
	for {
		g := next()
		rows = append(rows, g.rows...)
		if g.meta.SnapshotComplete {
			break
		}
	}
	s := f.snapshots[1]
	if want := []string{fmt.Sprintf("3 insert@%d", s), fmt.Sprintf("4 insert@%d", s)}; !slices.Equal(rows, want) {
		t.Fatalf("the new commit's rows %v, want %v", rows, want)
	}
}
