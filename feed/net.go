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

// netKey tracks one identity (or one whole row) through the window.
type netKey struct {
	existedAtStart bool
	existsAtEnd    bool
	first, last    int // the first before-image and the last after-image
	anyBefore      int // a before-image (without identity, all are equal)
	snap           int // the snapshot of the key's last change
	count          int // without identity: inserts minus deletes
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
// they belong to, each group ordered deletes, update pairs, inserts.
func netChanges(events []netEvent, befores, afters *array.Struct, p *Plan) ([][]change, error) {
	keyCols := func(img *array.Struct) []arrow.Array {
		var cols []arrow.Array
		fields := img.DataType().(*arrow.StructType)
		names := p.Identity
		if len(names) == 0 {
			names = p.wideColumns
			if names == nil {
				names = p.Columns
			}
		}
		for _, n := range names {
			if i, ok := fields.FieldIdx(n); ok {
				cols = append(cols, img.Field(i))
			}
		}
		return cols
	}
	bk, ak := keyCols(befores), keyCols(afters)
	keys := map[string]*netKey{}
	var order []string
	var buf []byte
	var err error
	for _, ev := range events {
		if ev.before >= 0 {
			buf, err = rowKey(buf[:0], bk, ev.before)
		} else {
			buf, err = rowKey(buf[:0], ak, ev.after)
		}
		if err != nil {
			return nil, err
		}
		k, ok := keys[string(buf)]
		if !ok {
			k = &netKey{existedAtStart: ev.before >= 0, first: ev.before, last: -1, anyBefore: -1}
			keys[string(buf)] = k
			order = append(order, string(buf))
		}
		k.snap = ev.snap
		if ev.before >= 0 {
			k.existsAtEnd = false
			k.count--
			k.anyBefore = ev.before
		}
		if ev.after >= 0 {
			k.existsAtEnd, k.last = true, ev.after
			k.count++
		}
	}

	type group struct{ dels, pairs, ins []change }
	groups := make([]group, len(p.Snapshots))
	all := make([]arrow.Array, befores.NumField())
	for i := range all {
		all[i] = befores.Field(i)
	}
	allAfter := make([]arrow.Array, afters.NumField())
	for i := range allAfter {
		allAfter[i] = afters.Field(i)
	}
	for _, ks := range order {
		k := keys[ks]
		g := &groups[k.snap]
		if len(p.Identity) == 0 {
			// Whole rows: the net count says how many to insert or delete.
			for ; k.count > 0; k.count-- {
				g.ins = append(g.ins, change{op: OpInsert, before: -1, after: k.last})
			}
			for ; k.count < 0; k.count++ {
				g.dels = append(g.dels, change{op: OpDelete, before: k.anyBefore, after: -1})
			}
			continue
		}
		switch {
		case !k.existedAtStart && k.existsAtEnd:
			g.ins = append(g.ins, change{op: OpInsert, before: -1, after: k.last})
		case k.existedAtStart && !k.existsAtEnd:
			g.dels = append(g.dels, change{op: OpDelete, before: k.first, after: -1})
		case k.existedAtStart && k.existsAtEnd:
			a, err := rowKey(nil, all, k.first)
			if err != nil {
				return nil, err
			}
			b, err := rowKey(nil, allAfter, k.last)
			if err != nil {
				return nil, err
			}
			if string(a) == string(b) {
				continue // changed and changed back
			}
			if p.foldUpdates {
				g.pairs = append(g.pairs, change{op: OpUpdate, before: k.first, after: k.last})
			} else {
				g.pairs = append(g.pairs, change{op: OpUpdateBefore, before: k.first, after: -1},
					change{op: OpUpdateAfter, before: -1, after: k.last})
			}
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
