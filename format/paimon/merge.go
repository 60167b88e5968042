package paimon

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/sluicefeed/sluice/internal/lib/kernelctx"
	"github.com/sluicefeed/sluice/internal/lib/pqread"
)

// ReadSplit reads the state of split sp as batches of target (usually
// the schema of the snapshot the split is of; its options say how to
// read). An append table's files are read in order with their deletion
// vectors applied. A primary-key table's records are merged by key (the
// primary key without the partition columns): per key the record with the
// highest sequence number wins, and the key is live when that record is
// +I or +U (deduplicate merge engine). With deletion vectors, files at
// level 0 are not yet part of the state and are skipped, as Paimon's
// readers do. fn takes each batch over and must release it.
//
// A primary-key split's batches come in key order. The merge reads its
// sorted runs one batch at a time each (merge_runs.go): it holds a batch
// per run and at most one batch of rows not yet handed to fn, whatever
// the split's size.
func (t *Table) ReadSplit(ctx context.Context, target *Schema, sp *Split, fn func(arrow.RecordBatch) error) error {
	return t.ReadSplitAs(ctx, target, nil, sp, fn)
}

// ReadSplitAs is ReadSplit with the batches' Arrow schema out (one field
// per field of target, in order; values convert to its types by pqread's
// widening rules); nil is the target's own.
func (t *Table) ReadSplitAs(ctx context.Context, target *Schema, out *arrow.Schema, sp *Split, fn func(arrow.RecordBatch) error) error {
	return t.readSplit(ctx, target, out, sp, 0, fn)
}

// readSplit is ReadSplitAs with batches of at most batchRows rows (0:
// pqread's default).
func (t *Table) readSplit(ctx context.Context, target *Schema, out *arrow.Schema, sp *Split, batchRows int,
	fn func(arrow.RecordBatch) error) error {
	if out == nil {
		var err error
		if out, err = OutputSchema(target, false); err != nil {
			return fmt.Errorf("table %q: %w", t.name, err)
		}
	}
	opts, err := target.TableOptions()
	if err != nil {
		return fmt.Errorf("table %q: %w", t.name, err)
	}
	if err := t.checkReadable(target, opts); err != nil {
		return err
	}
	if batchRows <= 0 {
		batchRows = pqread.DefaultBatchRows
	}
	if len(target.PrimaryKeys) == 0 {
		for i := range sp.Files {
			e := &sp.Files[i]
			dv, err := t.deletionVector(ctx, sp, e.File.FileName)
			if err != nil {
				return err
			}
			if err := t.ReadFile(ctx, target, e, ReadOptions{DeletionVector: dv, Output: out, BatchRows: batchRows}, fn); err != nil {
				return err
			}
		}
		return nil
	}
	return t.mergeSplit(ctx, target, out, opts, sp, batchRows, fn)
}

// keyRecord is one record of a key: where it is (batch and row), its
// sequence number and row kind.
type keyRecord struct {
	batch, row int
	seq        int64
	kind       RowKind
}

// mergeSplit merges a primary-key split by key over its sorted runs. With
// the deduplicate engine, each key's last record is kept when it is +I or
// +U; with partial-update and aggregation, every record of the keys
// gathered so far goes to the field merger, a batch's worth at a time,
// each key's records whole.
func (t *Table) mergeSplit(ctx context.Context, target *Schema, out *arrow.Schema, opts Options, sp *Split,
	batchRows int, fn func(arrow.RecordBatch) error) error {
	var files []*ManifestEntry
	for i := range sp.Files {
		e := &sp.Files[i]
		if opts.DeletionVectors && e.File.Level == 0 {
			continue
		}
		files = append(files, e)
	}
	keyCols, err := keyColumns(target)
	if err != nil {
		return fmt.Errorf("table %q: %w", t.name, err)
	}
	var fm *fieldMerger
	if opts.MergeEngine == MergePartialUpdate || opts.MergeEngine == MergeAggregation {
		if fm, err = t.newFieldMerger(target, opts.MergeEngine); err != nil {
			return err
		}
	}
	runs := sortedRuns(target, files)
	cursors := make([]*runCursor, 0, len(runs))
	defer func() {
		for _, c := range cursors {
			c.close()
		}
	}()
	for i, run := range runs {
		c, err := t.openRun(ctx, target, out, sp, run, batchRows, i)
		if err != nil {
			return err
		}
		cursors = append(cursors, c)
	}
	return t.mergeInto(ctx, target, out, fm, keyCols, batchRows, cursors, fn)
}

