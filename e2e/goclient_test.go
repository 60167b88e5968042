package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// TestGoClient reads a table that iceberg-go wrote through a real flightd
// process with the Go client: the feed of every consecutive snapshot pair
// and of the whole history equals what was appended, row for row, with the
// right snapshot and ts; projection returns only the asked columns; the
// control calls match the lineage; commit_seq grows with each commit.
func TestGoClient(t *testing.T) {
	fix := writeEvents(t, 5, 7)
	srv := startFlightd(t, "--warehouse", fix.Warehouse, "--max-batch-rows", "16")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	client, err := sluice.Dial(ctx, srv.URI(), sluice.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		client.Close()
		mem.AssertSize(t, 0)
	}()

	t.Run("every consecutive pair", func(t *testing.T) {
		for _, s := range fix.Snapshots {
			to := s.Snapshot
			got := readIDs(t, ctx, client, sluice.ChangeRequest{Table: eventsTable, FromSnapshot: s.Parent, ToSnapshot: &to})
			checkRows(t, got, fix.Snapshots[slices.IndexFunc(fix.Snapshots, func(x fixtureSnapshot) bool {
				return x.Snapshot == s.Snapshot
			})])
		}
	})
	t.Run("whole history", func(t *testing.T) {
		got := readIDs(t, ctx, client, sluice.ChangeRequest{Table: eventsTable})
		checkRows(t, got, fix.Snapshots...)
	})
	t.Run("projection", func(t *testing.T) {
		rdr, err := client.Changes(ctx, sluice.ChangeRequest{Table: eventsTable, Columns: []string{"qty", "id"}})
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		img := rdr.Schema().Field(2).Type.(*arrow.StructType)
		if img.NumFields() != 2 || img.Field(0).Name != "qty" || img.Field(1).Name != "id" {
			t.Fatalf("after image %s", img)
		}
		for _, err := range rdr.All() {
			if err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("control calls", func(t *testing.T) {
		seq, err := client.CommitSeq(ctx, eventsTable)
		if err != nil {
			t.Fatal(err)
		}
		last := fix.Snapshots[len(fix.Snapshots)-1]
		if seq.CommitSeq != last.CommitSeq || *seq.Snapshot != last.Snapshot {
			t.Fatalf("commit_seq %+v, want %d at %d", seq, last.CommitSeq, last.Snapshot)
		}
		snaps, err := client.Snapshots(ctx, eventsTable)
		if err != nil {
			t.Fatal(err)
		}
		if len(snaps) != len(fix.Snapshots) {
			t.Fatalf("%d snapshots, want %d", len(snaps), len(fix.Snapshots))
		}
		for i, s := range snaps {
			if s.ID != fix.Snapshots[i].Snapshot || s.CommitSeq != fix.Snapshots[i].CommitSeq ||
				s.TimestampMs != fix.Snapshots[i].TimestampMs {
				t.Fatalf("snapshot %d: %+v, want %+v", i, s, fix.Snapshots[i])
			}
		}
	})
	t.Run("errors", func(t *testing.T) {
		bad := int64(99)
		for _, tt := range []struct {
			req  sluice.ChangeRequest
			code codes.Code
		}{
			{sluice.ChangeRequest{Table: "e2e.nope"}, codes.NotFound},
			{sluice.ChangeRequest{Table: eventsTable, Columns: []string{"nope"}}, codes.InvalidArgument},
			{sluice.ChangeRequest{Table: eventsTable, FromSnapshot: &bad}, codes.NotFound},
			{sluice.ChangeRequest{Table: eventsTable, FromSnapshot: &fix.Snapshots[3].Snapshot,
				ToSnapshot: &fix.Snapshots[1].Snapshot}, codes.InvalidArgument},
		} {
			_, err := client.Changes(ctx, tt.req)
			if sluice.Code(err) != tt.code {
				t.Fatalf("%+v: %v, want %s", tt.req, err, tt.code)
			}
		}
	})
	t.Run("commit_seq grows with each commit", func(t *testing.T) {
		before, err := client.CommitSeq(ctx, eventsTable)
		if err != nil {
			t.Fatal(err)
		}
		cat, err := tablewrite.OpenWarehouse(ctx, fix.Warehouse)
		if err != nil {
			t.Fatal(err)
		}
		defer cat.Close()
		tbl, err := cat.LoadTable(ctx, eventsTable)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if tbl, err = tablewrite.Append(ctx, tbl, []tablewrite.Row{{"id": 90000 + i}}); err != nil {
				t.Fatal(err)
			}
			after, err := client.CommitSeq(ctx, eventsTable)
			if err != nil {
				t.Fatal(err)
			}
			if after.CommitSeq != before.CommitSeq+1 || *after.Snapshot != tbl.CurrentSnapshot().SnapshotID {
				t.Fatalf("after commit %d: %+v, before %+v", i, after, before)
			}
			ids := readIDs(t, ctx, client, sluice.ChangeRequest{Table: eventsTable, FromSnapshot: before.Snapshot})
			if len(ids) != 1 || ids[0].id != int64(90000+i) || ids[0].snapshot != *after.Snapshot {
				t.Fatalf("feed of the new commit: %+v", ids)
			}
			before = after
		}
	})
}

type gotRow struct {
	id, snapshot, tsMicros int64
}

// readIDs reads a window and returns, per insert, its id, snapshot and ts.
func readIDs(t *testing.T, ctx context.Context, c *sluice.Client, req sluice.ChangeRequest) []gotRow {
	t.Helper()
	rdr, err := c.Changes(ctx, req)
	if err != nil {
		t.Fatalf("%+v: %v", req, err)
	}
	defer rdr.Release()
	var out []gotRow
	for b, err := range rdr.All() {
		if err != nil {
			t.Fatal(err)
		}
		rec := b.Record
		ops := rec.Column(0).(*array.String)
		after := rec.Column(2).(*array.Struct)
		ids := after.Field(0).(*array.Int64)
		snaps := rec.Column(3).(*array.Int64)
		ts := rec.Column(4).(*array.Timestamp)
		for i := range int(rec.NumRows()) {
			if ops.Value(i) != "insert" || !rec.Column(1).IsNull(i) {
				t.Fatalf("row %d: op %s", i, ops.Value(i))
			}
			if snaps.Value(i) != b.Meta.Snapshot {
				t.Fatalf("row of snapshot %d in a batch of %d", snaps.Value(i), b.Meta.Snapshot)
			}
			out = append(out, gotRow{id: ids.Value(i), snapshot: snaps.Value(i), tsMicros: int64(ts.Value(i))})
		}
	}
	return out
}

func checkRows(t *testing.T, got []gotRow, snaps ...fixtureSnapshot) {
	t.Helper()
	var want []gotRow
	for _, s := range snaps {
		for _, r := range s.Rows {
			want = append(want, gotRow{id: r.ID, snapshot: s.Snapshot, tsMicros: s.TimestampMs * 1000})
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %d rows %v\nwant %d rows %v", len(got), got, len(want), want)
	}
}
