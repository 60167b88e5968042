package lake

import (
	"fmt"
	"strings"
)

// Type is the type of a column: one of the primitive types (BooleanType,
// IntType, LongType, FloatType, DoubleType, DecimalType, DateType,
// TimeType, TimestampType, TimestampTzType, TimestampNsType,
// TimestampTzNsType, StringType, UUIDType, FixedType, BinaryType) or a
// nested one (*StructType, *ListType, *MapType). String gives its Iceberg
// spelling.
type Type interface {
	fmt.Stringer
	lakeType()
}

// The primitive types without parameters.
type (
	// BooleanType is true or false.
	BooleanType struct{}
	// IntType is a 32-bit signed integer.
	IntType struct{}
	// LongType is a 64-bit signed integer.
	LongType struct{}
	// FloatType is a 32-bit IEEE 754 float.
	FloatType struct{}
	// DoubleType is a 64-bit IEEE 754 float.
	DoubleType struct{}
	// DateType is a calendar date, days since 1970-01-01.
	DateType struct{}
	// TimeType is a time of day without a zone, microseconds since midnight.
	TimeType struct{}
	// TimestampType is a date and time without a zone, microseconds since
	// 1970-01-01 00:00:00.
	TimestampType struct{}
	// TimestampTzType is an instant, microseconds since 1970-01-01 00:00:00
	// UTC.
	TimestampTzType struct{}
	// TimestampNsType is TimestampType in nanoseconds.
	TimestampNsType struct{}
	// TimestampTzNsType is TimestampTzType in nanoseconds.
	TimestampTzNsType struct{}
	// StringType is UTF-8 text.
	StringType struct{}
	// UUIDType is a 16-byte universally unique identifier.
	UUIDType struct{}
	// BinaryType is bytes of any length.
	BinaryType struct{}
)

// DecimalType is a fixed-point decimal of Precision digits, Scale of them
// after the point.
type DecimalType struct {
	Precision, Scale int
}

// FixedType is bytes of a fixed Length.
type FixedType struct {
	Length int
}

// StructType is a tuple of named fields.
type StructType struct {
	Fields []Field
}

// ListType is a list of elements of one type; the element is a field of
// its own id, named "element".
type ListType struct {
	ElementID       int
	Element         Type
	ElementRequired bool
}

// MapType maps keys of one type to values of another; the key and the
// value are fields of their own ids, named "key" and "value". Keys are
// never null.
type MapType struct {
	KeyID         int
	Key           Type
	ValueID       int
	Value         Type
	ValueRequired bool
}

func (BooleanType) lakeType()       {}
func (IntType) lakeType()           {}
func (LongType) lakeType()          {}
func (FloatType) lakeType()         {}
func (DoubleType) lakeType()        {}
func (DecimalType) lakeType()       {}
func (DateType) lakeType()          {}
func (TimeType) lakeType()          {}
func (TimestampType) lakeType()     {}
func (TimestampTzType) lakeType()   {}
func (TimestampNsType) lakeType()   {}
func (TimestampTzNsType) lakeType() {}
func (StringType) lakeType()        {}
func (UUIDType) lakeType()          {}
func (FixedType) lakeType()         {}
func (BinaryType) lakeType()        {}
func (*StructType) lakeType()       {}
func (*ListType) lakeType()         {}
func (*MapType) lakeType()          {}

func (BooleanType) String() string       { return "boolean" }
func (IntType) String() string           { return "int" }
func (LongType) String() string          { return "long" }
func (FloatType) String() string         { return "float" }
func (DoubleType) String() string        { return "double" }
func (DateType) String() string          { return "date" }
func (TimeType) String() string          { return "time" }
func (TimestampType) String() string     { return "timestamp" }
func (TimestampTzType) String() string   { return "timestamptz" }
func (TimestampNsType) String() string   { return "timestamp_ns" }
func (TimestampTzNsType) String() string { return "timestamptz_ns" }
func (StringType) String() string        { return "string" }
func (UUIDType) String() string          { return "uuid" }
func (BinaryType) String() string        { return "binary" }

// String is "decimal(P, S)".
func (t DecimalType) String() string { return fmt.Sprintf("decimal(%d, %d)", t.Precision, t.Scale) }

// String is "fixed[L]".
func (t FixedType) String() string { return fmt.Sprintf("fixed[%d]", t.Length) }

// String is "struct<ID: name: required|optional type (doc), ...>".
func (t *StructType) String() string {
	var b strings.Builder
	b.WriteString("struct<")
	for i, f := range t.Fields {
		if i != 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.String())
	}
	b.WriteString(">")
	return b.String()
}

// String is "list<element type>".
func (t *ListType) String() string { return fmt.Sprintf("list<%s>", t.Element) }

// String is "map<key type, value type>".
func (t *MapType) String() string { return fmt.Sprintf("map<%s, %s>", t.Key, t.Value) }

// ElementField is the list's element as a field.
func (t *ListType) ElementField() Field {
	return Field{ID: t.ElementID, Name: "element", Type: t.Element, Required: t.ElementRequired}
}

// KeyField is the map's key as a field.
func (t *MapType) KeyField() Field {
	return Field{ID: t.KeyID, Name: "key", Type: t.Key, Required: true}
}

// ValueField is the map's value as a field.
func (t *MapType) ValueField() Field {
	return Field{ID: t.ValueID, Name: "value", Type: t.Value, Required: t.ValueRequired}
}

// IsPrimitive reports whether t is a primitive type (not a struct, list or
// map).
func IsPrimitive(t Type) bool {
	switch t.(type) {
	case *StructType, *ListType, *MapType, nil:
		return false
	}
	return true
}

// Equal reports whether a and b are the same type: the same primitive, or
// nested types whose fields (ids, names, requiredness, docs, defaults and
// types) are equal.
func Equal(a, b Type) bool {
	switch a := a.(type) {
	case *StructType:
		b, ok := b.(*StructType)
		if !ok || len(a.Fields) != len(b.Fields) {
			return false
		}
		for i := range a.Fields {
			if !a.Fields[i].Equal(b.Fields[i]) {
				return false
			}
		}
		return true
	case *ListType:
		b, ok := b.(*ListType)
		return ok && a.ElementID == b.ElementID && a.ElementRequired == b.ElementRequired && Equal(a.Element, b.Element)
	case *MapType:
		b, ok := b.(*MapType)
		return ok && a.KeyID == b.KeyID && a.ValueID == b.ValueID && a.ValueRequired == b.ValueRequired &&
			Equal(a.Key, b.Key) && Equal(a.Value, b.Value)
	case nil:
		return b == nil
	}
	return a == b
}
