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

	"github.com/sluicefeed/sluice/internal/lib/kernelctx"
)

// The merge engines that merge a key's records field by field:
// partial-update (every field keeps its last non-null value) and
// aggregation (each field its aggregate function).

// fieldMerger is the plan of a field-by-field merge for a schema.
type fieldMerger struct {
	engine string
	// funcs are the aggregate functions of the fields, in schema order.
	funcs []string
	// ignoreDelete skips -U and -D records; removeOnDelete makes a -D
	// remove the row.
	ignoreDelete, removeOnDelete bool
}

// supportedAggregates are the aggregate functions read.
var supportedAggregates = map[string]bool{
	"last_value": true, "last_non_null_value": true, "first_value": true, "first_non_null_value": true,
	"min": true, "max": true, "sum": true,
}

// newFieldMerger plans the merge of a partial-update or aggregation table,
// refusing what it does not implement with ErrUnsupportedMergeEngine.
func (t *Table) newFieldMerger(s *Schema, engine string) (*fieldMerger, error) {
	opt := s.Options
	m := &fieldMerger{engine: engine,
		ignoreDelete:   strings.EqualFold(opt["ignore-delete"], "true") || strings.EqualFold(opt[engine+".ignore-delete"], "true"),
		removeOnDelete: strings.EqualFold(opt[engine+".remove-record-on-delete"], "true")}
	keys := map[string]bool{}
	for _, k := range s.PrimaryKeys {
		keys[k] = true
	}
	for k := range opt {
		if engine == MergePartialUpdate && (strings.HasPrefix(k, "fields.") || k == "partial-update.remove-record-on-sequence-group") {
			return nil, fmt.Errorf("%w: table %q: partial-update with option %s (sequence groups and per-field aggregation are not read)", ErrUnsupportedMergeEngine, t.name, k)
		}
		if engine == MergeAggregation && strings.HasPrefix(k, "fields.") && strings.HasSuffix(k, ".sequence-group") {
			return nil, fmt.Errorf("%w: table %q: aggregation with option %s", ErrUnsupportedMergeEngine, t.name, k)
		}
	}
	for _, f := range s.Fields {
		fn := "last_non_null_value"
		if engine == MergeAggregation {
			if d := opt["fields.default-aggregate-function"]; d != "" {
				fn = d
			}
			if v := opt["fields."+f.Name+".aggregate-function"]; v != "" {
				fn = v
			}
			if keys[f.Name] {
				fn = "last_value"
			}
		}
		fn = strings.ToLower(fn)
		if !supportedAggregates[fn] {
			return nil, fmt.Errorf("%w: table %q: aggregation function %s of column %q", ErrUnsupportedMergeEngine, t.name, fn, f.Name)
		}
		if fn == "sum" && !summable(f.Type) {
			return nil, fmt.Errorf("%w: table %q: aggregation function sum of column %q of type %s", ErrUnsupportedMergeEngine, t.name, f.Name, f.Type)
		}
		m.funcs = append(m.funcs, fn)
	}
	return m, nil
}

func summable(t DataType) bool {
	switch t.Root {
	case TypeTinyInt, TypeSmallInt, TypeInt, TypeBigInt, TypeFloat, TypeDouble:
		return true
	}
	return false
}

// fieldState is one field's merged value so far: a picked source row, or
// (sum) an accumulated number.
type fieldState struct {
	pick     int64 // global row index, -1 for none (null)
	picked   bool
	sumI     int64
	sumF     float64
	hasValue bool
}

