package feed_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/goleak"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

const tableName = "shop.orders"

func ordersSchema() *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "country", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 4, Name: "created", Type: iceberg.PrimitiveTypes.TimestampTz},
	)
}

// history is a table with its appended rows per snapshot, oldest first.
type history struct {
	cat       *catalog.Catalog
	tbl       *table.Table
	snapshots []int64
	rows      [][]tablewrite.Row
}

// newHistory writes a table with n append snapshots of rowsPer rows each.
func newHistory(t *testing.T, n, rowsPer int) *history {
	t.Helper()
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	tbl, err := tablewrite.CreateTable(ctx, cat, tableName, ordersSchema())
	if err != nil {
		t.Fatal(err)
	}
	h := &history{cat: cat, tbl: tbl}
	countries := []string{"SE", "NO", "DK", "FI"}
	for s := range n {
		var rows []tablewrite.Row
		for i := range rowsPer {
			id := s*rowsPer + i + 1
			rows = append(rows, tablewrite.Row{"id": id, "country": countries[id%len(countries)],
				"amount": float64(id) * 1.5, "created": fmt.Sprintf("2024-01-%02dT10:00:00Z", s+1)})
		}
		h.appendRows(t, rows)
	}
	return h
}

func (h *history) appendRows(t *testing.T, rows []tablewrite.Row) {
	t.Helper()
	tbl, err := tablewrite.Append(context.Background(), h.tbl, rows)
	if err != nil {
		t.Fatal(err)
	}
	h.tbl = tbl
	h.snapshots = append(h.snapshots, tbl.CurrentSnapshot().SnapshotID)
	h.rows = append(h.rows, rows)
}

// change is one decoded change row.
type change struct {
	Op       string         `json:"op"`
	Before   map[string]any `json:"before"`
	After    map[string]any `json:"after"`
	Snapshot int64          `json:"snapshot"`
	Ts       string         `json:"ts"`
}

// read plans and reads a request, checking the batch invariants: every
// batch is one snapshot's, snapshots come in plan order, each ends with one
// complete batch.
func read(t *testing.T, eng *feed.Engine, req feed.Request) (*feed.Plan, []change, []feed.Batch) {
	t.Helper()
	ctx := context.Background()
	p, err := eng.Plan(ctx, req)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	var changes []change
	var batches []feed.Batch
	for b, err := range eng.Read(ctx, p) {
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if !b.Record.Schema().Equal(p.Schema()) {
			t.Fatalf("batch schema %s, plan schema %s", b.Record.Schema(), p.Schema())
		}
		ts := b.Record.Column(4).(*array.Timestamp)
		for i := range ts.Len() {
			if ts.IsNull(i) || int64(ts.Value(i)) != b.Snapshot.TimestampMs*1000 {
				t.Fatalf("row %d of snapshot %d: ts %v, want the commit time %d ms", i, b.Snapshot.ID,
					ts.ValueStr(i), b.Snapshot.TimestampMs)
			}
		}
		var buf bytes.Buffer
		if err := array.RecordToJSON(b.Record, &buf); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(&buf)
		for sc.Scan() {
			var c change
			if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
				t.Fatal(err)
			}
			if c.Snapshot != b.Snapshot.ID {
				t.Fatalf("row of snapshot %d in a batch of snapshot %d", c.Snapshot, b.Snapshot.ID)
			}
			changes = append(changes, c)
		}
		b.Record.Release()
		b.Record = nil
		batches = append(batches, b)
	}
	// One complete batch per planned snapshot, at its end, in plan order.
	var order []int64
	for i, b := range batches {
		last := i == len(batches)-1 || batches[i+1].Snapshot.ID != b.Snapshot.ID
		if b.SnapshotComplete != last {
			t.Fatalf("batch %d (%s): complete=%v, want %v", i, b, b.SnapshotComplete, last)
		}
		if last {
			order = append(order, b.Snapshot.ID)
		}
	}
	var want []int64
	for _, sp := range p.Snapshots {
		want = append(want, sp.ID)
	}
	if !slices.Equal(order, want) {
		t.Fatalf("snapshots streamed %v, planned %v", order, want)
	}
	return p, changes, batches
}

