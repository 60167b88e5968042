package paimon

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"time"
)

// BinaryRow is a row in Paimon's binary row format, as manifests store
// partitions, keys and statistics: a big-endian int32 arity, then the
// row: a null bit set (8 header bits, one bit per field, padded to 8-byte
// words), one 8-byte little-endian slot per field, and a variable-length
// part that slots of long strings, binaries, decimals and timestamps point
// into.
type BinaryRow struct {
	arity int
	row   []byte // the row after the arity
}

// DecodeBinaryRow decodes a serialized binary row, checking its bounds
// (the bytes are untrusted). An empty input is the empty row.
func DecodeBinaryRow(b []byte) (BinaryRow, error) {
	if len(b) == 0 {
		return BinaryRow{}, nil
	}
	if len(b) < 4 {
		return BinaryRow{}, fmt.Errorf("%w: binary row of %d bytes", ErrCorrupt, len(b))
	}
	arity := int(int32(binary.BigEndian.Uint32(b)))
	if arity < 0 || arity > 1<<16 {
		return BinaryRow{}, fmt.Errorf("%w: binary row of arity %d", ErrCorrupt, arity)
	}
	r := BinaryRow{arity: arity, row: b[4:]}
	if len(r.row) < r.fixedSize() {
		return BinaryRow{}, fmt.Errorf("%w: binary row of arity %d in %d bytes", ErrCorrupt, arity, len(r.row))
	}
	return r, nil
}

// Arity is the row's number of fields.
func (r BinaryRow) Arity() int { return r.arity }

func (r BinaryRow) nullBytes() int { return ((r.arity + 63 + 8) / 64) * 8 }

func (r BinaryRow) fixedSize() int { return r.nullBytes() + 8*r.arity }

// IsNull reports field i null.
func (r BinaryRow) IsNull(i int) bool {
	bit := i + 8
	return r.row[bit>>3]&(1<<(bit&7)) != 0
}

func (r BinaryRow) slot(i int) []byte {
	off := r.nullBytes() + 8*i
	return r.row[off : off+8]
}

func (r BinaryRow) word(i int) uint64 { return binary.LittleEndian.Uint64(r.slot(i)) }

// bytesAt reads a variable-length field: inline in the slot when its
// highest bit is set (7 bytes at most, length in the top byte's low bits),
// else an offset (high 32 bits) and length (low 32 bits) into the row.
func (r BinaryRow) bytesAt(i int) ([]byte, error) {
	s := r.slot(i)
	if s[7]&0x80 != 0 {
		n := int(s[7] & 0x7f)
		if n > 7 {
			return nil, fmt.Errorf("%w: binary row field %d: inline length %d", ErrCorrupt, i, n)
		}
		return s[:n], nil
	}
	w := r.word(i)
	off, n := int64(w>>32), int64(uint32(w))
	if off+n > int64(len(r.row)) || off < int64(r.fixedSize()) {
		return nil, fmt.Errorf("%w: binary row field %d: bytes [%d, %d) outside the row of %d bytes", ErrCorrupt, i, off, off+n, len(r.row))
	}
	return r.row[off : off+n], nil
}

// Value decodes field i as type t into a Go value: nil for null; bool,
// int8, int16, int32, int64, float32, float64; string for CHAR and
// VARCHAR; []byte for binaries; time.Time (UTC) for DATE and timestamps;
// *big.Rat for DECIMAL; int32 milliseconds for TIME. Nested types are not
// stored in the rows manifests hold and fail with ErrUnsupported.
func (r BinaryRow) Value(i int, t DataType) (any, error) {
	if i < 0 || i >= r.arity {
		return nil, fmt.Errorf("%w: binary row field %d of %d", ErrCorrupt, i, r.arity)
	}
	if r.IsNull(i) {
		return nil, nil
	}
	s := r.slot(i)
	switch t.Root {
	case TypeBoolean:
		return s[0] != 0, nil
	case TypeTinyInt:
		return int8(s[0]), nil
	case TypeSmallInt:
		return int16(binary.LittleEndian.Uint16(s)), nil
	case TypeInt:
		return int32(binary.LittleEndian.Uint32(s)), nil
	case TypeTime:
		return int32(binary.LittleEndian.Uint32(s)), nil
	case TypeDate:
		return time.Unix(int64(int32(binary.LittleEndian.Uint32(s)))*86400, 0).UTC(), nil
	case TypeBigInt:
		return int64(r.word(i)), nil
	case TypeFloat:
		return math.Float32frombits(binary.LittleEndian.Uint32(s)), nil
	case TypeDouble:
		return math.Float64frombits(r.word(i)), nil
	case TypeChar, TypeVarChar:
		b, err := r.bytesAt(i)
		return string(b), err
	case TypeBinary, TypeVarBinary:
		b, err := r.bytesAt(i)
		return append([]byte(nil), b...), err
	case TypeDecimal:
		return r.decimal(i, t)
	case TypeTimestamp, TypeTimestampLTZ:
		return r.timestamp(i, t)
	}
	return nil, fmt.Errorf("%w: binary row field of type %s", ErrUnsupported, t)
}

// decimal reads a decimal: compact (precision up to 18) as the unscaled
// long in the slot, else big-endian two's complement bytes in the
// variable part (offset and length in the slot).
func (r BinaryRow) decimal(i int, t DataType) (any, error) {
	var unscaled *big.Int
	if t.Precision <= 18 {
		unscaled = big.NewInt(int64(r.word(i)))
	} else {
		b, err := r.varPart(i)
		if err != nil {
			return nil, err
		}
		unscaled = twosComplement(b)
	}
	return new(big.Rat).SetFrac(unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Scale)), nil)), nil
}

// varPart reads offset and length from the slot without the inline form
// (decimals and timestamps that do not fit their slot).
func (r BinaryRow) varPart(i int) ([]byte, error) {
	w := r.word(i)
	off, n := int64(w>>32), int64(uint32(w))
	if off+n > int64(len(r.row)) || off < int64(r.fixedSize()) {
		return nil, fmt.Errorf("%w: binary row field %d: bytes [%d, %d) outside the row", ErrCorrupt, i, off, off+n)
	}
	return r.row[off : off+n], nil
}

// timestamp reads a timestamp: compact (precision up to 3) as epoch
// milliseconds in the slot, else milliseconds in the variable part (8
// bytes, little-endian) and nanoseconds of the millisecond in the slot's
// low 32 bits (offset in the high ones).
func (r BinaryRow) timestamp(i int, t DataType) (any, error) {
	if t.Precision <= 3 {
		return time.UnixMilli(int64(r.word(i))).UTC(), nil
	}
	w := r.word(i)
	off := int64(w >> 32)
	nanos := int64(uint32(w))
	if off+8 > int64(len(r.row)) || off < int64(r.fixedSize()) || nanos >= 1e6 {
		return nil, fmt.Errorf("%w: binary row field %d: timestamp out of bounds", ErrCorrupt, i)
	}
	ms := int64(binary.LittleEndian.Uint64(r.row[off : off+8]))
	return time.UnixMilli(ms).Add(time.Duration(nanos)).UTC(), nil
}

func twosComplement(b []byte) *big.Int {
	v := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}

// Values decodes the row's fields as the given types (one per field).
func (r BinaryRow) Values(types []DataType) ([]any, error) {
	if len(types) != r.arity {
		return nil, fmt.Errorf("%w: binary row of arity %d for %d fields", ErrCorrupt, r.arity, len(types))
	}
	out := make([]any, r.arity)
	for i, t := range types {
		v, err := r.Value(i, t)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}
