package filter

import (
	"fmt"
	"strings"

	"github.com/sluicefeed/sluice/lake"
)

// Expr is a bound filter expression: And, Or, Not, True, False, IsNull,
// NotNull, Compare, In or NotIn.
type Expr interface {
	fmt.Stringer
	filterExpr()
}

// Column is a column an expression reads: a primitive field that is
// top-level or nested in structs only (the format seam's, so that a
// format's statistics answer for it).
type Column = lake.Column

// Op is the operator of a Compare.
type Op int

// The comparison operators.
const (
	OpEQ Op = iota // =
	OpNE           // !=
	OpLT           // <
	OpLE           // <=
	OpGT           // >
	OpGE           // >=
)

var opText = [...]string{OpEQ: "=", OpNE: "!=", OpLT: "<", OpLE: "<=", OpGT: ">", OpGE: ">="}

// String is the operator as SQL writes it.
func (o Op) String() string {
	if o < 0 || int(o) >= len(opText) {
		return fmt.Sprintf("Op(%d)", int(o))
	}
	return opText[o]
}

// Negate is the operator of the negated comparison (< for >=).
func (o Op) Negate() Op {
	return [...]Op{OpEQ: OpNE, OpNE: OpEQ, OpLT: OpGE, OpLE: OpGT, OpGT: OpLE, OpGE: OpLT}[o]
}

// holds reports whether c, the result of comparing a value with the
// literal, satisfies o.
func (o Op) holds(c int) bool {
	switch o {
	case OpEQ:
		return c == 0
	case OpNE:
		return c != 0
	case OpLT:
		return c < 0
	case OpLE:
		return c <= 0
	case OpGT:
		return c > 0
	default:
		return c >= 0
	}
}

// The expressions.
type (
	// And is true when both sides are.
	And struct{ Left, Right Expr }
	// Or is true when either side is.
	Or struct{ Left, Right Expr }
	// Not is true when its child is false.
	Not struct{ Child Expr }
	// True is always true.
	True struct{}
	// False is always false.
	False struct{}
	// IsNull is true when the column is null.
	IsNull struct{ Column Column }
	// NotNull is true when the column is not null.
	NotNull struct{ Column Column }
	// Compare compares the column with a value of its type; unknown when
	// the column is null.
	Compare struct {
		Column Column
		Op     Op
		Value  lake.Value
	}
	// In is true when the column equals one of the values (of its type);
	// unknown when the column is null.
	In struct {
		Column Column
		Values []lake.Value
	}
	// NotIn is true when the column equals none of the values; unknown
	// when the column is null.
	NotIn struct {
		Column Column
		Values []lake.Value
	}
)

func (And) filterExpr()     {}
func (Or) filterExpr()      {}
func (Not) filterExpr()     {}
func (True) filterExpr()    {}
func (False) filterExpr()   {}
func (IsNull) filterExpr()  {}
func (NotNull) filterExpr() {}
func (Compare) filterExpr() {}
func (In) filterExpr()      {}
func (NotIn) filterExpr()   {}

func (e And) String() string     { return "(" + e.Left.String() + " AND " + e.Right.String() + ")" }
func (e Or) String() string      { return "(" + e.Left.String() + " OR " + e.Right.String() + ")" }
func (e Not) String() string     { return "NOT " + e.Child.String() }
func (True) String() string      { return "TRUE" }
func (False) String() string     { return "FALSE" }
func (e IsNull) String() string  { return e.Column.Path + " IS NULL" }
func (e NotNull) String() string { return e.Column.Path + " IS NOT NULL" }

// String is "path op value".
func (e Compare) String() string { return e.Column.Path + " " + e.Op.String() + " " + e.Value.String() }

// String is "path IN (values)".
func (e In) String() string { return e.Column.Path + " IN (" + values(e.Values) + ")" }

// String is "path NOT IN (values)".
func (e NotIn) String() string { return e.Column.Path + " NOT IN (" + values(e.Values) + ")" }

func values(vs []lake.Value) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = v.String()
	}
	return strings.Join(s, ", ")
}

// RewriteNot returns e without Not: each Not pushed down to the
// predicates and folded into them (NOT a < 1 is a >= 1, NOT (x AND y) is
// NOT x OR NOT y). It keeps e's three-valued meaning.
func RewriteNot(e Expr) Expr { return rewrite(e, false) }

func rewrite(e Expr, negate bool) Expr {
	switch e := e.(type) {
	case And:
		if negate {
			return Or{rewrite(e.Left, true), rewrite(e.Right, true)}
		}
		return And{rewrite(e.Left, false), rewrite(e.Right, false)}
	case Or:
		if negate {
			return And{rewrite(e.Left, true), rewrite(e.Right, true)}
		}
		return Or{rewrite(e.Left, false), rewrite(e.Right, false)}
	case Not:
		return rewrite(e.Child, !negate)
	case True:
		if negate {
			return False{}
		}
	case False:
		if negate {
			return True{}
		}
	case IsNull:
		if negate {
			return NotNull(e)
		}
	case NotNull:
		if negate {
			return IsNull(e)
		}
	case Compare:
		if negate {
			e.Op = e.Op.Negate()
		}
		return e
	case In:
		if negate {
			return NotIn(e)
		}
	case NotIn:
		if negate {
			return In(e)
		}
	}
	return e
}

// Columns returns the columns e reads, each once, in order of first use.
func Columns(e Expr) []Column {
	var out []Column
	seen := map[int]bool{}
	var walk func(e Expr)
	add := func(c Column) {
		if !seen[c.FieldID] {
			seen[c.FieldID] = true
			out = append(out, c)
		}
	}
	walk = func(e Expr) {
		switch e := e.(type) {
		case And:
			walk(e.Left)
			walk(e.Right)
		case Or:
			walk(e.Left)
			walk(e.Right)
		case Not:
			walk(e.Child)
		case IsNull:
			add(e.Column)
		case NotNull:
			add(e.Column)
		case Compare:
			add(e.Column)
		case In:
			add(e.Column)
		case NotIn:
			add(e.Column)
		}
	}
	walk(e)
	return out
}
