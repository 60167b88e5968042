package feed

import (
	"context"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/sluicefeed/sluice/filter"
	"github.com/sluicefeed/sluice/lake"
)

// StatePlan is a pinned read of a table's full state at one snapshot: its
// live rows (after every delete), streamed as insert changes of that
// snapshot. Follow streams start with it in their "-full" start modes. It
// is safe to read concurrently, and every read yields the same rows.
type StatePlan struct {
	Table string `json:"table"`
	// Snapshot is the snapshot whose state is read.
	Snapshot Snapshot `json:"snapshot"`
	// Columns are the data columns of the images, in order.
	Columns []string `json:"columns"`
	// Identity are the columns that identify a row (may be empty).
	Identity []string `json:"identity"`
	// Filter is the row filter, as written ("" for none).
	Filter string `json:"filter,omitempty"`

	FilesRead   int64 `json:"files_read"`
	BytesRead   int64 `json:"bytes_read"`
	RecordsRead int64 `json:"records_read"`

	p     *Plan
	files lake.LiveFiles
}

// Schema returns the output schema of the state's batches: the same
// change row as a window's, in the request's layout.
func (sp *StatePlan) Schema() *arrow.Schema { return sp.p.Schema() }

// PlanState plans a read of the full state of the table at the snapshot
// req.ToSnapshot (nil: the current snapshot), projected and filtered as
// req says. The window fields FromSnapshot, FromTimestampMs and
// ToTimestampMs must be unset, and NetChanges false (a state is already
// net). A table without snapshots has no state to read: ErrSnapshotNotFound.
// It reads manifests but no data files; history before the snapshot may
// have expired.
func (e *Engine) PlanState(ctx context.Context, req Request) (*StatePlan, error) {
	if req.FromSnapshot != nil || req.FromTimestampMs != nil || req.ToTimestampMs != nil || req.NetChanges {
		return nil, fmt.Errorf("%w: a state read names one snapshot (to_snapshot) and no window or net changes",
			ErrInvalidRequest)
	}
	if req.ToSnapshot == nil {
		st, err := e.Status(ctx, req.Table)
		if err != nil {
			return nil, err
		}
		if st.Snapshot == nil {
			return nil, fmt.Errorf("%w: table %s has no snapshot, so it has no state to read",
				ErrSnapshotNotFound, req.Table)
		}
		req.ToSnapshot = st.Snapshot
	}
	if *req.ToSnapshot == NoSnapshot {
		return nil, fmt.Errorf("%w: the empty state of table %s has no rows to read", ErrSnapshotNotFound, req.Table)
	}
	// The empty window (S, S] resolves the snapshot, its schema, the columns
	// and the filter exactly as a window ending at S does.
	req.FromSnapshot = req.ToSnapshot
	p, w, err := e.resolve(ctx, req)
	if err != nil {
		return nil, err
	}
	sp := &StatePlan{Table: req.Table, Snapshot: *w.to, Columns: p.Columns, Identity: p.Identity,
		Filter: p.Filter, p: p}
	files, err := p.tbl.State(ctx, lake.StateOptions{Table: p.Table, Columns: p.scanFields,
		Concurrency: e.opts.ReadConcurrency}, sp.Snapshot)
	if err != nil {
		return nil, err
	}
	sp.files = files
	sp.FilesRead, sp.BytesRead, sp.RecordsRead = files.Size()
	return sp, nil
}

// ReadState streams the live rows of the state plan's snapshot as insert
// changes of that snapshot; the last batch (a 0-row batch for an empty
// state) has SnapshotComplete true. As with Read, batches are produced on
// demand, the consumer owns each yielded batch's Record and must release
// it, and an error ends the sequence (the rows before it are then not the
// whole state).
func (e *Engine) ReadState(ctx context.Context, sp *StatePlan) iter.Seq2[Batch, error] {
	return e.tracked(e.flattened(ctx, sp.p, func(yield func(Batch, error) bool) {
		p := sp.p
		ctx := compute.WithAllocator(ctx, e.opts.Allocator)
		asm := newAssembler(e.opts.Allocator, p.schema, e.opts.MaxBatchRows, e.opts.MaxBatchBytes)
		defer asm.release()
		var rf *filter.RowEvaluator
		if p.filter != nil {
			rf = filter.NewRowEvaluator(p.filter.Expr)
		}
		// Hold back one batch, so that the last can be marked complete.
		var pending arrow.RecordBatch
		defer func() {
			if pending != nil {
				pending.Release()
			}
		}()
		flush := func(complete bool) bool {
			b := Batch{Record: pending, Snapshot: sp.Snapshot, SnapshotComplete: complete}
			pending = nil
			return yield(b, nil)
		}
		fail := func(err error) {
			yield(Batch{}, err)
		}
		if sp.files.Len() > 0 {
			src := e.newRead(ctx, p)
			defer src.Close()
			for rec, err := range liveRows(ctx, src, sp.Snapshot.ID, sp.files) {
				if err != nil {
					fail(err)
					return
				}
				if rf != nil {
					if rec, err = keepMatching(ctx, e.opts.Allocator, rf, rec); err != nil {
						fail(err)
						return
					}
				}
				out, err := asm.inserts(rec, sp.Snapshot)
				rec.Release()
				if err != nil {
					fail(err)
					return
				}
				for i, r := range out {
					if pending != nil && !flush(false) {
						for _, rest := range out[i:] {
							rest.Release()
						}
						return
					}
					pending = r
				}
			}
			if err := ctx.Err(); err != nil {
				fail(err)
				return
			}
		}
		if pending == nil {
			pending = asm.empty()
		}
		flush(true)
	}))
}
