package feed

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
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
// one (times without a zone are UTC). Columns are top-level or nested in
// structs (addr.city) and of a primitive type. Literals must fit their
// column exactly: a date has no time of day, a microsecond timestamp no
// nanoseconds, a decimal no more digits than its type, and NaN compares
// with nothing. Errors wrap ErrInvalidFilter, or ErrUnknownColumn for a
// column the schema lacks, and give the 1-based character position of the
// problem.
func ParseFilter(text string, schema *iceberg.Schema) (*Filter, error) {
	node, err := parseFilter(text)
	if err != nil {
		return nil, err
	}
	return bindFilter(text, node, schema)
}

// bindFilter binds a parsed filter to the columns of schema.
func bindFilter(text string, node filterNode, schema *iceberg.Schema) (*Filter, error) {
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
	// addressable holds the IDs of the fields reachable through structs
	// only (not inside a list or map); built on first use.
	addressable map[int]bool
}

var cmpOps = map[string]iceberg.Operation{"=": iceberg.OpEQ, "!=": iceberg.OpNEQ, "<": iceberg.OpLT,
	"<=": iceberg.OpLTEQ, ">": iceberg.OpGT, ">=": iceberg.OpGTEQ}

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
		return b.check(iceberg.UnaryPredicate(op, iceberg.Reference(n.column)), field, n.pos)
	case cmpNode:
		field, err := b.field(n.column, n.pos)
		if err != nil {
			return nil, err
		}
		lit, err := b.literal(field, n.value)
		if err != nil {
			return nil, err
		}
		return b.check(iceberg.LiteralPredicate(cmpOps[n.op], iceberg.Reference(n.column), lit), field, n.pos)
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
		return b.check(iceberg.SetPredicate(op, iceberg.Reference(n.column), lits), field, n.pos)
	default:
		return nil, filterErrorf(n.position(), "unknown node %T", n)
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

// field resolves a column name against the schema, records it in the
// filter's columns and returns its field. Only primitive columns that are
// top-level or nested in structs can be filtered on.
func (b *binder) field(name string, pos int) (iceberg.NestedField, error) {
	field, ok := b.schema.FindFieldByName(name)
	if !ok {
		hint := ""
		if f, ok := b.schema.FindFieldByNameCaseInsensitive(name); ok {
			if canon, ok := b.schema.FindColumnName(f.ID); ok {
				hint = fmt.Sprintf("did you mean %q? ", canon)
			}
		}
		return field, fmt.Errorf("%w: %q at position %d of the filter (%scolumns: %s)",
			ErrUnknownColumn, clip(name), pos, hint, strings.Join(topLevelNames(b.schema), ", "))
	}
	switch field.Type.(type) {
	case *iceberg.StructType:
		return field, filterErrorf(pos, "column %q is a struct; filter on one of its fields (%s.<field>) instead",
			clip(name), clip(name))
	case *iceberg.ListType, *iceberg.MapType:
		return field, filterErrorf(pos, "column %q is a %s; a filter can only use primitive columns",
			clip(name), field.Type.Type())
	}
	if !b.isAddressable(field.ID) {
		return field, filterErrorf(pos, "column %q is inside a list or map; a filter can only use "+
			"top-level columns and fields of structs", clip(name))
	}
	if !slices.Contains(b.columns, name) {
		b.columns = append(b.columns, name)
	}
	field.Name = name // the full name (addr.city), for messages
	return field, nil
}

func (b *binder) isAddressable(id int) bool {
	if b.addressable == nil {
		b.addressable = map[int]bool{}
		var walk func([]iceberg.NestedField)
		walk = func(fields []iceberg.NestedField) {
			for _, f := range fields {
				b.addressable[f.ID] = true
				if st, ok := f.Type.(*iceberg.StructType); ok {
					walk(st.FieldList)
				}
			}
		}
		walk(b.schema.Fields())
	}
	return b.addressable[id]
}

// check binds one predicate, so that an error the literal checks missed is
// still reported with the predicate's position.
func (b *binder) check(pred iceberg.BooleanExpression, field iceberg.NestedField, pos int) (iceberg.BooleanExpression, error) {
	if _, err := iceberg.BindExpr(b.schema, pred, true); err != nil {
		why := strings.ReplaceAll(err.Error(), "\n", "; ")
		if len(why) > 200 {
			why = why[:200] + "..."
		}
		return nil, filterErrorf(pos, "column %q of type %s: %s", clip(field.Name), field.Type, strings.ToValidUTF8(why, ""))
	}
	return pred, nil
}

// literal turns a parsed literal into an Iceberg literal for a column,
// checking that it converts to the column's type.
func (b *binder) literal(field iceberg.NestedField, l literal) (iceberg.Literal, error) {
	if l.kind == litTimestamp || l.kind == litDate || (l.kind == litString && isTemporal(field.Type)) {
		return temporalLiteral(field, l)
	}
	if dt, ok := field.Type.(iceberg.DecimalType); ok && l.kind != litBool {
		return decimalLiteral(field, dt, l)
	}
	var lit iceberg.Literal
	switch l.kind {
	case litInt:
		lit = iceberg.NewLiteral(l.i)
	case litFloat:
		lit = iceberg.NewLiteral(l.f)
	case litBool:
		lit = iceberg.NewLiteral(l.b)
	default:
		lit = iceberg.NewLiteral(l.text)
	}
	conv, err := lit.To(field.Type)
	if err != nil {
		return nil, mismatch(field, l, "")
	}
	switch v := conv.(type) {
	case iceberg.Float32Literal:
		if math.IsNaN(float64(v)) {
			return nil, mismatch(field, l, whyNaN)
		}
	case iceberg.Float64Literal:
		if math.IsNaN(float64(v)) {
			return nil, mismatch(field, l, whyNaN)
		}
	}
	return lit, nil
}

