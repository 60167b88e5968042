package filter

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/google/uuid"

	"github.com/sluicefeed/sluice/lake"
)

// rangeKind says whether a number fits its column's type.
type rangeKind int

const (
	inRange  rangeKind = iota
	aboveMax           // greater than the type's largest value
	belowMin           // less than the type's smallest value
)

// boundValue is a literal converted to its column's type: a value, or a
// number beyond the type's range.
type boundValue struct {
	value lake.Value
	bound rangeKind
}

// literal converts a parsed literal to a value of a column's type, as
// Iceberg converts its literals: numbers to any numeric or temporal type
// (integers as the type's unit), strings to any type they spell a value
// of, booleans to booleans. An integer or float beyond an int, date or
// float column's range is not an error: it compares as greater or less
// than every value.
func (b *binder) literal(field lake.Field, l literal) (boundValue, error) {
	if l.kind == litTimestamp || l.kind == litDate || (l.kind == litString && isTemporal(field.Type)) {
		v, err := temporalLiteral(field, l)
		return boundValue{value: v}, err
	}
	if dt, ok := field.Type.(lake.DecimalType); ok && l.kind != litBool {
		v, err := decimalLiteral(field, dt, l)
		return boundValue{value: v}, err
	}
	v, err := convert(field.Type, l)
	if err != nil {
		return boundValue{}, mismatch(field, l, "")
	}
	if v.bound == inRange && (field.Type == lake.FloatType{} || field.Type == lake.DoubleType{}) && math.IsNaN(v.value.Float()) {
		return boundValue{}, mismatch(field, l, whyNaN)
	}
	return v, nil
}

// errNoConversion reports a literal that does not convert to a type.
var errNoConversion = fmt.Errorf("%w: no conversion", ErrInvalidFilter)

// int32Range classifies an integer for a 32-bit type.
func int32Range(i int64) rangeKind {
	switch {
	case i > math.MaxInt32:
		return aboveMax
	case i < math.MinInt32:
		return belowMin
	}
	return inRange
}

// convert converts a number, boolean or string literal to t (not a
// decimal; temporal types only from numbers).
func convert(t lake.Type, l literal) (boundValue, error) {
	ok := func(v lake.Value) (boundValue, error) { return boundValue{value: v}, nil }
	switch l.kind {
	case litInt:
		switch t.(type) {
		case lake.IntType, lake.DateType:
			if r := int32Range(l.i); r != inRange {
				return boundValue{bound: r}, nil
			}
			if t == (lake.DateType{}) {
				return ok(lake.DateValue(int32(l.i)))
			}
			return ok(lake.IntValue(int32(l.i)))
		case lake.LongType:
			return ok(lake.LongValue(l.i))
		case lake.FloatType:
			return ok(lake.FloatValue(float32(l.i)))
		case lake.DoubleType:
			return ok(lake.DoubleValue(float64(l.i)))
		case lake.TimeType:
			return ok(lake.TimeValue(l.i))
		case lake.TimestampType, lake.TimestampTzType, lake.TimestampNsType, lake.TimestampTzNsType:
			v, err := lake.TimestampValue(t, l.i)
			return boundValue{value: v}, err
		}
	case litFloat:
		switch t.(type) {
		case lake.FloatType:
			switch {
			case l.f > math.MaxFloat32:
				return boundValue{bound: aboveMax}, nil
			case l.f < -math.MaxFloat32:
				return boundValue{bound: belowMin}, nil
			}
			return ok(lake.FloatValue(float32(l.f)))
		case lake.DoubleType:
			return ok(lake.DoubleValue(l.f))
		}
	case litBool:
		if t == (lake.BooleanType{}) {
			return ok(lake.BooleanValue(l.b))
		}
	case litString:
		return convertString(t, l.text)
	}
	return boundValue{}, errNoConversion
}

// convertString converts a string literal to t, as Iceberg casts a string.
func convertString(t lake.Type, s string) (boundValue, error) {
	ok := func(v lake.Value) (boundValue, error) { return boundValue{value: v}, nil }
	switch t := t.(type) {
	case lake.StringType:
		return ok(lake.StringValue(s))
	case lake.IntType:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return boundValue{}, err
		}
		if r := int32Range(n); r != inRange {
			return boundValue{bound: r}, nil
		}
		return ok(lake.IntValue(int32(n)))
	case lake.LongType:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return boundValue{}, err
		}
		return ok(lake.LongValue(n))
	case lake.FloatType:
		n, err := strconv.ParseFloat(s, 32)
		if err != nil {
			return boundValue{}, err
		}
		return ok(lake.FloatValue(float32(n)))
	case lake.DoubleType:
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return boundValue{}, err
		}
		return ok(lake.DoubleValue(n))
	case lake.TimeType:
		v, err := arrow.Time64FromString(s, arrow.Microsecond)
		if err != nil {
			return boundValue{}, err
		}
		return ok(lake.TimeValue(int64(v)))
	case lake.UUIDType:
		u, err := uuid.Parse(s)
		if err != nil {
			return boundValue{}, err
		}
		return ok(lake.UUIDValue(u))
	case lake.BooleanType:
		v, err := strconv.ParseBool(s)
		if err != nil {
			return boundValue{}, err
		}
		return ok(lake.BooleanValue(v))
	case lake.BinaryType:
		return ok(lake.BinaryValue([]byte(s)))
	case lake.FixedType:
		if len(s) != t.Length {
			return boundValue{}, errNoConversion
		}
		return ok(lake.FixedValue([]byte(s)))
	}
	return boundValue{}, errNoConversion
}

