package spark

import (
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Expr is a row filter that Sluice pushes into Spark's SQL: a tree of
// [And], [Or], [Not], [Compare], [In], [IsNull], [NaNFalse] and [Const] over columns and typed
// [Value]s. It is structured so that no text of a request ever reaches
// Spark's parser: every identifier is quoted and every value written as a
// literal of its type. The set of nodes is closed.
type Expr interface {
	sql(b *strings.Builder) error
}

// And is true when both sides are.
type And struct{ Left, Right Expr }

// Or is true when either side is.
type Or struct{ Left, Right Expr }

// Not negates X.
type Not struct{ X Expr }

// CompareOp is a comparison operator.
type CompareOp string

// The comparison operators.
const (
	Eq CompareOp = "="
	Ne CompareOp = "<>"
	Lt CompareOp = "<"
	Le CompareOp = "<="
	Gt CompareOp = ">"
	Ge CompareOp = ">="
)

// Compare compares a column with a value.
type Compare struct {
	Column Column
	Op     CompareOp
	Value  Value
}

// NaNFalse is X, but false when X's column holds NaN (a float or double
// column), as Sluice's evaluator has it: Spark orders NaN above every
// number and equal to itself.
type NaNFalse struct{ X Compare }

// Const is a constant truth (TRUE or FALSE).
type Const bool

// In is true when the column equals one of Values (NOT IN when Negated).
type In struct {
	Column  Column
	Values  []Value
	Negated bool
}

// IsNull is true when the column is null (IS NOT NULL when Negated).
type IsNull struct {
	Column  Column
	Negated bool
}

// Column names a column: a top-level column, or a field nested in structs
// (["addr", "city"]).
type Column []string

// ValueKind is the type of a Value.
type ValueKind int

// The kinds of values.
const (
	KindString ValueKind = iota + 1
	KindInt
	KindFloat
	KindBool
	KindDecimal
	KindDate
	KindTimestamp    // an instant (Spark TIMESTAMP, Iceberg timestamptz)
	KindTimestampNTZ // a wall-clock time (Spark TIMESTAMP_NTZ, Iceberg timestamp)
)

// Value is a typed literal. Build it with the String, Int, Float, Bool,
// Decimal, Date, Timestamp and TimestampNTZ functions.
type Value struct {
	kind ValueKind
	s    string    // KindString, KindDecimal
	i    int64     // KindInt
	f    float64   // KindFloat
	b    bool      // KindBool
	t    time.Time // KindDate, KindTimestamp, KindTimestampNTZ
}

// String is a string value.
func String(s string) Value { return Value{kind: KindString, s: s} }

// Int is an integer value.
func Int(i int64) Value { return Value{kind: KindInt, i: i} }

// Float is a floating-point (double) value; NaN and infinities have no
// literal and are refused when the filter is written.
func Float(f float64) Value { return Value{kind: KindFloat, f: f} }

// Bool is a boolean value.
func Bool(b bool) Value { return Value{kind: KindBool, b: b} }

// Decimal is a decimal value written in plain digits ("-12.340").
func Decimal(digits string) Value { return Value{kind: KindDecimal, s: digits} }

// Date is the date of t (its year, month and day).
func Date(t time.Time) Value { return Value{kind: KindDate, t: t} }

// Timestamp is an instant, compared with TIMESTAMP columns.
func Timestamp(t time.Time) Value { return Value{kind: KindTimestamp, t: t} }

// TimestampNTZ is a wall-clock time (t's clock reading, its zone
// ignored), compared with TIMESTAMP_NTZ columns.
func TimestampNTZ(t time.Time) Value { return Value{kind: KindTimestampNTZ, t: t} }

var decimalDigits = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

// sql writes the value as a Spark SQL literal.
func (v Value) sql(b *strings.Builder) error {
	switch v.kind {
	case KindString:
		// A hex literal cast to a string: no quote or backslash of the
		// value meets the parser.
		b.WriteString("CAST(X'")
		b.WriteString(strings.ToUpper(hex.EncodeToString([]byte(v.s))))
		b.WriteString("' AS STRING)")
	case KindInt:
		if v.i == math.MinInt64 {
			// 9223372036854775808L does not parse.
			b.WriteString("(-9223372036854775807L - 1L)")
			break
		}
		b.WriteString(strconv.FormatInt(v.i, 10))
		b.WriteString("L")
	case KindFloat:
		if math.IsNaN(v.f) || math.IsInf(v.f, 0) {
			return fmt.Errorf("%w: filter value %v has no SQL literal", ErrInvalidRequest, v.f)
		}
		b.WriteString(strconv.FormatFloat(v.f, 'E', -1, 64))
		b.WriteString("D")
	case KindBool:
		b.WriteString(strings.ToUpper(strconv.FormatBool(v.b)))
	case KindDecimal:
		if !decimalDigits.MatchString(v.s) {
			return fmt.Errorf("%w: filter value %q is not a decimal", ErrInvalidRequest, v.s)
		}
		b.WriteString(v.s)
		b.WriteString("BD")
	case KindDate:
		b.WriteString("DATE '")
		b.WriteString(v.t.Format("2006-01-02"))
		b.WriteString("'")
	case KindTimestamp:
		b.WriteString("TIMESTAMP '")
		b.WriteString(v.t.UTC().Format("2006-01-02 15:04:05.999999"))
		b.WriteString("Z'")
	case KindTimestampNTZ:
		b.WriteString("TIMESTAMP_NTZ '")
		b.WriteString(v.t.Format("2006-01-02 15:04:05.999999"))
		b.WriteString("'")
	default:
		return fmt.Errorf("%w: a filter value without a type", ErrInvalidRequest)
	}
	return nil
}

func (e And) sql(b *strings.Builder) error { return binary(b, e.Left, "AND", e.Right) }
func (e Or) sql(b *strings.Builder) error  { return binary(b, e.Left, "OR", e.Right) }

func binary(b *strings.Builder, l Expr, op string, r Expr) error {
	if l == nil || r == nil {
		return fmt.Errorf("%w: %s with a missing side", ErrInvalidRequest, op)
	}
	b.WriteString("(")
	if err := l.sql(b); err != nil {
		return err
	}
	b.WriteString(" " + op + " ")
	if err := r.sql(b); err != nil {
		return err
	}
	b.WriteString(")")
	return nil
}

func (e Not) sql(b *strings.Builder) error {
	if e.X == nil {
		return fmt.Errorf("%w: NOT without an operand", ErrInvalidRequest)
	}
	b.WriteString("(NOT ")
	if err := e.X.sql(b); err != nil {
		return err
	}
	b.WriteString(")")
	return nil
}

func (e Compare) sql(b *strings.Builder) error {
	switch e.Op {
	case Eq, Ne, Lt, Le, Gt, Ge:
	default:
		return fmt.Errorf("%w: comparison operator %q", ErrInvalidRequest, string(e.Op))
	}
	b.WriteString("(")
	if err := e.Column.sql(b); err != nil {
		return err
	}
	b.WriteString(" " + string(e.Op) + " ")
	if err := e.Value.sql(b); err != nil {
		return err
	}
	b.WriteString(")")
	return nil
}

func (e NaNFalse) sql(b *strings.Builder) error {
	// isnan(NULL) is NULL, which CASE takes as not true: a null column
	// still compares as unknown.
	b.WriteString("(CASE WHEN isnan(")
	if err := e.X.Column.sql(b); err != nil {
		return err
	}
	b.WriteString(") THEN FALSE ELSE ")
	if err := e.X.sql(b); err != nil {
		return err
	}
	b.WriteString(" END)")
	return nil
}

func (e Const) sql(b *strings.Builder) error {
	if e {
		b.WriteString("TRUE")
	} else {
		b.WriteString("FALSE")
	}
	return nil
}

func (e In) sql(b *strings.Builder) error {
	if len(e.Values) == 0 {
		return fmt.Errorf("%w: IN with no values", ErrInvalidRequest)
	}
	b.WriteString("(")
	if err := e.Column.sql(b); err != nil {
		return err
	}
	if e.Negated {
		b.WriteString(" NOT")
	}
	b.WriteString(" IN (")
	for i, v := range e.Values {
		if i > 0 {
			b.WriteString(", ")
		}
		if err := v.sql(b); err != nil {
			return err
		}
	}
	b.WriteString("))")
	return nil
}

func (e IsNull) sql(b *strings.Builder) error {
	b.WriteString("(")
	if err := e.Column.sql(b); err != nil {
		return err
	}
	if e.Negated {
		b.WriteString(" IS NOT NULL)")
	} else {
		b.WriteString(" IS NULL)")
	}
	return nil
}

func (c Column) sql(b *strings.Builder) error {
	if len(c) == 0 {
		return fmt.Errorf("%w: a filter column without a name", ErrInvalidRequest)
	}
	for i, part := range c {
		if i > 0 {
			b.WriteString(".")
		}
		q, err := quoteIdent(part)
		if err != nil {
			return err
		}
		b.WriteString(q)
	}
	return nil
}

// columns appends the top-level columns that e reads.
func columns(e Expr, to []string) []string {
	switch e := e.(type) {
	case And:
		return columns(e.Right, columns(e.Left, to))
	case Or:
		return columns(e.Right, columns(e.Left, to))
	case Not:
		return columns(e.X, to)
	case Compare:
		return appendTop(to, e.Column)
	case NaNFalse:
		return appendTop(to, e.X.Column)
	case In:
		return appendTop(to, e.Column)
	case IsNull:
		return appendTop(to, e.Column)
	}
	return to
}

func appendTop(to []string, c Column) []string {
	if len(c) == 0 {
		return to
	}
	for _, x := range to {
		if x == c[0] {
			return to
		}
	}
	return append(to, c[0])
}

// wholeNames returns e with each column of several parts whose dotted name
// is a column of data (a top-level column named "a.b") written as that one
// name.
func wholeNames(e Expr, data []string) Expr {
	col := func(c Column) Column {
		if len(c) > 1 && slices.Contains(data, strings.Join(c, ".")) {
			return Column{strings.Join(c, ".")}
		}
		return c
	}
	switch e := e.(type) {
	case And:
		return And{wholeNames(e.Left, data), wholeNames(e.Right, data)}
	case Or:
		return Or{wholeNames(e.Left, data), wholeNames(e.Right, data)}
	case Not:
		return Not{wholeNames(e.X, data)}
	case Compare:
		e.Column = col(e.Column)
		return e
	case NaNFalse:
		e.X.Column = col(e.X.Column)
		return e
	case In:
		e.Column = col(e.Column)
		return e
	case IsNull:
		e.Column = col(e.Column)
		return e
	}
	return e
}

// FilterSQL writes e as a Spark SQL boolean expression. Errors wrap
// ErrInvalidRequest.
func FilterSQL(e Expr) (string, error) {
	if e == nil {
		return "", fmt.Errorf("%w: no filter", ErrInvalidRequest)
	}
	var b strings.Builder
	if err := e.sql(&b); err != nil {
		return "", err
	}
	return b.String(), nil
}

// quoteIdent quotes one identifier with backquotes (a backquote in it
// doubled). An empty name or one with a NUL is refused.
func quoteIdent(name string) (string, error) {
	if name == "" || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("%w: identifier %q", ErrInvalidRequest, name)
	}
	return "`" + strings.ReplaceAll(name, "`", "``") + "`", nil
}
