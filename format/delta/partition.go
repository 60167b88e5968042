package delta

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/sluicefeed/sluice/lake"
)

// ErrBadPartitionValue is returned (wrapped, with the value and the type)
// when a partition value is not a value of its column's type as the
// protocol serializes it ("Partition Value Serialization"), or the column
// is not of a primitive type.
var ErrBadPartitionValue = errors.New("delta: bad partition value")

// maxDecimalText bounds the length of a decimal partition value: 38 digits
// with a sign, a point and generous trailing zeros.
const maxDecimalText = 256

// maxDecimalExponent bounds the exponent of a decimal partition value.
const maxDecimalExponent = 1000

// PartitionValue parses a serialized partition value (an add's, remove's
// or cdc's partitionValues entry; nil is null) as a value of the column's
// type t. The scalar's type is the Arrow type the engine uses for t (what
// lake.ArrowType gives for ToLake's type): int64
// for long; int32 for integer, short and byte (range-checked for the
// narrower two); float32; float64; bool; utf8; binary; date32;
// decimal128(p, s); timestamp[us, UTC] for timestamp; timestamp[us] for
// timestamp_ntz. A null value is a null scalar of that type.
//
// The formats, per the protocol (a string must be UTF-8, as JSON makes
// it):
//   - the empty string is null for every type, as PROTOCOL.md says
//     (delta-kernel-rs and Spark read "" of a string or binary column as
//     the empty value instead; their writers write null as JSON null);
//   - numbers in decimal text as Java prints them (NaN, Infinity,
//     -Infinity and exponents included for float and double);
//   - boolean true or false, in any case;
//   - date YYYY-MM-DD;
//   - timestamp YYYY-MM-DD HH:MM:SS[.ffffff], read as UTC, or ISO 8601
//     with a T and a Z or an offset (1970-01-01T00:00:00.123456Z), which
//     modern writers use (a timestamp without a zone was written in the
//     writer's time zone, which the log does not record);
//   - timestamp_ntz the same without a zone (a T is accepted, a zone is
//     not); digits past the microsecond are truncated;
//   - decimal as plain or exponent text, with no more non-zero fraction
//     digits than the scale and no more digits than the precision;
//   - binary: the UTF-8 bytes of the string (writers map bytes to
//     characters, "\u0001\u0002"; bytes that were not UTF-8 are lost).
func PartitionValue(raw *string, t DataType) (scalar.Scalar, error) {
	at, err := arrowType(t)
	if err != nil {
		return nil, fmt.Errorf("%w: a partition column of type %v: %w", ErrBadPartitionValue, t, err)
	}
	if raw == nil || *raw == "" {
		return scalar.MakeNullScalar(at), nil
	}
	s, err := parsePartitionValue(*raw, t, at)
	if err != nil {
		return nil, fmt.Errorf("%w: %q as %v: %w", ErrBadPartitionValue, *raw, t, err)
	}
	return s, nil
}

// arrowType is the engine's Arrow type of a primitive or decimal type.
func arrowType(t DataType) (arrow.DataType, error) {
	lt, err := lakePrimitive(t)
	if err != nil {
		return nil, err
	}
	return lake.ArrowType(lt), nil
}

// parsePartitionValue parses s, not empty, as a value of t (Arrow type at).
func parsePartitionValue(s string, t DataType, at arrow.DataType) (scalar.Scalar, error) {
	switch t {
	case TypeString:
		if !utf8.ValidString(s) {
			return nil, errors.New("not UTF-8")
		}
		return scalar.NewStringScalar(s), nil
	case TypeBinary:
		return scalar.NewBinaryScalar(memory.NewBufferBytes([]byte(s)), at), nil
	case TypeBoolean:
		switch {
		case strings.EqualFold(s, "true"):
			return scalar.NewBooleanScalar(true), nil
		case strings.EqualFold(s, "false"):
			return scalar.NewBooleanScalar(false), nil
		}
		return nil, errors.New("not true or false")
	case TypeLong:
		v, err := strconv.ParseInt(s, 10, 64)
		return scalar.NewInt64Scalar(v), err
	case TypeInteger, TypeShort, TypeByte:
		bits := 32
		switch t {
		case TypeShort:
			bits = 16
		case TypeByte:
			bits = 8
		}
		v, err := strconv.ParseInt(s, 10, bits)
		return scalar.NewInt32Scalar(int32(v)), err
	case TypeFloat:
		v, err := strconv.ParseFloat(s, 32)
		return scalar.NewFloat32Scalar(float32(v)), err
	case TypeDouble:
		v, err := strconv.ParseFloat(s, 64)
		return scalar.NewFloat64Scalar(v), err
	case TypeDate:
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return nil, err
		}
		return scalar.NewDate32Scalar(arrow.Date32(d.Unix() / 86400)), nil
	case TypeTimestamp, TypeTimestampNTZ:
		v, err := parseTimestamp(s, t == TypeTimestamp)
		if err != nil {
			return nil, err
		}
		return scalar.NewTimestampScalar(arrow.Timestamp(v), at), nil
	}
	if d, ok := t.(DecimalType); ok {
		v, err := parseDecimal(s, d)
		if err != nil {
			return nil, err
		}
		return scalar.NewDecimal128Scalar(v, at), nil
	}
	return nil, fmt.Errorf("%v is not a primitive type", t)
}

