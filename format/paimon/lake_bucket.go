package paimon

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

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

func (d *bucketDiff) Rows(ctx context.Context, r *lake.Read, commit int64, whole bool,
	emit func(side int, rec arrow.RecordBatch) error) error {
	rd, err := d.src.readerFor(ctx, r)
	if err != nil {
		return err
	}
	keyCols, err := rd.keyColumns()
	if err != nil {
		return err
	}
	tg := rd.narrow
	if whole {
		tg = rd.full
	}
	// Both sides come merged in key order: a merge join walks them once,
	// holding a batch of each.
	before := rd.mergedSide(ctx, commit, d.path, d.before, lake.SideDeleted, tg, emit)
	defer before.close()
	after := rd.mergedSide(ctx, commit, d.path, d.after, lake.SideInserted, tg, emit)
	defer after.close()
	if err := before.load(); err != nil {
		return err
	}
	if err := after.load(); err != nil {
		return err
	}
	for before.rec != nil || after.rec != nil {
		var o int
		switch {
		case before.rec == nil:
			o = 1
		case after.rec == nil:
			o = -1
		default:
			if o, err = compareRowKeys(before.rec, before.row, after.rec, after.row, keyCols); err != nil {
				return fmt.Errorf("%w: table %s: primary key: %w", lake.ErrUnsupported, rd.name, err)
			}
		}
		switch {
		case o < 0:
			err = before.advance(ctx)
		case o > 0:
			err = after.advance(ctx)
		default:
			// A key whose row is the same on both sides did not change.
			if sameRow(before.rec, before.row, after.rec, after.row) {
				before.same[before.row], after.same[after.row] = true, true
			}
			if err = before.advance(ctx); err == nil {
				err = after.advance(ctx)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// mergedSide walks the merged rows of one side of a bucket diff in key
// order, and emits each batch's rows that are not the same on the other
// side once it has walked past them.
type mergedSide struct {
	rd   *reader
	side int
	tg   *target
	emit func(side int, rec arrow.RecordBatch) error
	// next and stop pull the side's batches (nil: an empty side).
	next func() (arrow.RecordBatch, error, bool)
	stop func()
	// rec is the current batch (owned), row the current row, same marks
	// its rows that are the same on the other side.
	rec  arrow.RecordBatch
	row  int
	same []bool
}

// mergedSide starts the merged rows of split sp (nil: an empty side).
func (rd *reader) mergedSide(ctx context.Context, commit int64, path string, sp *Split, side int, tg *target,
	emit func(side int, rec arrow.RecordBatch) error) *mergedSide {
	m := &mergedSide{rd: rd, side: side, tg: tg, emit: emit}
	if sp == nil {
		return m
	}
	m.next, m.stop = iter.Pull2(func(yield func(arrow.RecordBatch, error) bool) {
		err := rd.mergeBucket(ctx, commit, path, sp, func(rec arrow.RecordBatch) error {
			if !yield(rec, nil) {
				return errStopRun
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStopRun) {
			yield(nil, err)
		}
	})
	return m
}

// load pulls the side's next non-empty batch (rec nil: none is left).
func (m *mergedSide) load() error {
	m.rec = nil
	if m.next == nil {
		return nil
	}
	for {
		rec, err, ok := m.next()
		if !ok {
			return nil
		}
		if err != nil {
			return err
		}
		if rec.NumRows() > 0 {
			m.rec, m.row, m.same = rec, 0, make([]bool, rec.NumRows())
			return nil
		}
		rec.Release()
	}
}

// advance moves to the next row; past a batch's last, it emits the
// batch's changed rows and loads the next.
func (m *mergedSide) advance(ctx context.Context) error {
	if m.row++; m.row < int(m.rec.NumRows()) {
		return nil
	}
	rec := m.rec
	m.rec = nil
	kept, err := lake.SelectRows(ctx, m.rd.r.Allocator, rec, func(row int) bool { return !m.same[row] })
	rec.Release()
	if err != nil {
		return err
	}
	if kept != nil {
		out := m.rd.project(kept, m.tg)
		kept.Release()
		if err := m.emit(m.side, out); err != nil {
			return err
		}
	}
	return m.load()
}

func (m *mergedSide) close() {
	if m.rec != nil {
		m.rec.Release()
		m.rec = nil
	}
	if m.stop != nil {
		m.stop()
	}
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