// mergeInto merges sorted runs (mergeCursors) into batches of schema out
// of at most batchRows rows. Without fm (deduplicate), each key's last
// record is kept when it is +I or +U; with fm (partial-update,
// aggregation; target is the table's schema), every record of the keys
// gathered so far goes to it, a batch's worth at a time, each key's
// records whole.
func (t *Table) mergeInto(ctx context.Context, target *Schema, out *arrow.Schema, fm *fieldMerger, keyCols []int,
	batchRows int, cursors []*runCursor, fn func(arrow.RecordBatch) error) error {
	// The batches pinned for picked rows: a run's batch while the run is
	// on it, and a few it left, before the picks are handed over.
	maxPins := 2*len(cursors) + 8
	cctx := kernelctx.For(ctx, t.mem)
	var picks []runRecord
	p := &pins{}
	defer p.unpinAll()
	flush := func() error {
		defer func() {
			picks = picks[:0]
			p.unpinAll()
		}()
		if len(picks) == 0 {
			return nil
		}
		if fm == nil {
			rec, err := t.gatherPicks(cctx, out, picks, 2)
			if err != nil {
				return err
			}
			return fn(rec)
		}
		raw, err := t.gatherPicks(cctx, picks[0].rec.Schema(), picks, 0)
		if err != nil {
			return err
		}
		defer raw.Release()
		return fm.merge(ctx, t, target, out, []arrow.RecordBatch{raw}, keyCols, fn)
	}
	err := t.mergeCursors(ctx, cursors, keyCols, p, func(recs []runRecord) error {
		if fm != nil {
			picks = append(picks, recs...)
		} else if w := recs[len(recs)-1]; w.kind == RowInsert || w.kind == RowUpdateAfter {
			picks = append(picks, w)
		}
		if len(picks) >= batchRows || p.len() > maxPins {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// gatherPicks builds one batch of schema out from the columns, from column
// from on, of the picked rows, in order.
func (t *Table) gatherPicks(ctx context.Context, out *arrow.Schema, picks []runRecord, from int) (arrow.RecordBatch, error) {
	var parts []arrow.RecordBatch
	defer func() {
		for _, b := range parts {
			b.Release()
		}
	}()
	for i := 0; i < len(picks); {
		j := i
		var rows []int64
		for j < len(picks) && picks[j].rec == picks[i].rec {
			rows = append(rows, int64(picks[j].row))
			j++
		}
		b, err := t.take(ctx, out, picks[i].rec, rows, from)
		if err != nil {
			return nil, err
		}
		parts = append(parts, b)
		i = j
	}
	if len(parts) == 1 {
		parts[0].Retain()
		return parts[0], nil
	}
	cols := make([]arrow.Array, 0, out.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for c := range out.NumFields() {
		arrs := make([]arrow.Array, len(parts))
		for i, b := range parts {
			arrs[i] = b.Column(c)
		}
		col, err := array.Concatenate(arrs, t.mem)
		if err != nil {
			return nil, fmt.Errorf("table %q: %w", t.name, err)
		}
		cols = append(cols, col)
	}
	return array.NewRecordBatch(out, cols, int64(len(picks))), nil
}

// take builds a batch of schema out from the columns of b, from column
// from on, at rows.
func (t *Table) take(ctx context.Context, out *arrow.Schema, b arrow.RecordBatch, rows []int64, from int) (arrow.RecordBatch, error) {
	ib := array.NewInt64Builder(t.mem)
	defer ib.Release()
	ib.AppendValues(rows, nil)
	idx := ib.NewInt64Array()
	defer idx.Release()
	cols := make([]arrow.Array, 0, out.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for c := from; c < int(b.NumCols()); c++ {
		a, err := compute.TakeArray(ctx, b.Column(c), idx)
		if err != nil {
			return nil, fmt.Errorf("table %q: %w", t.name, err)
		}
		cols = append(cols, a)
	}
	return array.NewRecordBatch(out, cols, int64(len(rows))), nil
}

// keyColumns are the indices, in a batch with the system columns first,
// of the trimmed primary key columns of s.
func keyColumns(s *Schema) ([]int, error) {
	var out []int
	for _, k := range s.TrimmedPrimaryKeys() {
		idx := slices.IndexFunc(s.Fields, func(f Field) bool { return f.ID == k.ID })
		if idx < 0 {
			return nil, fmt.Errorf("%w: key column %q", ErrCorrupt, k.Name)
		}
		out = append(out, idx+2)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: primary-key table without key columns", ErrCorrupt)
	}
	return out, nil
}

// appendKey appends an unambiguous encoding of a[i] (a key column:
// primitive types, strings, binaries) to key.
func appendKey(key []byte, a arrow.Array, i int) []byte {
	if a.IsNull(i) {
		return append(key, 0)
	}
	var s string
	switch c := a.(type) {
	case *array.String:
		s = c.Value(i)
	case *array.Binary:
		s = string(c.Value(i))
	default:
		s = a.ValueStr(i)
	}
	key = append(key, 1)
	key = binary.AppendUvarint(key, uint64(len(s)))
	return append(key, s...)
}
