package filter

import "github.com/sluicefeed/sluice/lake"

// Stats is what a file's or row group's statistics say of its columns
// (the format seam's: each format implements it over its own statistics).
type Stats = lake.Stats

// Pruner decides from statistics whether a file or row group may hold a
// row for which an expression is true. It is conservative: anything the
// statistics do not rule out may match.
type Pruner struct {
	expr Expr // without Not
}

// NewPruner prepares the pruning of files and row groups for e.
func NewPruner(e Expr) *Pruner { return &Pruner{expr: RewriteNot(e)} }

// MayMatch reports whether rows with the statistics st may satisfy the
// expression.
func (p *Pruner) MayMatch(st Stats) bool { return mayMatch(p.expr, st) }

func mayMatch(e Expr, st Stats) bool {
	switch e := e.(type) {
	case True:
		return true
	case False:
		return false
	case And:
		return mayMatch(e.Left, st) && mayMatch(e.Right, st)
	case Or:
		return mayMatch(e.Left, st) || mayMatch(e.Right, st)
	case IsNull:
		_, nulls, counted := st.Counts(e.Column)
		return !counted || nulls > 0
	case NotNull:
		return !allNull(e.Column, st)
	case Compare:
		if allNull(e.Column, st) {
			return false // every comparison with null is unknown, never true
		}
		lo, hi, ok := st.Bounds(e.Column)
		if !ok {
			return true
		}
		cLo, ok1 := lake.Compare(e.Value, lo) // value vs min
		cHi, ok2 := lake.Compare(e.Value, hi) // value vs max
		if !ok1 || !ok2 {
			return true
		}
		switch e.Op {
		case OpEQ:
			return cLo >= 0 && cHi <= 0
		case OpLT: // some x < value: min < value
			return cLo > 0
		case OpLE:
			return cLo >= 0
		case OpGT: // some x > value: max > value
			return cHi < 0
		case OpGE:
			return cHi <= 0
		}
		return true
	case In:
		if allNull(e.Column, st) {
			return false
		}
		lo, hi, ok := st.Bounds(e.Column)
		if !ok {
			return true
		}
		for _, v := range e.Values {
			cLo, ok1 := lake.Compare(v, lo)
			cHi, ok2 := lake.Compare(v, hi)
			if !ok1 || !ok2 || (cLo >= 0 && cHi <= 0) {
				return true
			}
		}
		return false
	case NotIn:
		return !allNull(e.Column, st)
	}
	return true // Not is rewritten away
}

// allNull reports whether the statistics say every value of c is null.
func allNull(c Column, st Stats) bool {
	values, nulls, counted := st.Counts(c)
	return counted && values > 0 && nulls == values
}
