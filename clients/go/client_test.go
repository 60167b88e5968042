package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

func TestChanges(t *testing.T) {
	f := newFixture(t)
	snap := func(i int) *int64 { return new(f.snaps[i].ID) }
	ts := func(i int) *int64 { return new(f.snaps[i].TimestampMs) }

	tests := []struct {
		name     string
		req      sluice.ChangeRequest
		from, to int // the window holds commits from+1 ... to (1-based)
		columns  []string
		keep     func(order) bool
	}{
		{name: "whole history", req: sluice.ChangeRequest{}, from: 0, to: 3},
		{name: "after the first snapshot", req: sluice.ChangeRequest{FromSnapshot: snap(0)}, from: 1, to: 3},
		{name: "between two snapshots", req: sluice.ChangeRequest{FromSnapshot: snap(0), ToSnapshot: snap(1)},
			from: 1, to: 2},
		{name: "up to the first snapshot", req: sluice.ChangeRequest{ToSnapshot: snap(0)}, from: 0, to: 1},
		{name: "empty window", req: sluice.ChangeRequest{FromSnapshot: snap(2)}, from: 3, to: 3},
		{name: "by commit time", req: sluice.ChangeRequest{FromTimestampMs: ts(0), ToTimestampMs: ts(1)},
			from: 1, to: 2},
		{name: "projection", req: sluice.ChangeRequest{Columns: []string{"country", "id"}}, from: 0, to: 3,
			columns: []string{"country", "id"}},
		{name: "filter", req: sluice.ChangeRequest{Filter: "country = 'SE'"}, from: 0, to: 3,
			keep: func(o order) bool { return o.Country == "SE" }},
		{name: "filter on a column not projected",
			req:  sluice.ChangeRequest{Columns: []string{"id"}, Filter: "amount > 100", FromSnapshot: snap(0)},
			from: 1, to: 3, columns: []string{"id"}, keep: func(o order) bool { return o.Amount > 100 }},
		{name: "lz4", req: sluice.ChangeRequest{Compression: "lz4"}, from: 0, to: 3},
		{name: "zstd", req: sluice.ChangeRequest{Compression: "zstd", FromSnapshot: snap(1)}, from: 2, to: 3},
		{name: "identity and folding options", req: sluice.ChangeRequest{Identity: []string{"customer"},
			FoldUpdates: true, NetChanges: true}, from: 0, to: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			req := tt.req
			req.Table = ordersTable
			cols := tt.columns
			if cols == nil {
				cols = allColumns
			}
			var want []change
			for k := tt.from; k < tt.to; k++ {
				for _, o := range history[k] {
					if tt.keep == nil || tt.keep(o) {
						want = append(want, change{Op: sluice.OpInsert, Snapshot: f.snaps[k].ID, Before: "null",
							After: renderOrder(o, cols)})
					}
				}
			}

			schema, err := f.client.Schema(ctx, req)
			if err != nil {
				t.Fatalf("Schema: %v", err)
			}
			checkSchema(t, schema, cols)

			r, err := f.client.Changes(ctx, req)
			if err != nil {
				t.Fatalf("Changes: %v", err)
			}
			defer r.Release()
			if !r.Schema().Equal(schema) {
				t.Errorf("reader schema %s, want the Schema call's %s", r.Schema(), schema)
			}
			got, metas, err := readAll(t, r)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if r.Err() != nil {
				t.Errorf("Err after a complete read: %v", r.Err())
			}
			if !slices.Equal(got, want) {
				t.Errorf("changes:\n got %v\nwant %v", got, want)
			}
			checkMetas(t, metas, f.snaps[tt.from:tt.to])
			if tt.keep == nil {
				for _, m := range metas {
					if m.Rows == 0 && len(metas) > 1 {
						t.Errorf("unfiltered read sent a 0-row batch: %+v", metas)
						break
					}
				}
			}
			if r.Next() {
				t.Error("Next after the end returned true")
			}
		})
	}

	t.Run("table without snapshots", func(t *testing.T) {
		req := sluice.ChangeRequest{Table: emptyTable}
		r, err := f.client.Changes(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Release()
		checkSchema(t, r.Schema(), allColumns)
		got, metas, err := readAll(t, r)
		if err != nil || len(got) != 0 || len(metas) != 0 {
			t.Errorf("got %v %v %v, want no batch and no error", got, metas, err)
		}
	})
}

