package filter

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluicefeed/sluice/lake"
)

// Filter is a parsed and type-checked row filter.
type Filter struct {
	// Text is the filter as the client wrote it.
	Text string
	// Expr is the filter bound to the schema it was parsed against.
	Expr Expr
	// Columns are the data columns the filter reads (full dotted names),
	// in order of first use.
	Columns []string
}

// Parse parses a SQL boolean expression over the columns of schema:
// comparisons (= != <> < <= > >=) of a column with a literal, IN and NOT IN
// lists, IS [NOT] NULL, AND, OR, NOT and parentheses. Literals are 'strings'
// (quotes doubled to escape), numbers, TRUE and FALSE, TIMESTAMP '...' and
// DATE '...'; a string compared with a timestamp or date column is read as
// one (times without a zone are UTC). Columns are top-level or nested in
// structs (addr.city) and of a primitive type. Literals must fit their
// column exactly: a date has no time of day, a microsecond timestamp no
// nanoseconds, a decimal no more digits than its type, and NaN compares
// with nothing. Errors wrap ErrInvalidFilter, or ErrUnknownColumn for a
// column the schema lacks, and give the 1-based character position of the
// problem.
//
// Predicates whose answer the schema decides are folded to True or False:
// IS NULL of a required column outside optional structs is False, and a
// comparison with a number beyond an int or float column's range is True or
// False whatever the row holds (as Iceberg binds them).
func Parse(text string, schema *lake.Schema) (*Filter, error) {
	node, err := parseFilter(text)
	if err != nil {
		return nil, err
	}
	if schema == nil {
		return nil, fmt.Errorf("%w: no schema to bind the filter to", ErrInvalidFilter)
	}
	b := binder{schema: schema}
	expr, err := b.bind(node)
	if err != nil {
		return nil, err
	}
	return &Filter{Text: text, Expr: expr, Columns: b.columns}, nil
}

type binder struct {
	schema  *lake.Schema
	columns []string
	// addressable holds the ids of the fields reachable through structs
	// only (not inside a list or map), each with whether an optional
	// struct holds it; built on first use.
	addressable map[int]bool
}

var cmpOps = map[string]Op{"=": OpEQ, "!=": OpNE, "<": OpLT, "<=": OpLE, ">": OpGT, ">=": OpGE}

func (b *binder) bind(n filterNode) (Expr, error) {
	switch n := n.(type) {
	case andNode:
		l, r, err := b.bind2(n.left, n.right)
		if err != nil {
			return nil, err
		}
		return And{l, r}, nil
	case orNode:
		l, r, err := b.bind2(n.left, n.right)
		if err != nil {
			return nil, err
		}
		return Or{l, r}, nil
	case notNode:
		c, err := b.bind(n.child)
		if err != nil {
			return nil, err
		}
		return Not{c}, nil
	case constNode:
		if n.value {
			return True{}, nil
		}
		return False{}, nil
	case nullNode:
		field, col, err := b.field(n.column, n.pos)
		if err != nil {
			return nil, err
		}
		if field.Required && !b.addressable[field.ID] {
			// Never null: Iceberg binds the test to a constant.
			if n.negate {
				return True{}, nil
			}
			return False{}, nil
		}
		if n.negate {
			return NotNull{col}, nil
		}
		return IsNull{col}, nil
	case cmpNode:
		field, col, err := b.field(n.column, n.pos)
		if err != nil {
			return nil, err
		}
		v, err := b.literal(field, n.value)
		if err != nil {
			return nil, err
		}
		op := cmpOps[n.op]
		switch v.bound {
		case aboveMax:
			return constant(op == OpLT || op == OpLE || op == OpNE), nil
		case belowMin:
			return constant(op == OpGT || op == OpGE || op == OpNE), nil
		}
		return Compare{Column: col, Op: op, Value: v.value}, nil
	case inNode:
		field, col, err := b.field(n.column, n.pos)
		if err != nil {
			return nil, err
		}
		var vals []lake.Value
		for _, l := range n.values {
			v, err := b.literal(field, l)
			if err != nil {
				return nil, err
			}
			if v.bound == inRange && !slices.ContainsFunc(vals, func(o lake.Value) bool { return same(o, v.value) }) {
				vals = append(vals, v.value)
			}
		}
		switch {
		case len(vals) == 0:
			return constant(n.negate), nil // out of range: in nothing
		case n.negate:
			return NotIn{Column: col, Values: vals}, nil
		default:
			return In{Column: col, Values: vals}, nil
		}
	default:
		return nil, filterErrorf(n.position(), "unknown node %T", n)
	}
}

func constant(b bool) Expr {
	if b {
		return True{}
	}
	return False{}
}

// same reports whether a and b are the same value.
func same(a, b lake.Value) bool {
	c, ok := lake.Compare(a, b)
	return ok && c == 0
}

func (b *binder) bind2(l, r filterNode) (Expr, Expr, error) {
	le, err := b.bind(l)
	if err != nil {
		return nil, nil, err
	}
	re, err := b.bind(r)
	if err != nil {
		return nil, nil, err
	}
	return le, re, nil
}

// field resolves a column name against the schema, records it in the
// filter's columns and returns its field (named by its full name, for
// messages) and column. Only primitive columns that are top-level or
// nested in structs can be filtered on.
func (b *binder) field(name string, pos int) (lake.Field, Column, error) {
	field, ok := b.schema.FieldByName(name)
	if !ok {
		hint := ""
		if f, ok := b.schema.FieldByNameFold(name); ok {
			if canon, ok := b.schema.ColumnName(f.ID); ok {
				hint = fmt.Sprintf("did you mean %q? ", canon)
			}
		}
		return field, Column{}, fmt.Errorf("%w: %q at position %d of the filter (%scolumns: %s)",
			ErrUnknownColumn, clip(name), pos, hint, strings.Join(b.schema.Names(), ", "))
	}
	switch field.Type.(type) {
	case *lake.StructType:
		return field, Column{}, filterErrorf(pos, "column %q is a struct; filter on one of its fields (%s.<field>) instead",
			clip(name), clip(name))
	case *lake.ListType:
		return field, Column{}, filterErrorf(pos, "column %q is a list; a filter can only use primitive columns", clip(name))
	case *lake.MapType:
		return field, Column{}, filterErrorf(pos, "column %q is a map; a filter can only use primitive columns", clip(name))
	}
	if !b.isAddressable(field.ID) {
		return field, Column{}, filterErrorf(pos, "column %q is inside a list or map; a filter can only use "+
			"top-level columns and fields of structs", clip(name))
	}
	if !slices.Contains(b.columns, name) {
		b.columns = append(b.columns, name)
	}
	path, _ := b.schema.ColumnName(field.ID)
	col := Column{FieldID: field.ID, Path: path, Type: field.Type}
	field.Name = name // the name as written (addr.city), for messages
	return field, col, nil
}

// isAddressable reports whether the field of id is top-level or nested in
// structs only. It also records, in b.addressable, whether an optional
// struct holds each such field.
func (b *binder) isAddressable(id int) bool {
	if b.addressable == nil {
		b.addressable = map[int]bool{}
		var walk func(fields []lake.Field, optionalParent bool)
		walk = func(fields []lake.Field, optionalParent bool) {
			for _, f := range fields {
				b.addressable[f.ID] = optionalParent
				if st, ok := f.Type.(*lake.StructType); ok {
					walk(st.Fields, optionalParent || !f.Required)
				}
			}
		}
		walk(b.schema.Fields, false)
	}
	_, ok := b.addressable[id]
	return ok
}
