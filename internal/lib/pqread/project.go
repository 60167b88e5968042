package pqread

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// This file turns the target schema and its Columns into a projection: which
// leaf columns of the file to decode, and per target field how to make its
// array from what was decoded (cast, rebuilt struct, constant or nulls).

// fieldIDKey is the arrow field metadata key pqarrow puts a Parquet field_id
// under.
const fieldIDKey = "PARQUET:field_id"

// convCtx is what converting a decoded array needs.
type convCtx struct {
	mem memory.Allocator
	ctx context.Context // carries mem for compute's casts
}

// converter turns an array decoded from the file into the target type. It
// returns a new reference (the caller releases both).
type converter func(c *convCtx, a arrow.Array) (arrow.Array, error)

// origin says where a target field's values come from.
type origin int

const (
	fromNull  origin = iota // nulls: the file has no such column
	fromConst               // a constant on every row
	fromFile                // decoded from the file
)

// node is the projection of one target field.
type node struct {
	path string         // the target field's path, for errors ("s.a")
	typ  arrow.DataType // the target type
	from origin

	// fromConst: the value (never a null scalar: those become fromNull),
	// and its cast to typ when its type differs.
	value     scalar.Scalar
	valueConv converter

	// fromFile: the file field (its top-level index in the manifest for a
	// top-level node, its name in the decoded parent struct for a child),
	// and the conversion of its decoded values to typ.
	field    int
	fileName string
	conv     converter
}

// projection is the plan of a read: the target's nodes and the leaf
// columns of the file they need.
type projection struct {
	nodes  []*node
	leaves map[int]bool
}

// project matches the target's columns against the file's schema manifest.
func project(m *pqarrow.SchemaManifest, target *arrow.Schema, columns []Column) (*projection, error) {
	if len(columns) != target.NumFields() {
		return nil, fmt.Errorf("%w: %d columns for a target schema of %d fields", ErrInvalid, len(columns), target.NumFields())
	}
	p := &projection{leaves: map[int]bool{}}
	for i, f := range target.Fields() {
		n, err := p.node(m.Fields, f, columns[i], f.Name)
		if err != nil {
			return nil, err
		}
		p.nodes = append(p.nodes, n)
	}
	return p, nil
}

// node plans the target field f, whose column spec is c, among the file
// fields (the manifest's top-level fields or a struct's children).
func (p *projection) node(fields []pqarrow.SchemaField, f arrow.Field, c Column, path string) (*node, error) {
	if err := c.validate(path); err != nil {
		return nil, err
	}
	n := &node{path: path, typ: f.Type, field: -1}
	switch {
	case c.Constant != nil:
		if !c.Constant.IsValid() {
			return n, nil // fromNull
		}
		n.from, n.value = fromConst, c.Constant
		if st := c.Constant.DataType(); !arrow.TypeEqual(st, f.Type) {
			conv, err := p.primitive(path, st, f.Type)
			if err != nil {
				return nil, err
			}
			n.valueConv = conv
		}
		return n, nil
	case c.FieldID == nil && c.Name == "":
		return n, checkChildren(path, f.Type, c.Children)
	}
	idx, err := match(fields, c, path)
	if err != nil {
		return nil, err
	}
	if idx < 0 {
		return n, checkChildren(path, f.Type, c.Children)
	}
	sf := &fields[idx]
	conv, err := p.convert(path, sf, f.Type, c.Children)
	if err != nil {
		return nil, err
	}
	n.from, n.field, n.fileName, n.conv = fromFile, idx, sf.Field.Name, conv
	return n, nil
}

// validate checks that c sets at most one source.
func (c Column) validate(path string) error {
	set := 0
	if c.FieldID != nil {
		set++
	}
	if c.Name != "" {
		set++
	}
	if c.Constant != nil {
		set++
		if len(c.Children) > 0 {
			return fmt.Errorf("%w: column %q: a constant with children", ErrInvalid, path)
		}
	}
	if set > 1 {
		return fmt.Errorf("%w: column %q: more than one of FieldID, Name and Constant", ErrInvalid, path)
	}
	return nil
}

