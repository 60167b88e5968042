package lake

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/extensions"
)

// arrowDocKey is the Arrow field metadata key of a field's doc, as
// iceberg-go writes it.
const arrowDocKey = "doc"

// ToArrow is the Arrow schema of s the engine serves: the schema
// iceberg-go's table.SchemaToArrowSchema(s, nil, false, false) gives for
// the same Iceberg schema, type for type and byte for byte (no field ids;
// a field's doc as its "doc" metadata; optional fields nullable).
func (s *Schema) ToArrow() *arrow.Schema {
	fields := make([]arrow.Field, len(s.Fields))
	for i, f := range s.Fields {
		fields[i] = ArrowField(f)
	}
	md := arrow.MetadataFrom(nil)
	return arrow.NewSchema(fields, &md)
}

// ArrowField is the Arrow field of f, as ToArrow converts it.
func ArrowField(f Field) arrow.Field {
	out := arrow.Field{Name: f.Name, Type: ArrowType(f.Type), Nullable: !f.Required}
	if f.Doc != "" {
		out.Metadata = arrow.MetadataFrom(map[string]string{arrowDocKey: f.Doc})
	}
	return out
}

// ArrowType is the Arrow type of t, as ToArrow converts it: int32, int64,
// float32, float64, bool, utf8, binary, fixed_size_binary, decimal128,
// date32, time64[us], timestamp[us] and timestamp[ns] (with zone UTC for
// the tz types), the arrow.uuid extension type, and struct, list and map
// of the same.
func ArrowType(t Type) arrow.DataType {
	switch t := t.(type) {
	case BooleanType:
		return arrow.FixedWidthTypes.Boolean
	case IntType:
		return arrow.PrimitiveTypes.Int32
	case LongType:
		return arrow.PrimitiveTypes.Int64
	case FloatType:
		return arrow.PrimitiveTypes.Float32
	case DoubleType:
		return arrow.PrimitiveTypes.Float64
	case DecimalType:
		return &arrow.Decimal128Type{Precision: int32(t.Precision), Scale: int32(t.Scale)}
	case DateType:
		return arrow.FixedWidthTypes.Date32
	case TimeType:
		return arrow.FixedWidthTypes.Time64us
	case TimestampType:
		return &arrow.TimestampType{Unit: arrow.Microsecond}
	case TimestampTzType:
		return arrow.FixedWidthTypes.Timestamp_us
	case TimestampNsType:
		return &arrow.TimestampType{Unit: arrow.Nanosecond}
	case TimestampTzNsType:
		return arrow.FixedWidthTypes.Timestamp_ns
	case StringType:
		return arrow.BinaryTypes.String
	case UUIDType:
		return extensions.NewUUIDType()
	case FixedType:
		return &arrow.FixedSizeBinaryType{ByteWidth: t.Length}
	case BinaryType:
		return arrow.BinaryTypes.Binary
	case *StructType:
		fields := make([]arrow.Field, len(t.Fields))
		for i, f := range t.Fields {
			fields[i] = ArrowField(f)
		}
		return arrow.StructOf(fields...)
	case *ListType:
		return arrow.ListOfField(ArrowField(t.ElementField()))
	case *MapType:
		return arrow.MapOfFields(ArrowField(t.KeyField()), ArrowField(t.ValueField()))
	}
	return arrow.Null
}