// wantInserts is the expected feed of snapshots [lo, hi) of h.
func (h *history) wantInserts(lo, hi int, columns ...string) []change {
	var out []change
	for s := lo; s < hi; s++ {
		for _, r := range h.rows[s] {
			after := map[string]any{}
			for k, v := range r {
				if len(columns) == 0 || slices.Contains(columns, k) {
					after[k] = v
				}
			}
			out = append(out, change{Op: feed.OpInsert, After: after, Snapshot: h.snapshots[s]})
		}
	}
	return out
}

// sameChanges compares changes by op, images and snapshot (values through
// JSON, so numbers compare as float64).
func sameChanges(t *testing.T, got, want []change) {
	t.Helper()
	norm := func(cs []change) []string {
		out := make([]string, len(cs))
		for i, c := range cs {
			c.Ts = ""
			for _, img := range []map[string]any{c.Before, c.After} {
				if v, ok := img["created"].(string); ok {
					img["created"] = strings.TrimSuffix(strings.Replace(v, " ", "T", 1), "Z")
				}
			}
			b, _ := json.Marshal(c)
			var m any
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.UseNumber()
			_ = dec.Decode(&m)
			b, _ = json.Marshal(m)
			out[i] = string(b)
		}
		return out
	}
	g, w := norm(got), norm(want)
	if !slices.Equal(g, w) {
		t.Fatalf("changes differ:\n got %d: %v\nwant %d: %v", len(g), g, len(w), w)
	}
}

func TestReadAppends(t *testing.T) {
	h := newHistory(t, 4, 3)
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	eng := feed.New(h.cat, feed.Options{Allocator: mem})

	s := func(i int) *int64 { return &h.snapshots[i] }
	tests := []struct {
		name    string
		req     feed.Request
		lo, hi  int
		columns []string
	}{
		{name: "whole history", req: feed.Request{}, lo: 0, hi: 4},
		{name: "from first", req: feed.Request{FromSnapshot: s(0)}, lo: 1, hi: 4},
		{name: "one snapshot", req: feed.Request{FromSnapshot: s(1), ToSnapshot: s(2)}, lo: 2, hi: 3},
		{name: "to only", req: feed.Request{ToSnapshot: s(1)}, lo: 0, hi: 2},
		{name: "empty window", req: feed.Request{FromSnapshot: s(3), ToSnapshot: s(3)}, lo: 4, hi: 4},
		{name: "projection in request order", req: feed.Request{Columns: []string{"country", "id"}},
			lo: 0, hi: 4, columns: []string{"country", "id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Table = tableName
			p, got, _ := read(t, eng, tt.req)
			sameChanges(t, got, h.wantInserts(tt.lo, tt.hi, tt.columns...))
			if tt.columns != nil && !slices.Equal(p.Columns, tt.columns) {
				t.Fatalf("plan columns %v, want %v", p.Columns, tt.columns)
			}
			for _, sp := range p.Snapshots {
				if sp.Strategy != feed.StrategyAppend || len(sp.Files) != 1 {
					t.Fatalf("snapshot %d: strategy %s with %d files", sp.ID, sp.Strategy, len(sp.Files))
				}
			}
		})
	}
}

func TestReadFilter(t *testing.T) {
	h := newHistory(t, 3, 8)
	eng := feed.New(h.cat, feed.Options{})
	_, got, batches := read(t, eng, feed.Request{Table: tableName, Columns: []string{"id"},
		Filter: "country = 'SE' AND amount >= 6"})
	var want []change
	for _, c := range h.wantInserts(0, 3) {
		if c.After["country"] == "SE" && c.After["amount"].(float64) >= 6 {
			want = append(want, change{Op: c.Op, After: map[string]any{"id": c.After["id"]}, Snapshot: c.Snapshot})
		}
	}
	if len(want) == 0 {
		t.Fatal("test data selects no row")
	}
	sameChanges(t, got, want)
	if len(batches) < 3 {
		t.Fatalf("want a complete batch per snapshot, got %v", batches)
	}
}

