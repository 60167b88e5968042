package feed

import (
	"bytes"
	"hash/maphash"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/sluicefeed/sluice/internal/lib/rowkey"
)

// rowHasher hashes and compares whole rows column by column, without
// materializing row keys: the carry-over check of a copy-on-write rewrite
// does it for every row of the files it touched.
type rowHasher struct{ seed maphash.Seed }

func newRowHasher() rowHasher { return rowHasher{seed: maphash.MakeSeed()} }

func mix(h, v uint64) uint64 {
	h ^= v + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
	return h
}

// hashes returns the hash of each row of rec over the given columns. Equal
// rows (valuesEqual in every column) hash equally: a null slot hashes as null, whatever
// its buffer holds.
func (rh rowHasher) hashes(rec arrow.RecordBatch, cols []int) []uint64 {
	return rh.hashRows(rec, cols, nil)
}

// hashRows is hashes of the given rows of rec only (nil: every row), one
// hash per entry of rows, in its order.
func (rh rowHasher) hashRows(rec arrow.RecordBatch, cols []int, rows []int32) []uint64 {
	n := int(rec.NumRows())
	if rows != nil {
		n = len(rows)
	}
	row := func(k int) int { return k }
	if rows != nil {
		row = func(k int) int { return int(rows[k]) }
	}
	out := make([]uint64, n)
	for _, c := range cols {
		arr := rec.Column(c)
		var value func(i int) uint64
		switch a := arr.(type) {
		case *array.Int64:
			vs := a.Int64Values()
			value = func(i int) uint64 { return uint64(vs[i]) }
		case *array.Int32:
			vs := a.Int32Values()
			value = func(i int) uint64 { return uint64(vs[i]) }
		case *array.Timestamp:
			vs := a.TimestampValues()
			value = func(i int) uint64 { return uint64(vs[i]) }
		case *array.Date32:
			vs := a.Date32Values()
			value = func(i int) uint64 { return uint64(vs[i]) }
		case *array.Float64:
			vs := a.Float64Values()
			value = func(i int) uint64 {
				v := vs[i]
				if v == 0 || v != v {
					v = 0 // -0 and NaN: see valuesEqual
				}
				return math.Float64bits(v)
			}
		case *array.String:
			value = func(i int) uint64 { return maphash.String(rh.seed, a.Value(i)) }
		case *array.Boolean:
			value = func(i int) uint64 {
				if a.Value(i) {
					return 1
				}
				return 2
			}
		default:
			var key []byte
			value = func(i int) uint64 {
				key, _ = rowkey.Append(key[:0], arr, i)
				return maphash.Bytes(rh.seed, key)
			}
		}
		if arr.NullN() == 0 {
			if rows == nil {
				for i := range n {
					out[i] = mix(out[i], value(i))
				}
				continue
			}
			for k := range n {
				out[k] = mix(out[k], value(row(k)))
			}
			continue
		}
		for k := range n {
			if i := row(k); arr.IsNull(i) {
				out[k] = mix(out[k], 0x6e756c6c)
			} else {
				out[k] = mix(out[k], value(i))
			}
		}
	}
	return out
}

func valuesEqual(x arrow.Array, i int, y arrow.Array, j int) bool {
	xn, yn := x.IsNull(i), y.IsNull(j)
	if xn || yn {
		return xn == yn
	}
	switch a := x.(type) {
	case *array.Int64:
		return a.Value(i) == y.(*array.Int64).Value(j)
	case *array.Int32:
		return a.Value(i) == y.(*array.Int32).Value(j)
	case *array.Timestamp:
		return a.Value(i) == y.(*array.Timestamp).Value(j)
	case *array.Date32:
		return a.Value(i) == y.(*array.Date32).Value(j)
	case *array.Float64:
		u, v := a.Value(i), y.(*array.Float64).Value(j)
		return u == v || (u != u && v != v) // NaN equals NaN here, as in rowkey.Append
	case *array.String:
		return a.Value(i) == y.(*array.String).Value(j)
	case *array.Boolean:
		return a.Value(i) == y.(*array.Boolean).Value(j)
	default:
		kx, errX := rowkey.Append(nil, x, i)
		ky, errY := rowkey.Append(nil, y, j)
		return errX == nil && errY == nil && bytes.Equal(kx, ky)
	}
}

// rowComparer compares rows of one list of batches with rows of another
// (all of one schema) with valuesEqual in every column, with each column's type resolved
// once instead of for every value: the carry-over check compares every
// inserted row of a rewrite with its deleted twin.
type rowComparer []func(a, i, b, j int) bool

