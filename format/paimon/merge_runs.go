package paimon

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// A primary-key split is merged as Paimon's readers merge it: its files
// are sorted runs (each file is sorted by key; a level above 0 is one run
// of files whose key ranges do not overlap), read one batch at a time each
// and merged by key (a k-way merge), so that the merge holds one decoded
// batch per sorted run and the rows it has yet to hand over, whatever the
// bucket's size.

// sortedRuns groups the files of a split the merge reads into sorted runs:
// each level-0 file is a run of its own; the files of a level above 0 form
// one run in key order, unless their key ranges are unknown or overlap,
// when each is a run of its own.
func sortedRuns(target *Schema, files []*ManifestEntry) [][]*ManifestEntry {
	var types []DataType
	for _, f := range target.TrimmedPrimaryKeys() {
		types = append(types, f.Type)
	}
	byLevel := map[int][]*ManifestEntry{}
	var runs [][]*ManifestEntry
	for _, e := range files {
		if e.File.Level == 0 {
			runs = append(runs, []*ManifestEntry{e})
			continue
		}
		byLevel[e.File.Level] = append(byLevel[e.File.Level], e)
	}
	levels := make([]int, 0, len(byLevel))
	for l := range byLevel {
		levels = append(levels, l)
	}
	slices.Sort(levels)
	for _, l := range levels {
		es := byLevel[l]
		if run, ok := levelRun(es, types); ok {
			runs = append(runs, run)
			continue
		}
		for _, e := range es {
			runs = append(runs, []*ManifestEntry{e})
		}
	}
	return runs
}

// levelRun orders the files of one level by key range; false when a range
// is unknown or two overlap.
func levelRun(es []*ManifestEntry, types []DataType) ([]*ManifestEntry, bool) {
	type ranged struct {
		e *ManifestEntry
		r keyRange
	}
	rs := make([]ranged, 0, len(es))
	for _, e := range es {
		r, ok, err := fileKeyRange(&e.File, types)
		if err != nil || !ok {
			return nil, false
		}
		rs = append(rs, ranged{e, r})
	}
	var bad error
	slices.SortFunc(rs, func(a, b ranged) int {
		c, err := compareKeys(a.r.lo, b.r.lo)
		if err != nil {
			bad = err
		}
		return c
	})
	if bad != nil {
		return nil, false
	}
	out := make([]*ManifestEntry, len(rs))
	for i, r := range rs {
		if i > 0 {
			if c, err := compareKeys(rs[i-1].r.hi, r.r.lo); err != nil || c >= 0 {
				return nil, false
			}
		}
		out[i] = r.e
	}
	return out, true
}

// errStopRun ends a run's read early.
var errStopRun = errors.New("paimon: run read stopped")

// runCursor pulls the records of one sorted run, in key order: its
// current batch (owned) and row.
type runCursor struct {
	run   int
	next  func() (arrow.RecordBatch, error, bool)
	stop  func()
	rec   arrow.RecordBatch
	row   int
	seqs  *array.Int64
	kinds *array.Int8
}

// openRun starts reading run (with the system columns) as a cursor on its
// first record; rec is nil when the run is empty.
func (t *Table) openRun(ctx context.Context, target *Schema, out *arrow.Schema, sp *Split, run []*ManifestEntry,
	batchRows, idx int) (*runCursor, error) {
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		for _, e := range run {
			dv, err := t.deletionVector(ctx, sp, e.File.FileName)
			if err != nil {
				yield(nil, err)
				return
			}
			err = t.ReadFile(ctx, target, e, ReadOptions{SystemColumns: true, DeletionVector: dv, Output: out,
				BatchRows: batchRows}, func(rec arrow.RecordBatch) error {
				if !yield(rec, nil) {
					return errStopRun
				}
				return nil
			})
			if errors.Is(err, errStopRun) {
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
		}
	}
	return newRunCursor(idx, seq)
}