func TestFilterMatchingNothingInASnapshot(t *testing.T) {
	h := newHistory(t, 3, 4) // ids 1..12
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	eng := feed.New(h.cat, feed.Options{Allocator: mem})
	// Only the last snapshot has ids above 8; the others stream a 0-row
	// complete batch each.
	_, got, batches := read(t, eng, feed.Request{Table: tableName, Filter: "id > 8"})
	sameChanges(t, got, h.wantInserts(2, 3))
	if len(batches) != 3 || batches[0].Snapshot.ID != h.snapshots[0] || !batches[0].SnapshotComplete {
		t.Fatalf("batches %v", batches)
	}
}

func TestBatchesBoundedByBytes(t *testing.T) {
	h := newHistory(t, 1, 5000)
	const maxBytes = 16 << 10
	eng := feed.New(h.cat, feed.Options{MaxBatchBytes: maxBytes, MaxBatchRows: 1 << 20})
	ctx := context.Background()
	p, err := eng.Plan(ctx, feed.Request{Table: tableName})
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	n := 0
	for b, err := range eng.Read(ctx, p) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		rows += b.Record.NumRows()
		// What the bound is about: the encoded IPC message.
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, ipc.WithSchema(b.Record.Schema()))
		if err := w.Write(b.Record); err != nil {
			t.Fatal(err)
		}
		w.Close()
		schemaOnly := 2 << 10
		if size := buf.Len() - schemaOnly; size > maxBytes {
			t.Fatalf("batch %d: %d rows take %d bytes, want about %d", n, b.Record.NumRows(), size, maxBytes)
		}
		b.Record.Release()
	}
	if rows != 5000 || n < 10 {
		t.Fatalf("got %d rows in %d batches, want 5000 rows in many batches", rows, n)
	}
}

