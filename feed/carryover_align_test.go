package feed

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
)

// carryRow is a row of the carry-over tests' schema; a nil pointer is a
// null.
type carryRow struct {
	id  *int64
	f   *float64
	s   *string
	b   *bool
	i32 *int32
}

var carrySchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
}, nil)

func ptr[T any](v T) *T { return &v }

// carryBatches builds rows into batches of at most size rows.
func carryBatches(mem memory.Allocator, rows []carryRow, size int) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	for lo := 0; lo < len(rows); lo += size {
		b := array.NewRecordBuilder(mem, carrySchema)
		for _, r := range rows[lo:min(lo+size, len(rows))] {
			appendOrNull(b.Field(0).(*array.Int64Builder), r.id)
			appendOrNull(b.Field(1).(*array.Float64Builder), r.f)
			appendOrNull(b.Field(2).(*array.StringBuilder), r.s)
			appendOrNull(b.Field(3).(*array.BooleanBuilder), r.b)
			appendOrNull(b.Field(4).(*array.Int32Builder), r.i32)
		}
		out = append(out, b.NewRecordBatch())
		b.Release()
	}
	return out
}

func appendOrNull[T any](b interface {
	Append(T)
	AppendNull()
}, v *T) {
	if v == nil {
		b.AppendNull()
		return
	}
	b.Append(*v)
}

// naiveCarryOver is the reference: each inserted row cancels the first
// deleted row still standing that equals it (rowsEqual) in every column.
func naiveCarryOver(cs *changeSet, dels, ins []rowRef, cols []int) (restDels, restIns []rowRef) {
	cancelled := make([]bool, len(dels))
	for _, i := range ins {
		match := -1
		for k, d := range dels {
			if !cancelled[k] && rowsEqual(cs.dels[d.b], int(d.r), cs.ins[i.b], int(i.r), cols) {
				match = k
				break
			}
		}
		if match < 0 {
			restIns = append(restIns, i)
			continue
		}
		cancelled[match] = true
	}
	for k, d := range dels {
		if !cancelled[k] {
			restDels = append(restDels, d)
		}
	}
	return restDels, restIns
}

// sameRows checks that two lists of rows of batches are equal as multisets
// of values.
func sameRows(t *testing.T, what string, batches []arrow.RecordBatch, got, want []rowRef, cols []int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows left, want %d", what, len(got), len(want))
	}
	used := make([]bool, len(want))
	for _, g := range got {
		found := false
		for k, w := range want {
			if !used[k] && rowsEqual(batches[g.b], int(g.r), batches[w.b], int(w.r), cols) {
				used[k], found = true, true
				break
			}
		}
		if !found {
			t.Fatalf("%s: row %v left that the reference cancels", what, g)
		}
	}
}

// randomCarryRows makes n rows of few distinct values per column (nulls,
// NaN, -0, "" included), with repeated rows; ordered keeps the ids in
// order and without a null (a repeated row repeats the one before).
func randomCarryRows(rnd *rand.Rand, n int, ordered bool) []carryRow {
	floats := []float64{0, math.Copysign(0, -1), math.NaN(), 1.5}
	rows := make([]carryRow, n)
	for k := range rows {
		if k > 0 && rnd.IntN(10) == 0 {
			rows[k] = rows[rnd.IntN(k)] // a duplicate
			if ordered {
				rows[k] = rows[k-1]
			}
			continue
		}
		r := carryRow{id: ptr(int64(k)), f: ptr(floats[rnd.IntN(len(floats))]), s: ptr([]string{"", "a", "b"}[rnd.IntN(3)]),
			b: ptr(rnd.IntN(2) == 0), i32: ptr(int32(rnd.IntN(3)))}
		switch rnd.IntN(12) {
		case 0:
			if ordered {
				break
			}
			r.id = nil
		case 1:
			r.f = nil
		case 2:
			r.s = nil
		case 3:
			r.b = nil
		case 4:
			r.i32 = nil
		case 5:
			if !ordered {
				r.id = ptr(int64(rnd.IntN(k + 1))) // a repeated identity
			}
		}
		rows[k] = r
	}
	return rows
}

