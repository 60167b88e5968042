package iceberg

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/internal/lib/pqread"
	"github.com/sluicefeed/sluice/lake"
)

// icebergTarget is a set of top-level columns of a window's end schema that
// a read decodes.
type icebergTarget struct {
	// schema is the Arrow schema of the batches.
	schema *arrow.Schema
	// fields are the end schema's fields of the columns, in schema order.
	fields []iceberg.NestedField
	// fallback reads the same columns with iceberg-go's scan: for a data
	// file the engine cannot match columns in (see fileColumns), and one
	// that is not Parquet.
	fallback *table.Scan
}

// newIcebergTarget prepares the read of the given fields (top-level fields
// of a schema), with iceberg-go's scan of them as its fallback.
func newIcebergTarget(fields []iceberg.NestedField, fallback *table.Scan) (*icebergTarget, error) {
	sch, err := table.SchemaToArrowSchema(iceberg.NewSchema(0, fields...), nil, false, false)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot convert the schema to Arrow: %v", lake.ErrUnsupported, err)
	}
	if sch.NumFields() != len(fields) {
		return nil, fmt.Errorf("%w: %d fields converted to %d Arrow fields", lake.ErrInternal, len(fields), sch.NumFields())
	}
	return &icebergTarget{schema: sch, fields: fields, fallback: fallback}, nil
}

// withFields returns the target with the given fields added after its own
// (nil: none added, t itself).
func (t *icebergTarget) withFields(extra []iceberg.NestedField) (*icebergTarget, error) {
	if len(extra) == 0 {
		return t, nil
	}
	return newIcebergTarget(append(append([]iceberg.NestedField(nil), t.fields...), extra...), t.fallback)
}

// fileColumns says where each column of t is in a data file whose footer
// is m. ok is false for a file with a column that has neither a field id
// nor a name in mapping: iceberg-go's scan fails on such a file (it has no
// id to match by), and it stays the one to say so, rather than the engine
// guessing columns by name.
func (t *icebergTarget) fileColumns(m *pqread.Meta, mapping iceberg.NameMapping) (cols []pqread.Column, ok bool, err error) {
	manifest, err := pqarrow.NewSchemaManifest(m.File.Schema, m.File.KeyValueMetadata(), &pqarrow.ArrowReadProperties{})
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", pqread.ErrCorrupt, err)
	}
	root := &iceberg.MappedField{Fields: mapping}
	if !identified(manifest.Fields, root) {
		return nil, false, nil
	}
	cols = make([]pqread.Column, len(t.fields))
	for i, fl := range t.fields {
		if cols[i], err = columnByID(manifest.Fields, root, fl, t.schema.Field(i).Type); err != nil {
			return nil, false, err
		}
	}
	return cols, true, nil
}

// mappedField is the name mapping of the field name in the mapping level m
// (nil: none).
func mappedField(m *iceberg.MappedField, name string) *iceberg.MappedField {
	if m == nil {
		return nil
	}
	return m.GetField(name)
}

// writtenID is the field id written in the file for sf, or -1. (Like
// iceberg-go, 0 and below are no id.)
func writtenID(sf *pqarrow.SchemaField) int {
	v, ok := sf.Field.Metadata.GetValue("PARQUET:field_id")
	if !ok {
		return -1
	}
	id, err := strconv.Atoi(v)
	if err != nil || id <= 0 {
		return -1
	}
	return id
}

// fieldID is the Iceberg field id of the file field sf, whose name mapping
// is m: the id written in the file, else the mapping's, else -1.
func fieldID(sf *pqarrow.SchemaField, m *iceberg.MappedField) int {
	if id := writtenID(sf); id >= 0 {
		return id
	}
	if m != nil && m.FieldID != nil {
		return *m.FieldID
	}
	return -1
}

