package filter_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/sluicefeed/sluice/filter"
	"github.com/sluicefeed/sluice/lake"
)

// batchStats are the exact statistics of some rows of a batch.
type batchStats struct {
	rec  arrow.RecordBatch
	rows []int
}

// values returns the column's values on the rows (invalid: null).
func (s batchStats) values(c filter.Column) []lake.Value {
	parts := strings.Split(c.Path, ".")
	arr := s.rec.Column(s.rec.Schema().FieldIndices(parts[0])[0])
	var parents []arrow.Array
	for _, p := range parts[1:] {
		st := arr.(*array.Struct)
		parents = append(parents, st)
		i, _ := st.DataType().(*arrow.StructType).FieldIdx(p)
		arr = st.Field(i)
	}
	out := make([]lake.Value, len(s.rows))
	for k, i := range s.rows {
		null := arr.IsNull(i)
		for _, p := range parents {
			null = null || p.IsNull(i)
		}
		if !null {
			out[k] = valueAt(arr, i, c.Type)
		}
	}
	return out
}

// valueAt is value i of arr as a value of t, read as the evaluator reads it.
func valueAt(arr arrow.Array, i int, t lake.Type) lake.Value {
	v := filter.ValueAt(arr, i, t)
	if !v.Valid() {
		panic("no value of " + arr.DataType().String())
	}
	v, err := v.WithType(t)
	if err != nil {
		panic(err)
	}
	return v
}

func (s batchStats) Bounds(c filter.Column) (lo, hi lake.Value, ok bool) {
	for _, v := range s.values(c) {
		if !v.Valid() {
			continue
		}
		if c, _ := lake.Compare(v, lo); !lo.Valid() || c < 0 {
			lo = v
		}
		if c, _ := lake.Compare(v, hi); !hi.Valid() || c > 0 {
			hi = v
		}
	}
	return lo, hi, lo.Valid()
}

func (s batchStats) Counts(c filter.Column) (values, nulls int64, ok bool) {
	for _, v := range s.values(c) {
		values++
		if !v.Valid() {
			nulls++
		}
	}
	return values, nulls, true
}

// noStats say nothing.
type noStats struct{}

func (noStats) Bounds(filter.Column) (lo, hi lake.Value, ok bool)   { return lo, hi, false }
func (noStats) Counts(filter.Column) (values, nulls int64, ok bool) { return 0, 0, false }

// checkPruner fails if the pruner of e rules out the statistics of rows
// of rec of which one is true (truths are e's values on the rows): of each
// row alone, and of all of them.
func checkPruner(t *testing.T, text string, e filter.Expr, rec arrow.RecordBatch, truths []filter.Truth) {
	t.Helper()
	p := filter.NewPruner(e)
	var all []int
	anyTrue := false
	for i, v := range truths {
		all = append(all, i)
		if v == filter.IsTrue {
			anyTrue = true
			if !p.MayMatch(batchStats{rec, []int{i}}) {
				t.Fatalf("%q (%s): row %d matches but its statistics are pruned", text, e, i)
			}
		}
	}
	if anyTrue && !p.MayMatch(batchStats{rec, all}) {
		t.Fatalf("%q (%s): rows match but their statistics are pruned", text, e)
	}
	if !p.MayMatch(noStats{}) {
		if _, isFalse := filter.RewriteNot(e).(filter.False); !isFalse {
			t.Fatalf("%q (%s): pruned without statistics", text, e)
		}
	}
}

