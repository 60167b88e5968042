package paimon

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
)

// checkPartialUpdate refuses the partial-update options ReadSplit does not
// implement: sequence groups and per-field aggregation, and deletes with
// neither ignore-delete nor partial-update.remove-record-on-delete (the
// writer refuses those, so they cannot be in a table).
func (t *Table) checkPartialUpdate(s *Schema) error {
	for k := range s.Options {
		if strings.HasPrefix(k, "fields.") || k == "partial-update.remove-record-on-sequence-group" {
			return fmt.Errorf("%w: table %q: partial-update with option %s (sequence groups and per-field aggregation are not read)", ErrUnsupportedMergeEngine, t.name, k)
		}
	}
	return nil
}

// partialUpdate merges a partial-update split: per key, in sequence
// order, each +I or +U record sets the fields it holds non-null; a -D
// record removes the row (partial-update.remove-record-on-delete) or is
// skipped (ignore-delete), and -U records are skipped. A key whose last
// record is such a -D is not live.
func (t *Table) partialUpdate(ctx context.Context, target *Schema, batches []arrow.RecordBatch, keyCols []int, fn func(arrow.RecordBatch) error) error {
	ignoreDelete := strings.EqualFold(target.Options["ignore-delete"], "true") ||
		strings.EqualFold(target.Options["partial-update.ignore-delete"], "true")
	removeOnDelete := strings.EqualFold(target.Options["partial-update.remove-record-on-delete"], "true")
	offsets := make([]int, len(batches)+1)
	for i, b := range batches {
		offsets[i+1] = offsets[i] + int(b.NumRows())
	}
	byKey := map[string][]keyRecord{}
	var order []string
	var key []byte
	for bi, b := range batches {
		seqs := b.Column(0).(*array.Int64)
		kinds := b.Column(1).(*array.Int8)
		for r := range int(b.NumRows()) {
			key = key[:0]
			for _, c := range keyCols {
				key = appendKey(key, b.Column(c), r)
			}
			k := string(key)
			if _, ok := byKey[k]; !ok {
				order = append(order, k)
			}
			byKey[k] = append(byKey[k], keyRecord{batch: bi, row: r, seq: seqs.Value(r), kind: RowKind(kinds.Value(r))})
		}
	}
	ncols := len(target.Fields)
	// picks[c] is, per output row, the global row index its column c comes
	// from, -1 for null.
	picks := make([][]int64, ncols)
	for _, k := range order {
		recs := byKey[k]
		slices.SortStableFunc(recs, func(a, b keyRecord) int { return cmp.Compare(a.seq, b.seq) })
		row := make([]int64, ncols)
		for c := range row {
			row[c] = -1
		}
		live := false
		for _, rec := range recs {
			b := batches[rec.batch]
			switch rec.kind {
			case RowUpdateBefore:
				continue
			case RowDelete:
				if ignoreDelete {
					continue
				}
				if !removeOnDelete {
					return fmt.Errorf("%w: table %q: partial-update record deleted without ignore-delete or partial-update.remove-record-on-delete", ErrUnsupportedMergeEngine, t.name)
				}
				for c := range row {
					row[c] = -1
				}
				live = false
				continue
			}
			live = true
			for c := range ncols {
				if !b.Column(c + 2).IsNull(rec.row) {
					row[c] = int64(offsets[rec.batch] + rec.row)
				}
			}
		}
		if !live {
			continue
		}
		for c := range ncols {
			picks[c] = append(picks[c], row[c])
		}
	}
	if len(order) == 0 || len(picks[0]) == 0 {
		return nil
	}
	out, err := OutputSchema(target, false)
	if err != nil {
		return err
	}
	cctx := compute.WithAllocator(ctx, t.mem)
	cols := make([]arrow.Array, 0, ncols)
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for c := range ncols {
		parts := make([]arrow.Array, len(batches))
		for bi, b := range batches {
			parts[bi] = b.Column(c + 2)
		}
		all, err := array.Concatenate(parts, t.mem)
		if err != nil {
			return fmt.Errorf("table %q: %w", t.name, err)
		}
		ib := array.NewInt64Builder(t.mem)
		for _, p := range picks[c] {
			if p < 0 {
				ib.AppendNull()
			} else {
				ib.Append(p)
			}
		}
		idx := ib.NewInt64Array()
		ib.Release()
		col, err := compute.TakeArray(cctx, all, idx)
		idx.Release()
		all.Release()
		if err != nil {
			return fmt.Errorf("table %q: %w", t.name, err)
		}
		cols = append(cols, col)
	}
	rec := array.NewRecordBatch(out, cols, int64(len(picks[0])))
	return fn(rec)
}
