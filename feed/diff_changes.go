package feed

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/filter"
	"github.com/sluicefeed/sluice/internal/lib/rowkey"
	"github.com/sluicefeed/sluice/lake"
)

// changeSet holds changed rows of one snapshot as full-width rows (every
// column of the end schema, or the columns the changes need): the rows it
// deletes and the rows it inserts.
type changeSet struct {
	dels, ins []arrow.RecordBatch
}

// changes streams a snapshot's changes that the filter (nil: none)
// selects to emit, which takes over each batch, in order: deletes, then
// update pairs, then inserts.
//
// A snapshot that inserts no row (no added data file, no removed delete
// file) streams its deletes file by file as they are read. One that may
// both delete and insert rows gathers them by hash (of the identity
// columns, else of the whole row) within the engine's memory budget,
// spilling to disk past it, and cancels carry-over rows and pairs updates
// partition by partition: rows equal in every column, and so in their
// identity, always meet in one partition.
func (d *diffReader) changes(ctx context.Context, asm *assembler, p *Plan, sp SnapshotPlan, rf *filter.RowEvaluator,
	fold bool, emit func(arrow.RecordBatch) error) error {
	// Carry-over compares whole rows; nothing else does.
	whole := sp.rewrites
	if !sp.rewrites {
		return d.eachFile(ctx, sp, whole, func(side int, rec arrow.RecordBatch) error {
			defer rec.Release()
			if side != sideDeleted {
				return fmt.Errorf("feed: snapshot %d inserts rows its plan says it cannot", sp.ID)
			}
			cs := &changeSet{dels: []arrow.RecordBatch{rec}}
			return d.emitChanges(ctx, asm, p, sp, rf, fold, cs, emit)
		})
	}

	l := d.budget.lease()
	defer l.free()
	var part *partitioner
	defer func() {
		if part != nil {
			part.close()
		}
	}()
	rh := newRowHasher()
	var hashCols []int
	var pre *preCancel
	hash := func(rec arrow.RecordBatch) []uint64 { return rh.hashes(rec, hashCols) }
	err := d.eachFile(ctx, sp, whole, func(side int, rec arrow.RecordBatch) error {
		if part == nil {
			part = newPartitioner(ctx, d.mem, d.spill, l, 0, rec.Schema(), rec.Schema())
			hashCols = partitionColumns(rec.Schema(), pairingKey(p, sp), sp.lineage)
			pre = newPreCancel(ctx, d.mem, part, rec.Schema(), sp, pairingKey(p, sp))
		}
		if pre != nil {
			return pre.add(side, rec, hash)
		}
		return part.add(side, rec, hash(rec))
	})
	if err == nil && pre != nil {
		err = pre.stop()
	}
	if err != nil || part == nil {
		return err
	}
	if !part.spilled() {
		return part.each(func(pt partition) error {
			return d.emitChanges(ctx, asm, p, sp, rf, fold, &changeSet{dels: pt.batches[0], ins: pt.batches[1]}, emit)
		})
	}
	// Spilled: each partition's deletes, pairs and inserts are spooled by
	// kind, then streamed kind by kind.
	out, err := newSpool(d.spill, asm.schema)
	if err != nil {
		return err
	}
	defer out.close()
	spooled := func(rec arrow.RecordBatch) error {
		defer rec.Release()
		return out.add(kindOf(rec.Column(0).(*array.String).Value(0)), rec)
	}
	// Partitions by row id pair rows by lineage; the rows it leaves
	// unmatched go to a second pass, partitioned by their values (or
	// identity), where carry-overs cancel and identity pairs.
	var unmatched *partitioner
	defer func() {
		if unmatched != nil {
			unmatched.close()
		}
	}()
	var rest func(cs *changeSet) func(dels, ins []rowRef) error
	if sp.lineage {
		rest = func(cs *changeSet) func(dels, ins []rowRef) error {
			return func(dels, ins []rowRef) error {
				if len(dels)+len(ins) == 0 {
					return nil
				}
				if unmatched == nil {
					sides := cs.dels
					if len(sides) == 0 {
						sides = cs.ins
					}
					s := sides[0].Schema()
					unmatched = newPartitioner(ctx, d.mem, d.spill, l, 0, s, s)
					hashCols = partitionColumns(s, pairingKey(p, sp), false)
				}
				for side, list := range [][]rowRef{sideDeleted: dels, sideInserted: ins} {
					batches := cs.dels
					if side == sideInserted {
						batches = cs.ins
					}
					if err := moveRows(ctx, d.mem, batches, list, func(rec arrow.RecordBatch) error {
						return unmatched.add(side, rec, rh.hashes(rec, hashCols))
					}); err != nil {
						return err
					}
				}
				return nil
			}
		}
	}
	err = part.each(func(pt partition) error {
		cs := &changeSet{dels: pt.batches[0], ins: pt.batches[1]}
		// Every row lineage leaves unmatched goes to the second pass, also
		// from a partition of one side: its match by value may be in
		// another partition of ids.
		var r func(dels, ins []rowRef) error
		if rest != nil {
			r = rest(cs)
		}
		return d.emitSet(ctx, asm, p, sp, rf, fold, cs, r, spooled)
	})
	if err != nil {
		return err
	}
	if unmatched != nil {
		second := sp
		second.lineage = false
		if err := unmatched.each(func(pt partition) error {
			return d.emitChanges(ctx, asm, p, second, rf, fold, &changeSet{dels: pt.batches[0], ins: pt.batches[1]}, spooled)
		}); err != nil {
			return err
		}
	}
	return out.each([]int{kindDelete, kindPair, kindInsert}, func(_ int, rec arrow.RecordBatch) error { return emit(rec) })
}