func TestWindowErrors(t *testing.T) {
	h := newHistory(t, 3, 1)
	ctx := context.Background()
	// Roll main back to the first snapshot and append: snapshots 2 and 3 are
	// no longer ancestors of the head.
	tx := h.tbl.NewTransaction()
	if err := tx.RollbackToSnapshot(h.snapshots[0]); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h.tbl = tbl
	h.appendRows(t, []tablewrite.Row{{"id": 100, "country": "SE", "amount": 1.0, "created": "2024-02-01T00:00:00Z"}})
	head := h.snapshots[3]
	eng := feed.New(h.cat, feed.Options{})
	i64 := func(v int64) *int64 { return &v }

	tests := []struct {
		name string
		req  feed.Request
		want error
		msg  string
	}{
		{"not an ancestor", feed.Request{FromSnapshot: &h.snapshots[1], ToSnapshot: &head}, feed.ErrNotAncestor, "not an ancestor"},
		{"from after to", feed.Request{FromSnapshot: &head, ToSnapshot: &h.snapshots[0]}, feed.ErrNotAncestor, "not an ancestor"},
		{"unknown from", feed.Request{FromSnapshot: i64(42)}, feed.ErrSnapshotNotFound, "42"},
		{"unknown to", feed.Request{ToSnapshot: i64(43)}, feed.ErrSnapshotNotFound, "43"},
		{"both froms", feed.Request{FromSnapshot: &head, FromTimestampMs: i64(1)}, feed.ErrInvalidRequest, "not both"},
		{"unknown column", feed.Request{Columns: []string{"nope"}}, feed.ErrUnknownColumn, `"nope"`},
		{"unknown identity", feed.Request{Identity: []string{"nope"}}, feed.ErrUnknownColumn, `"nope"`},
		{"duplicate column", feed.Request{Columns: []string{"id", "id"}}, feed.ErrInvalidRequest, "twice"},
		{"bad filter", feed.Request{Filter: "id = "}, feed.ErrInvalidFilter, "position"},
		{"filter on unknown column", feed.Request{Filter: "nope = 1"}, feed.ErrUnknownColumn, "nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Table = tableName
			_, err := eng.Plan(ctx, tt.req)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("message %q lacks %q", err, tt.msg)
			}
		})
	}

	t.Run("unknown table", func(t *testing.T) {
		_, err := eng.Plan(ctx, feed.Request{Table: "shop.nope"})
		if !errors.Is(err, catalog.ErrTableNotFound) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("head lineage skips rolled-back snapshots", func(t *testing.T) {
		_, got, _ := read(t, eng, feed.Request{Table: tableName})
		want := append(h.wantInserts(0, 1), h.wantInserts(3, 4)...)
		sameChanges(t, got, want)
	})
}

func TestTimestampWindowBeforeHistoryIsEmpty(t *testing.T) {
	h := newHistory(t, 2, 2)
	eng := feed.New(h.cat, feed.Options{})
	before := int64(1)
	p, got, _ := read(t, eng, feed.Request{Table: tableName, ToTimestampMs: &before})
	if p.To != nil || len(p.Snapshots) != 0 || len(got) != 0 {
		t.Fatalf("a window ending before the first snapshot: to %v, %d snapshots, %d changes", p.To, len(p.Snapshots), len(got))
	}
	after := h.tbl.CurrentSnapshot().TimestampMs + 1000
	p, got, _ = read(t, eng, feed.Request{Table: tableName, FromTimestampMs: &after})
	if len(p.Snapshots) != 0 || len(got) != 0 {
		t.Fatalf("a window starting after the last snapshot: %d snapshots, %d changes", len(p.Snapshots), len(got))
	}
}

func TestTimestampWindow(t *testing.T) {
	h := newHistory(t, 3, 2)
	eng := feed.New(h.cat, feed.Options{})
	snap := func(i int) *table.Snapshot { return h.tbl.SnapshotByID(h.snapshots[i]) }
	from := snap(0).TimestampMs // exclusive: starts after snapshot 0
	to := snap(1).TimestampMs   // inclusive: ends at snapshot 1
	p, got, _ := read(t, eng, feed.Request{Table: tableName, FromTimestampMs: &from, ToTimestampMs: &to})
	sameChanges(t, got, h.wantInserts(1, 2))
	if *p.From != h.snapshots[0] || *p.To != h.snapshots[1] {
		t.Fatalf("window (%d, %d], want (%d, %d]", *p.From, *p.To, h.snapshots[0], h.snapshots[1])
	}
}

func TestDeleteSnapshot(t *testing.T) {
	h := newHistory(t, 2, 4)
	ctx := context.Background()
	tbl, err := h.tbl.Delete(ctx, iceberg.EqualTo(iceberg.Reference("id"), int64(1)), nil)
	if err != nil {
		t.Fatal(err)
	}
	del := tbl.CurrentSnapshot()
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	eng := feed.New(h.cat, feed.Options{Allocator: mem})
	last := h.snapshots[1]
	p, got, _ := read(t, eng, feed.Request{Table: tableName, FromSnapshot: &last})
	if len(p.Snapshots) != 1 || p.Snapshots[0].Strategy != feed.StrategyRewrite {
		t.Fatalf("plan %+v", p.Snapshots)
	}
	want := h.wantInserts(0, 1)[:1]
	want[0].Op, want[0].Before, want[0].After, want[0].Snapshot = feed.OpDelete, want[0].After, nil, del.SnapshotID
	sameChanges(t, got, want)
}

func TestEarlyStopReleasesMemory(t *testing.T) {
	h := newHistory(t, 6, 2000)
	// Snapshots are read ahead by goroutines of their own: stopping early
	// must end them all and release what they decoded.
	leaks := goleak.IgnoreCurrent()
	defer goleak.VerifyNone(t, leaks)
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	eng := feed.New(h.cat, feed.Options{Allocator: mem, MaxBatchRows: 100})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := eng.Plan(ctx, feed.Request{Table: tableName})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("consumer breaks", func(t *testing.T) {
		n := 0
		for b, err := range eng.Read(ctx, p) {
			if err != nil {
				t.Fatal(err)
			}
			b.Record.Release()
			if n++; n == 5 {
				break
			}
		}
	})
	t.Run("context cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		n := 0
		var last error
		for b, err := range eng.Read(ctx, p) {
			if err != nil {
				last = err
				break
			}
			b.Record.Release()
			if n++; n == 3 {
				cancel()
			}
		}
		if !errors.Is(last, context.Canceled) {
			t.Fatalf("read after cancel ended with %v, want context.Canceled", last)
		}
	})
}

