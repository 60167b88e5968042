package delta

import (
	"fmt"

	"github.com/sluicefeed/sluice/lake"
)

// ToLake converts a Delta schema to the engine's logical schema.
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
// Types (in Iceberg's names, which lake's follow): long → long, integer, short and byte → int (Iceberg has no
// narrower integers), float → float, double → double, boolean, string,
// binary, date, decimal(p,s) → decimal(p,s), timestamp → timestamptz
// (microseconds, UTC), timestamp_ntz → timestamp (microseconds), struct,
// array and map alike; nullable → optional; map keys are required. A
// field's "comment" metadata becomes its doc.
func ToLake(st *StructType, mode ColumnMappingMode) (*lake.Schema, error) {
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
	return lake.NewSchema(0, nil, fields...)
}

// idAssigner gives the fields of a schema their ids.
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
func (a *idAssigner) structFields(path string, st *StructType) ([]lake.Field, error) {
	out := make([]lake.Field, 0, len(st.Fields))
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
		typ, err := a.lakeType(f, "", column, f.Type)
		if err != nil {
			return nil, err
		}
		doc, _ := f.Metadata[metaComment].(string)
		out = append(out, lake.Field{ID: id, Name: f.Name, Type: typ, Required: !f.Nullable, Doc: doc})
	}
	return out, nil
}

// lakeType converts t, the type of column: the type of f, or of what
// rel ("element", "value.element") leads to under f.
func (a *idAssigner) lakeType(f *StructField, rel, column string, t DataType) (lake.Type, error) {
	// child converts the element, key or value name of t, with its id.
	child := func(name string, t DataType) (int, lake.Type, error) {
		childRel, childColumn := join(rel, name), column+"."+name
		id, err := a.nestedID(f, childRel, childColumn)
		if err != nil {
			return 0, nil, err
		}
		ct, err := a.lakeType(f, childRel, childColumn, t)
		return id, ct, err
	}
	switch t := t.(type) {
	case *StructType:
		fields, err := a.structFields(column, t)
		if err != nil {
			return nil, err
		}
		return &lake.StructType{Fields: fields}, nil
	case *ArrayType:
		id, et, err := child("element", t.ElementType)
		if err != nil {
			return nil, err
		}
		return &lake.ListType{ElementID: id, Element: et, ElementRequired: !t.ContainsNull}, nil
	case *MapType:
		keyID, kt, err := child("key", t.KeyType)
		if err != nil {
			return nil, err
		}
		valueID, vt, err := child("value", t.ValueType)
		if err != nil {
			return nil, err
		}
		return &lake.MapType{KeyID: keyID, Key: kt, ValueID: valueID, Value: vt, ValueRequired: !t.ValueContainsNull}, nil
	}
	it, err := lakePrimitive(t)
	if err != nil {
		return nil, fmt.Errorf("%w: column %s: %w", ErrBadSchema, column, err)
	}
	return it, nil
}

// lakePrimitive is the lake type of a primitive or decimal type.
func lakePrimitive(t DataType) (lake.Type, error) {
	switch t {
	case TypeString:
		return lake.StringType{}, nil
	case TypeLong:
		return lake.LongType{}, nil
	case TypeInteger, TypeShort, TypeByte:
		return lake.IntType{}, nil
	case TypeFloat:
		return lake.FloatType{}, nil
	case TypeDouble:
		return lake.DoubleType{}, nil
	case TypeBoolean:
		return lake.BooleanType{}, nil
	case TypeBinary:
		return lake.BinaryType{}, nil
	case TypeDate:
		return lake.DateType{}, nil
	case TypeTimestamp:
		return lake.TimestampTzType{}, nil
	case TypeTimestampNTZ:
		return lake.TimestampType{}, nil
	}
	if d, ok := t.(DecimalType); ok {
		return lake.DecimalType{Precision: d.Precision, Scale: d.Scale}, nil
	}
	return nil, fmt.Errorf("%v is not a primitive type", t)
}