const whyNaN = "NaN is not equal to, less or greater than anything"

// mismatch reports a literal that does not fit its column's type, and why
// if the type alone does not say.
func mismatch(field iceberg.NestedField, l literal, why string) error {
	if why != "" {
		why = ": " + why
	}
	return filterErrorf(l.pos, "cannot compare column %q of type %s with %s%s",
		clip(field.Name), field.Type, literal{kind: l.kind, text: clip(l.text), b: l.b}, why)
}

func isTemporal(t iceberg.Type) bool {
	switch t.(type) {
	case iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType,
		iceberg.DateType:
		return true
	}
	return false
}

var timestampLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04",
	"2006-01-02 15:04",
	time.DateOnly,
}

// The range of a nanosecond timestamp.
var (
	minTimestampNs = time.Unix(0, math.MinInt64)
	maxTimestampNs = time.Unix(0, math.MaxInt64)
)

// temporalLiteral parses a timestamp or date for a column. Times without a
// zone are UTC.
func temporalLiteral(field iceberg.NestedField, l literal) (iceberg.Literal, error) {
	layouts := timestampLayouts
	if l.kind == litDate {
		layouts = []string{time.DateOnly}
	}
	var t time.Time
	var err error
	for _, layout := range layouts {
		if t, err = time.Parse(layout, l.text); err == nil {
			break
		}
	}
	if err != nil {
		what := "a timestamp or date (want e.g. '2024-05-01 12:00:00' or '2024-05-01')"
		if l.kind == litDate {
			what = "a date (want e.g. '2024-05-01')"
		}
		return nil, filterErrorf(l.pos, "%s is not %s", literal{kind: l.kind, text: clip(l.text)}, what)
	}
	t = t.UTC()
	switch field.Type.(type) {
	case iceberg.DateType:
		if t.Hour() != 0 || t.Minute() != 0 || t.Second() != 0 || t.Nanosecond() != 0 {
			return nil, mismatch(field, l, "it has a time of day (in UTC)")
		}
		days := t.Unix() / 86400
		if t.Unix()%86400 < 0 {
			days-- // floor, for dates before 1970
		}
		return iceberg.NewLiteral(iceberg.Date(days)), nil
	case iceberg.TimestampType, iceberg.TimestampTzType:
		if t.Nanosecond()%1000 != 0 {
			return nil, mismatch(field, l, "it is more precise than the column's microseconds")
		}
		return iceberg.NewLiteral(iceberg.Timestamp(t.UnixMicro())), nil
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		if t.Before(minTimestampNs) || t.After(maxTimestampNs) {
			return nil, mismatch(field, l, fmt.Sprintf("it is out of the column's range (%s to %s)",
				minTimestampNs.UTC().Format(time.RFC3339), maxTimestampNs.UTC().Format(time.RFC3339)))
		}
		return iceberg.NewLiteral(iceberg.TimestampNano(t.UnixNano())), nil
	default:
		return nil, mismatch(field, l, "")
	}
}

// decimalNumber is the syntax of a number a decimal column accepts:
// sign, digits with an optional point, optional exponent.
var decimalNumber = regexp.MustCompile(`^([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]{1,9}))?$`)

// decimalLiteral converts a number (or a string holding one) exactly to a
// decimal column's type: never through a float, and never rounding.
func decimalLiteral(field iceberg.NestedField, dt iceberg.DecimalType, l literal) (iceberg.Literal, error) {
	m := decimalNumber.FindStringSubmatch(l.text)
	if m == nil || m[2]+m[3] == "" {
		return nil, mismatch(field, l, "it is not a decimal number")
	}
	digits := strings.TrimLeft(m[2]+m[3], "0")
	var exp int64 // the value is digits * 10^exp
	if m[4] != "" {
		exp, _ = strconv.ParseInt(m[4], 10, 64) // at most 9 digits: cannot fail
	}
	exp -= int64(len(m[3]))
	for strings.HasSuffix(digits, "0") {
		digits, exp = digits[:len(digits)-1], exp+1
	}
	scale := int64(dt.Scale())
	unscaled := new(big.Int)
	if digits != "" {
		if exp < -scale {
			return nil, mismatch(field, l, fmt.Sprintf("it has more than %d digits after the point", scale))
		}
		if int64(len(digits))+exp+scale > int64(dt.Precision()) {
			return nil, mismatch(field, l, "it is out of the type's range")
		}
		unscaled.SetString(digits, 10)
		unscaled.Mul(unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(exp+scale), nil))
		if m[1] == "-" {
			unscaled.Neg(unscaled)
		}
	}
	return iceberg.NewLiteral(iceberg.Decimal{Val: decimal128.FromBigInt(unscaled), Scale: dt.Scale()}), nil
}

func topLevelNames(schema *iceberg.Schema) []string {
	fields := schema.Fields()
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	return names
}

// filterNodeColumns returns the columns a parsed filter refers to, in order
// of first use.
func filterNodeColumns(node filterNode) []string {
	var out []string
	var walk func(n filterNode)
	add := func(c string) {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	walk = func(n filterNode) {
		switch n := n.(type) {
		case andNode:
			walk(n.left)
			walk(n.right)
		case orNode:
			walk(n.left)
			walk(n.right)
		case notNode:
			walk(n.child)
		case cmpNode:
			add(n.column)
		case inNode:
			add(n.column)
		case nullNode:
			add(n.column)
		}
	}
	walk(node)
	return out
}
