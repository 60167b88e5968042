package feed

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
)

// Filter is a parsed and type-checked row filter.
type Filter struct {
	// Text is the filter as the client wrote it.
	Text string
	// Expr is the filter as an (unbound) Iceberg expression, used to skip
	// manifests, files and row groups and to filter rows.
	Expr iceberg.BooleanExpression
	// Columns are the data columns the filter reads, in order of first use.
	Columns []string
}

// ParseFilter parses a SQL boolean expression over the columns of schema:
// comparisons (= != <> < <= > >=) of a column with a literal, IN and NOT IN
// lists, IS [NOT] NULL, AND, OR, NOT and parentheses. Literals are 'strings'
// (quotes doubled to escape), numbers, TRUE and FALSE, TIMESTAMP '...' and
// DATE '...'; a string compared with a timestamp or date column is read as
// one. Errors wrap ErrInvalidFilter, or ErrUnknownColumn for a column the
// schema lacks, and give the 1-based character position of the problem.
func ParseFilter(text string, schema *iceberg.Schema) (*Filter, error) {
	node, err := parseFilter(text)
	if err != nil {
		return nil, err
	}
	b := binder{schema: schema}
	expr, err := b.bind(node)
	if err != nil {
		return nil, err
	}
	return &Filter{Text: text, Expr: expr, Columns: b.columns}, nil
}

type binder struct {
	schema  *iceberg.Schema
	columns []string
}

func (b *binder) bind(n filterNode) (iceberg.BooleanExpression, error) {
	switch n := n.(type) {
	case andNode:
		l, r, err := b.bind2(n.left, n.right)
		if err != nil {
			return nil, err
		}
		return iceberg.NewAnd(l, r), nil
	case orNode:
		l, r, err := b.bind2(n.left, n.right)
		if err != nil {
			return nil, err
		}
		return iceberg.NewOr(l, r), nil
	case notNode:
		c, err := b.bind(n.child)
		if err != nil {
			return nil, err
		}
		return iceberg.NewNot(c), nil
	case constNode:
		if n.value {
			return iceberg.AlwaysTrue{}, nil
		}
		return iceberg.AlwaysFalse{}, nil
	case nullNode:
		field, err := b.field(n.column, n.pos)
		if err != nil {
			return nil, err
		}
		op := iceberg.OpIsNull
		if n.negate {
			op = iceberg.OpNotNull
		}
		return b.check(iceberg.UnaryPredicate(op, iceberg.Reference(field)), n.pos)
	case cmpNode:
		field, err := b.field(n.column, n.pos)
		if err != nil {
			return nil, err
		}
		lit, err := b.literal(field, n.value)
		if err != nil {
			return nil, err
		}
		ops := map[string]iceberg.Operation{"=": iceberg.OpEQ, "!=": iceberg.OpNEQ, "<": iceberg.OpLT,
			"<=": iceberg.OpLTEQ, ">": iceberg.OpGT, ">=": iceberg.OpGTEQ}
		return b.check(iceberg.LiteralPredicate(ops[n.op], iceberg.Reference(field), lit), n.pos)
	case inNode:
		field, err := b.field(n.column, n.pos)
		if err != nil {
			return nil, err
		}
		lits := make([]iceberg.Literal, len(n.values))
		for i, v := range n.values {
			if lits[i], err = b.literal(field, v); err != nil {
				return nil, err
			}
		}
		op := iceberg.OpIn
		if n.negate {
			op = iceberg.OpNotIn
		}
		return b.check(iceberg.SetPredicate(op, iceberg.Reference(field), lits), n.pos)
	default:
		return nil, fmt.Errorf("%w: unknown node %T", ErrInvalidFilter, n)
	}
}

func (b *binder) bind2(l, r filterNode) (iceberg.BooleanExpression, iceberg.BooleanExpression, error) {
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

// field resolves a column name against the schema and returns its
// canonical name.
func (b *binder) field(name string, pos int) (string, error) {
	if _, ok := b.schema.FindFieldByName(name); !ok {
		return "", fmt.Errorf("%w: %q at position %d of the filter (columns: %s)",
			ErrUnknownColumn, name, pos, strings.Join(topLevelNames(b.schema), ", "))
	}
	if !slices.Contains(b.columns, name) {
		b.columns = append(b.columns, name)
	}
	return name, nil
}

// check binds one predicate so that a type error is reported with the
// predicate's position.
func (b *binder) check(pred iceberg.BooleanExpression, pos int) (iceberg.BooleanExpression, error) {
	if _, err := iceberg.BindExpr(b.schema, pred, true); err != nil {
		return nil, fmt.Errorf("%w: at position %d: %v", ErrInvalidFilter, pos, err)
	}
	return pred, nil
}

// literal turns a parsed literal into an Iceberg literal; the binding in
// check converts it to the column's type or reports why it cannot.
func (b *binder) literal(column string, l literal) (iceberg.Literal, error) {
	field, _ := b.schema.FindFieldByName(column)
	switch l.kind {
	case litInt:
		return iceberg.NewLiteral(l.i), nil
	case litFloat:
		return iceberg.NewLiteral(l.f), nil
	case litBool:
		return iceberg.NewLiteral(l.b), nil
	case litTimestamp, litDate:
		return temporalLiteral(field, l)
	default:
		switch field.Type.(type) {
		case iceberg.TimestampType, iceberg.TimestampTzType, iceberg.DateType:
			return temporalLiteral(field, l)
		}
		return iceberg.NewLiteral(l.text), nil
	}
}

var timestampLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04",
	"2006-01-02 15:04",
	"2006-01-02",
}

// temporalLiteral parses a timestamp or date for a column. Times without a
// zone are UTC.
func temporalLiteral(field iceberg.NestedField, l literal) (iceberg.Literal, error) {
	var t time.Time
	var err error
	for _, layout := range timestampLayouts {
		if t, err = time.Parse(layout, l.text); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: at position %d: %q is not a timestamp or date (want e.g. '2024-05-01 12:00:00' or '2024-05-01')",
			ErrInvalidFilter, l.pos, l.text)
	}
	switch field.Type.(type) {
	case iceberg.DateType:
		days := t.Unix() / 86400
		if t.Unix()%86400 < 0 {
			days-- // floor, for dates before 1970
		}
		return iceberg.NewLiteral(iceberg.Date(days)), nil
	case iceberg.TimestampType, iceberg.TimestampTzType:
		return iceberg.NewLiteral(iceberg.Timestamp(t.UTC().UnixMicro())), nil
	default:
		return nil, fmt.Errorf("%w: at position %d: %s is compared with column %q of type %s",
			ErrInvalidFilter, l.pos, l, field.Name, field.Type)
	}
}

func topLevelNames(schema *iceberg.Schema) []string {
	fields := schema.Fields()
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	return names
}
