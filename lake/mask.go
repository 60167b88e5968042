package lake

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/internal/lib/kernelctx"
	"github.com/sluicefeed/sluice/internal/lib/rowkey"
)

// Sides of the rows a commit's files yield.
const (
	// SideDeleted: live before the commit, not after.
	SideDeleted = 0
	// SideInserted: live after the commit, not before.
	SideInserted = 1
)

// Mask is what one side's deletes (before or after a commit) delete in one
// data file: positions (position deletes, deletion vectors) and keys
// (equality deletes), evaluated batch by batch as the file is read.
type Mask struct {
	// Positions are the deleted row positions (never nil).
	Positions *roaring.Bitmap
	// Equality are the equality delete files that apply.
	Equality []EqualityDeletes
}

// EqualityDeletes is one equality delete file: the keys it deletes over
// its equality fields.
type EqualityDeletes struct {
	// File is the delete file's path, for errors.
	File string
	// Fields are the field ids of its equality fields, in key order.
	Fields []int
	// Keys are the deleted keys, encoded by rowkey.Row over the fields.
	Keys map[string]struct{}
}

// Deleted reports, for each row of rec (the file's rows from position
// first on), whether the mask deletes it. keyCol resolves an equality
// field id to rec's column.
func (m *Mask) Deleted(rec arrow.RecordBatch, first int, keyCol func(fieldID int) (int, error)) ([]bool, error) {
	n := int(rec.NumRows())
	out := make([]bool, n)
	if !m.Positions.IsEmpty() {
		it := m.Positions.Iterator()
		it.AdvanceIfNeeded(uint32(first))
		for it.HasNext() {
			p := int(it.Next()) - first
			if p >= n {
				break
			}
			out[p] = true
		}
	}
	for _, eq := range m.Equality {
		arrs := make([]arrow.Array, len(eq.Fields))
		for i, id := range eq.Fields {
			c, err := keyCol(id)
			if err != nil {
				return nil, fmt.Errorf("equality delete file %s: %w", eq.File, err)
			}
			arrs[i] = rec.Column(c)
		}
		var key []byte
		var err error
		for r := range n {
			if out[r] {
				continue
			}
			if key, err = rowkey.Row(key[:0], arrs, r); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
			}
			if _, ok := eq.Keys[string(key)]; ok {
				out[r] = true
			}
		}
	}
	return out, nil
}

// ChangedRowGroups returns the row groups (sorted) of a file whose row
// groups start at the positions first and hold rows rows that hold a
// position one side's positions delete and the other's not.
func ChangedRowGroups(first, rows []int64, before, after *roaring.Bitmap) []int {
	cand := make([]bool, len(rows))
	changed := roaring.Xor(before, after).Iterator()
	for changed.HasNext() {
		p := int64(changed.Next())
		rg, found := slices.BinarySearch(first, p)
		if !found {
			rg--
		}
		cand[rg] = true
		// Skip the rest of the row group.
		if end := first[rg] + rows[rg]; end <= math.MaxUint32 {
			changed.AdvanceIfNeeded(uint32(end))
		} else {
			break
		}
	}
	var out []int
	for rg, c := range cand {
		if c {
			out = append(out, rg)
		}
	}
	return out
}

// SelectRows returns the rows of rec for which keep is true, or nil when
// there is none (rec itself, retained, when every row is kept).
func SelectRows(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, keep func(int) bool) (arrow.RecordBatch, error) {
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
	out, err := compute.FilterRecordBatch(kernelctx.For(ctx, mem), rec, mask, compute.DefaultFilterOptions())
	if err != nil {
		return nil, fmt.Errorf("select changed rows: %w", err)
	}
	return out, nil
}

// EmitSides hands emit the rows of rec on each side, deletes first: the
// rows r for which in(r, side). The caller keeps rec; emit takes over each
// batch.
func EmitSides(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, in func(r, side int) bool,
	emit func(side int, rec arrow.RecordBatch) error) error {
	for _, side := range []int{SideDeleted, SideInserted} {
		out, err := SelectRows(ctx, mem, rec, func(r int) bool { return in(r, side) })
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
