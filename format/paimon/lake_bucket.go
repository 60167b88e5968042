package paimon

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/sluicefeed/sluice/internal/lib/rowkey"
	"github.com/sluicefeed/sluice/lake"
)

// bucketDiff is one bucket of a primary-key table that a snapshot
// touched, as a change file of the engine: its merged rows before the
// snapshot (nil: the bucket was empty) and after it (nil: emptied). Its
// rows are the keys gone (deleted side), the keys new (inserted side), and
// both images of each key whose row changed, which the engine pairs by
// primary key.
type bucketDiff struct {
	src           *Source
	path          string
	before, after *Split
}

func (d *bucketDiff) Path() string { return d.path }

// bucketRows are the merged rows of one side of a bucket.
type bucketRows struct {
	batches []arrow.RecordBatch
}

func (b *bucketRows) release() {
	for _, rec := range b.batches {
		rec.Release()
	}
}

func (d *bucketDiff) Rows(ctx context.Context, r *lake.Read, commit int64, whole bool,
	emit func(side int, rec arrow.RecordBatch) error) error {
	rd, err := d.src.readerFor(ctx, r)
	if err != nil {
		return err
	}
	read := func(sp *Split) (*bucketRows, error) {
		out := &bucketRows{}
		if sp == nil {
			return out, nil
		}
		err := rd.mergeBucket(ctx, commit, d.path, sp, func(rec arrow.RecordBatch) error {
			out.batches = append(out.batches, rec)
			return nil
		})
		if err != nil {
			out.release()
			return nil, err
		}
		return out, nil
	}
	before, err := read(d.before)
	if err != nil {
		return err
	}
	defer before.release()
	after, err := read(d.after)
	if err != nil {
		return err
	}
	defer after.release()

	keyCols, err := rd.keyColumns()
	if err != nil {
		return err
	}
	// Index the rows before by key.
	type at struct{ b, r int }
	byKey := map[string]at{}
	var key []byte
	for bi, rec := range before.batches {
		for ri := range int(rec.NumRows()) {
			if key, err = rowKey(key[:0], rec, keyCols, ri); err != nil {
				return err
			}
			byKey[string(key)] = at{bi, ri}
		}
	}
	// A key whose row is the same on both sides did not change.
	sameBefore := make([][]bool, len(before.batches))
	for i, rec := range before.batches {
		sameBefore[i] = make([]bool, rec.NumRows())
	}
	sameAfter := make([][]bool, len(after.batches))
	for ai, rec := range after.batches {
		sameAfter[ai] = make([]bool, rec.NumRows())
		for ri := range int(rec.NumRows()) {
			if key, err = rowKey(key[:0], rec, keyCols, ri); err != nil {
				return err
			}
			if p, ok := byKey[string(key)]; ok && sameRow(before.batches[p.b], p.r, rec, ri) {
				sameBefore[p.b][p.r], sameAfter[ai][ri] = true, true
			}
		}
	}
	tg := rd.narrow
	if whole {
		tg = rd.full
	}
	send := func(side int, batches []arrow.RecordBatch, same [][]bool) error {
		for i, rec := range batches {
			kept, err := lake.SelectRows(ctx, r.Allocator, rec, func(row int) bool { return !same[i][row] })
			if err != nil || kept == nil {
				if err != nil {
					return err
				}
				continue
			}
			out := rd.project(kept, tg)
			kept.Release()
			if err := emit(side, out); err != nil {
				return err
			}
		}
		return nil
	}
	if err := send(lake.SideDeleted, before.batches, sameBefore); err != nil {
		return err
	}
	return send(lake.SideInserted, after.batches, sameAfter)
}

// keyColumns are the columns of the full target that hold the trimmed
// primary key (the key within a partition's bucket).
func (rd *reader) keyColumns() ([]int, error) {
	var out []int
	for _, k := range rd.end.TrimmedPrimaryKeys() {
		found := false
		for i, id := range rd.full.ids {
			if id == k.ID {
				out, found = append(out, i), true
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: table %s: key column %q is not in its schema", lake.ErrUnreadable, rd.name, k.Name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: table %s: primary-key table without key columns", lake.ErrUnreadable, rd.name)
	}
	return out, nil
}

// rowKey appends the encoding of row r's key columns to buf.
func rowKey(buf []byte, rec arrow.RecordBatch, cols []int, r int) ([]byte, error) {
	var err error
	for _, c := range cols {
		if buf, err = rowkey.Append(buf, rec.Column(c), r); err != nil {
			return nil, fmt.Errorf("%w: primary key: %w", lake.ErrUnsupported, err)
		}
	}
	return buf, nil
}

// sameRow reports whether row i of a and row j of b hold equal values in
// every column (the batches have one schema).
func sameRow(a arrow.RecordBatch, i int, b arrow.RecordBatch, j int) bool {
	for c := range int(a.NumCols()) {
		if !array.SliceEqual(a.Column(c), int64(i), int64(i+1), b.Column(c), int64(j), int64(j+1)) {
			return false
		}
	}
	return true
}
