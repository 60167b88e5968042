package feed

import (
	"context"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// netEvent is one change of the window, as rows of the concatenated images.
type netEvent struct {
	snap          int // index into the plan's snapshots
	op            string
	before, after int // rows of the concatenated images, -1: none
}

// netKey tracks one identity (or one whole row) through the window: the
// images its changes removed and added, as a multiset.
type netKey struct {
	images map[string]*netImage
	order  []string // images in order of first appearance
	snap   int      // the snapshot of the key's last change
}

// netImage counts one full image of a key: removals minus additions.
type netImage struct {
	count         int // additions minus removals
	before, after int // a row holding the image on each side, -1: none
}

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
	part := newPartitioner(ctx, mem, spill, l, 0, p.wide)
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
		hashes, err := imageKeyHashes(rh, b.Record, keyNames)
		if err != nil {
			b.Record.Release()
			yield(Batch{}, err)
			return
		}
		if err := part.add(0, b.Record, hashes); err != nil {
			yield(Batch{}, err)
			return
		}
	}
	if len(p.Snapshots) == 0 {
		return // a window without snapshots
	}
	asm := newAssembler(mem, p.schema, e.opts.MaxBatchRows, e.opts.MaxBatchBytes)
	defer asm.release()
	snapIndex := map[int64]int{}
	for i, sp := range p.Snapshots {
		snapIndex[sp.ID] = i
	}

	if !part.spilled() {
		// One partition in memory: its net changes go out as they are
		// assembled, snapshot by snapshot.
		err := part.each(func(pt partition) error {
			return netPartition(ctx, p, asm, pt.batches[0], snapIndex, nil, func(perSnapshot [][]change, fb, fa arrow.Array) error {
				for i, sp := range p.Snapshots {
					var last arrow.RecordBatch
					err := asm.changesEach(ctx, fb, fa, perSnapshot[i], sp.Snapshot, func(rec arrow.RecordBatch) error {
						if last != nil && !yield(Batch{Record: last, Snapshot: sp.Snapshot}, nil) {
							last = nil
							rec.Release()
							return errStop
						}
						last = rec
						return nil
					})
					if err != nil {
						if last != nil {
							last.Release()
						}
						return err
					}
					if last == nil {
						last = asm.empty()
					}
					if !yield(Batch{Record: last, Snapshot: sp.Snapshot, SnapshotComplete: true}, nil) {
						return errStop
					}
				}
				return nil
			})
		})
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
		return netPartition(ctx, p, asm, pt.batches[0], snapIndex, func(snap, kind int, rec arrow.RecordBatch) error {
			defer rec.Release()
			return out.add(snap*changeKinds+kind, rec)
		}, nil)
	})
	if err != nil {
		yield(Batch{}, err)
		return
	}
	out.emit(asm, p.Snapshots, yield)
}

// wideNames are the names of the columns of the plan's wide images.
func (p *Plan) wideNames() []string {
	if p.wideColumns != nil {
		return p.wideColumns
	}
	return p.Columns
}

// imageKeyHashes returns, per change row of rec (op, before, after, ...),
// the hash of the named columns of its image: the before-image when it
// has one, else the after-image.
func imageKeyHashes(rh rowHasher, rec arrow.RecordBatch, names []string) ([]uint64, error) {
	before, ok1 := rec.Column(1).(*array.Struct)
	after, ok2 := rec.Column(2).(*array.Struct)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("feed: change batch without struct images")
	}
	hashOf := func(img *array.Struct) ([]uint64, error) {
		st := img.DataType().(*arrow.StructType)
		cols := make([]int, 0, len(names))
		for _, n := range names {
			i, ok := st.FieldIdx(n)
			if !ok {
				return nil, fmt.Errorf("feed: image lacks column %q", n)
			}
			cols = append(cols, i)
		}
		view := array.RecordFromStructArray(img, nil)
		defer view.Release()
		return rh.hashes(view, cols), nil
	}
	hb, err := hashOf(before)
	if err != nil {
		return nil, err
	}
	ha, err := hashOf(after)
	if err != nil {
		return nil, err
	}
	for i := range hb {
		if before.IsNull(i) {
			hb[i] = ha[i]
		}
	}
	return hb, nil
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