func TestStatusAndLineage(t *testing.T) {
	h := newHistory(t, 3, 1)
	eng := feed.New(h.cat, feed.Options{})
	ctx := context.Background()
	st, err := eng.Status(ctx, tableName)
	if err != nil {
		t.Fatal(err)
	}
	if st.CommitSeq != 3 || *st.Snapshot != h.snapshots[2] {
		t.Fatalf("status %+v, want commit_seq 3 at %d", st, h.snapshots[2])
	}
	snaps, err := eng.Snapshots(ctx, tableName)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range snaps {
		if s.ID != h.snapshots[i] || s.CommitSeq != int64(i+1) || s.Operation != "append" {
			t.Fatalf("snapshot %d: %+v", i, s)
		}
	}
	h.appendRows(t, []tablewrite.Row{{"id": 99}})
	st2, _ := eng.Status(ctx, tableName)
	if st2.CommitSeq <= st.CommitSeq {
		t.Fatalf("commit_seq did not grow: %d then %d", st.CommitSeq, st2.CommitSeq)
	}
}

func TestExpiredHistory(t *testing.T) {
	h := newHistory(t, 5, 3)
	ctx := context.Background()
	h.expireOldest(t, 2)
	eng := feed.New(h.cat, feed.Options{})
	expiredParent := h.snapshots[2]

	t.Run("the start of history is gone", func(t *testing.T) {
		_, err := eng.Plan(ctx, feed.Request{Table: tableName})
		if !errors.Is(err, feed.ErrResyncRequired) || !strings.Contains(err.Error(), fmt.Sprint(expiredParent)) {
			t.Fatalf("err = %v, want resync naming %d", err, expiredParent)
		}
	})
	t.Run("an expired parent of the oldest retained snapshot is a valid start", func(t *testing.T) {
		_, got, _ := read(t, eng, feed.Request{Table: tableName, FromSnapshot: &expiredParent})
		sameChanges(t, got, h.wantInserts(3, 5))
	})
	t.Run("an older expired snapshot needs a resync, not NotFound", func(t *testing.T) {
		_, err := eng.Plan(ctx, feed.Request{Table: tableName, FromSnapshot: &h.snapshots[0]})
		if !errors.Is(err, feed.ErrResyncRequired) || !strings.Contains(err.Error(), fmt.Sprint(expiredParent)) {
			t.Fatalf("err = %v, want resync required naming the earliest start %d", err, expiredParent)
		}
	})
	t.Run("a time before the retained history", func(t *testing.T) {
		ts := int64(1)
		_, err := eng.Plan(ctx, feed.Request{Table: tableName, FromTimestampMs: &ts})
		if !errors.Is(err, feed.ErrResyncRequired) {
			t.Fatalf("err = %v, want resync", err)
		}
	})
}

func TestMissingDataFileFailsTheStream(t *testing.T) {
	h := newHistory(t, 3, 3)
	ctx := context.Background()
	last := h.tbl.SnapshotByID(h.snapshots[2])
	fsys, err := h.tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := last.Manifests(fsys)
	if err != nil {
		t.Fatal(err)
	}
	var victim string
	for _, m := range manifests {
		if m.SnapshotID() == last.SnapshotID {
			for e, err := range m.Entries(fsys, true) {
				if err != nil {
					t.Fatal(err)
				}
				victim = e.DataFile().FilePath()
				break
			}
		}
	}
	if err := os.Remove(strings.TrimPrefix(victim, "file://")); err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	eng := feed.New(h.cat, feed.Options{Allocator: mem})
	p, err := eng.Plan(ctx, feed.Request{Table: tableName})
	if err != nil {
		t.Fatal(err)
	}
	var complete []int64
	var last2 error
	for b, err := range eng.Read(ctx, p) {
		if err != nil {
			last2 = err
			break
		}
		if b.SnapshotComplete {
			complete = append(complete, b.Snapshot.ID)
		}
		b.Record.Release()
	}
	if !errors.Is(last2, feed.ErrResyncRequired) || !strings.Contains(last2.Error(), victim[strings.LastIndex(victim, "/")+1:]) {
		t.Fatalf("the read ended with %v, want resync required naming the missing file", last2)
	}
	if !slices.Equal(complete, h.snapshots[:2]) {
		t.Fatalf("complete snapshots before the failure: %v, want %v", complete, h.snapshots[:2])
	}
}

