package paimon

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// TypeRoot is the kind of a Paimon data type.
type TypeRoot string

// The Paimon data types this package reads.
const (
	TypeBoolean      TypeRoot = "BOOLEAN"
	TypeTinyInt      TypeRoot = "TINYINT"
	TypeSmallInt     TypeRoot = "SMALLINT"
	TypeInt          TypeRoot = "INT"
	TypeBigInt       TypeRoot = "BIGINT"
	TypeFloat        TypeRoot = "FLOAT"
	TypeDouble       TypeRoot = "DOUBLE"
	TypeDecimal      TypeRoot = "DECIMAL"
	TypeChar         TypeRoot = "CHAR"
	TypeVarChar      TypeRoot = "VARCHAR"
	TypeBinary       TypeRoot = "BINARY"
	TypeVarBinary    TypeRoot = "VARBINARY"
	TypeDate         TypeRoot = "DATE"
	TypeTime         TypeRoot = "TIME"
	TypeTimestamp    TypeRoot = "TIMESTAMP"
	TypeTimestampLTZ TypeRoot = "TIMESTAMP_LTZ"
	TypeArray        TypeRoot = "ARRAY"
	TypeMap          TypeRoot = "MAP"
	TypeRow          TypeRoot = "ROW"
)

// DataType is a Paimon data type as a schema file states it.
type DataType struct {
	// Root is the kind of type.
	Root TypeRoot
	// Nullable is false for a type declared NOT NULL.
	Nullable bool
	// Length is the length of CHAR, VARCHAR, BINARY and VARBINARY.
	Length int
	// Precision is the precision of DECIMAL, TIME and the timestamps.
	Precision int
	// Scale is the scale of DECIMAL.
	Scale int
	// Element is the element type of an ARRAY.
	Element *DataType
	// Key and Value are the key and value types of a MAP.
	Key, Value *DataType
	// Fields are the fields of a ROW.
	Fields []Field
}

// String renders the type as Paimon writes it (nested types in SQL form).
func (t DataType) String() string {
	var s string
	switch t.Root {
	case TypeDecimal:
		s = fmt.Sprintf("DECIMAL(%d, %d)", t.Precision, t.Scale)
	case TypeChar, TypeVarChar, TypeBinary, TypeVarBinary:
		s = fmt.Sprintf("%s(%d)", t.Root, t.Length)
	case TypeTime, TypeTimestamp:
		s = fmt.Sprintf("%s(%d)", t.Root, t.Precision)
	case TypeTimestampLTZ:
		s = fmt.Sprintf("TIMESTAMP(%d) WITH LOCAL TIME ZONE", t.Precision)
	case TypeArray:
		s = "ARRAY<" + t.Element.String() + ">"
	case TypeMap:
		s = "MAP<" + t.Key.String() + ", " + t.Value.String() + ">"
	case TypeRow:
		parts := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			parts[i] = f.Name + " " + f.Type.String()
		}
		s = "ROW<" + strings.Join(parts, ", ") + ">"
	default:
		s = string(t.Root)
	}
	if !t.Nullable {
		s += " NOT NULL"
	}
	return s
}

