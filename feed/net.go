package feed

import (
	"context"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/lake"
)

// readNet collapses the changes the window's snapshots yield (in the plan's
// wide schema) into its net changes, and yields them snapshot by snapshot:
// per identity, an insert then a delete is nothing; an insert then updates
// is an insert of the last image; updates are one update from the first
// before-image to the last after-image; updates then a delete are a delete
// of the first before-image. Without identity, whole rows net as a
// multiset. Each net change belongs to the snapshot of its key's last
// change; every snapshot still ends with a complete batch.
//
// The changes are gathered by the hash of their key, in memory while the
// engine's memory budget has room and in partitions on disk once it has
// not; each partition (every change of its keys) is then netted alone.
func (e *Engine) readNet(ctx context.Context, p *Plan, inner iter.Seq2[Batch, error], yield func(Batch, error) bool) {
	mem := e.opts.Allocator
	spill := newSpillDir(e.opts.SpillDir, mem, &e.stats)
	defer func() { _ = spill.close() }() // best effort: a temporary directory
	l := e.budget.lease()
	defer l.free()
	events := netEventSchema(p.wide)
	part := newPartitioner(ctx, mem, spill, l, 0, events)
	defer part.close()

	keyNames := p.Identity
	if len(keyNames) == 0 {
		keyNames = p.wideNames()
	}
	rh := newRowHasher()
	for b, err := range inner {
		if err != nil {
			yield(Batch{}, err)
			return
		}
		err := splitEvents(ctx, mem, events, b.Record, func(ev arrow.RecordBatch) error {
			st := ev.Column(0).(*array.Struct)
			cols, err := fieldIndices(st, keyNames)
			if err != nil {
				ev.Release()
				return err
			}
			view := array.RecordFromStructArray(st, nil)
			hashes := rh.hashes(view, cols)
			view.Release()
			return part.add(0, ev, hashes)
		})
		b.Record.Release()
		if err != nil {
			yield(Batch{}, err)
			return
		}
	}
	if len(p.Snapshots) == 0 {
		return // a window without snapshots
	}
	asm := newAssembler(mem, p.schema, e.opts.MaxBatchRows, e.opts.MaxBatchBytes)
	defer asm.release()
	n, err := newNetter(p)
	if err != nil {
		yield(Batch{}, err)
		return
	}

	stream := &netStream{asm: asm, snapshots: p.Snapshots, yield: yield}
	defer stream.release()
	if !part.spilled() {
		// One partition in memory: its net changes come out in snapshot
		// and kind order, and go out as they are assembled.
		err := part.each(func(pt partition) error {
			return n.partition(ctx, asm, pt.batches[0], pt.hashes[0], stream.add)
		})
		if err == nil {
			err = stream.finish()
		}
		if err != nil && err != errStop {
			yield(Batch{}, err)
		}
		return
	}

	// Spilled: net each partition, spool its changes by (snapshot, kind),
	// then stream the spool in order, so that within each snapshot every
	// delete comes before every update pair and every insert.
	out, err := newSpool(spill, p.schema)
	if err != nil {
		yield(Batch{}, err)
		return
	}
	defer out.close()
	err = part.each(func(pt partition) error {
		return n.partition(ctx, asm, pt.batches[0], pt.hashes[0], func(snap, kind int, rec arrow.RecordBatch) error {
			defer rec.Release()
			return out.add(snap*changeKinds+kind, rec)
		})
	})
	if err != nil {
		yield(Batch{}, err)
		return
	}
	groups := make([]int, len(p.Snapshots)*changeKinds) // every (snapshot, kind), in order
	for g := range groups {
		groups[g] = g
	}
	err = out.each(groups, func(g int, rec arrow.RecordBatch) error {
		return stream.add(g/changeKinds, g%changeKinds, rec)
	})
	if err == nil {
		err = stream.finish()
	}
	if err != nil && err != errStop {
		yield(Batch{}, err)
	}
}

// netStream yields net changes that come in snapshot and kind order,
// ending each snapshot with a complete batch (a 0-row one for a snapshot
// without net changes).
type netStream struct {
	asm       *assembler
	snapshots []SnapshotPlan
	yield     func(Batch, error) bool
	cur       int               // the snapshot being yielded
	pending   arrow.RecordBatch // its last batch, held back to be marked complete
}

// add takes over a batch of snapshot snap (at or after the current one).
func (s *netStream) add(snap, _ int, rec arrow.RecordBatch) error {
	if err := s.completeUpTo(snap); err != nil {
		rec.Release()
		return err
	}
	if s.pending != nil {
		b := Batch{Record: s.pending, Snapshot: s.snapshots[s.cur].Snapshot}
		s.pending = nil
		if !s.yield(b, nil) {
			rec.Release()
			return errStop
		}
	}
	s.pending = rec
	return nil
}