// An equality delete of 3 keys reads only the row groups whose key
// statistics can hold them: at most 3, out of the table's 20.
func TestEqualityDeleteReadsFewRowGroups(t *testing.T) {
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := tablewrite.CreateTable(ctx, cat, tableName, ordersSchema(),
		icecatalog.WithProperties(iceberg.Properties{"write.parquet.row-group-limit": "1000"}))
	if err != nil {
		t.Fatal(err)
	}
	for f := range 2 {
		var rows []tablewrite.Row
		for i := range 10_000 {
			rows = append(rows, tablewrite.Row{"id": f*10_000 + i + 1, "country": "SE", "amount": 1.0})
		}
		if tbl, err = tablewrite.Append(ctx, tbl, rows); err != nil {
			t.Fatal(err)
		}
	}
	before := tbl.CurrentSnapshot().SnapshotID
	keys := []tablewrite.Row{{"id": 17}, {"id": 5_500}, {"id": 19_999}, {"id": 50_000}}
	if _, err = tablewrite.EqualityDelete(ctx, tbl, "id", keys, nil); err != nil {
		t.Fatal(err)
	}
	eng := feed.New(cat, feed.Options{})
	_, got, _ := read(t, eng, feed.Request{Table: tableName, FromSnapshot: &before, Columns: []string{"id"}})
	var ids []float64
	for _, c := range got {
		if c.Op != feed.OpDelete {
			t.Fatalf("change %+v", c)
		}
		ids = append(ids, c.Before["id"].(float64))
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []float64{17, 5_500, 19_999}) {
		t.Fatalf("deleted %v", ids)
	}
	if st := eng.Stats(); st.RowGroupsRead > 3 || st.RowsDecoded > 3_000 {
		t.Fatalf("read %d row groups and decoded %d rows for 3 deleted keys", st.RowGroupsRead, st.RowsDecoded)
	}
}

func TestTruncatedDataFileIsUnreadable(t *testing.T) {
	h := newHistory(t, 2, 50)
	ctx := context.Background()
	fsys, err := h.tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap := h.tbl.SnapshotByID(h.snapshots[1])
	manifests, err := snap.Manifests(fsys)
	if err != nil {
		t.Fatal(err)
	}
	var victim string
	for _, m := range manifests {
		if m.SnapshotID() != snap.SnapshotID {
			continue
		}
		for e, err := range m.Entries(fsys, true) {
			if err != nil {
				t.Fatal(err)
			}
			victim = strings.TrimPrefix(e.DataFile().FilePath(), "file://")
			break
		}
	}
	if err := os.Truncate(victim, 100); err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	eng := feed.New(h.cat, feed.Options{Allocator: mem})
	p, err := eng.Plan(ctx, feed.Request{Table: tableName})
	if err != nil {
		t.Fatal(err)
	}
	var last error
	for b, err := range eng.Read(ctx, p) {
		if err != nil {
			last = err
			break
		}
		b.Record.Release()
	}
	if !errors.Is(last, feed.ErrUnreadable) || !strings.Contains(last.Error(), fmt.Sprint(h.snapshots[1])) ||
		!strings.Contains(last.Error(), victim) {
		t.Fatalf("read of a truncated file ended with %v, want ErrUnreadable naming snapshot %d", last, h.snapshots[1])
	}
}
