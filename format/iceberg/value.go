package iceberg

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"

	"github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/sluicefeed/sluice/lake"
)

// DefaultValue converts a field's default, as iceberg-go gives it (an
// iceberg.Literal, or what the metadata's JSON decodes to: bool, numbers,
// json.Number, strings, hex strings for binary and fixed, iceberg's
// temporal types, a uuid), to a value of the field's primitive type t. A
// nil default is no value (not Valid).
func DefaultValue(v any, t iceberg.Type) (lake.Value, error) {
	if v == nil {
		return lake.Value{}, nil
	}
	lit, err := defaultLiteral(v, t)
	if err != nil {
		return lake.Value{}, err
	}
	if lit, err = lit.To(t); err != nil {
		return lake.Value{}, err
	}
	lt, err := TypeFrom(t)
	if err != nil {
		return lake.Value{}, err
	}
	val, err := ValueOf(lit)
	if err != nil {
		return lake.Value{}, err
	}
	return val.WithType(lt)
}

// defaultLiteral is the literal of a default value, before its conversion
// to the field's type.
func defaultLiteral(v any, t iceberg.Type) (iceberg.Literal, error) {
	switch x := v.(type) {
	case iceberg.Literal:
		return x, nil
	case bool:
		return iceberg.BoolLiteral(x), nil
	case int:
		return iceberg.Int64Literal(x), nil
	case int32:
		return iceberg.Int32Literal(x), nil
	case int64:
		return iceberg.Int64Literal(x), nil
	case float32:
		return iceberg.Float32Literal(x), nil
	case float64:
		// JSON numbers: integers for the integral types.
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			switch t.(type) {
			case iceberg.Float32Type, iceberg.Float64Type:
			default:
				return iceberg.Int64Literal(int64(x)), nil
			}
		}
		return iceberg.Float64Literal(x), nil
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return defaultLiteral(float64(i), t)
		}
		f, err := x.Float64()
		if err != nil {
			return nil, err
		}
		return iceberg.Float64Literal(f), nil
	case string:
		switch t.(type) {
		case iceberg.BinaryType, iceberg.FixedType:
			b, err := hex.DecodeString(x)
			if err != nil {
				return nil, fmt.Errorf("binary default is not hex: %w", err)
			}
			return iceberg.BinaryLiteral(b), nil
		}
		return iceberg.StringLiteral(x), nil
	case []byte:
		return iceberg.BinaryLiteral(x), nil
	case iceberg.Date:
		return iceberg.DateLiteral(x), nil
	case iceberg.Time:
		return iceberg.TimeLiteral(x), nil
	case iceberg.Timestamp:
		return iceberg.TimestampLiteral(x), nil
	case iceberg.TimestampNano:
		return iceberg.TimestampNsLiteral(x), nil
	case iceberg.Decimal:
		return iceberg.DecimalLiteral(x), nil
	case fmt.Stringer:
		// A uuid.UUID, as iceberg-go's API sets a UUID default: its string
		// form converts.
		if _, ok := t.(iceberg.UUIDType); ok {
			return iceberg.StringLiteral(x.String()), nil
		}
	}
	return nil, fmt.Errorf("a value of Go type %T", v)
}

// ValueOf converts an Iceberg literal to a Sluice value of the literal's
// type: a timestamp literal is a timestamp (not timestamptz) value, a
// decimal one has precision 38; see lake.Value.WithType for the column's
// own type.
func ValueOf(lit iceberg.Literal) (lake.Value, error) {
	switch l := lit.(type) {
	case iceberg.BoolLiteral:
		return lake.BooleanValue(bool(l)), nil
	case iceberg.Int32Literal:
		return lake.IntValue(int32(l)), nil
	case iceberg.Int64Literal:
		return lake.LongValue(int64(l)), nil
	case iceberg.Float32Literal:
		return lake.FloatValue(float32(l)), nil
	case iceberg.Float64Literal:
		return lake.DoubleValue(float64(l)), nil
	case iceberg.DateLiteral:
		return lake.DateValue(int32(l)), nil
	case iceberg.TimeLiteral:
		return lake.TimeValue(int64(l)), nil
	case iceberg.TimestampLiteral:
		return lake.TimestampValue(lake.TimestampType{}, int64(l))
	case iceberg.TimestampNsLiteral:
		return lake.TimestampValue(lake.TimestampNsType{}, int64(l))
	case iceberg.StringLiteral:
		return lake.StringValue(string(l)), nil
	case iceberg.BinaryLiteral:
		return lake.BinaryValue([]byte(l)), nil
	case iceberg.FixedLiteral:
		return lake.FixedValue([]byte(l)), nil
	case iceberg.UUIDLiteral:
		return lake.UUIDValue(uuid.UUID(l)), nil
	case iceberg.DecimalLiteral:
		return lake.DecimalValue(lake.DecimalType{Precision: 38, Scale: l.Scale}, l.Val), nil
	}
	return lake.Value{}, fmt.Errorf("%w: literal %v of type %T", ErrUnsupported, lit, lit)
}

// LiteralOf converts a Sluice value to the Iceberg literal of its type.
func LiteralOf(v lake.Value) iceberg.Literal {
	switch t := v.Type().(type) {
	case lake.BooleanType:
		return iceberg.NewLiteral(v.Bool())
	case lake.IntType:
		return iceberg.NewLiteral(int32(v.Int()))
	case lake.LongType:
		return iceberg.NewLiteral(v.Int())
	case lake.FloatType:
		return iceberg.NewLiteral(float32(v.Float()))
	case lake.DoubleType:
		return iceberg.NewLiteral(v.Float())
	case lake.DateType:
		return iceberg.NewLiteral(iceberg.Date(v.Int()))
	case lake.TimeType:
		return iceberg.NewLiteral(iceberg.Time(v.Int()))
	case lake.TimestampType, lake.TimestampTzType:
		return iceberg.NewLiteral(iceberg.Timestamp(v.Int()))
	case lake.TimestampNsType, lake.TimestampTzNsType:
		return iceberg.NewLiteral(iceberg.TimestampNano(v.Int()))
	case lake.StringType:
		return iceberg.NewLiteral(v.Str())
	case lake.BinaryType:
		return iceberg.NewLiteral(v.Bytes())
	case lake.FixedType:
		return iceberg.FixedLiteral(v.Bytes())
	case lake.UUIDType:
		u, _ := uuid.FromBytes(v.Bytes())
		return iceberg.NewLiteral(u)
	case lake.DecimalType:
		return iceberg.NewLiteral(iceberg.Decimal{Val: v.Decimal(), Scale: t.Scale})
	}
	return nil
}