// netPartition computes the net changes of the change batches of one
// partition (every change of its keys, in stream order). With whole, it
// hands over the per-snapshot changes and their images at once; else it
// assembles them per snapshot and kind and hands each batch to add.
func netPartition(ctx context.Context, p *Plan, asm *assembler, recs []arrow.RecordBatch, snapIndex map[int64]int,
	add func(snap, kind int, rec arrow.RecordBatch) error,
	whole func(perSnapshot [][]change, befores, afters arrow.Array) error) error {
	if len(recs) == 0 {
		if whole != nil {
			empty := make([][]change, len(p.Snapshots))
			fb := array.MakeArrayOfNull(asm.mem, asm.image, 0)
			defer fb.Release()
			return whole(empty, fb, fb)
		}
		return nil
	}
	var events []netEvent
	rows := 0
	for _, rec := range recs {
		ops := rec.Column(0).(*array.String)
		snaps := rec.Column(3).(*array.Int64)
		for i := range int(rec.NumRows()) {
			ev := netEvent{snap: snapIndex[snaps.Value(i)], op: ops.Value(i), before: -1, after: -1}
			if !rec.Column(1).IsNull(i) {
				ev.before = rows + i
			}
			if !rec.Column(2).IsNull(i) {
				ev.after = rows + i
			}
			events = append(events, ev)
		}
		rows += int(rec.NumRows())
	}
	befores, afters, err := concatImages(asm.mem, recs)
	if err != nil {
		return err
	}
	defer befores.Release()
	defer afters.Release()
	perSnapshot, err := netChanges(events, befores.(*array.Struct), afters.(*array.Struct), p)
	if err != nil {
		return err
	}
	if p.filter != nil {
		if err := filterNet(p, befores.(*array.Struct), afters.(*array.Struct), perSnapshot); err != nil {
			return err
		}
	}
	// The output schema: drop the identity columns read only to group rows.
	fb, err := project(befores.(*array.Struct), p.Columns)
	if err != nil {
		return err
	}
	defer fb.Release()
	fa, err := project(afters.(*array.Struct), p.Columns)
	if err != nil {
		return err
	}
	defer fa.Release()
	if whole != nil {
		return whole(perSnapshot, fb, fa)
	}
	for i, rows := range perSnapshot {
		sp := p.Snapshots[i]
		for start := 0; start < len(rows); {
			kind := kindOf(rows[start].op)
			end := start
			for end < len(rows) && kindOf(rows[end].op) == kind {
				end++
			}
			err := asm.changesEach(ctx, fb, fa, rows[start:end], sp.Snapshot, func(rec arrow.RecordBatch) error {
				return add(i, kind, rec)
			})
			if err != nil {
				return err
			}
			start = end
		}
	}
	return nil
}

// filterNet applies the plan's filter to net changes, as to any change.
func filterNet(p *Plan, befores, afters *array.Struct, perSnapshot [][]change) error {
	rf, err := compileFilter(p.filter, p.end)
	if err != nil {
		return err
	}
	eval := func(img *array.Struct) ([]truth, error) {
		rec := array.RecordFromStructArray(img, nil)
		defer rec.Release()
		return rf.eval(rec)
	}
	before, err := eval(befores)
	if err != nil {
		return err
	}
	after, err := eval(afters)
	if err != nil {
		return err
	}
	for i := range perSnapshot {
		perSnapshot[i] = filterChanges(perSnapshot[i], before, after)
	}
	return nil
}

// concatImages concatenates the before and after columns of batches.
func concatImages(mem memory.Allocator, recs []arrow.RecordBatch) (arrow.Array, arrow.Array, error) {
	cat := func(col int) (arrow.Array, error) {
		parts := make([]arrow.Array, len(recs))
		for i, r := range recs {
			parts[i] = r.Column(col)
		}
		return array.Concatenate(parts, mem)
	}
	if len(recs) == 0 {
		return nil, nil, fmt.Errorf("feed: net changes of a window without batches")
	}
	b, err := cat(1)
	if err != nil {
		return nil, nil, err
	}
	a, err := cat(2)
	if err != nil {
		b.Release()
		return nil, nil, err
	}
	return b, a, nil
}

