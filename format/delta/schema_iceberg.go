package delta

import (
	"fmt"

	"github.com/apache/iceberg-go"
)

// Column is what a reader needs to find a top-level column in data files.
type Column struct {
	// Name is the column's display name, the name in ToIceberg's schema.
	Name string
	// PhysicalName names the column in data files (name mode), partition
	// values and statistics.
	PhysicalName string
	// FieldID is the column's id in ToIceberg's schema; in id mode it is
	// also the Parquet field_id that data files carry.
	FieldID int
	// Type is the column's Delta type.
	Type     DataType
	Nullable bool
	// TypeChanges is the column's type widening history, oldest first.
	TypeChanges []TypeChange
}

// Columns returns the top-level columns of st, in order, with the ids
// ToIceberg gives them.
func Columns(st *StructType, mode ColumnMappingMode) ([]Column, error) {
	sc, err := ToIceberg(st, mode)
	if err != nil {
		return nil, err
	}
	cols := make([]Column, len(st.Fields))
	for i, f := range st.Fields {
		cols[i] = Column{
			Name: f.Name, PhysicalName: f.PhysicalName(mode), FieldID: sc.Field(i).ID,
			Type: f.Type, Nullable: f.Nullable, TypeChanges: f.TypeChanges,
		}
	}
	return cols, nil
}

// ToIceberg converts a Delta schema to the engine's logical schema.
//
// Field ids: in the name and id modes, every struct field's
// delta.columnMapping.id (which it must have, with a physical name), and
// for array elements and map keys and values the ids of the nearest struct
// field's delta.columnMapping.nested.ids (or parquet.field.nested.ids),
// keyed by its physical name (or display name) and the path: "col.element",
// "col.value.element". Nested fields without one get ids after the
// schema's largest id, in a pre-order walk. In none mode every field gets
// an id in a pre-order walk from 1 (a field, then what it holds, then its
// next sibling; a map's key then its value). Assigned ids are positional,
// not identities: they change when a column is added or dropped before
// them (or, in the mapping modes, when a larger id appears), so match data
// files by them only within one schema.
//
// Types: long → long, integer, short and byte → int (Iceberg has no
// narrower integers), float → float, double → double, boolean, string,
// binary, date, decimal(p,s) → decimal(p,s), timestamp → timestamptz
// (microseconds, UTC), timestamp_ntz → timestamp (microseconds), struct,
// array and map alike; nullable → optional; map keys are required. A
// field's "comment" metadata becomes its doc.
func ToIceberg(st *StructType, mode ColumnMappingMode) (*iceberg.Schema, error) {
	if st == nil {
		return nil, fmt.Errorf("%w: no schema", ErrBadSchema)
	}
	a := &idAssigner{mode: mode, mapped: mode == MappingName || mode == MappingID, next: 1, seen: map[int]string{}}
	switch mode {
	case MappingNone, MappingName, MappingID:
	default:
		return nil, fmt.Errorf("%w: column mapping mode %q", ErrBadSchema, mode)
	}
	if a.mapped {
		a.next = maxID(st) + 1
	}
	fields, err := a.structFields("", st)
	if err != nil {
		return nil, err
	}
	return iceberg.NewSchema(0, fields...), nil
}

// idAssigner gives the fields of a schema their Iceberg ids.
type idAssigner struct {
	mode   ColumnMappingMode
	mapped bool           // ids come from column mapping metadata
	next   int            // the next id to assign
	seen   map[int]string // the column of each id given so far
}

// take registers id as column's, failing when another column has it.
func (a *idAssigner) take(id int, column string) error {
	if other, ok := a.seen[id]; ok {
		return fmt.Errorf("%w: columns %s and %s have the same field id %d", ErrBadSchema, other, column, id)
	}
	a.seen[id] = column
	return nil
}

// assign gives column the next free id.
func (a *idAssigner) assign(column string) (int, error) {
	for {
		if _, ok := a.seen[a.next]; !ok {
			break
		}
		a.next++
	}
	id := a.next
	a.next++
	return id, a.take(id, column)
}

// nestedID is the id of the array element or map key or value at rel
// ("element", "value.element") under f: from f's nested ids in the
// mapping modes, else assigned.
func (a *idAssigner) nestedID(f *StructField, rel, column string) (int, error) {
	if a.mapped {
		for _, key := range []string{metaNestedIDs, metaParquetNestedIDs} {
			ids, _ := f.Metadata[key].(map[string]any)
			for _, prefix := range []string{f.PhysicalName(a.mode), f.Name} {
				if v, ok := ids[prefix+"."+rel]; ok {
					id, ok := metadataInt(v)
					if !ok {
						return 0, fmt.Errorf("%w: column %s: %s %q is not an id", ErrBadSchema, column, key, prefix+"."+rel)
					}
					return id, a.take(id, column)
				}
			}
		}
	}
	return a.assign(column)
}

