package rowkey

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// ErrUnsupportedType reports a value of an Arrow type that has no key
// encoding (callers classify it as their own unsupported feature).
var ErrUnsupportedType = errors.New("cannot compare values of type")

// Append appends a canonical encoding of value i of arr to buf. Equal
// values encode to equal bytes whatever their physical Arrow type, so that
// values read from files written before a type promotion (int to long,
// float to double, string to large string) compare equal to the promoted
// ones. Null encodes as its own value (Iceberg's equality deletes match
// null with null).
func Append(buf []byte, arr arrow.Array, i int) ([]byte, error) {
	if arr.IsNull(i) {
		return append(buf, 0), nil
	}
	buf = append(buf, 1)
	switch a := arr.(type) {
	case *array.Int8:
		return appendInt(buf, int64(a.Value(i))), nil
	case *array.Int16:
		return appendInt(buf, int64(a.Value(i))), nil
	case *array.Int32:
		return appendInt(buf, int64(a.Value(i))), nil
	case *array.Int64:
		return appendInt(buf, a.Value(i)), nil
	case *array.Uint8:
		return appendInt(buf, int64(a.Value(i))), nil
	case *array.Uint16:
		return appendInt(buf, int64(a.Value(i))), nil
	case *array.Uint32:
		return appendInt(buf, int64(a.Value(i))), nil
	case *array.Uint64:
		return appendInt(buf, int64(a.Value(i))), nil
	case *array.Date32:
		return appendInt(buf, int64(a.Value(i))), nil
	case *array.Date64:
		return appendInt(buf, int64(a.Value(i))), nil
	case *array.Time32:
		return appendInt(buf, int64(a.Value(i))), nil
	case *array.Time64:
		return appendInt(buf, int64(a.Value(i))), nil
	case *array.Timestamp:
		return appendInt(buf, int64(a.Value(i))), nil
	case *array.Float32:
		return appendFloat(buf, float64(a.Value(i))), nil
	case *array.Float64:
		return appendFloat(buf, a.Value(i)), nil
	case *array.Boolean:
		if a.Value(i) {
			return append(buf, 1), nil
		}
		return append(buf, 0), nil
	case *array.String:
		return appendBytes(buf, a.ValueStr(i)), nil
	case *array.LargeString:
		return appendBytes(buf, a.Value(i)), nil
	case *array.Binary:
		return appendBytes(buf, string(a.Value(i))), nil
	case *array.LargeBinary:
		return appendBytes(buf, string(a.Value(i))), nil
	case *array.FixedSizeBinary:
		return appendBytes(buf, string(a.Value(i))), nil
	case *array.Decimal128:
		v := a.Value(i)
		buf = binary.BigEndian.AppendUint64(buf, uint64(v.HighBits()))
		return binary.BigEndian.AppendUint64(buf, v.LowBits()), nil
	case *array.Struct:
		var err error
		for f := range a.NumField() {
			if buf, err = Append(buf, a.Field(f), i); err != nil {
				return nil, err
			}
		}
		return buf, nil
	case array.ListLike: // lists, large lists, fixed-size lists and maps
		start, end := a.ValueOffsets(i)
		buf = binary.AppendUvarint(buf, uint64(end-start))
		var err error
		for j := start; j < end; j++ {
			if buf, err = Append(buf, a.ListValues(), int(j)); err != nil {
				return nil, err
			}
		}
		return buf, nil
	case *array.Dictionary:
		return Append(buf[:len(buf)-1], a.Dictionary(), a.GetValueIndex(i))
	default:
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedType, arr.DataType())
	}
}

func appendInt(buf []byte, v int64) []byte { return binary.BigEndian.AppendUint64(buf, uint64(v)) }

func appendFloat(buf []byte, v float64) []byte {
	switch {
	case v == 0:
		v = 0 // -0 equals 0
	case math.IsNaN(v):
		v = math.NaN() // one NaN
	}
	return binary.BigEndian.AppendUint64(buf, math.Float64bits(v))
}

func appendBytes(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

// Row encodes row i of the given columns.
func Row(buf []byte, cols []arrow.Array, i int) ([]byte, error) {
	var err error
	for _, c := range cols {
		if buf, err = Append(buf, c, i); err != nil {
			return nil, err
		}
	}
	return buf, nil
}