// netChanges computes the net changes of events, grouped by the snapshot
// they belong to, each group ordered deletes, update pairs, inserts. Per
// key (the identity columns, or the whole row), the images the window
// removed but did not add back are deleted and the images it added but did
// not remove are inserted; with identity, a deleted and an inserted image
// of one key pair into an update. For a key that identifies one row, this
// is: insert then delete is nothing; insert then updates, an insert of the
// last image; updates, one update from the first to the last image;
// updates then delete, a delete of the first image. It stays exact when a
// table holds several rows of one key.
func netChanges(events []netEvent, befores, afters *array.Struct, p *Plan) ([][]change, error) {
	fieldsOf := func(img *array.Struct, names []string) []arrow.Array {
		st := img.DataType().(*arrow.StructType)
		var cols []arrow.Array
		for _, n := range names {
			if i, ok := st.FieldIdx(n); ok {
				cols = append(cols, img.Field(i))
			}
		}
		return cols
	}
	all := p.wideColumns
	if all == nil {
		all = p.Columns
	}
	keyNames := p.Identity
	if len(keyNames) == 0 {
		keyNames = all
	}
	bKey, aKey := fieldsOf(befores, keyNames), fieldsOf(afters, keyNames)
	bAll, aAll := fieldsOf(befores, all), fieldsOf(afters, all)

	keys := map[string]*netKey{}
	var order []string
	var kb, ib []byte
	var err error
	touch := func(cols, full []arrow.Array, row int, snap int, delta int) error {
		if kb, err = rowKey(kb[:0], cols, row); err != nil {
			return err
		}
		k, ok := keys[string(kb)]
		if !ok {
			k = &netKey{images: map[string]*netImage{}}
			keys[string(kb)] = k
			order = append(order, string(kb))
		}
		k.snap = snap
		if ib, err = rowKey(ib[:0], full, row); err != nil {
			return err
		}
		img, ok := k.images[string(ib)]
		if !ok {
			img = &netImage{before: -1, after: -1}
			k.images[string(ib)] = img
			k.order = append(k.order, string(ib))
		}
		img.count += delta
		if delta < 0 {
			img.before = row
		} else {
			img.after = row
		}
		return nil
	}
	for _, ev := range events {
		if ev.before >= 0 {
			if err := touch(bKey, bAll, ev.before, ev.snap, -1); err != nil {
				return nil, err
			}
		}
		if ev.after >= 0 {
			if err := touch(aKey, aAll, ev.after, ev.snap, +1); err != nil {
				return nil, err
			}
		}
	}

	type group struct{ dels, pairs, ins []change }
	groups := make([]group, len(p.Snapshots))
	for _, ks := range order {
		k := keys[ks]
		g := &groups[k.snap]
		var removed, added []int
		for _, is := range k.order {
			img := k.images[is]
			for n := img.count; n < 0; n++ {
				removed = append(removed, img.before)
			}
			for n := img.count; n > 0; n-- {
				added = append(added, img.after)
			}
		}
		pairs := 0
		if len(p.Identity) > 0 {
			pairs = min(len(removed), len(added))
		}
		for _, b := range removed[pairs:] {
			g.dels = append(g.dels, change{op: OpDelete, before: b, after: -1})
		}
		for i := range pairs {
			b, a := removed[i], added[len(added)-pairs+i]
			if p.foldUpdates {
				g.pairs = append(g.pairs, change{op: OpUpdate, before: b, after: a})
			} else {
				g.pairs = append(g.pairs, change{op: OpUpdateBefore, before: b, after: -1},
					change{op: OpUpdateAfter, before: -1, after: a})
			}
		}
		for _, a := range added[:len(added)-pairs] {
			g.ins = append(g.ins, change{op: OpInsert, before: -1, after: a})
		}
	}
	out := make([][]change, len(groups))
	for i, g := range groups {
		out[i] = append(append(g.dels, g.pairs...), g.ins...)
	}
	return out, nil
}

// project returns the struct of the named children of img.
func project(img *array.Struct, names []string) (arrow.Array, error) {
	st := img.DataType().(*arrow.StructType)
	if st.NumFields() == len(names) {
		img.Retain()
		return img, nil
	}
	cols := make([]arrow.Array, len(names))
	fields := make([]arrow.Field, len(names))
	for i, n := range names {
		idx, ok := st.FieldIdx(n)
		if !ok {
			return nil, fmt.Errorf("feed: image lacks column %q", n)
		}
		cols[i], fields[i] = img.Field(idx), st.Field(idx)
	}
	if img.Data().Offset() != 0 {
		return nil, fmt.Errorf("feed: cannot project a sliced image")
	}
	var nulls *memory.Buffer
	if img.NullN() > 0 {
		nulls = img.Data().Buffers()[0]
	}
	return array.NewStructArrayWithFieldsAndNulls(cols, fields, nulls, img.NullN(), 0)
}