const whyNaN = "NaN is not equal to, less or greater than anything"

// mismatch reports a literal that does not fit its column's type, and why
// if the type alone does not say.
func mismatch(field lake.Field, l literal, why string) error {
	if why != "" {
		why = ": " + why
	}
	return filterErrorf(l.pos, "cannot compare column %q of type %s with %s%s",
		clip(field.Name), field.Type, literal{kind: l.kind, text: clip(l.text), b: l.b}, why)
}

func isTemporal(t lake.Type) bool {
	switch t.(type) {
	case lake.TimestampType, lake.TimestampTzType, lake.TimestampNsType, lake.TimestampTzNsType, lake.DateType:
		return true
	}
	return false
}

var timestampLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04",
	"2006-01-02 15:04",
	time.DateOnly,
}

// The range of a nanosecond timestamp.
var (
	minTimestampNs = time.Unix(0, math.MinInt64)
	maxTimestampNs = time.Unix(0, math.MaxInt64)
)

// temporalLiteral parses a timestamp or date for a column. Times without a
// zone are UTC.
func temporalLiteral(field lake.Field, l literal) (lake.Value, error) {
	layouts := timestampLayouts
	if l.kind == litDate {
		layouts = []string{time.DateOnly}
	}
	var t time.Time
	var err error
	for _, layout := range layouts {
		if t, err = time.Parse(layout, l.text); err == nil {
			break
		}
	}
	if err != nil {
		what := "a timestamp or date (want e.g. '2024-05-01 12:00:00' or '2024-05-01')"
		if l.kind == litDate {
			what = "a date (want e.g. '2024-05-01')"
		}
		return lake.Value{}, filterErrorf(l.pos, "%s is not %s", literal{kind: l.kind, text: clip(l.text)}, what)
	}
	t = t.UTC()
	switch field.Type.(type) {
	case lake.DateType:
		if t.Hour() != 0 || t.Minute() != 0 || t.Second() != 0 || t.Nanosecond() != 0 {
			return lake.Value{}, mismatch(field, l, "it has a time of day (in UTC)")
		}
		days := t.Unix() / 86400
		if t.Unix()%86400 < 0 {
			days-- // floor, for dates before 1970
		}
		return lake.DateValue(int32(days)), nil
	case lake.TimestampType, lake.TimestampTzType:
		if t.Nanosecond()%1000 != 0 {
			return lake.Value{}, mismatch(field, l, "it is more precise than the column's microseconds")
		}
		return lake.TimestampValue(field.Type, t.UnixMicro())
	case lake.TimestampNsType, lake.TimestampTzNsType:
		if t.Before(minTimestampNs) || t.After(maxTimestampNs) {
			return lake.Value{}, mismatch(field, l, fmt.Sprintf("it is out of the column's range (%s to %s)",
				minTimestampNs.UTC().Format(time.RFC3339), maxTimestampNs.UTC().Format(time.RFC3339)))
		}
		return lake.TimestampValue(field.Type, t.UnixNano())
	default:
		return lake.Value{}, mismatch(field, l, "")
	}
}

// decimalNumber is the syntax of a number a decimal column accepts:
// sign, digits with an optional point, optional exponent.
var decimalNumber = regexp.MustCompile(`^([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]{1,9}))?$`)

// decimalLiteral converts a number (or a string holding one) exactly to a
// decimal column's type: never through a float, and never rounding.
func decimalLiteral(field lake.Field, dt lake.DecimalType, l literal) (lake.Value, error) {
	m := decimalNumber.FindStringSubmatch(l.text)
	if m == nil || m[2]+m[3] == "" {
		return lake.Value{}, mismatch(field, l, "it is not a decimal number")
	}
	digits := strings.TrimLeft(m[2]+m[3], "0")
	var exp int64 // the value is digits * 10^exp
	if m[4] != "" {
		exp, _ = strconv.ParseInt(m[4], 10, 64) // at most 9 digits: cannot fail
	}
	exp -= int64(len(m[3]))
	for strings.HasSuffix(digits, "0") {
		digits, exp = digits[:len(digits)-1], exp+1
	}
	scale := int64(dt.Scale)
	unscaled := new(big.Int)
	if digits != "" {
		if exp < -scale {
			return lake.Value{}, mismatch(field, l, fmt.Sprintf("it has more than %d digits after the point", scale))
		}
		if int64(len(digits))+exp+scale > int64(dt.Precision) {
			return lake.Value{}, mismatch(field, l, "it is out of the type's range")
		}
		unscaled.SetString(digits, 10)
		unscaled.Mul(unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(exp+scale), nil))
		if m[1] == "-" {
			unscaled.Neg(unscaled)
		}
	}
	return lake.DecimalValue(dt, decimal128.FromBigInt(unscaled)), nil
}
