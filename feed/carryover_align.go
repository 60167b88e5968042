package feed

import (
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// This file is the fast path of the carry-over check (cancelCarryOver): a
// copy-on-write rewrite keeps most rows of the file it replaces, and its
// writer mostly keeps their relative order (delta-rs's MERGE interleaves a
// few ordered streams, one per partition of its plan; Spark and
// iceberg-go keep the file's order). So instead of hashing every column of
// every row of both sides, each inserted row is first matched, on one
// column (the hint: an identity column, else the first data column), to a
// deleted row found where the previous matches point: just after the last
// match, a few rows further on, or just after a recent match of another
// stream. Only a row none of those holds is looked up by the hint's hash.
// The matches are then confirmed column by column over every data column,
// and the rows that do not confirm, or find no match, go to the general
// check by whole-row hash. Any order is exact (a shuffled rewrite finds its
// rows by the hint's hash), only slower.

const (
	// alignWindow is how many deleted rows past the latest match are tried.
	alignWindow = 8
	// alignCursors is how many recent matches are remembered (one per
	// stream a writer interleaves), their successors tried before a lookup.
	alignCursors = 16
	// alignChain bounds the deleted rows of one hint value tried on a
	// lookup: a hint of few distinct values leaves the rest to the general
	// check rather than compare long chains.
	alignChain = 8
)

// alignCarryOver cancels the inserted rows of ins that equal, in every
// column of cols, a deleted row of dels found from the hint column (see
// above), one deleted row each. It returns the deleted and inserted rows
// it did not cancel, in order.
func alignCarryOver(cs *changeSet, dels, ins []rowRef, cols []int, hint int) (restDels, restIns []rowRef) {
	a := newAligner(cols, hint)
	a.addBase(cs.dels, dels)
	cand := a.match(cs.ins, ins)
	for j, ref := range ins {
		if cand[j] < 0 {
			restIns = append(restIns, ref)
		}
	}
	for i, ref := range dels {
		if !a.claimed[i] {
			restDels = append(restDels, ref)
		}
	}
	return restDels, restIns
}

// aligner matches rows of one side of a rewrite (the base: rows it holds)
// with rows of the other as they come, each base row to at most one.
type aligner struct {
	cols []int
	hint int
	// base holds the base side's batches; refs the base rows that may
	// match, in order, and claimed those matched.
	base    []arrow.RecordBatch
	refs    []rowRef
	claimed []bool
	// cursors[k] is the base row after a recent match, most recent first.
	cursors []int32
	index   hintIndex
}

func newAligner(cols []int, hint int) *aligner {
	return &aligner{cols: cols, hint: hint, cursors: make([]int32, 1, alignCursors),
		index: hintIndex{hint: hint, rh: newRowHasher()}}
}

// addBase sets the base side's batches (the earlier ones, then more) and
// adds the base rows list names (after those added before) to those that
// may match.
func (a *aligner) addBase(batches []arrow.RecordBatch, list []rowRef) {
	a.base = batches
	a.refs = append(a.refs, list...)
	a.claimed = append(a.claimed, make([]bool, len(list))...)
}

// match matches the rows list names (of batches, the other side) in order,
// and returns, for each, the index in the base rows of the row it equals
// in every column and now claims, or -1.
func (a *aligner) match(batches []arrow.RecordBatch, list []rowRef) []int32 {
	cand := make([]int32, len(list))
	if len(a.refs) == 0 {
		for j := range cand {
			cand[j] = -1
		}
		return cand
	}
	hintEq := columnComparer(a.base, batches, a.hint)
	matches := func(d, i rowRef) bool { return hintEq(int(d.b), int(d.r), int(i.b), int(i.r)) }
	n := int32(len(a.refs))
	for j, ref := range list {
		found := int32(-1)
		for k, c := range a.cursors {
			end := c + 1 // other streams: their next row only
			if k == 0 {
				end = c + alignWindow
			}
			for q := c; q < min(end, n); q++ {
				if !a.claimed[q] && matches(a.refs[q], ref) {
					found = q
					break
				}
			}
			if found >= 0 {
				copy(a.cursors[1:k+1], a.cursors[:k])
				break
			}
		}
		if found < 0 {
			if found = a.index.find(a.base, a.refs, batches, ref, a.claimed, matches); found >= 0 {
				if len(a.cursors) < alignCursors {
					a.cursors = append(a.cursors, 0)
				}
				copy(a.cursors[1:], a.cursors[:len(a.cursors)-1])
			}
		}
		cand[j] = found
		if found >= 0 {
			a.claimed[found] = true
			a.cursors[0] = found + 1
		}
	}
	// Confirm every match column by column: one column's values of all the
	// matched rows at a time.
	for _, c := range a.cols {
		if c == a.hint {
			continue
		}
		eq := columnComparer(a.base, batches, c)
		for j, d := range cand {
			if d >= 0 {
				dr, ir := a.refs[d], list[j]
				if !eq(int(dr.b), int(dr.r), int(ir.b), int(ir.r)) {
					a.claimed[d], cand[j] = false, -1
				}
			}
		}
	}
	return cand
}

// keep returns, for each base batch, which of its rows are not claimed
// (nil for a batch none of whose rows is).
func (a *aligner) keep() [][]bool {
	out := make([][]bool, len(a.base))
	for i, ref := range a.refs {
		if !a.claimed[i] {
			continue
		}
		if out[ref.b] == nil {
			out[ref.b] = make([]bool, a.base[ref.b].NumRows())
			for r := range out[ref.b] {
				out[ref.b][r] = true
			}
		}
		out[ref.b][ref.r] = false
	}
	return out
}

// hintIndex finds base rows by their hint column: by binary search while
// the base rows' hints are integers in order without a null (a file
// written in the order of its ids), else by the hint's hash, indexing the
// rows on first use (a rewrite in kept order never needs it) and the rows
// added since on later ones.
type hintIndex struct {
	hint int
	// ordered counts the base rows whose hints are checked to be integers
	// in order, -1 once one is not; last is the last one's hint.
	ordered int
	last    int64
	rh      rowHasher
	head    map[uint64]int32 // hash to the last base row of it
	next    []int32          // the base row of the same hash before, -1: none
	indexed int              // base rows indexed
	hashed  []uint64         // the hint's hashes of the rows of the base batch last read
	hashedB int32            // that batch, -1: none
}

// find returns an unclaimed base row whose hint matches the row ref of
// batches (the first of them in row order among the alignChain tried), or
// -1.
func (x *hintIndex) find(base []arrow.RecordBatch, refs []rowRef, batches []arrow.RecordBatch, ref rowRef,
	claimed []bool, matches func(d, i rowRef) bool) int32 {
	if x.inOrder(base, refs) {
		v, ok := intHint(batches[ref.b].Column(x.hint), int(ref.r))
		if !ok {
			return -1 // a null: no base row has one
		}
		hintAt := func(i int) int64 {
			h, _ := intHint(base[refs[i].b].Column(x.hint), int(refs[i].r))
			return h
		}
		lo := sort.Search(len(refs), func(i int) bool { return hintAt(i) >= v })
		for q, n := lo, 0; q < len(refs) && n < alignChain && hintAt(q) == v; q, n = q+1, n+1 {
			if !claimed[q] && matches(refs[q], ref) {
				return int32(q)
			}
		}
		return -1
	}
	x.build(base, refs)
	h := x.rh.hashRows(batches[ref.b], []int{x.hint}, []int32{ref.r})[0]
	c, ok := x.head[h]
	if !ok {
		return -1
	}
	found := int32(-1)
	for n := 0; c >= 0 && n < alignChain; c, n = x.next[c], n+1 {
		if !claimed[c] && matches(refs[c], ref) {
			found = c // the chain runs backwards: keep the earliest
		}
	}
	return found
}

// inOrder reports whether the hints of the base rows are integers in
// order, without a null, checking the rows added since it last did.
func (x *hintIndex) inOrder(base []arrow.RecordBatch, refs []rowRef) bool {
	for ; x.ordered >= 0 && x.ordered < len(refs); x.ordered++ {
		ref := refs[x.ordered]
		v, ok := intHint(base[ref.b].Column(x.hint), int(ref.r))
		if !ok || x.ordered > 0 && v < x.last {
			x.ordered = -1
			return false
		}
		x.last = v
	}
	return x.ordered >= 0
}

// intHint returns the value of row r of an integer column (int64, int32,
// timestamp, date) as an int64; ok is false for a null or another type.
func intHint(col arrow.Array, r int) (v int64, ok bool) {
	if col.IsNull(r) {
		return 0, false
	}
	switch a := col.(type) {
	case *array.Int64:
		return a.Value(r), true
	case *array.Int32:
		return int64(a.Value(r)), true
	case *array.Timestamp:
		return int64(a.Value(r)), true
	case *array.Date32:
		return int64(a.Value(r)), true
	}
	return 0, false
}

// build indexes the base rows not yet indexed: it hashes their hint column
// and chains the rows of each hash, last first.
func (x *hintIndex) build(base []arrow.RecordBatch, refs []rowRef) {
	if x.head == nil {
		x.head, x.hashedB = make(map[uint64]int32, len(refs)), -1
	}
	for i := x.indexed; i < len(refs); i++ {
		ref := refs[i]
		if ref.b != x.hashedB {
			x.hashed, x.hashedB = x.rh.hashes(base[ref.b], []int{x.hint}), ref.b
		}
		h := x.hashed[ref.r]
		prev, ok := x.head[h]
		if !ok {
			prev = -1
		}
		x.next = append(x.next, prev)
		x.head[h] = int32(i)
	}
	x.indexed = len(refs)
}