// TestPruner checks what statistics rule out, on the sample rows one by
// one (row 2 is all nulls), and that what matches is never ruled out.
func TestPruner(t *testing.T) {
	ls := lakeSchema(t)
	rec := sampleBatch(t, ls, sampleRows())
	defer rec.Release()
	for _, tc := range []struct {
		in   string
		may  []bool // MayMatch of rows 0, 1, 2 alone
		some bool   // MayMatch of all three
	}{
		{"id = 1", []bool{true, false, false}, true},
		{"id > 5", []bool{false, false, false}, false},
		{"id >= 3", []bool{false, false, true}, true},
		{"id < 2", []bool{true, false, false}, true},
		{"id <= 1", []bool{true, false, false}, true},
		{"id != 1", []bool{true, true, true}, true},
		{"id IN (2, 9)", []bool{false, true, false}, true},
		{"id NOT IN (1)", []bool{true, true, true}, true},
		{"NOT id < 2", []bool{false, true, true}, true},
		{"NOT (id < 2 OR id > 2)", []bool{false, true, false}, true},
		{"country IS NULL", []bool{false, false, true}, true},
		{"country IS NOT NULL", []bool{true, true, false}, true},
		{"NOT country IS NULL", []bool{true, true, false}, true},
		{"country = 'SE'", []bool{true, false, false}, true},
		{"country NOT IN ('x')", []bool{true, true, false}, true},
		{"amount > 0", []bool{true, false, false}, true},
		{"flag = true", []bool{true, false, false}, true},
		{"created < '2024-01-01'", []bool{false, true, false}, true},
		{"dec > 0", []bool{true, false, false}, true},
		{"addr.zip > 1000", []bool{true, false, false}, true},
		{"id = 1 AND country = 'NO'", []bool{false, false, false}, false},
		{"id = 1 OR country = 'it''s'", []bool{true, true, false}, true},
		{"FALSE", []bool{false, false, false}, false},
		{"qty > 3000000000", []bool{false, false, false}, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			f, err := filter.Parse(tc.in, ls)
			if err != nil {
				t.Fatal(err)
			}
			p := filter.NewPruner(f.Expr)
			for i, want := range tc.may {
				if got := p.MayMatch(batchStats{rec, []int{i}}); got != want {
					t.Errorf("row %d: MayMatch = %v, want %v", i, got, want)
				}
			}
			if got := p.MayMatch(batchStats{rec, []int{0, 1, 2}}); got != tc.some {
				t.Errorf("all rows: MayMatch = %v, want %v", got, tc.some)
			}
			truths, err := filter.NewRowEvaluator(f.Expr).Eval(rec)
			if err != nil {
				t.Fatal(err)
			}
			checkPruner(t, tc.in, f.Expr, rec, truths)
		})
	}
}

// TestRowEvaluatorThreeValued checks SQL's logic on the all-null row and
// on a field of a null struct: comparisons are unknown, and NOT of unknown
// is unknown.
func TestRowEvaluatorThreeValued(t *testing.T) {
	ls := lakeSchema(t)
	rec := sampleBatch(t, ls, sampleRows())
	defer rec.Release()
	for in, want := range map[string]filter.Truth{
		"country = 'SE'":                   filter.IsUnknown,
		"NOT country = 'SE'":               filter.IsUnknown,
		"country IN ('SE')":                filter.IsUnknown,
		"country NOT IN ('SE')":            filter.IsUnknown,
		"country = 'SE' OR id = 3":         filter.IsTrue,
		"country = 'SE' AND id = 1":        filter.IsFalse,
		"country = 'SE' OR id = 1":         filter.IsUnknown,
		"addr.city = 'Oslo'":               filter.IsUnknown,
		"addr.city IS NULL":                filter.IsTrue,
		"NOT addr.zip IS NOT NULL":         filter.IsTrue,
		"country IS NULL AND flag IS NULL": filter.IsTrue,
		"qty < 3000000000":                 filter.IsTrue, // folded by the schema, as Iceberg does
		"id IS NULL":                       filter.IsFalse,
	} {
		f, err := filter.Parse(in, ls)
		if err != nil {
			t.Fatal(err)
		}
		truths, err := filter.NewRowEvaluator(f.Expr).Eval(rec)
		if err != nil {
			t.Fatal(err)
		}
		if truths[2] != want {
			t.Errorf("%q on the null row = %v, want %v", in, truths[2], want)
		}
	}
}

// TestRowEvaluatorMissingColumn: a batch without the filter's column is
// an error wrapping ErrInvalidFilter, not a panic.
func TestRowEvaluatorMissingColumn(t *testing.T) {
	ls := lakeSchema(t)
	rec := sampleBatch(t, ls, sampleRows())
	defer rec.Release()
	f, err := filter.Parse("id = 1 AND addr.zip > 3", ls)
	if err != nil {
		t.Fatal(err)
	}
	part := rec.NewSlice(0, 1) // all columns: evaluates
	defer part.Release()
	if _, err := filter.NewRowEvaluator(f.Expr).Eval(part); err != nil {
		t.Fatal(err)
	}
	for _, cols := range [][]int{{1, 2}, {0, 1}} { // no id; no addr
		fields := make([]arrow.Field, len(cols))
		arrs := make([]arrow.Array, len(cols))
		for i, c := range cols {
			fields[i], arrs[i] = rec.Schema().Field(c), rec.Column(c)
		}
		narrow := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, rec.NumRows())
		_, err := filter.NewRowEvaluator(f.Expr).Eval(narrow)
		narrow.Release()
		if !errors.Is(err, filter.ErrInvalidFilter) {
			t.Errorf("columns %v: %v, want an invalid filter", cols, err)
		}
	}
	if _, err := filter.Parse("id = 1", nil); !errors.Is(err, filter.ErrInvalidFilter) {
		t.Errorf("Parse against no schema: %v", err)
	}
}
