package lake

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Value is a value of a primitive type: a field's default, a filter's
// literal, a bound of a column's statistics. The zero Value is no value
// (Valid is false). Values are immutable; the bytes a Value holds must not
// be changed after it is made.
//
// A value is held in the domain of its type: booleans, integers, dates
// (days), times (microseconds) and timestamps (micro- or nanoseconds
// since the epoch) as an int64; floats as a float64; strings as a string;
// binary, fixed and UUID values as bytes; decimals as their unscaled
// 128-bit integer.
type Value struct {
	typ Type
	i   int64
	f   float64
	s   string
	b   []byte
	d   decimal128.Num
}

// BooleanValue is a boolean.
func BooleanValue(v bool) Value {
	if v {
		return Value{typ: BooleanType{}, i: 1}
	}
	return Value{typ: BooleanType{}}
}

// IntValue is an int.
func IntValue(v int32) Value { return Value{typ: IntType{}, i: int64(v)} }

// LongValue is a long.
func LongValue(v int64) Value { return Value{typ: LongType{}, i: v} }

// FloatValue is a float.
func FloatValue(v float32) Value { return Value{typ: FloatType{}, f: float64(v)} }

// DoubleValue is a double.
func DoubleValue(v float64) Value { return Value{typ: DoubleType{}, f: v} }

// DateValue is a date, in days since 1970-01-01.
func DateValue(days int32) Value { return Value{typ: DateType{}, i: int64(days)} }

// TimeValue is a time of day, in microseconds since midnight.
func TimeValue(micros int64) Value { return Value{typ: TimeType{}, i: micros} }

// TimestampValue is a value of one of the four timestamp types (t is
// TimestampType, TimestampTzType, TimestampNsType or TimestampTzNsType), in
// the type's unit since the epoch. Another t is an error.
func TimestampValue(t Type, v int64) (Value, error) {
	switch t.(type) {
	case TimestampType, TimestampTzType, TimestampNsType, TimestampTzNsType:
		return Value{typ: t, i: v}, nil
	}
	return Value{}, fmt.Errorf("%v is not a timestamp type", t)
}

// StringValue is a string.
func StringValue(v string) Value { return Value{typ: StringType{}, s: v} }

// BinaryValue is a binary value.
func BinaryValue(v []byte) Value { return Value{typ: BinaryType{}, b: v} }

// FixedValue is a fixed value of len(v) bytes.
func FixedValue(v []byte) Value { return Value{typ: FixedType{Length: len(v)}, b: v} }

// UUIDValue is a UUID.
func UUIDValue(v [16]byte) Value { return Value{typ: UUIDType{}, b: v[:]} }

// DecimalValue is a decimal of type t whose unscaled value is v.
func DecimalValue(t DecimalType, v decimal128.Num) Value { return Value{typ: t, d: v} }

// Valid reports whether v holds a value (is not the zero Value).
func (v Value) Valid() bool { return v.typ != nil }

// Type is v's type.
func (v Value) Type() Type { return v.typ }

// Bool is a boolean's value.
func (v Value) Bool() bool { return v.i != 0 }

// Int is the value of a boolean (0 or 1), int, long, date, time or
// timestamp.
func (v Value) Int() int64 { return v.i }

// Float is the value of a float or double.
func (v Value) Float() float64 { return v.f }

// Str is a string's value.
func (v Value) Str() string { return v.s }

// Bytes is the value of a binary, fixed or UUID; the caller must not
// change them.
func (v Value) Bytes() []byte { return v.b }

// Decimal is a decimal's unscaled value; its scale is its type's.
func (v Value) Decimal() decimal128.Num { return v.d }

// domain is how a value is held and compared.
type domain int

const (
	domainNone domain = iota
	domainInt
	domainFloat
	domainString
	domainBytes
	domainDecimal
)

func domainOf(t Type) domain {
	switch t.(type) {
	case BooleanType, IntType, LongType, DateType, TimeType, TimestampType, TimestampTzType,
		TimestampNsType, TimestampTzNsType:
		return domainInt
	case FloatType, DoubleType:
		return domainFloat
	case StringType:
		return domainString
	case BinaryType, FixedType, UUIDType:
		return domainBytes
	case DecimalType:
		return domainDecimal
	}
	return domainNone
}

// Compare orders a and b, values held in the same domain (see Value):
// -1, 0 or +1 as a is less than, equal to or greater than b. ok is false
// when they are not ordered: values of different domains, decimals of
// different scales, or a NaN.
func Compare(a, b Value) (c int, ok bool) {
	da := domainOf(a.typ)
	if da == domainNone || da != domainOf(b.typ) {
		return 0, false
	}
	switch da {
	case domainInt:
		return cmp.Compare(a.i, b.i), true
	case domainFloat:
		if math.IsNaN(a.f) || math.IsNaN(b.f) {
			return 0, false
		}
		return cmp.Compare(a.f, b.f), true
	case domainString:
		return strings.Compare(a.s, b.s), true
	case domainBytes:
		return bytes.Compare(a.b, b.b), true
	default:
		if a.typ.(DecimalType).Scale != b.typ.(DecimalType).Scale {
			return 0, false
		}
		return a.d.Cmp(b.d), true
	}
}

// String formats v for messages: numbers and booleans as Go prints them,
// strings quoted, bytes in hex, decimals with their scale, temporal values
// as their integer in the type's unit.
func (v Value) String() string {
	switch t := v.typ.(type) {
	case nil:
		return "<no value>"
	case BooleanType:
		return strconv.FormatBool(v.Bool())
	case FloatType:
		return strconv.FormatFloat(v.f, 'g', -1, 32)
	case DoubleType:
		return strconv.FormatFloat(v.f, 'g', -1, 64)
	case StringType:
		return strconv.Quote(v.s)
	case BinaryType, FixedType, UUIDType:
		return hex.EncodeToString(v.b)
	case DecimalType:
		return v.d.ToString(int32(t.Scale))
	}
	return strconv.FormatInt(v.i, 10)
}

// WithType is v as a value of t, a type whose values are held as v's are
// (see Value): a timestamp as a timestamptz, a decimal as a decimal of
// another precision and the same scale, an int as a long. Another t is an
// error.
func (v Value) WithType(t Type) (Value, error) {
	d := domainOf(t)
	if d == domainNone || d != domainOf(v.typ) {
		return Value{}, fmt.Errorf("a %v value is not a %v", v.typ, t)
	}
	if dt, ok := t.(DecimalType); ok && dt.Scale != v.typ.(DecimalType).Scale {
		return Value{}, fmt.Errorf("a %v value is not a %v", v.typ, t)
	}
	v.typ = t
	return v, nil
}
