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
// The merge holds the split's records in memory.
func (t *Table) ReadSplit(ctx context.Context, target *Schema, sp *Split, fn func(arrow.RecordBatch) error) error {
	return t.ReadSplitAs(ctx, target, nil, sp, fn)
}

// ReadSplitAs is ReadSplit with the batches' Arrow schema out (one field
// per field of target, in order; values convert to its types by pqread's
// widening rules); nil is the target's own.
func (t *Table) ReadSplitAs(ctx context.Context, target *Schema, out *arrow.Schema, sp *Split, fn func(arrow.RecordBatch) error) error {
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
	if len(target.PrimaryKeys) == 0 {
		for i := range sp.Files {
			e := &sp.Files[i]
			dv, err := t.deletionVector(ctx, sp, e.File.FileName)
			if err != nil {
				return err
			}
			if err := t.ReadFile(ctx, target, e, ReadOptions{DeletionVector: dv, Output: out}, fn); err != nil {
				return err
			}
		}
		return nil
	}
	return t.mergeSplit(ctx, target, out, opts, sp, fn)
}

// keyRecord is one record of a key: where it is (batch and row), its
// sequence number and row kind.
type keyRecord struct {
	batch, row int
	seq        int64
	kind       RowKind
}

// mergeSplit merges a primary-key split (deduplicate).
func (t *Table) mergeSplit(ctx context.Context, target *Schema, out *arrow.Schema, opts Options, sp *Split, fn func(arrow.RecordBatch) error) error {
	var batches []arrow.RecordBatch
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	for i := range sp.Files {
		e := &sp.Files[i]
		if opts.DeletionVectors && e.File.Level == 0 {
			continue
		}
		dv, err := t.deletionVector(ctx, sp, e.File.FileName)
		if err != nil {
			return err
		}
		err = t.ReadFile(ctx, target, e, ReadOptions{SystemColumns: true, DeletionVector: dv, Output: out}, func(rec arrow.RecordBatch) error {
			batches = append(batches, rec)
			return nil
		})
		if err != nil {
			return err
		}
	}
	keyCols, err := keyColumns(target)
	if err != nil {
		return fmt.Errorf("table %q: %w", t.name, err)
	}
	if opts.MergeEngine == MergePartialUpdate || opts.MergeEngine == MergeAggregation {
		m, err := t.newFieldMerger(target, opts.MergeEngine)
		if err != nil {
			return err
		}
		return m.merge(ctx, t, target, out, batches, keyCols, fn)
	}
	wins := map[string]keyRecord{}
	var key []byte
	for bi, b := range batches {
		seqs, ok1 := b.Column(0).(*array.Int64)
		kinds, ok2 := b.Column(1).(*array.Int8)
		if !ok1 || !ok2 {
			return fmt.Errorf("%w: table %q: system columns of the wrong type", ErrCorrupt, t.name)
		}
		for r := range int(b.NumRows()) {
			if seqs.IsNull(r) || kinds.IsNull(r) {
				return fmt.Errorf("%w: table %q: null sequence number or row kind", ErrCorrupt, t.name)
			}
			kind := RowKind(kinds.Value(r))
			if kind < RowInsert || kind > RowDelete {
				return fmt.Errorf("%w: table %q: row kind %d", ErrCorrupt, t.name, kind)
			}
			key = key[:0]
			for _, c := range keyCols {
				key = appendKey(key, b.Column(c), r)
			}
			w := keyRecord{batch: bi, row: r, seq: seqs.Value(r), kind: kind}
			if old, ok := wins[string(key)]; !ok || w.seq >= old.seq {
				wins[string(key)] = w
			}
		}
	}
	picks := make([][]int64, len(batches))
	for _, w := range wins {
		if w.kind == RowInsert || w.kind == RowUpdateAfter {
			picks[w.batch] = append(picks[w.batch], int64(w.row))
		}
	}
	cctx := kernelctx.For(ctx, t.mem)
	for bi, rows := range picks {
		if len(rows) == 0 {
			continue
		}
		slices.Sort(rows)
		rec, err := t.take(cctx, out, batches[bi], rows)
		if err != nil {
			return err
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	return nil
}

// take builds a batch of schema out from the data columns (after the two
// system columns) of b at rows.
func (t *Table) take(ctx context.Context, out *arrow.Schema, b arrow.RecordBatch, rows []int64) (arrow.RecordBatch, error) {
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
	for c := 2; c < int(b.NumCols()); c++ {
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
