package feed

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// bufferSlack is added per buffer for IPC padding and metadata.
const bufferSlack = 16

// dataSize estimates, from above, the bytes that logical rows [off, off+n)
// of an array take when written as an IPC record batch body. Unlike
// wholeSize it counts only the slice, so a batch cut from a large
// decoded batch is measured by what it will send.
func dataSize(d arrow.ArrayData, off, n int) int64 {
	if n <= 0 {
		return 0
	}
	start := d.Offset() + off // physical index of the first row
	bufs := d.Buffers()
	size := int64(bufferSlack * len(bufs))
	if len(bufs) > 0 && bufs[0] != nil {
		size += int64((n + 7) / 8)
	}
	switch dt := d.DataType().(type) {
	case *arrow.NullType:
		return 0
	case *arrow.StringType, *arrow.BinaryType:
		lo, hi := offsets32(bufs, start, n)
		return size + int64(n+1)*4 + (hi - lo)
	case *arrow.LargeStringType, *arrow.LargeBinaryType:
		lo, hi := offsets64(bufs, start, n)
		return size + int64(n+1)*8 + (hi - lo)
	case *arrow.ListType, *arrow.MapType:
		lo, hi := offsets32(bufs, start, n)
		return size + int64(n+1)*4 + childSize(d, 0, lo, hi-lo)
	case *arrow.LargeListType:
		lo, hi := offsets64(bufs, start, n)
		return size + int64(n+1)*8 + childSize(d, 0, lo, hi-lo)
	case *arrow.FixedSizeListType:
		k := int64(dt.Len())
		return size + childSize(d, 0, int64(start)*k, int64(n)*k)
	case *arrow.StructType:
		for i := range d.Children() {
			size += childSize(d, i, int64(start), int64(n))
		}
		return size
	case *arrow.DictionaryType:
		width := dt.IndexType.(arrow.FixedWidthDataType).BitWidth()
		size += int64((n*width + 7) / 8)
		if dict := dictionaryOf(d); dict != nil {
			size += dataSize(dict, 0, dict.Len())
		}
		return size
	case arrow.FixedWidthDataType:
		return size + int64((n*dt.BitWidth()+7)/8)
	default:
		// Views, unions, run-end encoded: count every buffer whole, which is
		// never an underestimate.
		return size + wholeSize(d)
	}
}

// wholeSize is the size of every buffer an array references.
func wholeSize(d arrow.ArrayData) int64 {
	var size int64
	for _, b := range d.Buffers() {
		if b != nil {
			size += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		size += wholeSize(c)
	}
	if dict := dictionaryOf(d); dict != nil {
		size += wholeSize(dict)
	}
	return size
}

// dictionaryOf returns an array's dictionary, or nil (ArrayData returns a
// typed nil for arrays without one).
func dictionaryOf(d arrow.ArrayData) arrow.ArrayData {
	if dd, ok := d.Dictionary().(*array.Data); ok && dd != nil {
		return dd
	}
	return nil
}

// childSize measures rows [off, off+n) of child i, where off is in the
// parent's physical index space (which is the child's logical one).
func childSize(d arrow.ArrayData, i int, off, n int64) int64 {
	children := d.Children()
	if i >= len(children) {
		return 0
	}
	return dataSize(children[i], int(off), int(n))
}

// offsets32 returns the first and the end value offset of rows
// [start, start+n) of an array with 32-bit offsets.
func offsets32(bufs []*memory.Buffer, start, n int) (int64, int64) {
	if len(bufs) < 2 || bufs[1] == nil || bufs[1].Len() < (start+n+1)*4 {
		return 0, 0
	}
	offs := arrow.Int32Traits.CastFromBytes(bufs[1].Bytes())
	return int64(offs[start]), int64(offs[start+n])
}

// offsets64 is offsets32 for 64-bit offsets.
func offsets64(bufs []*memory.Buffer, start, n int) (int64, int64) {
	if len(bufs) < 2 || bufs[1] == nil || bufs[1].Len() < (start+n+1)*8 {
		return 0, 0
	}
	offs := arrow.Int64Traits.CastFromBytes(bufs[1].Bytes())
	return offs[start], offs[start+n]
}
