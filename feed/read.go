package feed

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/filter"
	"github.com/sluicefeed/sluice/internal/lib/kernelctx"
	"github.com/sluicefeed/sluice/lake"
)

// Read streams the plan's changes, snapshot by snapshot in lineage order.
// Every snapshot ends with a batch whose SnapshotComplete is true (a 0-row
// batch when the snapshot changed no row that the request selects).
//
// Batches are produced on demand: the next one is decoded only while the
// consumer holds fewer than a few (ReadConcurrency files are decoded ahead),
// so a slow consumer slows the read instead of growing memory. The consumer
// owns each yielded batch's Record and must release it. An error ends the
// sequence; the changes yielded before it are then not the whole window.
func (e *Engine) Read(ctx context.Context, p *Plan) iter.Seq2[Batch, error] {
	if p.routed {
		return e.tracked(e.flattened(ctx, p, e.routedChanges(ctx, p)))
	}
	if p.NetChanges {
		// The net changes are computed from every change, then filtered.
		return e.tracked(e.flattened(ctx, p, func(yield func(Batch, error) bool) {
			e.readNet(ctx, p, e.readWindow(ctx, p, false, false), yield)
		}))
	}
	return e.tracked(e.flattened(ctx, p, e.readWindow(ctx, p, p.foldUpdates, true)))
}

// readWindow streams the changes of each snapshot of the plan, in the
// plan's wide schema, folding update pairs when fold is true and applying
// the plan's filter when filter is true.
//
// Snapshots are read ahead of the consumer, each by its own goroutine into
// a small channel, up to ReadConcurrency data files being read at once
// across them (a snapshot that reads more files than that runs alone), and
// yielded strictly in lineage order. A window of many small appends thus
// decodes as many files at once as one large append does, and the diff of
// the next snapshot is computed while the consumer still takes the last
// one's batches.
func (e *Engine) readWindow(ctx context.Context, p *Plan, fold, filtered bool) iter.Seq2[Batch, error] {
	return func(yield func(Batch, error) bool) {
		ctx, cancel := context.WithCancel(compute.WithAllocator(ctx, e.opts.Allocator))
		defer cancel()

		var src *lake.Read
		if p.To != nil {
			src = e.newRead(ctx, p)
			defer src.Close()
		}

		var rf *filter.RowEvaluator
		if p.filter != nil && p.To != nil && filtered {
			rf = filter.NewRowEvaluator(p.filter.Expr)
		}
		var diffs *diffReader
		for _, sp := range p.Snapshots {
			if sp.hasDiffs() {
				spill := newSpillDir(e.opts.SpillDir, e.opts.Allocator, &e.stats)
				defer func() { _ = spill.close() }() // best effort: a temporary directory
				diffs = newDiffReader(e, p, src, spill)
				break
			}
		}

		ahead := &readAhead{e: e, p: p, src: src, diffs: diffs, rf: rf, fold: fold}
		defer ahead.stop(cancel)
		for i := range p.Snapshots {
			ahead.fill(ctx, i)
			st := ahead.streams[0]
			for item := range st.ch {
				if !yield(item.b, item.err) || item.err != nil {
					return
				}
			}
			if err := ctx.Err(); err != nil {
				// A stream cut short by the caller's cancellation may end
				// without its error: never let that look complete.
				yield(Batch{}, err)
				return
			}
			ahead.done()
		}
	}
}

// readAhead runs the reads of a window's snapshots ahead of its consumer.
type readAhead struct {
	e     *Engine
	p     *Plan
	src   *lake.Read
	diffs *diffReader
	rf    *filter.RowEvaluator
	fold  bool

	next    int // the next snapshot to start
	busy    int // the files that the started streams read
	streams []*snapshotStream
	wg      sync.WaitGroup
	free    []*assembler // assemblers of finished streams, for reuse
	all     []*assembler
}

// snapshotStream is one snapshot's read, running ahead.
type snapshotStream struct {
	ch     chan batchOrErr
	weight int
	asm    *assembler
}

type batchOrErr struct {
	b   Batch
	err error
}

// weight is the number of data files a snapshot's read decodes at once.
func (r *readAhead) weight(sp SnapshotPlan) int {
	return max(1, min(sp.appendedCount()+len(sp.diffs)+len(sp.changes), r.e.opts.ReadConcurrency))
}

// fill starts the reads of snapshot i (which the consumer wants next) and of
// the snapshots after it, while the files they read stay within the budget.
func (r *readAhead) fill(ctx context.Context, i int) {
	for r.next < len(r.p.Snapshots) {
		w := r.weight(r.p.Snapshots[r.next])
		if r.next > i && r.busy+w > r.e.opts.ReadConcurrency {
			return
		}
		r.start(ctx, r.p.Snapshots[r.next], w)
		r.next++
	}
}

