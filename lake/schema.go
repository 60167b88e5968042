package lake

import (
	"fmt"
	"strings"
	"sync"
)

// Schema is the schema of a table at one point in its history: its
// top-level fields and the ids of the fields that identify a row.
//
// A Schema must not be changed once one of its methods has been called:
// they index it on first use.
type Schema struct {
	// ID is the schema's id in its table's history.
	ID int
	// Fields are the top-level fields, in order.
	Fields []Field
	// IdentifierFieldIDs are the ids of the fields that together identify
	// a row, if the table declares them.
	IdentifierFieldIDs []int

	once sync.Once
	idx  *index
}

// index holds a schema's lookups.
type index struct {
	byID     map[int]Field
	nameOfID map[int]string // full names: list elements as "element", maps' as "key" and "value"
	byName   map[string]int // full names, and the short names that leave out a struct element's "element"
	byLower  map[string]int // byName, lower-cased
	err      error          // the first rule the schema breaks
}

// NewSchema returns the schema of id with the given fields and identifier
// field ids, after checking that no two fields share an id or a full name.
// Errors wrap ErrInvalidSchema.
func NewSchema(id int, identifierFieldIDs []int, fields ...Field) (*Schema, error) {
	s := &Schema{ID: id, Fields: fields, IdentifierFieldIDs: identifierFieldIDs}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// Validate reports the first rule of the model s breaks (two fields with
// one id or one full name, a field without a type), wrapping
// ErrInvalidSchema.
func (s *Schema) Validate() error { return s.index().err }

func (s *Schema) index() *index {
	s.once.Do(func() { s.idx = buildIndex(s.Fields) })
	return s.idx
}

func buildIndex(fields []Field) *index {
	x := &index{byID: map[int]Field{}, nameOfID: map[int]string{}, byName: map[string]int{}, byLower: map[string]int{}}
	shortNames := map[string]int{}
	fail := func(format string, args ...any) {
		if x.err == nil {
			x.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalidSchema}, args...)...)
		}
	}
	var add func(f Field, full, short []string, skipShort bool)
	add = func(f Field, full, short []string, skipShort bool) {
		fullName := strings.Join(append(full, f.Name), ".")
		if f.Type == nil {
			fail("field %s has no type", fullName)
			return
		}
		if other, ok := x.byName[fullName]; ok {
			fail("multiple fields for name %s: %d and %d", fullName, other, f.ID)
		}
		if _, ok := x.byID[f.ID]; ok {
			fail("multiple fields with id %d: %s and %s", f.ID, x.nameOfID[f.ID], fullName)
		}
		x.byName[fullName] = f.ID
		x.byID[f.ID] = f
		x.nameOfID[f.ID] = fullName
		if len(short) > 0 {
			shortNames[strings.Join(append(short, f.Name), ".")] = f.ID
		}
		full = append(full[:len(full):len(full)], f.Name)
		if !skipShort {
			short = append(short[:len(short):len(short)], f.Name)
		}
		switch t := f.Type.(type) {
		case *StructType:
			for _, c := range t.Fields {
				add(c, full, short, false)
			}
		case *ListType:
			// Iceberg's short names leave out the "element" of a list of
			// structs: points.x as well as points.element.x.
			_, isStruct := t.Element.(*StructType)
			add(t.ElementField(), full, short, isStruct)
		case *MapType:
			add(t.KeyField(), full, short, false)
			add(t.ValueField(), full, short, false)
		}
	}
	for _, f := range fields {
		add(f, nil, nil, false)
	}
	for name, id := range shortNames {
		if _, ok := x.byName[name]; !ok {
			x.byName[name] = id
		}
	}
	for name, id := range x.byName {
		x.byLower[strings.ToLower(name)] = id
	}
	return x
}

// FieldByID returns the field of id, at any depth (list elements and map
// keys and values included).
func (s *Schema) FieldByID(id int) (Field, bool) {
	f, ok := s.index().byID[id]
	return f, ok
}

// FieldByName returns the field whose dotted name is name, matched case
// sensitively: its full name (list elements as "element", map keys and
// values as "key" and "value": "points.element.x") or, for a field in a
// list of structs, the short name without "element" ("points.x").
func (s *Schema) FieldByName(name string) (Field, bool) {
	id, ok := s.index().byName[name]
	if !ok {
		return Field{}, false
	}
	return s.FieldByID(id)
}

// FieldByNameFold is FieldByName matching case insensitively.
func (s *Schema) FieldByNameFold(name string) (Field, bool) {
	id, ok := s.index().byLower[strings.ToLower(name)]
	if !ok {
		return Field{}, false
	}
	return s.FieldByID(id)
}

// ColumnName returns the full dotted name of the field of id.
func (s *Schema) ColumnName(id int) (string, bool) {
	name, ok := s.index().nameOfID[id]
	return name, ok
}

// Names returns the names of the top-level fields, in order.
func (s *Schema) Names() []string {
	names := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		names[i] = f.Name
	}
	return names
}

// String lists the schema's id and fields as Iceberg does:
// "table {\n\t1: id: required long\n}".
func (s *Schema) String() string {
	var b strings.Builder
	b.WriteString("table {")
	for _, f := range s.Fields {
		b.WriteString("\n\t")
		b.WriteString(f.String())
	}
	b.WriteString("\n}")
	return b.String()
}