// newRunCursor starts pulling the batches of run idx (each with the
// sequence number and row kind columns first, in key order) from seq, as
// a cursor on its first record.
func newRunCursor(idx int, seq iter.Seq2[arrow.RecordBatch, error]) (*runCursor, error) {
	c := &runCursor{run: idx}
	c.next, c.stop = iter.Pull2(seq)
	if err := c.load(); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// load pulls the run's next non-empty batch (rec nil: none is left).
func (c *runCursor) load() error {
	for {
		rec, err, ok := c.next()
		if !ok {
			c.rec = nil
			return nil
		}
		if err != nil {
			return err
		}
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		seqs, ok1 := rec.Column(0).(*array.Int64)
		kinds, ok2 := rec.Column(1).(*array.Int8)
		if !ok1 || !ok2 {
			rec.Release()
			return fmt.Errorf("%w: system columns of the wrong type", ErrCorrupt)
		}
		c.rec, c.row, c.seqs, c.kinds = rec, 0, seqs, kinds
		return nil
	}
}

// advance moves to the run's next record, checking that the run is in key
// order; the batch left behind is released unless pinned.
func (c *runCursor) advance(keyCols []int) error {
	prev, prow := c.rec, c.row
	if c.row+1 < int(c.rec.NumRows()) {
		c.row++
	} else {
		prev.Retain()
		defer prev.Release()
		c.rec.Release()
		if err := c.load(); err != nil {
			return err
		}
		if c.rec == nil {
			return nil
		}
	}
	o, err := compareRowKeys(prev, prow, c.rec, c.row, keyCols)
	if err != nil {
		return err
	}
	if o > 0 {
		return fmt.Errorf("%w: a data file's records are not in key order", ErrCorrupt)
	}
	return nil
}

func (c *runCursor) close() {
	if c.rec != nil {
		c.rec.Release()
		c.rec = nil
	}
	c.stop()
}

// runRecord is one record of a key: where it is, its sequence number and row
// kind, and the run it came from.
type runRecord struct {
	rec  arrow.RecordBatch
	row  int
	seq  int64
	kind RowKind
	run  int
}

// mergeCursors merges sorted runs by key and hands fn the records of each
// key, ordered by sequence number (ties in run order), in key order. The
// batches the records point into are pinned in p, which keeps them until
// its unpinAll. The cursors stay the caller's to close.
func (t *Table) mergeCursors(ctx context.Context, cursors []*runCursor, keyCols []int, p *pins,
	fn func(recs []runRecord) error) error {
	var live []*runCursor
	for _, c := range cursors {
		if c.rec != nil {
			live = append(live, c)
		}
	}
	var recs []runRecord
	var cerr error
	less := func(a, b *runCursor) int {
		o, err := compareRowKeys(a.rec, a.row, b.rec, b.row, keyCols)
		if err != nil {
			cerr = err
		}
		if o != 0 {
			return o
		}
		return cmp.Compare(a.run, b.run)
	}
	for len(live) > 0 {
		// A handful of runs: a linear scan for the least key is cheaper
		// than a heap's bookkeeping.
		least := live[0]
		for _, c := range live[1:] {
			if less(c, least) < 0 {
				least = c
			}
		}
		if cerr != nil {
			return fmt.Errorf("%w: table %q: %w", ErrUnsupported, t.name, cerr)
		}
		keyRec, keyRow := least.rec, least.row
		p.pin(keyRec)
		recs = recs[:0]
		for _, c := range live {
			for c.rec != nil {
				o, err := compareRowKeys(c.rec, c.row, keyRec, keyRow, keyCols)
				if err != nil {
					return fmt.Errorf("%w: table %q: %w", ErrUnsupported, t.name, err)
				}
				if o != 0 {
					break
				}
				if c.seqs.IsNull(c.row) || c.kinds.IsNull(c.row) {
					return fmt.Errorf("%w: table %q: null sequence number or row kind", ErrCorrupt, t.name)
				}
				kind := RowKind(c.kinds.Value(c.row))
				if kind < RowInsert || kind > RowDelete {
					return fmt.Errorf("%w: table %q: row kind %d", ErrCorrupt, t.name, kind)
				}
				p.pin(c.rec)
				recs = append(recs, runRecord{rec: c.rec, row: c.row, seq: c.seqs.Value(c.row), kind: kind, run: c.run})
				if err := c.advance(keyCols); err != nil {
					return fmt.Errorf("table %q: %w", t.name, err)
				}
			}
		}
		slices.SortStableFunc(recs, func(a, b runRecord) int {
			if c := cmp.Compare(a.seq, b.seq); c != 0 {
				return c
			}
			return cmp.Compare(a.run, b.run)
		})
		if err := fn(recs); err != nil {
			return err
		}
		live = slices.DeleteFunc(live, func(c *runCursor) bool { return c.rec == nil })
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// pins are the batches a merge keeps past its cursors: those of the rows
// it has picked and not yet handed over.
type pins struct {
	list []arrow.RecordBatch
	set  map[arrow.RecordBatch]bool
}

// pin retains rec until unpinAll (once however often it is pinned).
func (p *pins) pin(rec arrow.RecordBatch) {
	if p.set == nil {
		p.set = map[arrow.RecordBatch]bool{}
	}
	if !p.set[rec] {
		rec.Retain()
		p.set[rec] = true
		p.list = append(p.list, rec)
	}
}

func (p *pins) len() int { return len(p.list) }

func (p *pins) unpinAll() {
	for _, rec := range p.list {
		rec.Release()
	}
	p.list = p.list[:0]
	clear(p.set)
}

// compareRowKeys compares the keys (columns cols) of row i of a and row j
// of b.
func compareRowKeys(a arrow.RecordBatch, i int, b arrow.RecordBatch, j int, cols []int) (int, error) {
	for _, c := range cols {
		o, err := compareValues(a.Column(c), i, b.Column(c), j)
		if err != nil || o != 0 {
			return o, err
		}
	}
	return 0, nil
}

// compareValues compares a[i] and b[j] (arrays of one type) as Paimon
// orders keys: nulls first, numbers by value, strings and binaries by
// their bytes (unsigned), false before true, times by instant.
func compareValues(a arrow.Array, i int, b arrow.Array, j int) (int, error) {
	switch an, bn := a.IsNull(i), b.IsNull(j); {
	case an && bn:
		return 0, nil
	case an:
		return -1, nil
	case bn:
		return 1, nil
	}
	switch x := a.(type) {
	case *array.Int8:
		if y, ok := b.(*array.Int8); ok {
			return cmp.Compare(x.Value(i), y.Value(j)), nil
		}
	case *array.Int16:
		if y, ok := b.(*array.Int16); ok {
			return cmp.Compare(x.Value(i), y.Value(j)), nil
		}
	case *array.Int32:
		if y, ok := b.(*array.Int32); ok {
			return cmp.Compare(x.Value(i), y.Value(j)), nil
		}
	case *array.Int64:
		if y, ok := b.(*array.Int64); ok {
			return cmp.Compare(x.Value(i), y.Value(j)), nil
		}
	case *array.Float32:
		if y, ok := b.(*array.Float32); ok {
			return cmp.Compare(x.Value(i), y.Value(j)), nil
		}
	case *array.Float64:
		if y, ok := b.(*array.Float64); ok {
			return cmp.Compare(x.Value(i), y.Value(j)), nil
		}
	case *array.String:
		if y, ok := b.(*array.String); ok {
			return cmp.Compare(x.Value(i), y.Value(j)), nil
		}
	case *array.Binary:
		if y, ok := b.(*array.Binary); ok {
			return bytes.Compare(x.Value(i), y.Value(j)), nil
		}
	case *array.Boolean:
		if y, ok := b.(*array.Boolean); ok {
			xv, yv := x.Value(i), y.Value(j)
			switch {
			case xv == yv:
				return 0, nil
			case !xv:
				return -1, nil
			}
			return 1, nil
		}
	case *array.Date32:
		if y, ok := b.(*array.Date32); ok {
			return cmp.Compare(x.Value(i), y.Value(j)), nil
		}
	case *array.Time64:
		if y, ok := b.(*array.Time64); ok {
			return cmp.Compare(x.Value(i), y.Value(j)), nil
		}
	case *array.Timestamp:
		if y, ok := b.(*array.Timestamp); ok {
			return cmp.Compare(x.Value(i), y.Value(j)), nil
		}
	case *array.Decimal128:
		if y, ok := b.(*array.Decimal128); ok {
			return x.Value(i).Cmp(y.Value(j)), nil
		}
	}
	return 0, fmt.Errorf("%w: key values of types %s and %s do not compare", ErrUnsupported, a.DataType(), b.DataType())
}