// completeUpTo ends every snapshot before snap.
func (s *netStream) completeUpTo(snap int) error {
	for s.cur < snap {
		rec := s.pending
		if rec == nil {
			rec = s.asm.empty()
		}
		s.pending = nil
		if !s.yield(Batch{Record: rec, Snapshot: s.snapshots[s.cur].Snapshot, SnapshotComplete: true}, nil) {
			return errStop
		}
		s.cur++
	}
	return nil
}

func (s *netStream) finish() error { return s.completeUpTo(len(s.snapshots)) }

// release frees the batch held back when the stream ends early.
func (s *netStream) release() {
	if s.pending != nil {
		s.pending.Release()
		s.pending = nil
	}
}

// wideNames are the names of the columns of the plan's wide images.
func (p *Plan) wideNames() []string {
	if p.wideColumns != nil {
		return p.wideColumns
	}
	return p.Columns
}

// netEventSchema is the schema of the events net changes are computed
// from: one image per row, whether the change removed it (a delete or
// update_before) or added it, and the snapshot that did. It holds half of
// what a change row holds, so that less is kept or spilled.
func netEventSchema(wide *arrow.Schema) *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "image", Type: imageType(wide), Nullable: true},
		{Name: "removed", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "snapshot", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
}

// splitEvents turns a change batch (op, before, after, snapshot, ts) into
// event batches: its removed images, then its added images, each in
// order, and hands them to fn, which takes them over. Each change row has
// one image (net changes read the window unfolded); a batch of one kind of
// change costs no copy.
func splitEvents(ctx context.Context, mem memory.Allocator, events *arrow.Schema, rec arrow.RecordBatch,
	fn func(arrow.RecordBatch) error) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	before, after := rec.Column(1), rec.Column(2)
	for _, side := range []struct {
		img     arrow.Array
		removed bool
	}{{before, true}, {after, false}} {
		valid := n - side.img.NullN()
		if valid == 0 {
			continue
		}
		flag := array.NewBooleanBuilder(mem)
		for range valid {
			flag.Append(side.removed)
		}
		flags := flag.NewArray()
		flag.Release()
		var ev arrow.RecordBatch
		if valid == n {
			ev = array.NewRecordBatch(events, []arrow.Array{side.img, flags, rec.Column(3)}, int64(n))
		} else {
			whole := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{events.Field(0), events.Field(2)}, nil),
				[]arrow.Array{side.img, rec.Column(3)}, int64(n))
			img := side.img
			kept, err := lake.SelectRows(ctx, mem, whole, func(r int) bool { return img.IsValid(r) })
			whole.Release()
			if err != nil {
				flags.Release()
				return err
			}
			ev = array.NewRecordBatch(events, []arrow.Array{kept.Column(0), flags, kept.Column(1)}, int64(valid))
			kept.Release()
		}
		flags.Release()
		if err := fn(ev); err != nil {
			return err
		}
	}
	return nil
}

// fieldIndices returns the indices of the named children of a struct.
func fieldIndices(img *array.Struct, names []string) ([]int, error) {
	st := img.DataType().(*arrow.StructType)
	cols := make([]int, 0, len(names))
	for _, n := range names {
		i, ok := st.FieldIdx(n)
		if !ok {
			return nil, fmt.Errorf("feed: image lacks column %q", n)
		}
		cols = append(cols, i)
	}
	return cols, nil
}

// The kinds of change within a snapshot, in the order they are emitted.
const (
	kindDelete = iota
	kindPair
	kindInsert
	changeKinds
)

func kindOf(op string) int {
	switch op {
	case OpDelete:
		return kindDelete
	case OpInsert:
		return kindInsert
	default:
		return kindPair
	}
}

// project returns the struct of the named children of img (which may be a
// slice), without copying: it shares img's buffers.
func project(img *array.Struct, names []string) (arrow.Array, error) {
	st := img.DataType().(*arrow.StructType)
	if st.NumFields() == len(names) {
		img.Retain()
		return img, nil
	}
	d := img.Data()
	children := make([]arrow.ArrayData, len(names))
	fields := make([]arrow.Field, len(names))
	for i, n := range names {
		idx, ok := st.FieldIdx(n)
		if !ok {
			return nil, fmt.Errorf("feed: image lacks column %q", n)
		}
		children[i], fields[i] = d.Children()[idx], st.Field(idx)
	}
	out := array.NewData(arrow.StructOf(fields...), d.Len(), []*memory.Buffer{d.Buffers()[0]}, children,
		d.NullN(), d.Offset())
	defer out.Release()
	return array.MakeFromData(out), nil
}
