package feed

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A null slot's buffer may hold anything (Spark's files hold leftovers):
// rows equal but for that garbage must hash and compare equal.
func TestRowHashIgnoresWhatNullSlotsHold(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
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
}