// moveRows copies the referenced rows (ordered by batch, then row) out of
// batches, one batch per source batch, and hands each to add, which takes
// it over.
func moveRows(ctx context.Context, mem memory.Allocator, batches []arrow.RecordBatch, list []rowRef,
	add func(arrow.RecordBatch) error) error {
	for i := 0; i < len(list); {
		b := list[i].b
		keep := make([]bool, batches[b].NumRows())
		for ; i < len(list) && list[i].b == b; i++ {
			keep[list[i].r] = true
		}
		rec, err := lake.SelectRows(ctx, mem, batches[b], func(r int) bool { return keep[r] })
		if err != nil {
			return err
		}
		if rec == nil {
			continue
		}
		if err := add(rec); err != nil {
			return err
		}
	}
	return nil
}

// partitionColumns are the columns whose hash partitions a snapshot's
// changed rows: the row id for a snapshot paired by row lineage (lineage
// set), else the identity columns when every one is in the schema, else
// every data column.
func partitionColumns(s *arrow.Schema, identity []string, lineage bool) []int {
	if id, _, ok := lineageColumns(s); ok && lineage {
		return []int{id}
	}
	var cols []int
	for _, n := range identity {
		idx := s.FieldIndices(n)
		if len(idx) != 1 {
			cols = nil
			break
		}
		cols = append(cols, idx[0])
	}
	if len(cols) > 0 {
		return cols
	}
	return dataColumns(s)
}

// emitChanges computes the changes of a change set held in memory (all of
// a snapshot's rows, or all of one partition's): carry-over rows cancel,
// deletes and inserts of one key pair, the filter applies. It emits them
// as batches each of one kind, deletes first, then pairs, then inserts.
func (d *diffReader) emitChanges(ctx context.Context, asm *assembler, p *Plan, sp SnapshotPlan, rf *filter.RowEvaluator,
	fold bool, cs *changeSet, emit func(arrow.RecordBatch) error) error {
	return d.emitSet(ctx, asm, p, sp, rf, fold, cs, nil, emit)
}

