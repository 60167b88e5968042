package feed

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/lake"
)

// Sides of the rows a snapshot's files yield.
const (
	sideDeleted  = lake.SideDeleted  // live before the snapshot, not after
	sideInserted = lake.SideInserted // live after the snapshot, not before
)

// diffReader computes the changes of snapshots that delete rows: for each
// touched data file it reads the row groups whose rows may change (all of
// them for a file added or removed) and compares, batch by batch, the
// positions live before and after the snapshot.
type diffReader struct {
	mem  memory.Allocator
	read *lake.Read
	end  *lake.Schema
	name string
	// concurrency bounds the files read at once.
	concurrency int
	stats       *counters
	// spill and budget hold the rows of a snapshot that both deletes and
	// inserts rows while its carry-over rows cancel and its update pairs
	// form.
	//
	// Snapshots read ahead compute their changes at the same time (the
	// read-ahead keeps the files they read within --read-concurrency); the
	// budget, which never blocks, bounds what they hold. (A lock held while
	// emitting would deadlock: a later snapshot holding it waits for the
	// consumer, which waits for an earlier one.)
	spill  *spillDir
	budget *budget
}

func newDiffReader(e *Engine, p *Plan, read *lake.Read, spill *spillDir) *diffReader {
	return &diffReader{mem: e.opts.Allocator, read: read, end: p.end, name: p.Table,
		concurrency: max(1, e.opts.ReadConcurrency), stats: &e.stats, spill: spill, budget: e.budget}
}

// keyColumn resolves an equality field id to its column in decoded rows.
func (d *diffReader) keyColumn(rec arrow.RecordBatch) func(id int) (int, error) {
	return func(id int) (int, error) {
		name, ok := d.end.ColumnName(id)
		if idx := rec.Schema().FieldIndices(name); ok && len(idx) == 1 {
			return idx[0], nil
		}
		return 0, fmt.Errorf("%w: field %d is not a top-level column of the window's end schema", ErrUnsupported, id)
	}
}

// fileChanges reads one touched data file and hands its changed rows to
// emit, batch by batch in file order: the rows live before the snapshot
// and not after (sideDeleted), and the other way (sideInserted). whole
// reads every column of the end schema. emit takes over each batch.
func (d *diffReader) fileChanges(ctx context.Context, snapshot int64, fd lake.FileDiff, whole bool,
	emit func(side int, rec arrow.RecordBatch) error) error {
	before, after, err := fd.Masks(ctx, d.read)
	if err != nil {
		return err
	}
	var rgs []int
	if before != nil && after != nil {
		// A file that stays: only rows whose deletes differ change. Read
		// just the row groups that may hold them.
		var total int
		if rgs, total, err = fd.Candidates(ctx, d.read, before, after); err != nil {
			return readError(d.name, snapshot, "data file "+fd.Path(), err)
		}
		if len(rgs) == 0 {
			return nil
		}
		if len(rgs) == total {
			rgs = nil
		}
	}
	return fd.Batches(ctx, d.read, snapshot, rgs, whole, func(rec arrow.RecordBatch, first int) error {
		defer rec.Release()
		keyCol := d.keyColumn(rec)
		// A side's rows are live unless its deletes delete them; a side
		// without the file (nil deletes) has none live.
		var deletedBefore, deletedAfter []bool
		if before != nil {
			if deletedBefore, err = before.Deleted(rec, first, keyCol); err != nil {
				return err
			}
		}
		if after != nil {
			if deletedAfter, err = after.Deleted(rec, first, keyCol); err != nil {
				return err
			}
		}
		liveBefore := func(r int) bool { return deletedBefore != nil && !deletedBefore[r] }
		liveAfter := func(r int) bool { return deletedAfter != nil && !deletedAfter[r] }
		return lake.EmitSides(ctx, d.mem, rec, func(r, side int) bool {
			if side == sideDeleted {
				return liveBefore(r) && !liveAfter(r)
			}
			return liveAfter(r) && !liveBefore(r)
		}, emit)
	})
}

func (d *diffReader) eachFile(ctx context.Context, sp SnapshotPlan, whole bool,
	fn func(side int, rec arrow.RecordBatch) error) error {
	return readInOrder(ctx, len(sp.diffs)+len(sp.changes), d.concurrency,
		func(ctx context.Context, i int, send func(side int, rec arrow.RecordBatch) error) error {
			if i < len(sp.diffs) {
				return d.fileChanges(ctx, sp.ID, sp.diffs[i], whole, send)
			}
			return sp.changes[i-len(sp.diffs)].Rows(ctx, d.read, sp.ID, whole, send)
		}, fn)
}
