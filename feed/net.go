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
func (e *Engine) readNet(ctx context.Context, p *Plan, inner iter.Seq2[Batch, error], yield func(Batch, error) bool) {
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	snapIndex := map[int64]int{}
	for i, sp := range p.Snapshots {
		snapIndex[sp.ID] = i
	}
	var events []netEvent
	rows := 0
	for b, err := range inner {
		if err != nil {
			yield(Batch{}, err)
			return
		}
		recs = append(recs, b.Record)
		ops := b.Record.Column(0).(*array.String)
		for i := range int(b.Record.NumRows()) {
			ev := netEvent{snap: snapIndex[b.Snapshot.ID], op: ops.Value(i), before: -1, after: -1}
			if !b.Record.Column(1).IsNull(i) {
				ev.before = rows + i
			}
			if !b.Record.Column(2).IsNull(i) {
				ev.after = rows + i
			}
			events = append(events, ev)
		}
		rows += int(b.Record.NumRows())
	}

	if len(recs) == 0 {
		return // a window without snapshots
	}
	befores, afters, err := e.concatImages(recs)
	if err != nil {
		yield(Batch{}, err)
		return
	}
	defer befores.Release()
	defer afters.Release()

	perSnapshot, err := netChanges(events, befores.(*array.Struct), afters.(*array.Struct), p)
	if err != nil {
		yield(Batch{}, err)
		return
	}
	if p.filter != nil {
		if err := filterNet(p, befores.(*array.Struct), afters.(*array.Struct), perSnapshot); err != nil {
			yield(Batch{}, err)
			return
		}
	}

	// Emit in the output schema: drop the identity columns that were read
	// only to group rows.
	fb, err := project(befores.(*array.Struct), p.Columns)
	if err != nil {
		yield(Batch{}, err)
		return
	}
	defer fb.Release()
	fa, err := project(afters.(*array.Struct), p.Columns)
	if err != nil {
		yield(Batch{}, err)
		return
	}
	defer fa.Release()
	asm := newAssembler(e.opts.Allocator, p.schema, e.opts.MaxBatchRows, e.opts.MaxBatchBytes)
	defer asm.release()
	for i, sp := range p.Snapshots {
		out, err := asm.changes(ctx, fb, fa, perSnapshot[i], sp.Snapshot)
		if err != nil {
			yield(Batch{}, err)
			return
		}
		if len(out) == 0 {
			out = []arrow.RecordBatch{asm.empty()}
		}
		for j, r := range out {
			if !yield(Batch{Record: r, Snapshot: sp.Snapshot, SnapshotComplete: j == len(out)-1}, nil) {
				for _, rest := range out[j+1:] {
					rest.Release()
				}
				return
			}
		}
	}
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
func (e *Engine) concatImages(recs []arrow.RecordBatch) (arrow.Array, arrow.Array, error) {
	cat := func(col int) (arrow.Array, error) {
		parts := make([]arrow.Array, len(recs))
		for i, r := range recs {
			parts[i] = r.Column(col)
		}
		return array.Concatenate(parts, e.opts.Allocator)
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
