package feed

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/sluicefeed/sluice/filter"
	"github.com/sluicefeed/sluice/internal/lib/kernelctx"
)

// netter nets the changes of a window, one partition (every change of
// some keys) at a time.
type netter struct {
	p         *Plan
	keyNames  []string
	identity  bool
	rf        *filter.RowEvaluator
	snapIndex map[int64]int
}

func newNetter(p *Plan) (*netter, error) {
	n := &netter{p: p, keyNames: p.Identity, identity: len(p.Identity) > 0, snapIndex: map[int64]int{}}
	if !n.identity {
		n.keyNames = p.wideNames()
	}
	for i, sp := range p.Snapshots {
		n.snapIndex[sp.ID] = i
	}
	if p.filter != nil {
		n.rf = filter.NewRowEvaluator(p.filter.Expr)
	}
	return n, nil
}

// imgRef names an image: row row of the event batch img.
type imgRef struct{ img, row int32 }

// netImage is one full image of a key with its count: additions minus
// removals, and the last change that removed it and that added it.
type netImage struct {
	count         int
	rep           imgRef // a row holding the image
	before, after imgRef
	next          int32 // the key's next image, -1: none
}

// netKeyState is one key (identity, or whole row) with its images in the
// order they first appeared.
type netKeyState struct {
	first, last int32 // images
	snap        int   // the snapshot of the key's last change
	next        int32 // the next key of the same hash, -1: none
}

// netGroup is a snapshot's net changes: deleted images, update pairs
// (before, after) and inserted images.
type netGroup struct {
	dels  []imgRef
	pairs [][2]imgRef
	ins   []imgRef
}

// partition nets the event batches of one partition (in stream order) and
// hands the assembled net changes to add, which takes them over, in
// snapshot order and, within a snapshot, deletes, then update pairs, then
// inserts. Per key, the images the window removed but did not add back are
// deleted and the images it added but did not remove are inserted; with
// identity, a deleted and an inserted image of one key pair into an
// update. For a key that identifies one row: insert then delete is
// nothing; insert then updates, an insert of the last image; updates, one
// update from the first to the last image; updates then delete, a delete
// of the first image. It stays exact when a table holds several rows of
// one key. Keys and images are found by hash and confirmed column by
// column: no key is built for any row.
//
// hashes are the hashes of each event's key (as the partitioner got them).
func (n *netter) partition(ctx context.Context, asm *assembler, recs []arrow.RecordBatch, hashes [][]uint64,
	add func(snap, kind int, rec arrow.RecordBatch) error) error {
	if len(recs) == 0 {
		return nil
	}
	imgs := make([]arrow.RecordBatch, len(recs))
	defer func() {
		for _, v := range imgs {
			if v != nil {
				v.Release()
			}
		}
	}()
	for b, rec := range recs {
		st, ok := rec.Column(0).(*array.Struct)
		if !ok {
			return fmt.Errorf("feed: event batch without a struct image")
		}
		imgs[b] = array.RecordFromStructArray(st, nil)
	}
	first := recs[0].Column(0).(*array.Struct)
	keyCols, err := fieldIndices(first, n.keyNames)
	if err != nil {
		return err
	}
	allCols := make([]int, first.NumField())
	for i := range allCols {
		allCols[i] = i
	}
	keyEq, fullEq := newRowComparer(imgs, imgs, keyCols), newRowComparer(imgs, imgs, allCols)

	rows := 0
	for _, rec := range recs {
		rows += int(rec.NumRows())
	}
	keys := make([]netKeyState, 0, rows)
	images := make([]netImage, 0, rows)
	head := make(map[uint64]int32, rows)
	for b, rec := range recs {
		removed, ok1 := rec.Column(1).(*array.Boolean)
		snaps, ok2 := rec.Column(2).(*array.Int64)
		if !ok1 || !ok2 {
			return fmt.Errorf("feed: event batch of the wrong schema")
		}
		keyHash := hashes[b]
		for r := range int(rec.NumRows()) {
			delta := 1
			if removed.Value(r) {
				delta = -1
			}
			ref := imgRef{int32(b), int32(r)}
			kh := keyHash[r]
			k := int32(-1)
			c, found := head[kh]
			for ; found && c >= 0; c = keys[c].next {
				rep := images[keys[c].first].rep
				if keyEq.equal(int(rep.img), int(rep.row), int(ref.img), int(ref.row)) {
					k = c
					break
				}
			}
			if k < 0 {
				k = int32(len(keys))
				next := int32(-1)
				if h, ok := head[kh]; ok {
					next = h
				}
				keys = append(keys, netKeyState{first: -1, last: -1, next: next})
				head[kh] = k
			}
			key := &keys[k]
			key.snap = n.snapIndex[snaps.Value(r)]
			// A key has few images (one, for an identity seen once): they
			// are compared column by column, without hashing every row.
			im := int32(-1)
			for i := key.first; i >= 0; i = images[i].next {
				if fullEq.equal(int(images[i].rep.img), int(images[i].rep.row), int(ref.img), int(ref.row)) {
					im = i
					break
				}
			}
			if im < 0 {
				im = int32(len(images))
				images = append(images, netImage{rep: ref, next: -1})
				if key.last >= 0 {
					images[key.last].next = im
				} else {
					key.first = im
				}
				key.last = im
			}
			images[im].count += delta
			if delta < 0 {
				images[im].before = ref
			} else {
				images[im].after = ref
			}
		}
	}

	groups := make([]netGroup, len(n.p.Snapshots))
	var removed, added []imgRef
	for k := range keys {
		g := &groups[keys[k].snap]
		removed, added = removed[:0], added[:0]
		for i := keys[k].first; i >= 0; i = images[i].next {
			img := &images[i]
			for c := img.count; c < 0; c++ {
				removed = append(removed, img.before)
			}
			for c := img.count; c > 0; c-- {
				added = append(added, img.after)
			}
		}
		pairs := 0
		if n.identity {
			pairs = min(len(removed), len(added))
		}
		g.dels = append(g.dels, removed[pairs:]...)
		for i := range pairs {
			g.pairs = append(g.pairs, [2]imgRef{removed[i], added[len(added)-pairs+i]})
		}
		g.ins = append(g.ins, added[:len(added)-pairs]...)
	}
	if n.rf != nil {
		if err := n.filter(imgs, groups); err != nil {
			return err
		}
	}
	return n.emit(ctx, asm, recs, groups, add)
}