// maxID is the largest column mapping id in st, nested ids included.
func maxID(st *StructType) int {
	largest := 0
	var walk func(t DataType)
	walk = func(t DataType) {
		switch t := t.(type) {
		case *StructType:
			for _, f := range t.Fields {
				if id, ok := f.FieldID(); ok {
					largest = max(largest, id)
				}
				for _, key := range []string{metaNestedIDs, metaParquetNestedIDs} {
					ids, _ := f.Metadata[key].(map[string]any)
					for _, v := range ids {
						if id, ok := metadataInt(v); ok {
							largest = max(largest, id)
						}
					}
				}
				walk(f.Type)
			}
		case *ArrayType:
			walk(t.ElementType)
		case *MapType:
			walk(t.KeyType)
			walk(t.ValueType)
		}
	}
	walk(st)
	return largest
}

// structFields converts the fields of the struct at path.
func (a *idAssigner) structFields(path string, st *StructType) ([]iceberg.NestedField, error) {
	out := make([]iceberg.NestedField, 0, len(st.Fields))
	for i := range st.Fields {
		f := &st.Fields[i]
		column := join(path, f.Name)
		var id int
		var err error
		if a.mapped {
			fid, ok := f.FieldID()
			if p, _ := f.Metadata[metaPhysicalName].(string); !ok || p == "" {
				return nil, fmt.Errorf("%w: column %s lacks the %s or the %s that column mapping needs",
					ErrBadSchema, column, metaColumnID, metaPhysicalName)
			}
			id, err = fid, a.take(fid, column)
		} else {
			id, err = a.assign(column)
		}
		if err != nil {
			return nil, err
		}
		typ, err := a.icebergType(f, "", column, f.Type)
		if err != nil {
			return nil, err
		}
		doc, _ := f.Metadata[metaComment].(string)
		out = append(out, iceberg.NestedField{ID: id, Name: f.Name, Type: typ, Required: !f.Nullable, Doc: doc})
	}
	return out, nil
}

// icebergType converts t, the type of column: the type of f, or of what
// rel ("element", "value.element") leads to under f.
func (a *idAssigner) icebergType(f *StructField, rel, column string, t DataType) (iceberg.Type, error) {
	// child converts the element, key or value name of t, with its id.
	child := func(name string, t DataType) (int, iceberg.Type, error) {
		childRel, childColumn := join(rel, name), column+"."+name
		id, err := a.nestedID(f, childRel, childColumn)
		if err != nil {
			return 0, nil, err
		}
		ct, err := a.icebergType(f, childRel, childColumn, t)
		return id, ct, err
	}
	switch t := t.(type) {
	case *StructType:
		fields, err := a.structFields(column, t)
		if err != nil {
			return nil, err
		}
		return &iceberg.StructType{FieldList: fields}, nil
	case *ArrayType:
		id, et, err := child("element", t.ElementType)
		if err != nil {
			return nil, err
		}
		return &iceberg.ListType{ElementID: id, Element: et, ElementRequired: !t.ContainsNull}, nil
	case *MapType:
		keyID, kt, err := child("key", t.KeyType)
		if err != nil {
			return nil, err
		}
		valueID, vt, err := child("value", t.ValueType)
		if err != nil {
			return nil, err
		}
		return &iceberg.MapType{KeyID: keyID, KeyType: kt, ValueID: valueID, ValueType: vt, ValueRequired: !t.ValueContainsNull}, nil
	}
	it, err := icebergPrimitive(t)
	if err != nil {
		return nil, fmt.Errorf("%w: column %s: %w", ErrBadSchema, column, err)
	}
	return it, nil
}

// icebergPrimitive is the Iceberg type of a primitive or decimal type.
func icebergPrimitive(t DataType) (iceberg.Type, error) {
	switch t {
	case TypeString:
		return iceberg.PrimitiveTypes.String, nil
	case TypeLong:
		return iceberg.PrimitiveTypes.Int64, nil
	case TypeInteger, TypeShort, TypeByte:
		return iceberg.PrimitiveTypes.Int32, nil
	case TypeFloat:
		return iceberg.PrimitiveTypes.Float32, nil
	case TypeDouble:
		return iceberg.PrimitiveTypes.Float64, nil
	case TypeBoolean:
		return iceberg.PrimitiveTypes.Bool, nil
	case TypeBinary:
		return iceberg.PrimitiveTypes.Binary, nil
	case TypeDate:
		return iceberg.PrimitiveTypes.Date, nil
	case TypeTimestamp:
		return iceberg.PrimitiveTypes.TimestampTz, nil
	case TypeTimestampNTZ:
		return iceberg.PrimitiveTypes.Timestamp, nil
	}
	if d, ok := t.(DecimalType); ok {
		return iceberg.DecimalTypeOf(d.Precision, d.Scale), nil
	}
	return nil, fmt.Errorf("%v is not a primitive type", t)
}
