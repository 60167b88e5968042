package lake

import "fmt"

// Field is a named, typed field of a schema or struct, with the id that
// identifies it across schema changes.
type Field struct {
	// ID identifies the field for the life of the table.
	ID int
	// Name is the field's name within its struct (not the dotted path).
	Name string
	// Type is the field's type.
	Type Type
	// Required says the field is never null.
	Required bool
	// Doc is the field's documentation, if any.
	Doc string
	// InitialDefault is the value rows written before the field existed
	// read as (not Valid: null).
	InitialDefault Value
	// WriteDefault is the value writers give the field when a row does not
	// (not Valid: null).
	WriteDefault Value
}

// String is "ID: name: required|optional type" with " (doc)" if the field
// has a doc, as Iceberg writes a field.
func (f Field) String() string {
	req := "optional"
	if f.Required {
		req = "required"
	}
	doc := ""
	if f.Doc != "" {
		doc = " (" + f.Doc + ")"
	}
	return fmt.Sprintf("%d: %s: %s %s%s", f.ID, f.Name, req, f.Type, doc)
}

// Equal reports whether f and o are the same field: id, name,
// requiredness, doc, defaults and type.
func (f Field) Equal(o Field) bool {
	return f.ID == o.ID && f.Name == o.Name && f.Required == o.Required && f.Doc == o.Doc &&
		valueEqual(f.InitialDefault, o.InitialDefault) && valueEqual(f.WriteDefault, o.WriteDefault) &&
		Equal(f.Type, o.Type)
}

// valueEqual reports whether a and b are both no value, or equal values of
// one type.
func valueEqual(a, b Value) bool {
	if !a.Valid() || !b.Valid() {
		return a.Valid() == b.Valid()
	}
	if !Equal(a.typ, b.typ) {
		return false
	}
	if c, ok := Compare(a, b); ok {
		return c == 0
	}
	return a.f != a.f && b.f != b.f // both NaN
}
