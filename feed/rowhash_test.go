package feed

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
)

// A null slot's buffer may hold anything (Spark's files hold leftovers):
// rows equal but for that garbage must hash and compare equal.
func TestRowHashIgnoresWhatNullSlotsHold(t *testing.T) {
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	build := func(garbage int64, s string) arrow.RecordBatch {
		ib := array.NewInt64Builder(mem)
		defer ib.Release()
		ib.AppendValues([]int64{1, garbage}, []bool{true, false})
		sb := array.NewStringBuilder(mem)
		defer sb.Release()
		sb.AppendValues([]string{s, "x"}, nil)
		ints, strs := ib.NewArray(), sb.NewArray()
		defer ints.Release()
		defer strs.Release()
		sc := arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
		return array.NewRecordBatch(sc, []arrow.Array{ints, strs}, 2)
	}
	a, b, c := build(7, "a"), build(99, "a"), build(7, "b")
	defer a.Release()
	defer b.Release()
	defer c.Release()
	rh := newRowHasher()
	cols := []int{0, 1}
	ha, hb, hc := rh.hashes(a, cols), rh.hashes(b, cols), rh.hashes(c, cols)
	if ha[1] != hb[1] || !rowsEqual(a, 1, b, 1, cols) {
		t.Fatal("rows equal but for a null slot's buffer differ")
	}
	if ha[0] == hc[0] || rowsEqual(a, 0, c, 0, cols) {
		t.Fatal("rows that differ compare equal")
	}
	rc := newRowComparer([]arrow.RecordBatch{a, c}, []arrow.RecordBatch{b}, cols)
	if !rc.equal(0, 1, 0, 1) || rc.equal(1, 0, 0, 0) || !rc.equal(0, 0, 0, 0) {
		t.Fatal("the typed comparer disagrees with rowsEqual")
	}
}

// The typed comparer agrees with rowsEqual on every pair of rows of random
// batches of every type it specializes (and one it does not), nulls, NaN,
// -0 and repeated values included.
func TestRowComparerAgreesWithRowsEqual(t *testing.T) {
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	}, nil)
	rnd := rand.New(rand.NewPCG(7, 11))
	floats := []float64{0, math.Copysign(0, -1), math.NaN(), 1.5, -2}
	batch := func(n int) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, sc)
		defer b.Release()
		for range n {
			for f := range sc.NumFields() {
				fb := b.Field(f)
				if rnd.IntN(5) == 0 {
					fb.AppendNull()
					continue
				}
				v := rnd.IntN(3)
				switch fb := fb.(type) {
				case *array.Int64Builder:
					fb.Append(int64(v))
				case *array.Int32Builder:
					fb.Append(int32(v))
				case *array.Date32Builder:
					fb.Append(arrow.Date32(v))
				case *array.TimestampBuilder:
					fb.Append(arrow.Timestamp(v))
				case *array.Float64Builder:
					fb.Append(floats[rnd.IntN(len(floats))])
				case *array.StringBuilder:
					fb.Append([]string{"", "a", "ab"}[v])
				case *array.BooleanBuilder:
					fb.Append(v == 1)
				case *array.Float32Builder:
					fb.Append(float32(v))
				}
			}
		}
		return b.NewRecordBatch()
	}
	var left, right []arrow.RecordBatch
	for range 3 {
		left = append(left, batch(40))
		right = append(right, batch(30))
	}
	defer func() {
		for _, r := range append(left, right...) {
			r.Release()
		}
	}()
	// Sliced batches too: values and bitmaps at an offset.
	l := left[0].NewSlice(3, 25)
	defer l.Release()
	left = append(left, l)
	for k := range sc.NumFields() + 1 {
		cols := []int{k % sc.NumFields()}
		if k == sc.NumFields() {
			cols = []int{0, 1, 2, 3, 4, 5, 6, 7}
		}
		rc := newRowComparer(left, right, cols)
		equal := 0
		for a, x := range left {
			for b, y := range right {
				for i := range int(x.NumRows()) {
					for j := range int(y.NumRows()) {
						want := rowsEqual(x, i, y, j, cols)
						if got := rc.equal(a, i, b, j); got != want {
							t.Fatalf("columns %v: left[%d] row %d vs right[%d] row %d: comparer %v, rowsEqual %v",
								cols, a, i, b, j, got, want)
						}
						if want {
							equal++
						}
					}
				}
			}
		}
		if equal == 0 {
			t.Fatalf("columns %v: no equal pair: the test compares nothing", cols)
		}
	}
}

// rowsEqual is the reference the comparer is checked against: row i of a
// and row j of b are equal when valuesEqual holds in every column.
func rowsEqual(a arrow.RecordBatch, i int, b arrow.RecordBatch, j int, cols []int) bool {
	for _, c := range cols {
		if !valuesEqual(a.Column(c), i, b.Column(c), j) {
			return false
		}
	}
	return true
}
