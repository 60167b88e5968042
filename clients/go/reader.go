package sluice

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Columns of the change rows, in schema order.
const (
	// ColumnOp is the utf8 change operation: insert, delete,
	// update_before, update_after or update.
	ColumnOp = "op"
	// ColumnBefore is the struct of the projected data columns before the
	// change; null for an insert.
	ColumnBefore = "before"
	// ColumnAfter is the struct of the projected data columns after the
	// change; null for a delete.
	ColumnAfter = "after"
	// ColumnSnapshot is the int64 id of the snapshot that made the change.
	ColumnSnapshot = "snapshot"
	// ColumnTs is that snapshot's commit time, a timestamp[us, UTC].
	ColumnTs = "ts"
)

// Layouts of the change rows, the values of ChangeRequest.Layout.
const (
	// LayoutRenderable is the default: the columns ColumnOp, ColumnBefore,
	// ColumnAfter, ColumnSnapshot and ColumnTs.
	LayoutRenderable = ""
	// LayoutFlat is one row per change: the data columns of its image (the
	// after-image of an insert or update_after, the before-image of a
	// delete or update_before), then ColumnChangeType,
	// ColumnCommitVersion and ColumnCommitTimestamp, as Delta's change data
	// feed and Spark's CHANGES return them.
	LayoutFlat = "flat"
)

// Columns the flat layout adds after the data columns.
const (
	// ColumnChangeType is the utf8 change type: insert, delete,
	// update_preimage or update_postimage.
	ColumnChangeType = "_change_type"
	// ColumnCommitVersion is the int64 snapshot id (Iceberg) or version
	// (Delta) that made the change.
	ColumnCommitVersion = "_commit_version"
	// ColumnCommitTimestamp is that commit's time, a timestamp[us, UTC].
	ColumnCommitTimestamp = "_commit_timestamp"
)

// Change types, the values of ColumnChangeType in the flat layout.
const (
	ChangeInsert          = "insert"
	ChangeDelete          = "delete"
	ChangeUpdatePreimage  = "update_preimage"
	ChangeUpdatePostimage = "update_postimage"
)

// Change operations, the values of the op column.
const (
	OpInsert       = "insert"
	OpDelete       = "delete"
	OpUpdateBefore = "update_before"
	OpUpdateAfter  = "update_after"
	OpUpdate       = "update"
)

// BatchMeta describes a batch, from the app_metadata the server sends with
// it.
type BatchMeta struct {
	// Snapshot is the snapshot whose changes the batch holds.
	Snapshot int64
	// CommitSeq is that snapshot's commit sequence (see Client.CommitSeq).
	CommitSeq int64
	// SnapshotComplete is true on the last batch of the snapshot: once it
	// is processed, every change of the snapshot has been seen, and a
	// consumer may checkpoint at Snapshot.
	SnapshotComplete bool
	// TimestampMs is the snapshot's commit time, in milliseconds since the
	// Unix epoch.
	TimestampMs int64
	// Rows is the number of rows in the batch; 0-row batches carry a
	// snapshot's completion.
	Rows int64
	// Heartbeat is true on the 0-row batches an idle follow stream sends;
	// Snapshot and CommitSeq then say where the stream stands (-1 and 0
	// before its first snapshot), and SnapshotComplete is false.
	Heartbeat bool
	// FullState is true on the rows of a full state (the start modes
	// latest-full and from-snapshot-full): the live rows of Snapshot, as
	// inserts.
	FullState bool
	// Resync is true on the 0-row batch that starts a stream which lost
	// its place: the snapshot it would go on from (Snapshot; -1 for the
	// start of the history) has left the table's retained history. With
	// SubscribeRequest.OnGap OnGapResync the full state at CurrentSnapshot
	// follows; else the stream ends with codes.FailedPrecondition.
	Resync bool
	// EarliestSnapshot, on a Resync batch, is the earliest snapshot a
	// stream can start from now; CurrentSnapshot the table's current one.
	EarliestSnapshot int64
	CurrentSnapshot  int64
	// Coalesced is true on the batches of a coalesced window: the commits
	// after CoalescedFrom, where the stream stood, are gone while that
	// snapshot stayed readable (a protected consumer's tag), so the batches
	// hold the net changes from its state to the state at Snapshot.
	Coalesced     bool
	CoalescedFrom int64
}

// ChangeBatch is one record batch of change rows, all made by one
// snapshot.
type ChangeBatch struct {
	// Record holds the change rows (op, before, after, snapshot, ts). It is
	// owned by the ChangeReader and valid until the reader's next Next
	// call, the next iteration of All, or Release; Retain it to keep it
	// longer, and Release what you retained.
	Record arrow.RecordBatch
	// Meta describes the batch.
	Meta BatchMeta
}

