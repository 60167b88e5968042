package server_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"

	"github.com/sluicefeed/sluice/auth"
	"github.com/sluicefeed/sluice/server"
)

func descriptor(cmd string) *flight.FlightDescriptor {
	return &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(cmd)}
}

// A window asked with max_endpoints comes back as endpoints spread over
// the replicas, each ticket a part; read in order they are the window.
func TestSplitEndpoints(t *testing.T) {
	peers := []string{"grpc://10.0.0.3:8815", "grpc://10.0.0.1:8815"}
	f := startWith(t, 6, 5, 8, nil, func(o *server.Options) {
		o.Replicas = server.Replicas{Advertise: "grpc://10.0.0.2:8815", Peers: peers}
	})
	ctx := context.Background()
	sorted := []string{"grpc://10.0.0.1:8815", "grpc://10.0.0.2:8815", "grpc://10.0.0.3:8815"}

	info, err := f.client.GetFlightInfo(ctx, descriptor(`{"table": "shop.orders", "max_endpoints": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Endpoint) != 3 || info.TotalRecords != 30 || !info.Ordered {
		t.Fatalf("%d endpoints, %d records, ordered %v; want 3, 30, true", len(info.Endpoint), info.TotalRecords,
			info.Ordered)
	}
	if !strings.Contains(string(info.AppMetadata), `"endpoints":3`) {
		t.Fatalf("app_metadata %s", info.AppMetadata)
	}
	var snaps []int64
	for i, ep := range info.Endpoint {
		var locs []string
		for _, l := range ep.Location {
			locs = append(locs, l.Uri)
		}
		want := append(slices.Clone(sorted[i:]), sorted[:i]...)
		if !slices.Equal(locs, want) {
			t.Fatalf("endpoint %d: locations %v, want %v", i, locs, want)
		}
		req, err := server.DecodeRequest(ep.Ticket.Ticket)
		if err != nil {
			t.Fatal(err)
		}
		if req.GetPart() == nil || req.GetMaxEndpoints() != 0 || req.ToSnapshot == nil {
			t.Fatalf("endpoint %d: ticket %v, want a pinned window with a part and no max_endpoints", i, req)
		}
		got, err := f.doGet(t, ctx, ep.Ticket.Ticket)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range got.metas {
			if len(snaps) == 0 || snaps[len(snaps)-1] != m.Snapshot {
				snaps = append(snaps, m.Snapshot)
			}
		}
		if got.rows != 10 {
			t.Fatalf("endpoint %d read %d rows, want 10 (two snapshots of 5)", i, got.rows)
		}
	}
	if !slices.Equal(snaps, f.snapshots) {
		t.Fatalf("the endpoints read the snapshots %v in order, want %v", snaps, f.snapshots)
	}

	// Without max_endpoints: one endpoint without locations, as always.
	info, err = f.client.GetFlightInfo(ctx, descriptor(`{"table": "shop.orders"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Endpoint) != 1 || len(info.Endpoint[0].Location) != 0 {
		t.Fatalf("default: %d endpoints, locations %v", len(info.Endpoint), info.Endpoint[0].Location)
	}
	// More endpoints than snapshots of one file each: one per snapshot.
	info, err = f.client.GetFlightInfo(ctx, descriptor(`{"table": "shop.orders", "max_endpoints": 100}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Endpoint) != 6 {
		t.Fatalf("max_endpoints 100 over 6 one-file appends: %d endpoints, want 6", len(info.Endpoint))
	}
}

func TestSplitErrors(t *testing.T) {
	f := start(t, 3, 2, 8)
	ctx := context.Background()
	for _, c := range []struct{ cmd, msg string }{
		{`{"table": "shop.orders", "max_endpoints": 2, "net_changes": true}`, "net_changes"},
		{`{"table": "shop.orders", "max_endpoints": 2, "follow": true}`, "stream"},
		{`{"table": "shop.orders", "max_endpoints": 5000}`, "limit of 1024"},
		{fmt.Sprintf(`{"table": "shop.orders", "max_endpoints": 2, "part": {"first_snapshot": "%d", "last_snapshot": "%d"}}`,
			f.snapshots[0], f.snapshots[1]), "split again"},
	} {
		_, err := f.client.GetFlightInfo(ctx, descriptor(c.cmd))
		checkStatus(t, err, codes.InvalidArgument, c.msg)
	}
	// The FlightInfo of a part reads the part.
	info, err := f.client.GetFlightInfo(ctx, descriptor(fmt.Sprintf(
		`{"table": "shop.orders", "part": {"first_snapshot": "%d", "last_snapshot": "%d"}}`, f.snapshots[1], f.snapshots[2])))
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.doGet(t, ctx, info.Endpoint[0].Ticket.Ticket)
	if err != nil || got.rows != 4 {
		t.Fatalf("the ticket of a part of 2 snapshots of 2 rows read %d rows (%v), want 4", got.rows, err)
	}
	from := f.snapshots[1]
	for _, c := range []struct{ ticket, msg string }{
		{fmt.Sprintf(`{"table": "shop.orders", "from_snapshot": "%d", "part": {"first_snapshot": "%d", "last_snapshot": "%d"}}`,
			from, f.snapshots[0], f.snapshots[2]), "not a snapshot of the window"},
		{fmt.Sprintf(`{"table": "shop.orders", "part": {"first_snapshot": "%d", "last_snapshot": "%d", "first_file": 0, "end_file": 1, "file_count": 4}}`,
			f.snapshots[0], f.snapshots[0]), "file_count 4"},
		{fmt.Sprintf(`{"table": "shop.orders", "part": {"first_snapshot": "%d", "last_snapshot": "%d", "first_file": 1, "end_file": 1, "file_count": 1}}`,
			f.snapshots[0], f.snapshots[0]), "not a range of files"},
		{fmt.Sprintf(`{"table": "shop.orders", "consumer": "c", "part": {"first_snapshot": "%d", "last_snapshot": "%d"}}`,
			f.snapshots[0], f.snapshots[0]), "stream"},
	} {
		_, err := f.doGet(t, ctx, []byte(c.ticket))
		checkStatus(t, err, codes.InvalidArgument, c.msg)
	}
}

// A dns:// peer stands for every address of its name.
func TestSplitDNSPeers(t *testing.T) {
	f := startWith(t, 2, 2, 8, nil, func(o *server.Options) {
		o.Replicas = server.Replicas{Advertise: "grpc://127.0.0.1:8815", Peers: []string{"dns://localhost:8815"}}
	})
	info, err := f.client.GetFlightInfo(context.Background(), descriptor(`{"table": "shop.orders", "max_endpoints": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Endpoint) != 2 {
		t.Fatalf("%d endpoints, want 2", len(info.Endpoint))
	}
	var locs []string
	for _, l := range info.Endpoint[0].Location {
		locs = append(locs, l.Uri)
	}
	if !slices.Contains(locs, "grpc://127.0.0.1:8815") || slices.ContainsFunc(locs, func(l string) bool {
		return strings.Contains(l, "localhost")
	}) {
		t.Fatalf("locations %v: want localhost's addresses, 127.0.0.1 among them, once each", locs)
	}
	for _, bad := range []string{"dns://localhost", "http://a:1", "grpc://a", "grpc://a:1/x"} {
		if server.ParsePeer(bad) == nil {
			t.Errorf("ParsePeer(%q) accepted it", bad)
		}
	}
}

// A split window's tickets are checked as every DoGet: a principal that
// may not read the table is refused a ticket another one was given.
func TestSplitTicketsAuthorized(t *testing.T) {
	tokens := withTokens(t, auth.Config{Rules: []auth.Rule{
		{Principals: []string{"alice"}, Tables: []string{"shop.*"}},
		{Principals: []string{"bob"}, Tables: []string{"hr.*"}},
	}}, "alice", "bob")
	f := startWith(t, 4, 2, 8, nil, tokens)
	info, err := f.client.GetFlightInfo(as("alice"), descriptor(`{"table": "shop.orders", "max_endpoints": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Endpoint) != 2 {
		t.Fatalf("%d endpoints, want 2", len(info.Endpoint))
	}
	for _, ep := range info.Endpoint {
		if _, err := f.doGet(t, as("alice"), ep.Ticket.Ticket); err != nil {
			t.Fatal(err)
		}
		_, err := f.doGet(t, as("bob"), ep.Ticket.Ticket)
		checkStatus(t, err, codes.PermissionDenied, "shop.orders")
	}
}
