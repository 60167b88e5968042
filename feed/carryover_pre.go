package feed

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/lake"
)

// preCancel cancels the carry-over of a copy-on-write rewrite while its
// rows are read, before they are partitioned: the rows of the side read
// first (the base: the removed file's, as formats list removed files
// first) are held by the partitioner, and each batch of the other side is
// matched against them as it comes (aligner), so that only the rows that
// do not match are kept, and the base rows they matched are dropped at the
// end. A rewrite that keeps most rows then holds about one side, not two,
// and stays in memory where both sides would spill. What it misses (a base
// side larger than the budget, which spills before the other side comes;
// rows that do not line up) the carry-over of each partition still cancels
// (cancelCarryOver): the result is the same, as each equal pair cancels
// either way.
//
// It is off for a snapshot paired by row lineage: there, a deleted and an
// inserted row of one id pair first, whatever other rows their values
// equal.
type preCancel struct {
	ctx  context.Context
	mem  memory.Allocator
	part *partitioner
	// al is nil once the cancelling stopped (or never started).
	al   *aligner
	base int // the side held, -1: none yet
}

// newPreCancel returns the early cancelling of a snapshot's rows of schema
// s, gathered by part, or nil where it does not apply. identity names the
// columns rows pair by (the first, present and not a lineage column, is
// the aligner's hint).
func newPreCancel(ctx context.Context, mem memory.Allocator, part *partitioner, s *arrow.Schema, sp SnapshotPlan,
	identity []string) *preCancel {
	if !sp.rewrites || sp.lineage {
		return nil
	}
	if _, _, ok := lineageColumns(s); ok {
		return nil
	}
	cols := dataColumns(s)
	if len(cols) == 0 {
		return nil
	}
	hint := cols[0]
	if len(identity) > 0 {
		if idx := s.FieldIndices(identity[0]); len(idx) == 1 && !lake.IsLineageColumn(identity[0]) {
			hint = idx[0]
		}
	}
	pc := &preCancel{ctx: ctx, mem: mem, part: part, al: newAligner(cols, hint), base: -1}
	part.beforeSpill = pc.stop
	return pc
}

// add takes over rec, a batch of side, and hands the partitioner what it
// keeps of it with the hashes hash gives.
func (pc *preCancel) add(side int, rec arrow.RecordBatch, hash func(arrow.RecordBatch) []uint64) error {
	if pc.al == nil || rec.NumRows() == 0 {
		return pc.part.add(side, rec, hash(rec))
	}
	if pc.base < 0 {
		pc.base = side
	}
	if side == pc.base {
		if err := pc.part.add(side, rec, hash(rec)); err != nil || pc.al == nil {
			return err // pc.al is nil when the base spilled
		}
		held := pc.part.heldBatches(side)
		b := int32(len(held) - 1)
		list := make([]rowRef, held[b].NumRows())
		for r := range list {
			list[r] = rowRef{b, int32(r)}
		}
		pc.al.addBase(held, list)
		return nil
	}
	batches := []arrow.RecordBatch{rec}
	cand := pc.al.match(batches, refs(batches))
	kept, err := lake.SelectRows(pc.ctx, pc.mem, rec, func(r int) bool { return cand[r] < 0 })
	rec.Release()
	if err != nil || kept == nil {
		return err
	}
	return pc.part.add(side, kept, hash(kept))
}

// stop ends the cancelling: the partitioner drops the base rows matched so
// far (before it spills, or once every row is read).
func (pc *preCancel) stop() error {
	if pc.al == nil {
		return nil
	}
	keep := pc.al.keep()
	pc.al = nil
	return pc.part.filterHeld(pc.base, keep)
}