func TestChangesErrors(t *testing.T) {
	f := newFixture(t)
	snap := func(i int) *int64 { return new(f.snaps[i].ID) }
	ts := func(i int) *int64 { return new(f.snaps[i].TimestampMs) }

	tests := []struct {
		name string
		req  sluice.ChangeRequest
		want codes.Code
	}{
		{"unknown table", sluice.ChangeRequest{Table: "shop.nope"}, codes.NotFound},
		{"unknown namespace", sluice.ChangeRequest{Table: "nope.orders"}, codes.NotFound},
		{"missing table", sluice.ChangeRequest{}, codes.InvalidArgument},
		{"table without namespace", sluice.ChangeRequest{Table: "orders"}, codes.InvalidArgument},
		{"table not UTF-8", sluice.ChangeRequest{Table: "shop.\xff"}, codes.InvalidArgument},
		{"unknown column", sluice.ChangeRequest{Table: ordersTable, Columns: []string{"id", "nope"}},
			codes.InvalidArgument},
		{"column twice", sluice.ChangeRequest{Table: ordersTable, Columns: []string{"id", "id"}},
			codes.InvalidArgument},
		{"unknown identity column", sluice.ChangeRequest{Table: ordersTable, Identity: []string{"nope"}},
			codes.InvalidArgument},
		{"filter that does not parse", sluice.ChangeRequest{Table: ordersTable, Filter: "country = "},
			codes.InvalidArgument},
		{"filter on an unknown column", sluice.ChangeRequest{Table: ordersTable, Filter: "nope = 1"},
			codes.InvalidArgument},
		{"from not an ancestor of to", sluice.ChangeRequest{Table: ordersTable, FromSnapshot: snap(2),
			ToSnapshot: snap(0)}, codes.InvalidArgument},
		{"unknown from snapshot", sluice.ChangeRequest{Table: ordersTable, FromSnapshot: new(int64(42))},
			codes.NotFound},
		{"unknown to snapshot", sluice.ChangeRequest{Table: ordersTable, ToSnapshot: new(int64(42))},
			codes.NotFound},
		{"from given twice", sluice.ChangeRequest{Table: ordersTable, FromSnapshot: snap(0), FromTimestampMs: ts(0)},
			codes.InvalidArgument},
		{"to given twice", sluice.ChangeRequest{Table: ordersTable, ToSnapshot: snap(1), ToTimestampMs: ts(1)},
			codes.InvalidArgument},
		{"from after to", sluice.ChangeRequest{Table: ordersTable, FromTimestampMs: ts(2), ToTimestampMs: ts(0)},
			codes.InvalidArgument},
		{"unknown compression", sluice.ChangeRequest{Table: ordersTable, Compression: "gzip"},
			codes.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			check := func(op string, err error) {
				t.Helper()
				if err == nil {
					t.Fatalf("%s: no error, want %s", op, tt.want)
				}
				var se *sluice.Error
				if !errors.As(err, &se) {
					t.Fatalf("%s: error %T %v is not a *sluice.Error", op, err, err)
				}
				if se.Op != op {
					t.Errorf("Op %q, want %q", se.Op, op)
				}
				if got := sluice.Code(err); got != tt.want {
					t.Errorf("%s: Code %s, want %s (%v)", op, got, tt.want, err)
				}
				if got := status.Code(err); got != tt.want {
					t.Errorf("%s: status.Code %s, want %s (%v)", op, got, tt.want, err)
				}
				if se.Message == "" || !strings.Contains(err.Error(), se.Message) {
					t.Errorf("%s: message %q not in %q", op, se.Message, err.Error())
				}
			}
			r, err := f.client.Changes(ctx, tt.req)
			if r != nil {
				r.Release()
				t.Error("Changes returned a reader with its error")
			}
			check("Changes", err)
			_, err = f.client.Explain(ctx, tt.req)
			check("Explain", err)
			if tt.want == codes.NotFound && tt.req.ToSnapshot == nil && tt.req.FromSnapshot == nil &&
				tt.req.ToTimestampMs == nil {
				// Unknown tables: the control calls agree.
				_, err = f.client.CommitSeq(ctx, tt.req.Table)
				check("CommitSeq", err)
				_, err = f.client.Snapshots(ctx, tt.req.Table)
				check("Snapshots", err)
			}
			_, err = f.client.Schema(ctx, tt.req)
			check("Schema", err)
		})
	}

	t.Run("message names the problem", func(t *testing.T) {
		_, err := f.client.Changes(t.Context(), sluice.ChangeRequest{Table: ordersTable, Columns: []string{"nope"}})
		if err == nil || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("error %v does not name the unknown column", err)
		}
	})
}

