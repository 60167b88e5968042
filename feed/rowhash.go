package feed

import (
	"bytes"
	"hash/maphash"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
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
// rows (by rowsEqual) hash equally.
func (rh rowHasher) hashes(rec arrow.RecordBatch, cols []int) []uint64 {
	n := int(rec.NumRows())
	out := make([]uint64, n)
	for _, c := range cols {
		arr := rec.Column(c)
		switch a := arr.(type) {
		case *array.Int64:
			for i, v := range a.Int64Values() {
				out[i] = mix(out[i], uint64(v))
			}
		case *array.Int32:
			for i, v := range a.Int32Values() {
				out[i] = mix(out[i], uint64(v))
			}
		case *array.Timestamp:
			for i, v := range a.TimestampValues() {
				out[i] = mix(out[i], uint64(v))
			}
		case *array.Date32:
			for i, v := range a.Date32Values() {
				out[i] = mix(out[i], uint64(v))
			}
		case *array.Float64:
			for i, v := range a.Float64Values() {
				if v == 0 || v != v {
					v = 0 // -0 and NaN: see valuesEqual
				}
				out[i] = mix(out[i], math.Float64bits(v))
			}
		case *array.String:
			for i := range n {
				out[i] = mix(out[i], maphash.String(rh.seed, a.Value(i)))
			}
		case *array.Boolean:
			for i := range n {
				if a.Value(i) {
					out[i] = mix(out[i], 1)
				}
			}
		default:
			var key []byte
			for i := range n {
				key, _ = appendKey(key[:0], arr, i)
				out[i] = mix(out[i], maphash.Bytes(rh.seed, key))
			}
			continue
		}
		if arr.NullN() > 0 {
			for i := range n {
				if arr.IsNull(i) {
					out[i] = mix(out[i], 0x6e756c6c) // nulls hash alike, apart from values
				}
			}
		}
	}
	return out
}

// rowsEqual compares row i of a with row j of b over the given columns
// (the two records have the same schema).
func rowsEqual(a arrow.RecordBatch, i int, b arrow.RecordBatch, j int, cols []int) bool {
	for _, c := range cols {
		if !valuesEqual(a.Column(c), i, b.Column(c), j) {
			return false
		}
	}
	return true
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
		return u == v || (u != u && v != v) // NaN equals NaN here, as in appendKey
	case *array.String:
		return a.Value(i) == y.(*array.String).Value(j)
	case *array.Boolean:
		return a.Value(i) == y.(*array.Boolean).Value(j)
	default:
		kx, errX := appendKey(nil, x, i)
		ky, errY := appendKey(nil, y, j)
		return errX == nil && errY == nil && bytes.Equal(kx, ky)
	}
}
