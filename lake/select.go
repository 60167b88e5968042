package lake

import "fmt"

// Select returns the schema of the named fields (dotted names, matched as
// FieldByName matches them), keeping their nesting: a selected field keeps
// its whole type, and a struct, list or map holding one keeps only what
// leads to it. Fields keep the schema's order; the identifier field ids
// keep the selected ones. Iceberg's Schema.Select(true, names...) gives the
// same schema. An unknown name is an error wrapping ErrInvalidSchema.
func (s *Schema) Select(names ...string) (*Schema, error) {
	selected := make(map[int]bool, len(names))
	for _, n := range names {
		f, ok := s.FieldByName(n)
		if !ok {
			return nil, fmt.Errorf("%w: could not find column %s", ErrInvalidSchema, n)
		}
		selected[f.ID] = true
	}
	var fields []Field
	if st := pruneStruct(&StructType{Fields: s.Fields}, selected); st != nil {
		fields = st.Fields
	}
	ids := make([]int, 0, len(s.IdentifierFieldIDs))
	for _, id := range s.IdentifierFieldIDs {
		if selected[id] {
			ids = append(ids, id)
		}
	}
	return &Schema{ID: s.ID, Fields: fields, IdentifierFieldIDs: ids}, nil
}

// pruneStruct keeps the fields of st that are selected or lead to one that
// is; nil when none does.
func pruneStruct(st *StructType, selected map[int]bool) *StructType {
	var kept []Field
	for _, f := range st.Fields {
		if selected[f.ID] {
			kept = append(kept, f)
			continue
		}
		if t := prune(f.Type, selected); t != nil {
			f.Type = t
			kept = append(kept, f)
		}
	}
	if kept == nil {
		return nil
	}
	return &StructType{Fields: kept}
}

// prune is t with only what leads to a selected field, or nil when
// nothing in t is selected.
func prune(t Type, selected map[int]bool) Type {
	switch t := t.(type) {
	case *StructType:
		if st := pruneStruct(t, selected); st != nil {
			return st
		}
	case *ListType:
		if selected[t.ElementID] {
			return t
		}
		if e := prune(t.Element, selected); e != nil {
			return &ListType{ElementID: t.ElementID, Element: e, ElementRequired: t.ElementRequired}
		}
	case *MapType:
		if selected[t.ValueID] {
			return t
		}
		if v := prune(t.Value, selected); v != nil {
			return &MapType{KeyID: t.KeyID, Key: t.Key, ValueID: t.ValueID, Value: v, ValueRequired: t.ValueRequired}
		}
		if selected[t.KeyID] {
			return t
		}
	}
	return nil
}