func TestControl(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	last := f.snaps[len(f.snaps)-1]

	t.Run("CommitSeq", func(t *testing.T) {
		tests := []struct {
			table string
			want  sluice.CommitSeq
		}{
			{ordersTable, sluice.CommitSeq{Table: ordersTable, CommitSeq: last.CommitSeq, Snapshot: new(last.ID),
				TimestampMs: last.TimestampMs}},
			{emptyTable, sluice.CommitSeq{Table: emptyTable}},
		}
		for _, tt := range tests {
			got, err := f.client.CommitSeq(ctx, tt.table)
			if err != nil {
				t.Fatal(err)
			}
			if got.Table != tt.want.Table || got.CommitSeq != tt.want.CommitSeq || !eqPtr(got.Snapshot, tt.want.Snapshot) ||
				got.TimestampMs != tt.want.TimestampMs {
				t.Errorf("CommitSeq(%s) = %+v, want %+v", tt.table, got, tt.want)
			}
		}
		if _, err := f.client.CommitSeq(ctx, ""); sluice.Code(err) != codes.InvalidArgument {
			t.Errorf("CommitSeq without a table: %v, want InvalidArgument", err)
		}
	})

	t.Run("ListTables", func(t *testing.T) {
		tables, err := f.client.ListTables(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []sluice.TableInfo{
			{Name: emptyTable, Format: "iceberg", FormatVersion: 2},
			{Name: ordersTable, Format: "iceberg", FormatVersion: 2, CurrentSnapshot: new(last.ID),
				CommitSeq: last.CommitSeq},
		}
		if len(tables) != len(want) {
			t.Fatalf("ListTables = %+v, want %+v", tables, want)
		}
		for i, got := range tables {
			w := want[i]
			if got.Name != w.Name || got.Format != w.Format || got.FormatVersion != w.FormatVersion ||
				!eqPtr(got.CurrentSnapshot, w.CurrentSnapshot) || got.CommitSeq != w.CommitSeq {
				t.Errorf("table %d = %+v, want %+v", i, got, w)
			}
		}
	})

	t.Run("Snapshots", func(t *testing.T) {
		for i, s := range f.snaps {
			if i == 0 && s.Parent != nil {
				t.Errorf("first snapshot has parent %d", *s.Parent)
			}
			if i > 0 && !eqPtr(s.Parent, new(f.snaps[i-1].ID)) {
				t.Errorf("snapshot %d: parent %v, want %d", i, s.Parent, f.snaps[i-1].ID)
			}
			if s.Operation != "append" || s.CommitSeq != int64(i+1) || s.SequenceNumber != int64(i+1) {
				t.Errorf("snapshot %d = %+v, want an append with commit_seq and sequence number %d", i, s, i+1)
			}
			if got, want := s.Summary["added-records"], fmt.Sprint(len(history[i])); got != want {
				t.Errorf("snapshot %d: summary added-records %q, want %q", i, got, want)
			}
		}
		empty, err := f.client.Snapshots(ctx, emptyTable)
		if err != nil || len(empty) != 0 {
			t.Errorf("Snapshots(%s) = %v, %v; want none", emptyTable, empty, err)
		}
	})

	t.Run("Explain", func(t *testing.T) {
		tests := []struct {
			name     string
			req      sluice.ChangeRequest
			from     *int64
			to       *int64
			window   []sluice.Snapshot
			columns  []string
			identity []string
		}{
			{name: "whole history", req: sluice.ChangeRequest{Table: ordersTable}, to: new(last.ID),
				window: f.snaps, columns: allColumns, identity: []string{"id"}},
			{name: "window and projection", req: sluice.ChangeRequest{Table: ordersTable,
				FromSnapshot: new(f.snaps[0].ID), ToSnapshot: new(f.snaps[1].ID), Columns: []string{"amount"},
				Identity: []string{"customer"}},
				from: new(f.snaps[0].ID), to: new(f.snaps[1].ID), window: f.snaps[1:2], columns: []string{"amount"},
				identity: []string{"customer"}},
			{name: "table without snapshots", req: sluice.ChangeRequest{Table: emptyTable}, columns: allColumns,
				identity: []string{"id"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p, err := f.client.Explain(ctx, tt.req)
				if err != nil {
					t.Fatal(err)
				}
				if p.Table != tt.req.Table || !eqPtr(p.FromSnapshot, tt.from) || !eqPtr(p.ToSnapshot, tt.to) ||
					!slices.Equal(p.Columns, tt.columns) || !slices.Equal(p.Identity, tt.identity) {
					t.Errorf("plan %+v, want table %s from %v to %v columns %v identity %v", p, tt.req.Table,
						tt.from, tt.to, tt.columns, tt.identity)
				}
				if len(p.Snapshots) != len(tt.window) {
					t.Fatalf("plan has %d snapshots, want %d", len(p.Snapshots), len(tt.window))
				}
				var files, records, bytes int64
				for i, sp := range p.Snapshots {
					s := tt.window[i]
					if sp.Snapshot != s.ID || sp.CommitSeq != s.CommitSeq || sp.SequenceNumber != s.SequenceNumber ||
						sp.TimestampMs != s.TimestampMs || sp.Operation != "append" || sp.Strategy != "append" {
						t.Errorf("snapshot plan %d = %+v, want an append plan of %+v", i, sp, s)
					}
					if len(sp.Files) != 1 {
						t.Fatalf("snapshot plan %d reads %d files, want the one it added", i, len(sp.Files))
					}
					fp := sp.Files[0]
					commit := slices.IndexFunc(f.snaps, func(x sluice.Snapshot) bool { return x.ID == s.ID })
					if fp.Content != "data" || fp.Role != "added" || fp.RecordCount != int64(len(history[commit])) ||
						fp.FileSizeBytes <= 0 || fp.Path == "" {
						t.Errorf("file plan %+v, want the added data file of %d records", fp, len(history[commit]))
					}
					if sp.RecordsRead != fp.RecordCount || sp.BytesRead != fp.FileSizeBytes {
						t.Errorf("snapshot plan %d totals %d records %d bytes, want its file's", i, sp.RecordsRead,
							sp.BytesRead)
					}
					files++
					records += sp.RecordsRead
					bytes += sp.BytesRead
				}
				if p.FilesRead != files || p.RecordsRead != records || p.BytesRead != bytes {
					t.Errorf("plan totals %d files %d records %d bytes, want %d %d %d", p.FilesRead, p.RecordsRead,
						p.BytesRead, files, records, bytes)
				}
			})
		}
	})
}

// TestCommitSeqPolling polls a table while it gets a commit, and checks
// that a read planned before the commit does not see it.
func TestCommitSeqPolling(t *testing.T) {
	cat := newWarehouse(t)
	const name = "shop.live"
	createTable(t, cat, name, history[:1])
	srv := serve(t, cat)
	c, _ := dial(t, srv.addr)
	ctx := t.Context()

	before, err := c.CommitSeq(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := c.Changes(ctx, sluice.ChangeRequest{Table: name})
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Release()

	appendOrders(t, cat, name, history[1])

	after, err := c.CommitSeq(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if after.CommitSeq <= before.CommitSeq || after.Snapshot == nil || eqPtr(after.Snapshot, before.Snapshot) ||
		after.TimestampMs < before.TimestampMs {
		t.Fatalf("after a commit CommitSeq went from %+v to %+v", before, after)
	}

	got, _, err := readAll(t, pinned)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(history[0]) {
		t.Errorf("the read planned before the commit returned %d rows, want the %d before it", len(got),
			len(history[0]))
	}

	r, err := c.Changes(ctx, sluice.ChangeRequest{Table: name, FromSnapshot: before.Snapshot})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	got, metas, err := readAll(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(history[1]) || len(metas) == 0 || metas[len(metas)-1].CommitSeq != after.CommitSeq {
		t.Errorf("changes since %d: %v %+v, want the %d rows of commit %d", *before.Snapshot, got, metas,
			len(history[1]), after.CommitSeq)
	}
}

// TestRelease checks who frees what: the reader frees its batches, a
// retained batch outlives the reader, and early exits free everything.
func TestRelease(t *testing.T) {
	f := newFixture(t)
	req := sluice.ChangeRequest{Table: ordersTable, Compression: "lz4"}

	tests := []struct {
		name string
		run  func(t *testing.T, c *sluice.Client, mem *memory.CheckedAllocator)
	}{
		{"read to the end frees every batch", func(t *testing.T, c *sluice.Client, mem *memory.CheckedAllocator) {
			r, err := c.Changes(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Release()
			sawAlloc := false
			for r.Next() {
				sawAlloc = sawAlloc || mem.CurrentAlloc() > 0
			}
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			if !sawAlloc {
				t.Error("decompressed batches took no memory from the allocator: WithAllocator is not used")
			}
			mem.AssertSize(t, 0) // before Release: the end of the read frees the last batch
		}},
		{"release mid-stream", func(t *testing.T, c *sluice.Client, mem *memory.CheckedAllocator) {
			r, err := c.Changes(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Next() {
				t.Fatal(r.Err())
			}
			r.Release()
			mem.AssertSize(t, 0)
			r.Release() // idempotent
			if r.Next() {
				t.Error("Next after Release returned true")
			}
		}},
		{"retained batch outlives the reader", func(t *testing.T, c *sluice.Client, mem *memory.CheckedAllocator) {
			r, err := c.Changes(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Next() {
				t.Fatal(r.Err())
			}
			kept := r.Batch()
			kept.Record.Retain()
			want := renderImage(kept.Record.Column(2), 0)
			for r.Next() {
			}
			r.Release()
			if got := renderImage(kept.Record.Column(2), 0); got != want {
				t.Errorf("retained batch changed: %s, want %s", got, want)
			}
			if mem.CurrentAlloc() == 0 {
				t.Error("the retained batch holds no memory")
			}
			kept.Record.Release()
			mem.AssertSize(t, 0)
		}},
		{"break out of All", func(t *testing.T, c *sluice.Client, mem *memory.CheckedAllocator) {
			r, err := c.Changes(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, err := range r.All() {
				if err != nil {
					t.Fatal(err)
				}
				if n++; n == 2 {
					break
				}
			}
			r.Release()
			mem.AssertSize(t, 0)
		}},
		{"many readers at once", func(t *testing.T, c *sluice.Client, mem *memory.CheckedAllocator) {
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for range 8 {
				wg.Go(func() {
					r, err := c.Changes(t.Context(), req)
					if err != nil {
						errs <- err
						return
					}
					defer r.Release()
					for r.Next() {
					}
					errs <- r.Err()
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
			mem.AssertSize(t, 0)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mem := dial(t, f.srv.addr)
			tt.run(t, c, mem)
		})
	}
}

// TestCancel cancels reads and calls: the error says so, and never looks
// like the end of the feed.
func TestCancel(t *testing.T) {
	f := newFixture(t)
	req := sluice.ChangeRequest{Table: ordersTable}

	checkCanceled := func(t *testing.T, err error, want codes.Code, cause error) {
		t.Helper()
		if err == nil {
			t.Fatal("no error after the context ended")
		}
		if got := sluice.Code(err); got != want {
			t.Errorf("Code %s, want %s (%v)", got, want, err)
		}
		if got := status.Code(err); got != want {
			t.Errorf("status.Code %s, want %s (%v)", got, want, err)
		}
		if !errors.Is(err, cause) {
			t.Errorf("error %v is not %v", err, cause)
		}
	}

	t.Run("mid-stream with Next", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		r, err := f.client.Changes(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Release()
		if !r.Next() {
			t.Fatal(r.Err())
		}
		cancel()
		if r.Next() {
			t.Error("Next returned a batch after the context was cancelled")
		}
		checkCanceled(t, r.Err(), codes.Canceled, context.Canceled)
		if r.Next() {
			t.Error("Next after an error returned true")
		}
	})

	t.Run("mid-stream with All", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		r, err := f.client.Changes(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Release()
		var last error
		batches := 0
		for b, err := range r.All() {
			if err != nil {
				last = err
				if b.Record != nil {
					t.Error("the error came with a batch")
				}
				continue
			}
			batches++
			cancel()
		}
		if batches != 1 {
			t.Errorf("%d batches, want 1 before the cancellation", batches)
		}
		checkCanceled(t, last, codes.Canceled, context.Canceled)
	})

	t.Run("deadline before Changes", func(t *testing.T) {
		ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
		defer cancel()
		r, err := f.client.Changes(ctx, req)
		if r != nil {
			r.Release()
		}
		checkCanceled(t, err, codes.DeadlineExceeded, context.DeadlineExceeded)
	})

	t.Run("control call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := f.client.CommitSeq(ctx, ordersTable)
		checkCanceled(t, err, codes.Canceled, context.Canceled)
	})
}

// TestMidStreamError reads a table whose last data file is gone: the
// snapshots before it arrive complete, then the read fails with the
// server's status, never a clean end.
func TestMidStreamError(t *testing.T) {
	cat := newWarehouse(t)
	const name = "shop.broken"
	createTable(t, cat, name, history)
	srv := serve(t, cat)
	c, _ := dial(t, srv.addr)
	ctx := t.Context()

	snaps, err := c.Snapshots(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	lastSnap := snaps[len(snaps)-1]
	plan, err := c.Explain(ctx, sluice.ChangeRequest{Table: name, FromSnapshot: new(snaps[len(snaps)-2].ID)})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(plan.Snapshots[0].Files[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(u.Path); err != nil {
		t.Fatal(err)
	}

	for _, mode := range []string{"Next", "All"} {
		t.Run(mode, func(t *testing.T) {
			r, err := c.Changes(ctx, sluice.ChangeRequest{Table: name})
			if err != nil {
				t.Fatalf("Changes: %v (planning reads no data file, so it should succeed)", err)
			}
			defer r.Release()
			var metas []sluice.BatchMeta
			if mode == "Next" {
				for r.Next() {
					metas = append(metas, r.Batch().Meta)
				}
				err = r.Err()
			} else {
				_, metas, err = readAll(t, r)
				if err == nil {
					err = r.Err()
				} else if err != r.Err() {
					t.Errorf("All yielded %v, Err returns %v", err, r.Err())
				}
			}
			if err == nil {
				t.Fatal("the read ended cleanly though a data file is missing")
			}
			if got := sluice.Code(err); got != codes.FailedPrecondition {
				t.Errorf("Code %s, want FailedPrecondition (resync required): %v", got, err)
			}
			checkMetas(t, metas, snaps[:len(snaps)-1])
			for _, m := range metas {
				if m.Snapshot == lastSnap.ID {
					t.Errorf("got a batch of the broken snapshot: %+v", m)
				}
			}
		})
	}
}