// filter keeps the net changes the filter selects, as for any change: a
// delete whose before-image matches or is unknown, an insert whose
// after-image matches, an update pair when either does.
func (n *netter) filter(imgs []arrow.RecordBatch, groups []netGroup) error {
	truths := make([][]filter.Truth, len(imgs))
	truthOf := func(ref imgRef) (filter.Truth, error) {
		if truths[ref.img] == nil {
			v, err := n.rf.Eval(imgs[ref.img])
			if err != nil {
				return filter.IsFalse, err
			}
			truths[ref.img] = v
		}
		return truths[ref.img][ref.row], nil
	}
	for g := range groups {
		grp := &groups[g]
		dels := grp.dels[:0]
		for _, ref := range grp.dels {
			t, err := truthOf(ref)
			if err != nil {
				return err
			}
			if t != filter.IsFalse {
				dels = append(dels, ref)
			}
		}
		grp.dels = dels
		pairs := grp.pairs[:0]
		for _, pr := range grp.pairs {
			tb, err := truthOf(pr[0])
			if err != nil {
				return err
			}
			ta, err := truthOf(pr[1])
			if err != nil {
				return err
			}
			if tb != filter.IsFalse || ta == filter.IsTrue {
				pairs = append(pairs, pr)
			}
		}
		grp.pairs = pairs
		ins := grp.ins[:0]
		for _, ref := range grp.ins {
			t, err := truthOf(ref)
			if err != nil {
				return err
			}
			if t == filter.IsTrue {
				ins = append(ins, ref)
			}
		}
		grp.ins = ins
	}
	return nil
}