func (r *readAhead) start(ctx context.Context, sp SnapshotPlan, w int) {
	st := &snapshotStream{ch: make(chan batchOrErr, 2), weight: w}
	if n := len(r.free); n > 0 {
		st.asm, r.free = r.free[n-1], r.free[:n-1]
	} else {
		st.asm = newAssembler(r.e.opts.Allocator, r.p.wide, r.e.opts.MaxBatchRows, r.e.opts.MaxBatchBytes)
		r.all = append(r.all, st.asm)
	}
	r.streams = append(r.streams, st)
	r.busy += w
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(st.ch)
		send := func(b Batch, err error) bool {
			select {
			case st.ch <- batchOrErr{b, err}:
				return err == nil
			case <-ctx.Done():
				if b.Record != nil {
					b.Record.Release()
				}
				return false
			}
		}
		err := guard(func() error {
			r.e.readSnapshot(ctx, r.src, r.diffs, r.rf, st.asm, r.p, sp, r.fold, send)
			return nil
		})
		if err != nil {
			send(Batch{}, err)
		}
	}()
}

// done retires the first stream, which the consumer has read to its end:
// its files leave the budget and its assembler is free for reuse.
func (r *readAhead) done() {
	st := r.streams[0]
	r.streams = r.streams[1:]
	r.busy -= st.weight
	r.free = append(r.free, st.asm)
}

// stop cancels the reads still running, releases what they produced and
// waits for them, then releases the assemblers.
func (r *readAhead) stop(cancel context.CancelFunc) {
	cancel()
	for _, st := range r.streams {
		for item := range st.ch {
			if item.b.Record != nil {
				item.b.Record.Release()
			}
		}
	}
	r.wg.Wait()
	for _, a := range r.all {
		a.release()
	}
}

// readSnapshot streams one snapshot's changes, holding back one batch so
// that the last can be marked complete. It returns false when the sequence
// must stop (the consumer stopped, or an error was yielded).
func (e *Engine) readSnapshot(ctx context.Context, src *lake.Read, diffs *diffReader, rf *filter.RowEvaluator,
	asm *assembler, p *Plan, sp SnapshotPlan, fold bool, yield func(Batch, error) bool) bool {
	var pending arrow.RecordBatch
	flush := func(complete bool) bool {
		if pending == nil {
			return true
		}
		b := Batch{Record: pending, Snapshot: sp.Snapshot, SnapshotComplete: complete}
		pending = nil
		return yield(b, nil)
	}
	fail := func(err error) bool {
		if pending != nil {
			pending.Release()
		}
		yield(Batch{}, err)
		return false
	}

	push := func(out []arrow.RecordBatch) bool {
		for i, r := range out {
			if !flush(false) {
				for _, rest := range out[i:] {
					rest.Release()
				}
				return false
			}
			pending = r
		}
		return true
	}

	if sp.hasDiffs() {
		err := diffs.changes(ctx, asm, p, sp, rf, fold, func(rec arrow.RecordBatch) error {
			if !push([]arrow.RecordBatch{rec}) {
				return errStop
			}
			return nil
		})
		if errors.Is(err, errStop) {
			return false
		}
		if err != nil {
			return fail(err)
		}
	}
	if sp.appendedCount() > 0 {
		e.stats.filesRead.Add(int64(len(sp.Files)))
		for rec, err := range liveRows(ctx, src, sp.ID, sp.appended) {
			if err != nil {
				return fail(err)
			}
			if rf != nil {
				// SQL's logic: a null compares as unknown, which no insert
				// matches.
				if rec, err = keepMatching(ctx, e.opts.Allocator, rf, rec); err != nil {
					return fail(err)
				}
			}
			e.stats.rowsDecoded.Add(rec.NumRows())
			out, err := asm.inserts(rec, sp.Snapshot)
			rec.Release()
			if err != nil {
				return fail(err)
			}
			if !push(out) {
				return false
			}
		}
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
	}
	if pending == nil {
		pending = asm.empty()
	}
	if !flush(true) {
		return false
	}
	return true
}

// String describes a batch for logs and tests.
func (b Batch) String() string {
	rows := int64(0)
	if b.Record != nil {
		rows = b.Record.NumRows()
	}
	return fmt.Sprintf("batch{snapshot %d, %d rows, complete %v}", b.Snapshot.ID, rows, b.SnapshotComplete)
}

// keepMatching returns the rows of rec whose filter value is true; it takes
// over rec (releasing it) and returns a record the caller releases.
func keepMatching(ctx context.Context, mem memory.Allocator, rf *filter.RowEvaluator, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	defer rec.Release()
	v, err := rf.Eval(rec)
	if err != nil {
		return nil, err
	}
	b := array.NewBooleanBuilder(mem)
	defer b.Release()
	all := true
	for _, t := range v {
		b.Append(t == filter.IsTrue)
		all = all && t == filter.IsTrue
	}
	if all {
		rec.Retain()
		return rec, nil
	}
	mask := b.NewArray()
	defer mask.Release()
	return compute.FilterRecordBatch(kernelctx.For(ctx, mem), rec, mask, compute.DefaultFilterOptions())
}

// newRead describes a read of plan p's files to the formats' readers, and
// starts it under ctx, the context of the whole read.
func (e *Engine) newRead(ctx context.Context, p *Plan) *lake.Read {
	r := &lake.Read{Table: p.Table, Columns: p.scanFields, DiffColumns: p.diffColumns(),
		Allocator: e.opts.Allocator, BatchRows: e.opts.MaxBatchRows, Concurrency: e.opts.ReadConcurrency,
		Stats: &e.stats, Lineage: p.readsLineage()}
	if p.to != nil {
		r.End = *p.to
	}
	r.Start(ctx)
	return r
}