// checkChildren checks the shape of a column's Children against its target
// type: one per field for a struct, one for a list's element, two for a
// map's key and value, none otherwise.
func checkChildren(path string, dt arrow.DataType, children []Column) error {
	if children == nil {
		return nil
	}
	want := 0
	switch t := dt.(type) {
	case *arrow.StructType:
		want = t.NumFields()
	case *arrow.MapType:
		want = 2
	case arrow.ListLikeType:
		want = 1
	}
	if len(children) != want {
		return fmt.Errorf("%w: column %q: %d children for type %s", ErrInvalid, path, len(children), dt)
	}
	return nil
}

// fieldID is the Parquet field_id of a file field, or -1.
func fieldID(sf *pqarrow.SchemaField) int {
	v, ok := sf.Field.Metadata.GetValue(fieldIDKey)
	if !ok {
		return -1
	}
	id, err := strconv.Atoi(v)
	if err != nil || id < 0 {
		return -1
	}
	return id
}

// match finds the file field c names among fields: by field id, or by name
// (exactly, else case-insensitively when only one field matches that way,
// as Spark resolves Parquet columns). It returns -1 when none matches.
func match(fields []pqarrow.SchemaField, c Column, path string) (int, error) {
	found := -1
	if c.FieldID != nil {
		for i := range fields {
			if fieldID(&fields[i]) != *c.FieldID {
				continue
			}
			if found >= 0 {
				return 0, fmt.Errorf("%w: column %q: field id %d appears twice in the file", ErrCorrupt, path, *c.FieldID)
			}
			found = i
		}
		return found, nil
	}
	for i := range fields {
		if fields[i].Field.Name == c.Name {
			if found >= 0 {
				return 0, fmt.Errorf("%w: column %q: name %q appears twice in the file", ErrCorrupt, path, c.Name)
			}
			found = i
		}
	}
	if found >= 0 {
		return found, nil
	}
	for i := range fields {
		if strings.EqualFold(fields[i].Field.Name, c.Name) {
			if found >= 0 {
				return 0, fmt.Errorf("%w: column %q: name %q matches more than one file column ignoring case", ErrInvalid, path, c.Name)
			}
			found = i
		}
	}
	return found, nil
}

// convert plans the conversion of the file field sf to the type to, adding
// the leaves it needs. children are the target's column specs below this
// field (nil: match by name).
func (p *projection) convert(path string, sf *pqarrow.SchemaField, to arrow.DataType, children []Column) (converter, error) {
	if err := checkChildren(path, to, children); err != nil {
		return nil, err
	}
	from := sf.Field.Type
	if children == nil && arrow.TypeEqual(from, to) {
		p.addLeaves(sf)
		if arrow.TypeEqual(from, to, arrow.CheckMetadata()) {
			return retain, nil
		}
		return relabeler(to), nil // same layout, different field metadata
	}
	switch to := to.(type) {
	case *arrow.StructType:
		if _, ok := from.(*arrow.StructType); !ok || len(sf.Children) == 0 {
			return nil, castError(path, from, to)
		}
		return p.structConv(path, sf, to, children)
	case *arrow.MapType:
		if _, ok := from.(*arrow.MapType); !ok || len(sf.Children) != 1 || len(sf.Children[0].Children) != 2 {
			return nil, castError(path, from, to)
		}
		return p.mapConv(path, sf, to, children)
	case *arrow.ListType, *arrow.LargeListType:
		switch from.(type) {
		case *arrow.ListType, *arrow.LargeListType:
		default:
			return nil, castError(path, from, to)
		}
		if len(sf.Children) != 1 {
			return nil, castError(path, from, to)
		}
		return p.listConv(path, sf, to.(arrow.ListLikeType), children)
	}
	if !sf.IsLeaf() {
		return nil, castError(path, from, to)
	}
	p.leaves[sf.ColIndex] = true
	return p.primitive(path, from, to)
}

// addLeaves adds every leaf below sf.
func (p *projection) addLeaves(sf *pqarrow.SchemaField) {
	if sf.IsLeaf() {
		p.leaves[sf.ColIndex] = true
		return
	}
	for i := range sf.Children {
		p.addLeaves(&sf.Children[i])
	}
}

// firstLeaf is the first leaf below sf.
func firstLeaf(sf *pqarrow.SchemaField) int {
	for !sf.IsLeaf() {
		if len(sf.Children) == 0 {
			return -1
		}
		sf = &sf.Children[0]
	}
	return sf.ColIndex
}
