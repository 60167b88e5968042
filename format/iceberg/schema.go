package iceberg

import (
	"fmt"

	"github.com/apache/iceberg-go"

	"github.com/sluicefeed/sluice/lake"
)

// SchemaFrom converts an Iceberg schema to Sluice's: the same ids, names,
// types, requiredness, docs and identifier fields, and the defaults of
// primitive fields as typed values (see DefaultValue; a struct's, list's or
// map's default is dropped: the spec makes it null or its fields'
// defaults). Errors wrap ErrUnsupported (a type lake lacks, a default that
// does not convert) or lake.ErrInvalidSchema.
func SchemaFrom(s *iceberg.Schema) (*lake.Schema, error) {
	fields, err := fieldsFrom(s.Fields())
	if err != nil {
		return nil, err
	}
	return lake.NewSchema(s.ID, append([]int(nil), s.IdentifierFieldIDs...), fields...)
}

func fieldsFrom(in []iceberg.NestedField) ([]lake.Field, error) {
	out := make([]lake.Field, len(in))
	for i, f := range in {
		var err error
		if out[i], err = FieldFrom(f); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// FieldFrom converts one Iceberg field, as SchemaFrom does.
func FieldFrom(f iceberg.NestedField) (lake.Field, error) {
	t, err := TypeFrom(f.Type)
	if err != nil {
		return lake.Field{}, fmt.Errorf("field %d %q: %w", f.ID, f.Name, err)
	}
	out := lake.Field{ID: f.ID, Name: f.Name, Type: t, Required: f.Required, Doc: f.Doc}
	if !lake.IsPrimitive(t) {
		return out, nil
	}
	if out.InitialDefault, err = DefaultValue(f.InitialDefault, f.Type); err != nil {
		return lake.Field{}, fmt.Errorf("%w: field %d %q: initial-default %v: %v", ErrUnsupported, f.ID, f.Name,
			f.InitialDefault, err)
	}
	if out.WriteDefault, err = DefaultValue(f.WriteDefault, f.Type); err != nil {
		return lake.Field{}, fmt.Errorf("%w: field %d %q: write-default %v: %v", ErrUnsupported, f.ID, f.Name,
			f.WriteDefault, err)
	}
	return out, nil
}

// TypeFrom converts an Iceberg type. Variant, geometry, geography and
// unknown are errors wrapping ErrUnsupported.
func TypeFrom(t iceberg.Type) (lake.Type, error) {
	switch t := t.(type) {
	case iceberg.BooleanType:
		return lake.BooleanType{}, nil
	case iceberg.Int32Type:
		return lake.IntType{}, nil
	case iceberg.Int64Type:
		return lake.LongType{}, nil
	case iceberg.Float32Type:
		return lake.FloatType{}, nil
	case iceberg.Float64Type:
		return lake.DoubleType{}, nil
	case iceberg.DecimalType:
		return lake.DecimalType{Precision: t.Precision(), Scale: t.Scale()}, nil
	case iceberg.DateType:
		return lake.DateType{}, nil
	case iceberg.TimeType:
		return lake.TimeType{}, nil
	case iceberg.TimestampType:
		return lake.TimestampType{}, nil
	case iceberg.TimestampTzType:
		return lake.TimestampTzType{}, nil
	case iceberg.TimestampNsType:
		return lake.TimestampNsType{}, nil
	case iceberg.TimestampTzNsType:
		return lake.TimestampTzNsType{}, nil
	case iceberg.StringType:
		return lake.StringType{}, nil
	case iceberg.UUIDType:
		return lake.UUIDType{}, nil
	case iceberg.FixedType:
		return lake.FixedType{Length: t.Len()}, nil
	case iceberg.BinaryType:
		return lake.BinaryType{}, nil
	case *iceberg.StructType:
		fields, err := fieldsFrom(t.FieldList)
		if err != nil {
			return nil, err
		}
		return &lake.StructType{Fields: fields}, nil
	case *iceberg.ListType:
		e, err := TypeFrom(t.Element)
		if err != nil {
			return nil, err
		}
		return &lake.ListType{ElementID: t.ElementID, Element: e, ElementRequired: t.ElementRequired}, nil
	case *iceberg.MapType:
		k, err := TypeFrom(t.KeyType)
		if err != nil {
			return nil, err
		}
		v, err := TypeFrom(t.ValueType)
		if err != nil {
			return nil, err
		}
		return &lake.MapType{KeyID: t.KeyID, Key: k, ValueID: t.ValueID, Value: v, ValueRequired: t.ValueRequired}, nil
	}
	return nil, fmt.Errorf("%w: type %v", ErrUnsupported, t)
}

// ToIceberg converts a Sluice schema back to Iceberg's (defaults as
// Iceberg literals), for what still needs iceberg-go's model: its scan and
// its expression binding.
func ToIceberg(s *lake.Schema) *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(s.ID, append([]int{}, s.IdentifierFieldIDs...), fieldsTo(s.Fields)...)
}

func fieldsTo(in []lake.Field) []iceberg.NestedField {
	out := make([]iceberg.NestedField, len(in))
	for i, f := range in {
		out[i] = iceberg.NestedField{ID: f.ID, Name: f.Name, Type: TypeTo(f.Type), Required: f.Required, Doc: f.Doc}
		if f.InitialDefault.Valid() {
			out[i].InitialDefault = LiteralOf(f.InitialDefault)
		}
		if f.WriteDefault.Valid() {
			out[i].WriteDefault = LiteralOf(f.WriteDefault)
		}
	}
	return out
}

// TypeTo converts a Sluice type to Iceberg's.
func TypeTo(t lake.Type) iceberg.Type {
	switch t := t.(type) {
	case lake.BooleanType:
		return iceberg.PrimitiveTypes.Bool
	case lake.IntType:
		return iceberg.PrimitiveTypes.Int32
	case lake.LongType:
		return iceberg.PrimitiveTypes.Int64
	case lake.FloatType:
		return iceberg.PrimitiveTypes.Float32
	case lake.DoubleType:
		return iceberg.PrimitiveTypes.Float64
	case lake.DecimalType:
		return iceberg.DecimalTypeOf(t.Precision, t.Scale)
	case lake.DateType:
		return iceberg.PrimitiveTypes.Date
	case lake.TimeType:
		return iceberg.PrimitiveTypes.Time
	case lake.TimestampType:
		return iceberg.PrimitiveTypes.Timestamp
	case lake.TimestampTzType:
		return iceberg.PrimitiveTypes.TimestampTz
	case lake.TimestampNsType:
		return iceberg.PrimitiveTypes.TimestampNs
	case lake.TimestampTzNsType:
		return iceberg.PrimitiveTypes.TimestampTzNs
	case lake.StringType:
		return iceberg.PrimitiveTypes.String
	case lake.UUIDType:
		return iceberg.PrimitiveTypes.UUID
	case lake.FixedType:
		return iceberg.FixedTypeOf(t.Length)
	case lake.BinaryType:
		return iceberg.PrimitiveTypes.Binary
	case *lake.StructType:
		return &iceberg.StructType{FieldList: fieldsTo(t.Fields)}
	case *lake.ListType:
		return &iceberg.ListType{ElementID: t.ElementID, Element: TypeTo(t.Element), ElementRequired: t.ElementRequired}
	case *lake.MapType:
		return &iceberg.MapType{KeyID: t.KeyID, KeyType: TypeTo(t.Key), ValueID: t.ValueID, ValueType: TypeTo(t.Value),
			ValueRequired: t.ValueRequired}
	}
	return nil
}