// children returns the nested fields of the file field sf (a struct's
// fields, a list's element, a map's key and value) with the names their
// mappings have, as iceberg-go walks a file's schema.
func children(sf *pqarrow.SchemaField) (kids []*pqarrow.SchemaField, names []string) {
	switch sf.Field.Type.(type) {
	case *arrow.StructType:
		for i := range sf.Children {
			kids = append(kids, &sf.Children[i])
			names = append(names, sf.Children[i].Field.Name)
		}
	case *arrow.MapType:
		if len(sf.Children) == 1 && len(sf.Children[0].Children) == 2 {
			kv := &sf.Children[0]
			kids, names = []*pqarrow.SchemaField{&kv.Children[0], &kv.Children[1]}, []string{"key", "value"}
		}
	case arrow.ListLikeType:
		if len(sf.Children) == 1 {
			kids, names = []*pqarrow.SchemaField{&sf.Children[0]}, []string{"element"}
		}
	}
	return kids, names
}

// identified reports whether every field of the file has a field id,
// written or mapped, as iceberg-go requires (it resolves every struct
// field, list element and map value; a map key may go without); m is the
// name mapping of fields' level.
func identified(fields []pqarrow.SchemaField, m *iceberg.MappedField) bool {
	for i := range fields {
		if !identifiedField(&fields[i], mappedField(m, fields[i].Field.Name), true) {
			return false
		}
	}
	return true
}

func identifiedField(sf *pqarrow.SchemaField, m *iceberg.MappedField, needID bool) bool {
	if needID && fieldID(sf, m) < 0 {
		return false
	}
	_, isMap := sf.Field.Type.(*arrow.MapType)
	kids, names := children(sf)
	for i, k := range kids {
		if !identifiedField(k, mappedField(m, names[i]), !isMap || names[i] != "key") {
			return false
		}
	}
	return true
}

// columnByID finds the column of the Iceberg field fl (of Arrow type at)
// among the file fields of one level, whose name mapping is m.
func columnByID(fields []pqarrow.SchemaField, m *iceberg.MappedField, fl iceberg.NestedField, at arrow.DataType) (pqread.Column, error) {
	for i := range fields {
		sf := &fields[i]
		fm := mappedField(m, sf.Field.Name)
		if fieldID(sf, fm) != fl.ID {
			continue
		}
		var c pqread.Column
		if id := writtenID(sf); id >= 0 {
			c.FieldID = &id
		} else {
			c.Name = sf.Field.Name
		}
		kids, err := nestedColumns(sf, fm, fl.Type, at)
		if err != nil {
			return pqread.Column{}, err
		}
		c.Children = kids
		return c, nil
	}
	return missingColumn(fl, at)
}

