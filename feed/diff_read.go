package feed

import (
	"context"
	"fmt"
	"math"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
)

// Sides of the rows a snapshot's files yield.
const (
	sideDeleted  = 0 // live before the snapshot, not after
	sideInserted = 1 // live after the snapshot, not before
)

// diffReader computes the changes of snapshots that delete rows: for each
// touched data file it reads the row groups whose rows may change (all of
// them for a file added or removed) and compares, batch by batch, the
// positions live before and after the snapshot.
type diffReader struct {
	mem  memory.Allocator
	src  fileSource
	end  *iceberg.Schema
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

func newDiffReader(e *Engine, p *Plan, src fileSource, spill *spillDir) *diffReader {
	return &diffReader{mem: e.opts.Allocator, src: src, end: p.end, name: p.Table,
		concurrency: max(1, e.opts.ReadConcurrency), stats: &e.stats, spill: spill, budget: e.budget}
}

// keyColumn resolves an equality field id to its column in decoded rows.
func (d *diffReader) keyColumn(rec arrow.RecordBatch) func(id int) (int, error) {
	return func(id int) (int, error) {
		name, ok := d.end.FindColumnName(id)
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
func (d *diffReader) fileChanges(ctx context.Context, snapshot int64, fd fileDiff, whole bool,
	emit func(side int, rec arrow.RecordBatch) error) error {
	if fd.changes {
		return d.src.changeRows(ctx, snapshot, fd, whole, emit)
	}
	before, after, err := d.src.deletes(ctx, fd)
	if err != nil {
		return err
	}
	var rgs []int
	if before != nil && after != nil {
		// A file that stays: only rows whose deletes differ change. Read
		// just the row groups that may hold them.
		var total int
		if rgs, total, err = d.src.candidates(ctx, fd, before, after); err != nil {
			return readError(d.name, snapshot, "data file "+fd.path, err)
		}
		if len(rgs) == 0 {
			return nil
		}
		if len(rgs) == total {
			rgs = nil
		}
	}
	return d.src.batches(ctx, snapshot, fd, rgs, whole, func(rec arrow.RecordBatch, first int) error {
		defer rec.Release()
		keyCol := d.keyColumn(rec)
		// A side's rows are live unless its deletes delete them; a side
		// without the file (nil deletes) has none live.
		var deletedBefore, deletedAfter []bool
		if before != nil {
			if deletedBefore, err = before.deleted(rec, first, keyCol); err != nil {
				return err
			}
		}
		if after != nil {
			if deletedAfter, err = after.deleted(rec, first, keyCol); err != nil {
				return err
			}
		}
		liveBefore := func(r int) bool { return deletedBefore != nil && !deletedBefore[r] }
		liveAfter := func(r int) bool { return deletedAfter != nil && !deletedAfter[r] }
		return emitSides(ctx, d.mem, rec, func(r, side int) bool {
			if side == sideDeleted {
				return liveBefore(r) && !liveAfter(r)
			}
			return liveAfter(r) && !liveBefore(r)
		}, emit)
	})
}

// emitSides hands emit the rows of rec on each side, deletes first: the
// rows r for which in(r, side). The caller keeps rec; emit takes over each
// batch.
func emitSides(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, in func(r, side int) bool,
	emit func(side int, rec arrow.RecordBatch) error) error {
	for _, side := range []int{sideDeleted, sideInserted} {
		out, err := selectRows(ctx, mem, rec, func(r int) bool { return in(r, side) })
		if err != nil {
			return err
		}
		if out == nil {
			continue
		}
		if err := emit(side, out); err != nil {
			return err
		}
	}
	return nil
}

// positionCandidates marks the row groups of a file (whose footer is ft)
// holding a position that one side's position deletes delete and the
// other's not.
func positionCandidates(ft *footer, before, after *roaring.Bitmap) []bool {
	cand := make([]bool, len(ft.rows))
	changed := roaring.Xor(before, after).Iterator()
	for changed.HasNext() {
		rg := ft.rowGroupOf(int64(changed.Next()))
		cand[rg] = true
		// Skip the rest of the row group.
		if end := ft.first[rg] + ft.rows[rg]; end <= math.MaxUint32 {
			changed.AdvanceIfNeeded(uint32(end))
		} else {
			break
		}
	}
	return cand
}

// chosen returns the indexes of the marked row groups.
func chosen(cand []bool) []int {
	var out []int
	for rg, c := range cand {
		if c {
			out = append(out, rg)
		}
	}
	return out
}

// selectRows returns the rows of rec for which keep is true, or nil when
// there is none.
func selectRows(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, keep func(int) bool) (arrow.RecordBatch, error) {
	n := int(rec.NumRows())
	b := array.NewBooleanBuilder(mem)
	defer b.Release()
	b.Reserve(n)
	count := 0
	for r := range n {
		k := keep(r)
		b.UnsafeAppend(k)
		if k {
			count++
		}
	}
	switch count {
	case 0:
		return nil, nil
	case n:
		rec.Retain()
		return rec, nil
	}
	mask := b.NewArray()
	defer mask.Release()
	out, err := compute.FilterRecordBatch(compute.WithAllocator(ctx, mem), rec, mask, compute.DefaultFilterOptions())
	if err != nil {
		return nil, fmt.Errorf("select changed rows: %w", err)
	}
	return out, nil
}

func (d *diffReader) eachFile(ctx context.Context, sp SnapshotPlan, whole bool,
	fn func(side int, rec arrow.RecordBatch) error) error {
	return readInOrder(ctx, len(sp.diffs), d.concurrency,
		func(ctx context.Context, i int, send func(side int, rec arrow.RecordBatch) error) error {
			return d.fileChanges(ctx, sp.ID, sp.diffs[i], whole, send)
		}, fn)
}