// merge merges the records of a split (batches with the system columns
// first) key by key and calls fn with the one batch of live rows.
func (m *fieldMerger) merge(ctx context.Context, t *Table, target *Schema, out *arrow.Schema, batches []arrow.RecordBatch, keyCols []int, fn func(arrow.RecordBatch) error) error {
	offsets := make([]int64, len(batches)+1)
	for i, b := range batches {
		offsets[i+1] = offsets[i] + b.NumRows()
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
	rows := make([][]fieldState, 0, len(order))
	for _, k := range order {
		recs := byKey[k]
		slices.SortStableFunc(recs, func(a, b keyRecord) int { return cmp.Compare(a.seq, b.seq) })
		row := m.fresh(ncols)
		live := false
		for _, rec := range recs {
			if rec.kind == RowUpdateBefore || rec.kind == RowDelete {
				switch {
				case m.ignoreDelete:
				case rec.kind == RowDelete && m.removeOnDelete:
					row, live = m.fresh(ncols), false
				case m.engine == MergePartialUpdate && rec.kind == RowUpdateBefore:
				default:
					return fmt.Errorf("%w: table %q: %s record of a %s table (retraction is not read)", ErrUnsupportedMergeEngine, t.name, rec.kind, m.engine)
				}
				continue
			}
			live = true
			b := batches[rec.batch]
			for c := range ncols {
				m.add(&row[c], m.funcs[c], b.Column(c+2), rec.row, offsets[rec.batch]+int64(rec.row), batches, offsets, c+2)
			}
		}
		if live {
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	cols := make([]arrow.Array, 0, ncols)
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for c := range ncols {
		col, err := m.column(ctx, t, out.Field(c).Type, c, rows, batches)
		if err != nil {
			return fmt.Errorf("table %q: column %q: %w", t.name, target.Fields[c].Name, err)
		}
		cols = append(cols, col)
	}
	return fn(array.NewRecordBatch(out, cols, int64(len(rows))))
}

func (m *fieldMerger) fresh(n int) []fieldState {
	row := make([]fieldState, n)
	for c := range row {
		row[c].pick = -1
	}
	return row
}

// add folds the value at row of a (column col of its batch, global row
// index g) into st.
func (m *fieldMerger) add(st *fieldState, fn string, a arrow.Array, row int, g int64, batches []arrow.RecordBatch, offsets []int64, col int) {
	null := a.IsNull(row)
	switch fn {
	case "last_value":
		st.pick = g
	case "last_non_null_value":
		if !null {
			st.pick = g
		}
	case "first_value":
		if !st.picked {
			st.pick, st.picked = g, true
		}
	case "first_non_null_value":
		if !null && st.pick < 0 {
			st.pick = g
		}
	case "min", "max":
		if null {
			return
		}
		if st.pick < 0 {
			st.pick = g
			return
		}
		pb, pr := locate(st.pick, offsets)
		c := compareAt(a, row, batches[pb].Column(col), pr)
		if (fn == "min" && c < 0) || (fn == "max" && c > 0) {
			st.pick = g
		}
	case "sum":
		if null {
			return
		}
		st.hasValue = true
		switch x := a.(type) {
		case *array.Int8:
			st.sumI += int64(x.Value(row))
		case *array.Int16:
			st.sumI += int64(x.Value(row))
		case *array.Int32:
			st.sumI += int64(x.Value(row))
		case *array.Int64:
			st.sumI += x.Value(row)
		case *array.Float32:
			st.sumF += float64(x.Value(row))
		case *array.Float64:
			st.sumF += x.Value(row)
		}
	}
}

// locate turns a global row index into a batch and a row.
func locate(g int64, offsets []int64) (int, int) {
	b, _ := slices.BinarySearch(offsets, g+1)
	return b - 1, int(g - offsets[b-1])
}

// compareAt compares a[i] and b[j] (same type, neither null); values of
// a type that does not compare are equal.
func compareAt(a arrow.Array, i int, b arrow.Array, j int) int {
	c, _ := compareValues(a, i, b, j)
	return c
}

// column builds output column c: a sum from its accumulators, any other
// function by taking the picked rows.
func (m *fieldMerger) column(ctx context.Context, t *Table, dt arrow.DataType, c int, rows [][]fieldState, batches []arrow.RecordBatch) (arrow.Array, error) {
	if m.funcs[c] == "sum" {
		b := array.NewBuilder(t.mem, dt)
		defer b.Release()
		for _, r := range rows {
			st := r[c]
			if !st.hasValue {
				b.AppendNull()
				continue
			}
			switch bb := b.(type) {
			case *array.Int8Builder:
				bb.Append(int8(st.sumI))
			case *array.Int16Builder:
				bb.Append(int16(st.sumI))
			case *array.Int32Builder:
				bb.Append(int32(st.sumI))
			case *array.Int64Builder:
				bb.Append(st.sumI)
			case *array.Float32Builder:
				bb.Append(float32(st.sumF))
			case *array.Float64Builder:
				bb.Append(st.sumF)
			}
		}
		return b.NewArray(), nil
	}
	parts := make([]arrow.Array, len(batches))
	for bi, b := range batches {
		parts[bi] = b.Column(c + 2)
	}
	all, err := array.Concatenate(parts, t.mem)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	ib := array.NewInt64Builder(t.mem)
	defer ib.Release()
	for _, r := range rows {
		if r[c].pick < 0 {
			ib.AppendNull()
		} else {
			ib.Append(r[c].pick)
		}
	}
	idx := ib.NewInt64Array()
	defer idx.Release()
	return compute.TakeArray(kernelctx.For(ctx, t.mem), all, idx)
}