// nestedColumns maps the parts of the Iceberg type it onto the file field
// sf (whose name mapping is m): per struct field, the list element, the
// map key and value. Nil when the kinds differ (pqread then fails the read
// with ErrCast) or it is primitive.
func nestedColumns(sf *pqarrow.SchemaField, m *iceberg.MappedField, it iceberg.Type, at arrow.DataType) ([]pqread.Column, error) {
	kids, _ := children(sf)
	switch t := it.(type) {
	case *iceberg.StructType:
		st, ok := at.(*arrow.StructType)
		if _, isStruct := sf.Field.Type.(*arrow.StructType); !ok || !isStruct || st.NumFields() != len(t.FieldList) {
			return nil, nil
		}
		out := make([]pqread.Column, len(t.FieldList))
		for i, fl := range t.FieldList {
			c, err := columnByID(sf.Children, m, fl, st.Field(i).Type)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case *iceberg.ListType:
		lt, ok := at.(arrow.ListLikeType)
		if _, isMap := sf.Field.Type.(*arrow.MapType); !ok || isMap || len(kids) != 1 {
			return nil, nil
		}
		elem, err := nestedColumns(kids[0], mappedField(m, "element"), t.Element, lt.Elem())
		if err != nil {
			return nil, err
		}
		return []pqread.Column{{Children: elem}}, nil
	case *iceberg.MapType:
		mt, ok := at.(*arrow.MapType)
		if _, isMap := sf.Field.Type.(*arrow.MapType); !ok || !isMap || len(kids) != 2 {
			return nil, nil
		}
		key, err := nestedColumns(kids[0], mappedField(m, "key"), t.KeyType, mt.KeyType())
		if err != nil {
			return nil, err
		}
		val, err := nestedColumns(kids[1], mappedField(m, "value"), t.ValueType, mt.ItemType())
		if err != nil {
			return nil, err
		}
		return []pqread.Column{{Children: key}, {Children: val}}, nil
	}
	return nil, nil
}

// errMissingRequired is a file that lacks a required column without an
// initial default: not a file of the table's schema.
var errMissingRequired = errors.New("the file lacks a required column that has no initial-default")

// missingColumn is the column of a field the file lacks: its initial
// default (a primitive's) on every row, else nulls.
func missingColumn(fl iceberg.NestedField, at arrow.DataType) (pqread.Column, error) {
	if fl.InitialDefault == nil {
		if fl.Required {
			return pqread.Column{}, fmt.Errorf("%w: field %d %q", errMissingRequired, fl.ID, fl.Name)
		}
		return pqread.Column{}, nil
	}
	if _, ok := fl.Type.(iceberg.PrimitiveType); !ok {
		// A struct's default is null or the defaults of its fields (spec);
		// a list's and a map's are null.
		return pqread.Column{}, nil
	}
	v, err := defaultScalar(fl.InitialDefault, fl.Type, at)
	if err != nil {
		return pqread.Column{}, fmt.Errorf("%w: field %d %q: initial-default %v: %v", lake.ErrUnsupported, fl.ID, fl.Name,
			fl.InitialDefault, err)
	}
	return pqread.Column{Constant: v}, nil
}

// defaultScalar converts a default value, as the metadata's JSON gives it
// (the spec's single-value JSON: numbers, ISO strings for dates and times,
// hex for binary) or as iceberg-go's API sets it (Go values), to a scalar
// of Arrow type at.
func defaultScalar(v any, t iceberg.Type, at arrow.DataType) (scalar.Scalar, error) {
	lit, err := defaultLiteral(v, t)
	if err != nil {
		return nil, err
	}
	if lit, err = lit.To(t); err != nil {
		return nil, err
	}
	switch l := lit.(type) {
	case iceberg.BoolLiteral:
		return scalar.NewBooleanScalar(bool(l)), nil
	case iceberg.Int32Literal:
		return scalar.NewInt32Scalar(int32(l)), nil
	case iceberg.Int64Literal:
		return scalar.NewInt64Scalar(int64(l)), nil
	case iceberg.Float32Literal:
		return scalar.NewFloat32Scalar(float32(l)), nil
	case iceberg.Float64Literal:
		return scalar.NewFloat64Scalar(float64(l)), nil
	case iceberg.DateLiteral:
		return scalar.NewDate32Scalar(arrow.Date32(l)), nil
	case iceberg.TimeLiteral:
		return scalar.NewTime64Scalar(arrow.Time64(l), arrow.FixedWidthTypes.Time64us), nil
	case iceberg.TimestampLiteral:
		return timestampScalar(int64(l), arrow.Microsecond, at), nil
	case iceberg.TimestampNsLiteral:
		return timestampScalar(int64(l), arrow.Nanosecond, at), nil
	case iceberg.StringLiteral:
		return scalar.NewStringScalar(string(l)), nil
	case iceberg.BinaryLiteral:
		return scalar.NewBinaryScalar(memory.NewBufferBytes(l), arrow.BinaryTypes.Binary), nil
	case iceberg.FixedLiteral:
		return scalar.NewFixedSizeBinaryScalar(memory.NewBufferBytes(l), &arrow.FixedSizeBinaryType{ByteWidth: len(l)}), nil
	case iceberg.UUIDLiteral:
		return scalar.NewFixedSizeBinaryScalar(memory.NewBufferBytes(l[:]), &arrow.FixedSizeBinaryType{ByteWidth: 16}), nil
	case iceberg.DecimalLiteral:
		dt, ok := at.(*arrow.Decimal128Type)
		if !ok {
			return nil, fmt.Errorf("a decimal for Arrow type %s", at)
		}
		return scalar.NewDecimal128Scalar(l.Val, dt), nil
	}
	return nil, fmt.Errorf("no default of type %s", t)
}

// timestampScalar is a timestamp of the given unit, in the zone of at.
func timestampScalar(v int64, unit arrow.TimeUnit, at arrow.DataType) scalar.Scalar {
	zone := ""
	if tt, ok := at.(*arrow.TimestampType); ok {
		zone = tt.TimeZone
	}
	return scalar.NewTimestampScalar(arrow.Timestamp(v), &arrow.TimestampType{Unit: unit, TimeZone: zone})
}