// emitSet is emitChanges, where rest, when set, takes the deleted and
// inserted rows that row lineage leaves unmatched instead of their being
// cancelled and paired here (the first pass over spilled partitions, see
// changes).
func (d *diffReader) emitSet(ctx context.Context, asm *assembler, p *Plan, sp SnapshotPlan, rf *filter.RowEvaluator,
	fold bool, cs *changeSet, rest func(dels, ins []rowRef) error, emit func(arrow.RecordBatch) error) error {
	dels, ins := refs(cs.dels), refs(cs.ins)
	var err error
	var pairs []refPair
	if sp.lineage && len(dels) > 0 && len(ins) > 0 {
		if id, seq, ok := lineageColumns(cs.dels[0].Schema()); ok {
			dels, ins, pairs = pairLineage(cs, dels, ins, id, seq)
		}
	}
	if rest != nil {
		if err := rest(dels, ins); err != nil {
			return err
		}
		dels, ins = nil, nil
	}
	if sp.rewrites {
		if dels, ins, err = cancelCarryOver(cs, dels, ins, identityColumns(cs, pairingKey(p, sp))); err != nil {
			return err
		}
	}
	dels, ins, pre := withPairs(dels, ins, pairs)
	// A format's own pair column is null on rows that are no update's
	// image (a plain delete or insert of the same commit): those never pair.
	nullsPair := len(p.Identity) > 0 || sp.pairKey == ""
	rows, err := orderChanges(cs, dels, ins, identityColumns(cs, pairingKey(p, sp)), nullsPair, fold, pre)
	if err != nil {
		return err
	}
	if rf != nil {
		before, err := evalBatches(rf, cs.dels)
		if err != nil {
			return err
		}
		after, err := evalBatches(rf, cs.ins)
		if err != nil {
			return err
		}
		rows = filterChanges(rows, pick(before, globalIndex(cs.dels, dels)), pick(after, globalIndex(cs.ins, ins)))
	}
	if len(rows) == 0 {
		return nil
	}
	// The images of the rows that remain, in the order of dels and ins.
	befores, err := d.gather(ctx, asm, cs.dels, dels)
	if err != nil {
		return err
	}
	defer befores.Release()
	afters, err := d.gather(ctx, asm, cs.ins, ins)
	if err != nil {
		return err
	}
	defer afters.Release()
	for start := 0; start < len(rows); {
		kind := kindOf(rows[start].op)
		end := start
		for end < len(rows) && kindOf(rows[end].op) == kind {
			end++
		}
		if err := asm.changesEach(ctx, befores, afters, rows[start:end], sp.Snapshot, emit); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// rowRef names row r of batch b of a list of batches.
type rowRef struct{ b, r int32 }

// refs lists the rows of batches in order.
func refs(batches []arrow.RecordBatch) []rowRef {
	var out []rowRef
	for b, rec := range batches {
		for r := range int(rec.NumRows()) {
			out = append(out, rowRef{int32(b), int32(r)})
		}
	}
	return out
}

// keyOf encodes the given columns of a referenced row.
func keyOf(buf []byte, batches []arrow.RecordBatch, ref rowRef, cols []int) ([]byte, error) {
	rec := batches[ref.b]
	var err error
	for _, c := range cols {
		if buf, err = rowkey.Append(buf, rec.Column(c), int(ref.r)); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
		}
	}
	return buf, nil
}

// keyHasNull reports whether a row's key holds a null.
func keyHasNull(batches []arrow.RecordBatch, ref rowRef, cols []int) bool {
	rec := batches[ref.b]
	for _, c := range cols {
		if rec.Column(c).IsNull(int(ref.r)) {
			return true
		}
	}
	return false
}

// cancelCarryOver removes the rows that the snapshot deleted and re-inserted
// unchanged (a copy-on-write rewrite keeps the rows it did not change):
// every inserted row equal, in every column, to a deleted row cancels one
// such deleted row. It returns the remaining deleted and inserted rows.
// identity holds the columns rows pair by, if any: the first is the fast
// path's hint (alignCarryOver).
func cancelCarryOver(cs *changeSet, dels, ins []rowRef, identity []int) ([]rowRef, []rowRef, error) {
	if len(dels) == 0 || len(ins) == 0 {
		return dels, ins, nil
	}
	// Lineage columns are no values: a writer that gives a kept row a new
	// id re-writes it unchanged all the same.
	s := cs.dels[0].Schema()
	cols := dataColumns(s)
	if _, _, lineage := lineageColumns(s); !lineage && len(cols) > 0 {
		// Rows equal in every data column are then the same image, so which
		// of equal deleted rows cancels is free: the fast path goes first.
		// (With lineage columns the images carry row ids, and the general
		// check's choice is kept.)
		hint := cols[0]
		if len(identity) > 0 && !lake.IsLineageColumn(s.Field(identity[0]).Name) {
			hint = identity[0]
		}
		if dels, ins = alignCarryOver(cs, dels, ins, cols, hint); len(dels) == 0 || len(ins) == 0 {
			return dels, ins, nil
		}
	}
	// Deleted rows chained by hash, compared column by column on a match:
	// no key is built for any row.
	rh := newRowHasher()
	delHash := hashRefs(rh, cs.dels, dels, cols)
	next := make([]int32, len(dels))
	head := make(map[uint64]int32, len(dels))
	for i, h := range delHash {
		prev, ok := head[h]
		if !ok {
			prev = -1
		}
		next[i], head[h] = prev, int32(i)
	}
	insHash := hashRefs(rh, cs.ins, ins, cols)
	same := newRowComparer(cs.dels, cs.ins, cols)
	cancelled := make([]bool, len(dels))
	var keptIns []rowRef
	for k, ref := range ins {
		match := int32(-1)
		if c, ok := head[insHash[k]]; ok {
			// The chain runs from the last deleted row to the first; cancel
			// the first one still standing.
			for ; c >= 0; c = next[c] {
				d := dels[c]
				if !cancelled[c] && same.equal(int(d.b), int(d.r), int(ref.b), int(ref.r)) {
					match = c
				}
			}
		}
		if match >= 0 {
			cancelled[match] = true
			continue
		}
		keptIns = append(keptIns, ref)
	}
	var keptDels []rowRef
	for i, ref := range dels {
		if !cancelled[i] {
			keptDels = append(keptDels, ref)
		}
	}
	return keptDels, keptIns, nil
}

// hashRefs hashes the referenced rows (ordered by batch, then row) over
// cols, one hash per ref: only the rows referenced are hashed.
func hashRefs(rh rowHasher, batches []arrow.RecordBatch, list []rowRef, cols []int) []uint64 {
	out := make([]uint64, 0, len(list))
	for i := 0; i < len(list); {
		b := list[i].b
		var rows []int32
		for ; i < len(list) && list[i].b == b; i++ {
			rows = append(rows, list[i].r)
		}
		if len(rows) == int(batches[b].NumRows()) {
			rows = nil // every row, in order
		}
		out = append(out, rh.hashRows(batches[b], cols, rows)...)
	}
	return out
}

// change is one output row: an op and the rows of its images (-1: none).
type change struct {
	op            string
	before, after int
}

// orderChanges arranges a snapshot's changes: deletes first, then update
// pairs (each update_before immediately followed by its update_after), then
// inserts. With identity columns, a deleted and an inserted row of the same
// key pair up, in order (a key with a null pairs only when nullsPair is
// set); with fold, a pair becomes one update row. pre, when set, holds for
// each inserted row the deleted row it pairs with already (by row lineage;
// -1: none), and those rows pair by no key. Indexes are into dels and ins.
func orderChanges(cs *changeSet, dels, ins []rowRef, identity []int, nullsPair, fold bool, pre []int) ([]change, error) {
	var out []change
	pairOf := make([]int, len(ins)) // the deleted row an inserted row pairs with, or -1
	paired := make([]bool, len(dels))
	for i := range pairOf {
		pairOf[i] = -1
		if pre != nil && pre[i] >= 0 {
			pairOf[i], paired[pre[i]] = pre[i], true
		}
	}
	if len(identity) > 0 && len(dels) > 0 && len(ins) > 0 {
		byKey := map[string][]int{}
		var key []byte
		var err error
		for i, ref := range dels {
			if paired[i] || !nullsPair && keyHasNull(cs.dels, ref, identity) {
				continue
			}
			if key, err = keyOf(key[:0], cs.dels, ref, identity); err != nil {
				return nil, err
			}
			byKey[string(key)] = append(byKey[string(key)], i)
		}
		for i, ref := range ins {
			if pairOf[i] >= 0 || !nullsPair && keyHasNull(cs.ins, ref, identity) {
				continue
			}
			if key, err = keyOf(key[:0], cs.ins, ref, identity); err != nil {
				return nil, err
			}
			if q := byKey[string(key)]; len(q) > 0 {
				pairOf[i], paired[q[0]] = q[0], true
				byKey[string(key)] = q[1:]
			}
		}
	}
	for i := range dels {
		if !paired[i] {
			out = append(out, change{op: OpDelete, before: i, after: -1})
		}
	}
	for i, d := range pairOf {
		switch {
		case d < 0:
		case fold:
			out = append(out, change{op: OpUpdate, before: d, after: i})
		default:
			out = append(out, change{op: OpUpdateBefore, before: d, after: -1},
				change{op: OpUpdateAfter, before: -1, after: i})
		}
	}
	for i, d := range pairOf {
		if d < 0 {
			out = append(out, change{op: OpInsert, before: -1, after: i})
		}
	}
	return out, nil
}

// pick returns values[at[i]] for each i.
func pick(values []filter.Truth, at []int) []filter.Truth {
	out := make([]filter.Truth, len(at))
	for i, g := range at {
		out[i] = values[g]
	}
	return out
}

// filterChanges keeps the changes the filter selects: an insert whose
// after-image matches, a delete whose before-image matches or is unknown
// (null in a filtered column), and an update pair, whole, when either image
// does. before and after are the filter's values on the rows the changes
// index.
func filterChanges(rows []change, before, after []filter.Truth) []change {
	beforeMatches := func(c change) bool { return c.before >= 0 && before[c.before] != filter.IsFalse }
	afterMatches := func(c change) bool { return c.after >= 0 && after[c.after] == filter.IsTrue }
	out := rows[:0]
	for i := 0; i < len(rows); i++ {
		c := rows[i]
		if c.op == OpUpdateBefore && i+1 < len(rows) {
			pair := rows[i+1]
			if beforeMatches(c) || afterMatches(pair) {
				out = append(out, c, pair)
			}
			i++
			continue
		}
		if beforeMatches(c) || afterMatches(c) {
			out = append(out, c)
		}
	}
	return out
}

// evalBatches evaluates a filter on the rows of batches, in order.
func evalBatches(rf *filter.RowEvaluator, batches []arrow.RecordBatch) ([]filter.Truth, error) {
	var out []filter.Truth
	for _, rec := range batches {
		v, err := rf.Eval(rec)
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
	}
	return out, nil
}

// gather builds the projected images of the referenced rows, in order
// (refs are ordered by batch, then row).
func (d *diffReader) gather(ctx context.Context, asm *assembler, batches []arrow.RecordBatch, list []rowRef) (arrow.Array, error) {
	if len(list) == 0 {
		return array.MakeArrayOfNull(d.mem, asm.image, 0), nil
	}
	return gatherRows(ctx, d.mem, len(list), func(i int) (int, int32) { return int(list[i].b), list[i].r },
		func(b int) (arrow.Array, error) { return asm.imageOf(batches[b]) })
}

// globalIndex maps each referenced row to its index in the concatenation
// of batches.
func globalIndex(batches []arrow.RecordBatch, list []rowRef) []int {
	offsets := make([]int, len(batches))
	n := 0
	for i, b := range batches {
		offsets[i] = n
		n += int(b.NumRows())
	}
	out := make([]int, len(list))
	for i, ref := range list {
		out[i] = offsets[ref.b] + int(ref.r)
	}
	return out
}

// pairingKey names the columns by which a snapshot's deleted and inserted
// rows pair up as updates: the request's identity, else the pair column of
// a format that records its update pairs (sp.pairKey).
func pairingKey(p *Plan, sp SnapshotPlan) []string {
	if len(p.Identity) == 0 && sp.pairKey != "" {
		return []string{sp.pairKey}
	}
	return p.Identity
}

// identityColumns finds the identity columns in the changed rows.
func identityColumns(cs *changeSet, identity []string) []int {
	var rec arrow.RecordBatch
	switch {
	case len(cs.dels) > 0:
		rec = cs.dels[0]
	case len(cs.ins) > 0:
		rec = cs.ins[0]
	default:
		return nil
	}
	var out []int
	for _, n := range identity {
		if idx := rec.Schema().FieldIndices(n); len(idx) == 1 {
			out = append(out, idx[0])
		}
	}
	return out
}