// Timestamp layouts: time.Parse also reads a fraction of a second after
// the seconds when the layout has none.
var (
	localLayouts = []string{"2006-01-02 15:04:05", "2006-01-02T15:04:05"}
	zonedLayouts = []string{
		"2006-01-02T15:04:05Z07:00", "2006-01-02 15:04:05Z07:00",
		"2006-01-02T15:04:05Z0700", "2006-01-02 15:04:05Z0700",
	}
)

// parseTimestamp parses a timestamp (zoned) or timestamp_ntz value into
// microseconds since 1970-01-01 00:00:00 (UTC for timestamp).
func parseTimestamp(s string, zoned bool) (int64, error) {
	u := strings.ToUpper(s) // a lowercase t or z
	layouts := localLayouts
	if zoned {
		layouts = append(layouts[:len(layouts):len(layouts)], zonedLayouts...)
	}
	for _, layout := range layouts {
		if ts, err := time.Parse(layout, u); err == nil {
			return ts.UnixMicro(), nil
		}
	}
	if zoned {
		return 0, errors.New("not YYYY-MM-DD HH:MM:SS[.ffffff] nor ISO 8601 with a zone")
	}
	return 0, errors.New("not YYYY-MM-DD HH:MM:SS[.ffffff] without a zone")
}

// parseDecimal parses s, [+-]digits[.digits][(e|E)[+-]digits], as a value
// of d, exactly: digits past the scale must be zeros.
func parseDecimal(s string, d DecimalType) (decimal128.Num, error) {
	if len(s) > maxDecimalText {
		return decimal128.Num{}, fmt.Errorf("longer than %d characters", maxDecimalText)
	}
	mantissa, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || e > maxDecimalExponent || e < -maxDecimalExponent {
			return decimal128.Num{}, fmt.Errorf("bad exponent %q", s[i+1:])
		}
		mantissa, exp = s[:i], e
	}
	mantissa, neg := strings.CutPrefix(mantissa, "-")
	if !neg {
		mantissa = strings.TrimPrefix(mantissa, "+")
	}
	whole, frac, _ := strings.Cut(mantissa, ".")
	digits := whole + frac
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return decimal128.Num{}, errors.New("not a decimal number")
	}
	var v big.Int
	v.SetString(digits, 10)
	// v × 10^(exp - len(frac)) = unscaled × 10^-scale.
	shift := d.Scale - len(frac) + exp
	ten := big.NewInt(10)
	if shift >= 0 {
		v.Mul(&v, new(big.Int).Exp(ten, big.NewInt(int64(shift)), nil))
	} else {
		var rem big.Int
		v.QuoRem(&v, new(big.Int).Exp(ten, big.NewInt(int64(-shift)), nil), &rem)
		if rem.Sign() != 0 {
			return decimal128.Num{}, fmt.Errorf("more fraction digits than the scale %d", d.Scale)
		}
	}
	if v.Cmp(new(big.Int).Exp(ten, big.NewInt(int64(d.Precision)), nil)) >= 0 {
		return decimal128.Num{}, fmt.Errorf("more digits than the precision %d", d.Precision)
	}
	if neg {
		v.Neg(&v)
	}
	return decimal128.FromBigInt(&v), nil
}
