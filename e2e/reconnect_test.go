package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/tablewrite"
)

// A Go subscription with Reconnect follows a table across a flightd killed
// with SIGKILL and restarted on its address, and across a schema change
// (which ends an Arrow stream): every row comes exactly once, those after
// the schema change in the new schema.
func TestGoSubscriptionReconnects(t *testing.T) {
	fix := writeEvents(t, 3, 7)
	flags := []string{"--warehouse", fix.Warehouse, "--poll-interval", "50ms", "--heartbeat-interval", "300ms"}
	srv := startFlightd(t, flags...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := dialGo(t, ctx, srv.URI())
	sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: fix.Table, Start: sluice.StartLatestFull,
		Reconnect: true, MaxBackoff: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Release()

	var ids []int64
	tags := map[int64]string{} // the tag of each row that has the column
	read := func(want int) {
		t.Helper()
		for len(ids) < want {
			if !sub.Next() {
				t.Fatalf("the subscription ended after %d of %d rows: %v", len(ids), want, sub.Err())
			}
			if sub.Redelivered() {
				t.Fatalf("batch %+v redelivered: the stream broke off between snapshots", sub.Batch().Meta)
			}
			after := sub.Batch().Record.Column(2).(*array.Struct)
			st := after.DataType().(*arrow.StructType)
			idx, _ := st.FieldIdx("id")
			col := after.Field(idx).(*array.Int64)
			tagIdx, hasTag := st.FieldIdx("tag")
			for i := range after.Len() {
				ids = append(ids, col.Value(i))
				if hasTag {
					tags[col.Value(i)] = after.Field(tagIdx).(*array.String).Value(i)
				}
			}
		}
	}
	total := 0
	for _, s := range fix.Snapshots {
		total += len(s.Rows)
	}
	read(total) // the full state

	cat, err := tablewrite.OpenWarehouse(ctx, fix.Warehouse)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := cat.LoadTable(ctx, fix.Table)
	if err != nil {
		t.Fatal(err)
	}
	next := int64(total + 1)
	commit := func(n int, tag string) {
		t.Helper()
		var rows []tablewrite.Row
		for range n {
			row := tablewrite.Row{"id": next, "amount": 1.5, "flag": true, "qty": int32(1),
				"created": "2026-12-01T00:00:00Z"}
			if tag != "" {
				row["tag"] = tag
			}
			rows = append(rows, row)
			next++
		}
		if tbl, err = tablewrite.Append(ctx, tbl, rows); err != nil {
			t.Fatal(err)
		}
	}

	// flightd dies; a commit lands while it is down; it comes back.
	_ = killFlightd(srv)
	commit(5, "")
	startFlightd(t, append(flags, "--listen", srv.Addr)...) // stopped when the test ends
	read(total + 5)
	if sub.Reconnects() == 0 {
		t.Fatal("no reconnect after flightd was killed")
	}
	afterKill := sub.Reconnects()

	// The schema changes: a new column, then rows that fill it.
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"tag"}, iceberg.PrimitiveTypes.String, "", false, nil).
		Commit(); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	commit(4, "red")
	read(total + 9)
	if sub.Reconnects() != afterKill+1 {
		t.Fatalf("%d reconnects after the schema change, want %d", sub.Reconnects(), afterKill+1)
	}
	if _, ok := sub.Schema().Field(2).Type.(*arrow.StructType).FieldIdx("tag"); !ok {
		t.Fatalf("the stream's schema after the change lacks the new column: %s", sub.Schema())
	}

	want := make([]int64, 0, total+9)
	for i := range int64(total + 9) {
		want = append(want, i+1)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, want) {
		t.Fatalf("ids %v, want 1..%d each once", ids, total+9)
	}
	for id := int64(total + 6); id <= int64(total+9); id++ {
		if tags[id] != "red" {
			t.Fatalf("row %d has tag %q, want red", id, tags[id])
		}
	}
	t.Logf("%d rows, %d reconnects", len(ids), sub.Reconnects())
}