// emit assembles each snapshot's net changes, kind by kind, in the output
// schema.
func (n *netter) emit(ctx context.Context, asm *assembler, recs []arrow.RecordBatch, groups []netGroup,
	add func(snap, kind int, rec arrow.RecordBatch) error) error {
	none := asm.sliceImage(nil, span{0, 0})
	defer none.Release()
	for s, g := range groups {
		sp := n.p.Snapshots[s]
		send := func(kind int, befores, afters arrow.Array, rows []change) error {
			return asm.changesEach(ctx, befores, afters, rows, sp.Snapshot, func(rec arrow.RecordBatch) error {
				return add(s, kind, rec)
			})
		}
		if len(g.dels) > 0 {
			sortRefs(g.dels) // the order of a snapshot's deletes is free: read them in file order
			befores, err := n.gather(ctx, asm, recs, g.dels)
			if err != nil {
				return err
			}
			rows := make([]change, len(g.dels))
			for i := range rows {
				rows[i] = change{op: OpDelete, before: i, after: -1}
			}
			err = send(kindDelete, befores, none, rows)
			befores.Release()
			if err != nil {
				return err
			}
		}
		if len(g.pairs) > 0 {
			slices.SortFunc(g.pairs, func(x, y [2]imgRef) int { return compareRefs(x[0], y[0]) })
			bs, as := make([]imgRef, len(g.pairs)), make([]imgRef, len(g.pairs))
			for i, pr := range g.pairs {
				bs[i], as[i] = pr[0], pr[1]
			}
			befores, err := n.gather(ctx, asm, recs, bs)
			if err != nil {
				return err
			}
			afters, err := n.gather(ctx, asm, recs, as)
			if err != nil {
				befores.Release()
				return err
			}
			var rows []change
			for i := range g.pairs {
				if n.p.foldUpdates {
					rows = append(rows, change{op: OpUpdate, before: i, after: i})
				} else {
					rows = append(rows, change{op: OpUpdateBefore, before: i, after: -1},
						change{op: OpUpdateAfter, before: -1, after: i})
				}
			}
			err = send(kindPair, befores, afters, rows)
			befores.Release()
			afters.Release()
			if err != nil {
				return err
			}
		}
		if len(g.ins) > 0 {
			sortRefs(g.ins)
			afters, err := n.gather(ctx, asm, recs, g.ins)
			if err != nil {
				return err
			}
			rows := make([]change, len(g.ins))
			for i := range rows {
				rows[i] = change{op: OpInsert, before: -1, after: i}
			}
			err = send(kindInsert, none, afters, rows)
			afters.Release()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// gather builds the images refs name, in order, in the output schema (the
// wide images' identity and filter columns that are not projected are
// dropped). Refs in (batch, row) order read each batch once; others are
// gathered in that order and then put in theirs.
func (n *netter) gather(ctx context.Context, asm *assembler, recs []arrow.RecordBatch, refs []imgRef) (arrow.Array, error) {
	ctx = kernelctx.For(ctx, asm.mem)
	if slices.IsSortedFunc(refs, compareRefs) {
		return n.gatherSorted(ctx, asm, recs, refs)
	}
	perm := make([]int32, len(refs))
	for i := range perm {
		perm[i] = int32(i)
	}
	slices.SortFunc(perm, func(x, y int32) int { return compareRefs(refs[x], refs[y]) })
	sorted := make([]imgRef, len(refs))
	inverse := make([]int32, len(refs))
	for i, p := range perm {
		sorted[i] = refs[p]
		inverse[p] = int32(i)
	}
	images, err := n.gatherSorted(ctx, asm, recs, sorted)
	if err != nil {
		return nil, err
	}
	defer images.Release()
	ib := array.NewInt32Builder(asm.mem)
	ib.AppendValues(inverse, nil)
	indices := ib.NewArray()
	ib.Release()
	defer indices.Release()
	out, err := compute.TakeArray(ctx, images, indices)
	if err != nil {
		return nil, fmt.Errorf("gather net images: %w", err)
	}
	return out, nil
}

// gatherSorted gathers refs sorted by batch and row: one slice or take per
// batch, of the images projected onto the output columns.
func (n *netter) gatherSorted(ctx context.Context, asm *assembler, recs []arrow.RecordBatch, refs []imgRef) (arrow.Array, error) {
	return gatherRows(ctx, asm.mem, len(refs), func(i int) (int, int32) { return int(refs[i].img), refs[i].row },
		func(b int) (arrow.Array, error) { return project(recs[b].Column(0).(*array.Struct), n.p.Columns) })
}

func compareRefs(x, y imgRef) int {
	if x.img != y.img {
		return int(x.img - y.img)
	}
	return int(x.row - y.row)
}

func sortRefs(refs []imgRef) { slices.SortFunc(refs, compareRefs) }
