package pqread

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// validate checks a decoded array's structure, which bad bytes can leave
// inconsistent without an error from the decoder (a list's offsets past
// its values, a struct's children shorter than it), so that the batch
// cannot make its reader panic. Flat columns, whose buffers the decoder
// builds whole, get the constant-time checks; nested and dictionary ones
// a full pass. It takes a over: it returns it (or, for a nested column,
// the same data under the type of its decoded children), or releases it
// and returns an error.
func validate(a arrow.Array) (arrow.Array, error) {
	var err error
	switch a.DataType().(type) {
	case arrow.NestedType, *arrow.DictionaryType, arrow.ExtensionType:
		if _, ok := a.DataType().(arrow.NestedType); ok {
			d := settle(a.Data())
			a.Release()
			a = array.MakeFromData(d)
			d.Release()
		}
		err = array.ValidateFull(a)
	default:
		err = array.Validate(a)
	}
	if err != nil {
		a.Release()
		return nil, err
	}
	return a, nil
}

// settle is d (a new reference) under a type whose children's types are
// those of its children's data: pqarrow declares a struct in a struct it
// decoded only some fields of with all of that inner struct's fields.
func settle(d arrow.ArrayData) arrow.ArrayData {
	kids := make([]arrow.ArrayData, len(d.Children()))
	for i, c := range d.Children() {
		kids[i] = settle(c)
		defer kids[i].Release()
	}
	dt := d.DataType()
	switch t := dt.(type) {
	case *arrow.StructType:
		if len(kids) == t.NumFields() {
			fields := t.Fields()
			for i := range fields {
				fields[i].Type = kids[i].DataType()
			}
			dt = arrow.StructOf(fields...)
		}
	case *arrow.ListType:
		if len(kids) == 1 {
			ef := t.ElemField()
			ef.Type = kids[0].DataType()
			dt = arrow.ListOfField(ef)
		}
	case *arrow.LargeListType:
		if len(kids) == 1 {
			ef := t.ElemField()
			ef.Type = kids[0].DataType()
			dt = arrow.LargeListOfField(ef)
		}
	}
	nd := array.NewData(dt, d.Len(), d.Buffers(), kids, d.NullN(), d.Offset())
	if dict := d.Dictionary(); dict != nil {
		nd.SetDictionary(dict)
	}
	return nd
}

// single is a decoded chunked array as one array (a new reference).
func single(ch *arrow.Chunked, mem memory.Allocator) (arrow.Array, error) {
	switch len(ch.Chunks()) {
	case 0:
		return array.MakeArrayOfNull(mem, ch.DataType(), 0), nil
	case 1:
		a := ch.Chunk(0)
		a.Retain()
		return a, nil
	}
	return array.Concatenate(ch.Chunks(), mem)
}