// ChangeReader streams the batches of a change window, in order: snapshot
// by snapshot in lineage order, each snapshot ending with a batch whose
// Meta.SnapshotComplete is true. It reads the endpoints the server planned
// one after another, redeeming every ticket on the client's connection.
//
// The reader holds the context of the Changes call that made it: cancelling
// that context ends the read with an error. A ChangeReader is not safe for
// concurrent use, except Release, which may be called from another
// goroutine to end a Next blocked on the network. Release it when done,
// also after an error.
type ChangeReader struct {
	op     string          // the call that made the reader, for its errors: Changes or Subscribe
	ctx    context.Context // governs the streams of every endpoint
	cancel context.CancelFunc
	flight flight.Client
	mem    memory.Allocator
	schema *arrow.Schema

	// mu guards the fields below. Next holds it while it waits for the
	// server; Release cancels ctx before it takes it, so that it never
	// waits for more than that Next's return.
	mu      sync.Mutex
	tickets [][]byte       // tickets of the endpoints not yet opened
	stream  *flight.Reader // the open endpoint's stream, nil between endpoints
	cur     ChangeBatch
	err     error
	done    bool // true once the read ended (completely, with an error, or released)

	batches      int64 // batches read
	lastSnapshot int64 // snapshot of the last batch
	lastComplete bool  // SnapshotComplete of the last batch
	// partial is set for the ticket of a part of a split window that ends
	// inside a snapshot's files: its stream ends without completing it.
	partial bool
}

// Changes plans the window of req on the server and starts streaming its
// changes. Planning errors (unknown table or column, bad window or filter)
// are returned here; errors later in the stream come from the reader's Err
// or its All sequence. ctx governs the whole read. The caller must Release
// the reader.
func (c *Client) Changes(ctx context.Context, req ChangeRequest) (*ChangeReader, error) {
	const op = "Changes"
	desc, err := req.descriptor(op)
	if err != nil {
		return nil, err
	}
	info, err := c.flight.GetFlightInfo(ctx, desc)
	if err != nil {
		return nil, callError(ctx, op, err)
	}
	schema, err := flight.DeserializeSchema(info.GetSchema(), c.mem)
	if err != nil {
		return nil, callError(ctx, op, protocolError("decode the schema of the flight: %v", err))
	}
	tickets := make([][]byte, 0, len(info.GetEndpoint()))
	for i, ep := range info.GetEndpoint() {
		if ep.GetTicket() == nil {
			return nil, callError(ctx, op, protocolError("endpoint %d of the flight has no ticket", i))
		}
		tickets = append(tickets, ep.GetTicket().GetTicket())
	}

	rctx, cancel := context.WithCancel(ctx)
	r := &ChangeReader{op: op, ctx: rctx, cancel: cancel, flight: c.flight, mem: c.mem, schema: schema,
		tickets: tickets}
	if len(r.tickets) > 0 {
		// Open the first stream now, so that a ticket the server rejects
		// fails the call rather than the first Next.
		if err := r.open(); err != nil {
			r.Release()
			return nil, err
		}
	}
	return r, nil
}

// Schema returns the output schema of req without reading data: op,
// before, after, snapshot and ts, the images holding the projected
// columns.
func (c *Client) Schema(ctx context.Context, req ChangeRequest) (*arrow.Schema, error) {
	const op = "Schema"
	desc, err := req.descriptor(op)
	if err != nil {
		return nil, err
	}
	res, err := c.flight.GetSchema(ctx, desc)
	if err != nil {
		return nil, callError(ctx, op, err)
	}
	schema, err := flight.DeserializeSchema(res.GetSchema(), c.mem)
	if err != nil {
		return nil, callError(ctx, op, protocolError("decode the schema: %v", err))
	}
	return schema, nil
}

// Schema returns the schema of the batches.
func (r *ChangeReader) Schema() *arrow.Schema { return r.schema }

// Next advances to the next batch and reports whether there is one. It
// returns false at the end of the window, on an error (see Err), and after
// Release. The previous batch's record is released.
func (r *ChangeReader) Next() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur = ChangeBatch{}
	for !r.done {
		// Stop at once when the context ends: the stream may still hold
		// batches the server sent before, and reading on would hide the
		// cancellation.
		if err := r.ctx.Err(); err != nil {
			r.fail(err)
			return false
		}
		if r.stream == nil {
			if len(r.tickets) == 0 {
				r.finish()
				return false
			}
			if err := r.open(); err != nil {
				r.fail(err)
				return false
			}
		}
		if r.stream.Next() {
			rec := r.stream.RecordBatch()
			meta, err := parseMeta(r.stream.LatestAppMetadata(), rec.NumRows())
			if err != nil {
				r.fail(err)
				return false
			}
			r.batches++
			r.lastSnapshot, r.lastComplete = meta.Snapshot, meta.SnapshotComplete
			r.cur = ChangeBatch{Record: rec, Meta: meta}
			return true
		}
		err := r.stream.Err()
		r.stream.Release()
		r.stream = nil
		if err != nil {
			r.fail(err)
			return false
		}
	}
	return false
}

