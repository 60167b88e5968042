package paimon

import (
	"fmt"

	"github.com/sluicefeed/sluice/lake"
)

// nestedIDBase is where the ids Sluice gives to the parts of nested types
// that Paimon gives none (array elements, map keys and values) start:
// far above any field id a Paimon table hands out, so that they never
// collide with one.
const nestedIDBase = 1 << 30

// LakeSchema converts s into the engine's schema: Paimon's field ids
// (top-level and in ROW types) are kept; array elements and map keys and
// values, which Paimon does not number, get ids from nestedIDBase on in
// the order they appear. TINYINT and SMALLINT widen to int, CHAR and
// VARCHAR are strings, BINARY and VARBINARY binary, TIMESTAMP with a
// precision above 6 nanoseconds, and TIMESTAMP WITH LOCAL TIME ZONE an
// instant. The primary key's columns are the identifier fields. An
// unsupported type fails with ErrUnsupported.
func (s *Schema) LakeSchema() (*lake.Schema, error) {
	next := nestedIDBase
	fields := make([]lake.Field, len(s.Fields))
	for i, f := range s.Fields {
		lf, err := lakeField(f, &next)
		if err != nil {
			return nil, err
		}
		fields[i] = lf
	}
	var ids []int
	for _, k := range s.PrimaryKeys {
		if f, ok := s.FieldByName(k); ok {
			ids = append(ids, f.ID)
		}
	}
	out, err := lake.NewSchema(int(s.ID), ids, fields...)
	if err != nil {
		return nil, fmt.Errorf("%w: schema %d: %w", ErrCorrupt, s.ID, err)
	}
	return out, nil
}

func lakeField(f Field, next *int) (lake.Field, error) {
	t, err := lakeType(f.Type, next)
	if err != nil {
		return lake.Field{}, fmt.Errorf("column %q: %w", f.Name, err)
	}
	return lake.Field{ID: f.ID, Name: f.Name, Type: t, Required: !f.Type.Nullable, Doc: f.Description}, nil
}

// lakeType is the engine's type of a Paimon type.
func lakeType(t DataType, next *int) (lake.Type, error) {
	switch t.Root {
	case TypeBoolean:
		return lake.BooleanType{}, nil
	case TypeTinyInt, TypeSmallInt, TypeInt:
		return lake.IntType{}, nil
	case TypeBigInt:
		return lake.LongType{}, nil
	case TypeFloat:
		return lake.FloatType{}, nil
	case TypeDouble:
		return lake.DoubleType{}, nil
	case TypeDecimal:
		if t.Precision < 1 || t.Precision > 38 || t.Scale > t.Precision {
			return nil, fmt.Errorf("%w: %s", ErrCorrupt, t)
		}
		return lake.DecimalType{Precision: t.Precision, Scale: t.Scale}, nil
	case TypeChar, TypeVarChar:
		return lake.StringType{}, nil
	case TypeBinary, TypeVarBinary:
		return lake.BinaryType{}, nil
	case TypeDate:
		return lake.DateType{}, nil
	case TypeTime:
		return lake.TimeType{}, nil
	case TypeTimestamp:
		if t.Precision > 6 {
			return lake.TimestampNsType{}, nil
		}
		return lake.TimestampType{}, nil
	case TypeTimestampLTZ:
		if t.Precision > 6 {
			return lake.TimestampTzNsType{}, nil
		}
		return lake.TimestampTzType{}, nil
	case TypeArray:
		id := *next
		*next++
		el, err := lakeType(*t.Element, next)
		if err != nil {
			return nil, err
		}
		return &lake.ListType{ElementID: id, Element: el, ElementRequired: !t.Element.Nullable}, nil
	case TypeMap:
		kid, vid := *next, *next+1
		*next += 2
		k, err := lakeType(*t.Key, next)
		if err != nil {
			return nil, err
		}
		v, err := lakeType(*t.Value, next)
		if err != nil {
			return nil, err
		}
		return &lake.MapType{KeyID: kid, Key: k, ValueID: vid, Value: v, ValueRequired: !t.Value.Nullable}, nil
	case TypeRow:
		fields := make([]lake.Field, len(t.Fields))
		for i, f := range t.Fields {
			lf, err := lakeField(f, next)
			if err != nil {
				return nil, err
			}
			fields[i] = lf
		}
		return &lake.StructType{Fields: fields}, nil
	}
	return nil, fmt.Errorf("%w: data type %s", ErrUnsupported, t)
}