// rewrite makes the rows a copy-on-write rewrite of rows writes: most kept,
// some dropped, some changed in one column, some new, in kept order, in a
// few interleaved streams (as delta-rs writes), or shuffled.
func rewrite(rnd *rand.Rand, rows []carryRow, order string) []carryRow {
	var kept []carryRow
	for _, r := range rows {
		switch rnd.IntN(20) {
		case 0: // deleted
		case 1:
			c := r
			switch rnd.IntN(4) {
			case 0:
				c.f = ptr(math.NaN())
			case 1:
				c.s = ptr("")
			case 2:
				c.s = nil
			default:
				c.i32 = ptr(int32(7))
			}
			kept = append(kept, c)
		case 2:
			kept = append(kept, r, r) // re-inserted twice
		default:
			kept = append(kept, r)
		}
		if rnd.IntN(30) == 0 {
			kept = append(kept, carryRow{id: ptr(int64(-1)), s: ptr("new")})
		}
	}
	switch order {
	case "shuffled":
		rnd.Shuffle(len(kept), func(i, j int) { kept[i], kept[j] = kept[j], kept[i] })
	case "streams":
		streams := make([][]carryRow, 3)
		for _, r := range kept {
			s := rnd.IntN(3)
			streams[s] = append(streams[s], r)
		}
		kept = kept[:0]
		for len(streams[0])+len(streams[1])+len(streams[2]) > 0 {
			s := rnd.IntN(3)
			n := min(len(streams[s]), 1+rnd.IntN(40))
			kept, streams[s] = append(kept, streams[s][:n]...), streams[s][n:]
		}
	}
	return kept
}

// The carry-over cancels exactly what the naive reference cancels, as
// multisets, for a rewrite in kept order, in interleaved streams and
// shuffled, with and without an identity hint, over batches of several
// sizes, and with ids in order (found by binary search) or not (by hash):
// duplicates, nulls, NaN, -0, "" and changed rows included.
func TestCancelCarryOverMatchesNaive(t *testing.T) {
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	cols := []int{0, 1, 2, 3, 4}
	for seed := range uint64(12) {
		for _, order := range []string{"kept", "streams", "shuffled"} {
			rnd := rand.New(rand.NewPCG(seed, 3))
			before := randomCarryRows(rnd, 300+rnd.IntN(300), seed%2 == 0)
			after := rewrite(rnd, before, order)
			size := []int{7, 64, 1000}[seed%3]
			cs := &changeSet{dels: carryBatches(mem, before, size), ins: carryBatches(mem, after, size)}
			for _, identity := range [][]int{nil, {0}, {2}} {
				wantDels, wantIns := naiveCarryOver(cs, refs(cs.dels), refs(cs.ins), cols)
				gotDels, gotIns, err := cancelCarryOver(cs, refs(cs.dels), refs(cs.ins), identity)
				if err != nil {
					t.Fatal(err)
				}
				sameRows(t, "deleted", cs.dels, gotDels, wantDels, cols)
				sameRows(t, "inserted", cs.ins, gotIns, wantIns, cols)
				if !slices.IsSortedFunc(gotDels, cmpRowRef) || !slices.IsSortedFunc(gotIns, cmpRowRef) {
					t.Fatalf("seed %d %s: rows left out of order", seed, order)
				}
			}
			for _, rec := range append(cs.dels, cs.ins...) {
				rec.Release()
			}
		}
	}
}

func cmpRowRef(x, y rowRef) int {
	if x.b != y.b {
		return int(x.b - y.b)
	}
	return int(x.r - y.r)
}

// In a long run of rows kept in order, a row changed in one value (to NaN,
// from a null to "", in an integer), a row dropped, and a row re-inserted
// twice stay changes; the fast path alone cancels every other row.
func TestAlignCarryOverKeepsChangedRowsOfARun(t *testing.T) {
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	before := make([]carryRow, 2000)
	for k := range before {
		before[k] = carryRow{id: ptr(int64(k)), f: ptr(float64(k) / 2), s: ptr("x"), b: ptr(k%2 == 0), i32: ptr(int32(k))}
	}
	before[900].s = nil
	before[1500].f = ptr(math.NaN())
	after := slices.Clone(before)
	after[500].f = ptr(math.NaN())   // a value became NaN
	after[900].s = ptr("")           // null became ""
	after[1200].i32 = ptr(int32(-1)) // one integer changed
	after = slices.Insert(after, 1600, after[1600])
	after = slices.Delete(after, 100, 101) // row 100 dropped
	cs := &changeSet{dels: carryBatches(mem, before, 512), ins: carryBatches(mem, after, 300)}
	defer func() {
		for _, rec := range append(cs.dels, cs.ins...) {
			rec.Release()
		}
	}()
	restDels, restIns := alignCarryOver(cs, refs(cs.dels), refs(cs.ins), []int{0, 1, 2, 3, 4}, 0)
	ids := func(batches []arrow.RecordBatch, list []rowRef) []int64 {
		var out []int64
		for _, r := range list {
			out = append(out, batches[r.b].Column(0).(*array.Int64).Value(int(r.r)))
		}
		return out
	}
	// NaN equals NaN (row 1500 is carried over); row 1600's second copy has
	// no deleted twin left.
	if got, want := ids(cs.dels, restDels), []int64{100, 500, 900, 1200}; !slices.Equal(got, want) {
		t.Fatalf("deleted rows left %v, want %v", got, want)
	}
	if got, want := ids(cs.ins, restIns), []int64{500, 900, 1200, 1600}; !slices.Equal(got, want) {
		t.Fatalf("inserted rows left %v, want %v", got, want)
	}
}