// Batch returns the current batch. Its record is owned by the reader and
// valid until the next call to Next or Release.
func (r *ChangeReader) Batch() ChangeBatch {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

// Err returns the error that ended the read, or nil when the read reached
// the end of the window (or has not ended yet). The batches read before an
// error are not the whole window.
func (r *ChangeReader) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// All returns the remaining batches as a sequence for range-over-func. It
// ends after the last batch, or with one (ChangeBatch{}, error) pair when
// the read fails. Each batch's record is valid until the next iteration;
// Retain it to keep it longer. Breaking out of the loop leaves the reader
// open: Release it as usual.
func (r *ChangeReader) All() iter.Seq2[ChangeBatch, error] {
	return func(yield func(ChangeBatch, error) bool) {
		for r.Next() {
			if !yield(r.Batch(), nil) {
				return
			}
		}
		if err := r.Err(); err != nil {
			yield(ChangeBatch{}, err)
		}
	}
}

// Release ends the read and releases the current batch and the open
// stream. Releasing a reader before its end cancels the stream on the
// server. Release is idempotent, and safe to call while another goroutine
// is in Next (which then returns false).
func (r *ChangeReader) Release() {
	r.cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur = ChangeBatch{}
	r.done = true
	r.tickets = nil
	if r.stream != nil {
		r.stream.Release()
		r.stream = nil
	}
	r.cancel()
}

// open opens the stream of the next ticket.
func (r *ChangeReader) open() error {
	ticket := r.tickets[0]
	r.tickets = r.tickets[1:]
	stream, err := r.flight.DoGet(r.ctx, &flight.Ticket{Ticket: ticket})
	if err != nil {
		return callError(r.ctx, r.op, err)
	}
	opts := []ipc.Option{ipc.WithAllocator(r.mem)}
	if r.schema != nil {
		opts = append(opts, ipc.WithSchema(r.schema))
	}
	rdr, err := flight.NewRecordReader(stream, opts...)
	if err != nil {
		return callError(r.ctx, r.op, err)
	}
	if r.schema == nil {
		// A stream request: its schema is the one its first message says.
		r.schema = rdr.Schema()
	}
	r.stream = rdr
	return nil
}

// fail ends the read with err.
func (r *ChangeReader) fail(err error) {
	r.err = callError(r.ctx, r.op, err)
	r.done = true
	if r.stream != nil {
		r.stream.Release()
		r.stream = nil
	}
	r.cancel()
}

// finish ends a read whose streams all ended cleanly. A clean end in the
// middle of a snapshot would be a truncated feed, so it is an error.
func (r *ChangeReader) finish() {
	if r.batches > 0 && !r.lastComplete && !r.partial {
		r.fail(protocolError("the stream ended before snapshot %d was complete", r.lastSnapshot))
		return
	}
	r.done = true
	r.cancel()
}

// wireMeta is the app_metadata JSON object of a batch. Pointers mark the
// fields the contract requires.
type wireMeta struct {
	Snapshot         *int64 `json:"snapshot"`
	CommitSeq        *int64 `json:"commit_seq"`
	SnapshotComplete *bool  `json:"snapshot_complete"`
	TimestampMs      int64  `json:"timestamp_ms"`
	Rows             *int64 `json:"rows"`
	Heartbeat        bool   `json:"heartbeat"`
	FullState        bool   `json:"full_state"`
	Resync           bool   `json:"resync"`
	EarliestSnapshot int64  `json:"earliest_snapshot"`
	CurrentSnapshot  int64  `json:"current_snapshot"`
	CoalescedFrom    *int64 `json:"coalesced_from"`
}

// parseMeta parses a batch's app_metadata and checks it against the
// batch's row count. Unknown fields are ignored.
func parseMeta(b []byte, rows int64) (BatchMeta, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return BatchMeta{}, protocolError("a batch of %d rows has no app_metadata", rows)
	}
	var w wireMeta
	if err := json.Unmarshal(b, &w); err != nil {
		return BatchMeta{}, protocolError("malformed app_metadata %q: %v", b, err)
	}
	if w.Snapshot == nil || w.CommitSeq == nil || w.SnapshotComplete == nil {
		return BatchMeta{}, protocolError("app_metadata %q lacks snapshot, commit_seq or snapshot_complete", b)
	}
	if w.Rows != nil && *w.Rows != rows {
		return BatchMeta{}, protocolError("app_metadata %q announces %d rows, but the batch has %d", b, *w.Rows, rows)
	}
	m := BatchMeta{Snapshot: *w.Snapshot, CommitSeq: *w.CommitSeq, SnapshotComplete: *w.SnapshotComplete,
		TimestampMs: w.TimestampMs, Rows: rows, Heartbeat: w.Heartbeat, FullState: w.FullState,
		Resync: w.Resync, EarliestSnapshot: w.EarliestSnapshot, CurrentSnapshot: w.CurrentSnapshot}
	if w.CoalescedFrom != nil {
		m.Coalesced, m.CoalescedFrom = true, *w.CoalescedFrom
	}
	return m, nil
}