// UnmarshalJSON decodes a type of a schema file: a string for atomic types
// ("DECIMAL(10, 2) NOT NULL"), an object for ARRAY, MAP and ROW.
func (t *DataType) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		pt, err := parseAtomic(s)
		if err != nil {
			return err
		}
		*t = pt
		return nil
	}
	var o struct {
		Type    string    `json:"type"`
		Element *DataType `json:"element"`
		Key     *DataType `json:"key"`
		Value   *DataType `json:"value"`
		Fields  []Field   `json:"fields"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return fmt.Errorf("%w: data type %s: %w", ErrCorrupt, b, err)
	}
	name, nullable := notNull(o.Type)
	*t = DataType{Root: TypeRoot(name), Nullable: nullable}
	switch t.Root {
	case TypeArray, "MULTISET":
		if o.Element == nil {
			return fmt.Errorf("%w: %s type without element", ErrCorrupt, name)
		}
		if t.Root == "MULTISET" {
			return fmt.Errorf("%w: data type MULTISET", ErrUnsupported)
		}
		t.Element = o.Element
	case TypeMap:
		if o.Key == nil || o.Value == nil {
			return fmt.Errorf("%w: MAP type without key or value", ErrCorrupt)
		}
		t.Key, t.Value = o.Key, o.Value
	case TypeRow:
		t.Fields = o.Fields
	default:
		return fmt.Errorf("%w: data type %q", ErrUnsupported, o.Type)
	}
	return nil
}

// notNull splits a trailing NOT NULL off a type name.
func notNull(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutSuffix(s, " NOT NULL"); ok {
		return strings.TrimSpace(rest), false
	}
	return s, true
}

// parseAtomic parses an atomic type string.
func parseAtomic(s string) (DataType, error) {
	name, nullable := notNull(s)
	t := DataType{Nullable: nullable}
	ltz := false
	if rest, ok := strings.CutSuffix(name, " WITH LOCAL TIME ZONE"); ok {
		name, ltz = rest, true
	}
	base, args, err := typeArgs(name)
	if err != nil {
		return DataType{}, fmt.Errorf("%w: data type %q: %w", ErrCorrupt, s, err)
	}
	arg := func(i, def int) int {
		if i < len(args) {
			return args[i]
		}
		return def
	}
	switch base {
	case "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE":
		t.Root = TypeRoot(base)
	case "INTEGER":
		t.Root = TypeInt
	case "DECIMAL":
		t.Root, t.Precision, t.Scale = TypeDecimal, arg(0, 10), arg(1, 0)
	case "CHAR", "VARCHAR", "BINARY", "VARBINARY":
		t.Root, t.Length = TypeRoot(base), arg(0, 1)
	case "STRING":
		t.Root, t.Length = TypeVarChar, 1<<31-1
	case "BYTES":
		t.Root, t.Length = TypeVarBinary, 1<<31-1
	case "TIME":
		t.Root, t.Precision = TypeTime, arg(0, 0)
	case "TIMESTAMP":
		t.Root, t.Precision = TypeTimestamp, arg(0, 6)
		if ltz {
			t.Root = TypeTimestampLTZ
		}
	case "TIMESTAMP_LTZ":
		t.Root, t.Precision = TypeTimestampLTZ, arg(0, 6)
	default:
		return DataType{}, fmt.Errorf("%w: data type %q", ErrUnsupported, s)
	}
	if ltz && t.Root != TypeTimestampLTZ {
		return DataType{}, fmt.Errorf("%w: data type %q", ErrCorrupt, s)
	}
	return t, nil
}

// typeArgs splits "NAME(a, b)" into NAME and its integer arguments.
func typeArgs(s string) (string, []int, error) {
	open := strings.IndexByte(s, '(')
	if open < 0 {
		return strings.ToUpper(strings.TrimSpace(s)), nil, nil
	}
	if !strings.HasSuffix(s, ")") {
		return "", nil, fmt.Errorf("unbalanced parentheses")
	}
	var args []int
	for _, a := range strings.Split(s[open+1:len(s)-1], ",") {
		n, err := strconv.Atoi(strings.TrimSpace(a))
		if err != nil || n < 0 {
			return "", nil, fmt.Errorf("bad type argument %q", a)
		}
		args = append(args, n)
	}
	return strings.ToUpper(strings.TrimSpace(s[:open])), args, nil
}

// ArrowType is the Arrow type the package reads a value of type t as:
// timestamps as microseconds (nanoseconds for a precision above 6), in UTC
// with local time zone; TIME as microseconds; CHAR and VARCHAR as strings.
func (t DataType) ArrowType() (arrow.DataType, error) {
	switch t.Root {
	case TypeBoolean:
		return arrow.FixedWidthTypes.Boolean, nil
	case TypeTinyInt:
		return arrow.PrimitiveTypes.Int8, nil
	case TypeSmallInt:
		return arrow.PrimitiveTypes.Int16, nil
	case TypeInt:
		return arrow.PrimitiveTypes.Int32, nil
	case TypeBigInt:
		return arrow.PrimitiveTypes.Int64, nil
	case TypeFloat:
		return arrow.PrimitiveTypes.Float32, nil
	case TypeDouble:
		return arrow.PrimitiveTypes.Float64, nil
	case TypeDecimal:
		if t.Precision < 1 || t.Precision > 38 || t.Scale > t.Precision {
			return nil, fmt.Errorf("%w: %s", ErrCorrupt, t)
		}
		return &arrow.Decimal128Type{Precision: int32(t.Precision), Scale: int32(t.Scale)}, nil
	case TypeChar, TypeVarChar:
		return arrow.BinaryTypes.String, nil
	case TypeBinary, TypeVarBinary:
		return arrow.BinaryTypes.Binary, nil
	case TypeDate:
		return arrow.FixedWidthTypes.Date32, nil
	case TypeTime:
		return arrow.FixedWidthTypes.Time64us, nil
	case TypeTimestamp, TypeTimestampLTZ:
		unit := arrow.Microsecond
		if t.Precision > 6 {
			unit = arrow.Nanosecond
		}
		tz := ""
		if t.Root == TypeTimestampLTZ {
			tz = "UTC"
		}
		return &arrow.TimestampType{Unit: unit, TimeZone: tz}, nil
	case TypeArray:
		el, err := t.Element.ArrowType()
		if err != nil {
			return nil, err
		}
		return arrow.ListOfField(arrow.Field{Name: "element", Type: el, Nullable: t.Element.Nullable}), nil
	case TypeMap:
		k, err := t.Key.ArrowType()
		if err != nil {
			return nil, err
		}
		v, err := t.Value.ArrowType()
		if err != nil {
			return nil, err
		}
		return arrow.MapOfWithMetadata(k, arrow.Metadata{}, v, arrow.Metadata{}), nil
	case TypeRow:
		fields := make([]arrow.Field, len(t.Fields))
		for i, f := range t.Fields {
			af, err := f.ArrowField()
			if err != nil {
				return nil, err
			}
			fields[i] = af
		}
		return arrow.StructOf(fields...), nil
	}
	return nil, fmt.Errorf("%w: data type %s", ErrUnsupported, t)
}