func newRowComparer(left, right []arrow.RecordBatch, cols []int) rowComparer {
	cmp := make(rowComparer, len(cols))
	for k, c := range cols {
		cmp[k] = columnComparer(left, right, c)
	}
	return cmp
}

// equal compares row i of left[a] with row j of right[b].
func (rc rowComparer) equal(a, i, b, j int) bool {
	for _, eq := range rc {
		if !eq(a, i, b, j) {
			return false
		}
	}
	return true
}

func columnComparer(left, right []arrow.RecordBatch, c int) func(a, i, b, j int) bool {
	generic := func(a, i, b, j int) bool {
		return valuesEqual(left[a].Column(c), i, right[b].Column(c), j)
	}
	if len(left) == 0 || len(right) == 0 {
		return generic
	}
	dt := left[0].Column(c).DataType()
	for _, batches := range [][]arrow.RecordBatch{left, right} {
		for _, rec := range batches {
			if !arrow.TypeEqual(rec.Column(c).DataType(), dt) {
				return generic
			}
		}
	}
	switch dt.ID() {
	case arrow.INT64:
		return fixedComparer(left, right, c, func(x arrow.Array) []int64 { return x.(*array.Int64).Int64Values() })
	case arrow.INT32:
		return fixedComparer(left, right, c, func(x arrow.Array) []int32 { return x.(*array.Int32).Int32Values() })
	case arrow.DATE32:
		return fixedComparer(left, right, c, func(x arrow.Array) []arrow.Date32 { return x.(*array.Date32).Date32Values() })
	case arrow.TIMESTAMP:
		return fixedComparer(left, right, c, func(x arrow.Array) []arrow.Timestamp {
			return x.(*array.Timestamp).TimestampValues()
		})
	case arrow.FLOAT64:
		return typedComparer(left, right, c, func(x arrow.Array) []float64 { return x.(*array.Float64).Float64Values() },
			func(x, y []float64, i, j int) bool {
				return x[i] == y[j] || (x[i] != x[i] && y[j] != y[j]) // NaN equals NaN here, as in valuesEqual
			})
	case arrow.STRING:
		return typedComparer(left, right, c, func(x arrow.Array) *array.String { return x.(*array.String) },
			func(x, y *array.String, i, j int) bool { return x.Value(i) == y.Value(j) })
	case arrow.BOOL:
		return typedComparer(left, right, c, func(x arrow.Array) *array.Boolean { return x.(*array.Boolean) },
			func(x, y *array.Boolean, i, j int) bool { return x.Value(i) == y.Value(j) })
	}
	return generic
}

// fixedComparer compares the values of a fixed-width column with ==.
func fixedComparer[T comparable](left, right []arrow.RecordBatch, c int, values func(arrow.Array) []T) func(a, i, b, j int) bool {
	return typedComparer(left, right, c, values, func(x, y []T, i, j int) bool { return x[i] == y[j] })
}

// typedComparer compares column c of left[a] and right[b] with eq, on the
// column resolved once per batch by as; nulls compare as in valuesEqual.
func typedComparer[A any](left, right []arrow.RecordBatch, c int, as func(arrow.Array) A,
	eq func(x, y A, i, j int) bool) func(a, i, b, j int) bool {
	lv, rv := valuesOf(left, c, as), valuesOf(right, c, as)
	ln, rn := nullable(left, c), nullable(right, c)
	return func(a, i, b, j int) bool {
		if n, e := nullsDecide(ln[a], i, rn[b], j); n {
			return e
		}
		return eq(lv[a], rv[b], i, j)
	}
}

func valuesOf[T any](batches []arrow.RecordBatch, c int, get func(arrow.Array) T) []T {
	out := make([]T, len(batches))
	for k, rec := range batches {
		out[k] = get(rec.Column(c))
	}
	return out
}

// nullable returns column c of each batch when it holds a null, else nil.
func nullable(batches []arrow.RecordBatch, c int) []arrow.Array {
	out := make([]arrow.Array, len(batches))
	for k, rec := range batches {
		if col := rec.Column(c); col.NullN() > 0 {
			out[k] = col
		}
	}
	return out
}

// nullsDecide reports whether nullness alone decides the comparison of
// x[i] and y[j] (x, y nil: no null in that column), and if so its result.
func nullsDecide(x arrow.Array, i int, y arrow.Array, j int) (decided, equal bool) {
	xn, yn := x != nil && x.IsNull(i), y != nil && y.IsNull(j)
	if xn || yn {
		return true, xn == yn
	}
	return false, false
}
