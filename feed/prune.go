package feed

import (
	"github.com/apache/iceberg-go"

	"github.com/sluicefeed/sluice/lake"
)

// pruner decides from statistics whether a file or row group may hold a
// row the filter keeps as an insert (a row for which it is true). It is
// conservative: anything the statistics do not rule out may match.
type pruner struct {
	expr iceberg.BooleanExpression // bound to the end schema, NOT pushed down
}

func newPruner(f *Filter, end *iceberg.Schema) (*pruner, error) {
	bound, err := iceberg.BindExpr(end, f.Expr, true)
	if err != nil {
		return nil, err
	}
	rewritten, err := iceberg.RewriteNotExpr(bound)
	if err != nil {
		return nil, err
	}
	return &pruner{expr: rewritten}, nil
}

// MayMatch reports whether rows with these statistics may satisfy the
// filter.
func (p *pruner) MayMatch(st lake.ColumnStats) bool {
	ok, err := iceberg.VisitExpr(p.expr, &mayMatchVisitor{st: st})
	return err != nil || ok
}

type mayMatchVisitor struct{ st lake.ColumnStats }

func (*mayMatchVisitor) VisitTrue() bool                            { return true }
func (*mayMatchVisitor) VisitFalse() bool                           { return false }
func (*mayMatchVisitor) VisitNot(bool) bool                         { return true } // pushed down already
func (*mayMatchVisitor) VisitAnd(l, r bool) bool                    { return l && r }
func (*mayMatchVisitor) VisitOr(l, r bool) bool                     { return l || r }
func (*mayMatchVisitor) VisitUnbound(iceberg.UnboundPredicate) bool { return true }

func (v *mayMatchVisitor) VisitBound(p iceberg.BoundPredicate) bool {
	field := p.Ref().Field()
	values, nulls, counted := v.st.Counts(field)
	allNull := counted && values > 0 && nulls == values
	switch p.Op() {
	case iceberg.OpIsNull:
		return !counted || nulls > 0
	case iceberg.OpNotNull:
		return !allNull
	}
	if allNull {
		return false // every comparison with null is unknown, never true
	}
	lo, hi, ok := v.st.Bounds(field)
	if !ok {
		return true
	}
	cmp := func(a, b any) (int, bool) { return compareAny(a, b) }
	switch p := p.(type) {
	case iceberg.BoundLiteralPredicate:
		val, ok := literalValue(p.Literal())
		if !ok {
			return true
		}
		cLo, ok1 := cmp(val, lo) // val vs min
		cHi, ok2 := cmp(val, hi) // val vs max
		if !ok1 || !ok2 {
			return true
		}
		switch p.Op() {
		case iceberg.OpEQ:
			return cLo >= 0 && cHi <= 0
		case iceberg.OpLT: // some x < val: min < val
			return cLo > 0
		case iceberg.OpLTEQ:
			return cLo >= 0
		case iceberg.OpGT: // some x > val: max > val
			return cHi < 0
		case iceberg.OpGTEQ:
			return cHi <= 0
		}
		return true
	case iceberg.BoundSetPredicate:
		if p.Op() != iceberg.OpIn {
			return true
		}
		for _, lit := range p.Literals().Members() {
			val, ok := literalValue(lit)
			if !ok {
				return true
			}
			cLo, ok1 := cmp(val, lo)
			cHi, ok2 := cmp(val, hi)
			if !ok1 || !ok2 || (cLo >= 0 && cHi <= 0) {
				return true
			}
		}
		return false
	}
	return true
}

// literalValue converts a literal to the domain decodeBound decodes into.
func literalValue(lit iceberg.Literal) (any, bool) {
	switch l := lit.(type) {
	case iceberg.Int32Literal:
		return int64(l), true
	case iceberg.Int64Literal:
		return int64(l), true
	case iceberg.DateLiteral:
		return int64(l), true
	case iceberg.TimeLiteral:
		return int64(l), true
	case iceberg.TimestampLiteral:
		return int64(l), true
	case iceberg.Float32Literal:
		return float64(l), l == l
	case iceberg.Float64Literal:
		return float64(l), l == l
	case iceberg.StringLiteral:
		return string(l), true
	case iceberg.BoolLiteral:
		if l {
			return int64(1), true
		}
		return int64(0), true
	}
	return nil, false
}

// fileStats are a data file's manifest statistics.
type fileStats struct{ df iceberg.DataFile }

func (s fileStats) Bounds(field iceberg.NestedField) (any, any, bool) {
	lb, ub := s.df.LowerBoundValues()[field.ID], s.df.UpperBoundValues()[field.ID]
	if lb == nil || ub == nil {
		return nil, nil, false
	}
	lo, ok1 := decodeBound(field.Type, lb)
	hi, ok2 := decodeBound(field.Type, ub)
	return lo, hi, ok1 && ok2
}

func (s fileStats) Counts(field iceberg.NestedField) (int64, int64, bool) {
	values, ok1 := s.df.ValueCounts()[field.ID]
	nulls, ok2 := s.df.NullValueCounts()[field.ID]
	return values, nulls, ok1 && ok2
}

// rowGroupStats are a row group's Parquet column statistics.
type rowGroupStats struct {
	ft *footer
	rg int
}

func (s rowGroupStats) Bounds(field iceberg.NestedField) (any, any, bool) {
	st := s.ft.stats(s.rg, field.ID)
	if st == nil || !st.HasMinMax() {
		return nil, nil, false
	}
	lo, ok1 := decodeBound(field.Type, st.EncodeMin())
	hi, ok2 := decodeBound(field.Type, st.EncodeMax())
	return lo, hi, ok1 && ok2
}

func (s rowGroupStats) Counts(field iceberg.NestedField) (int64, int64, bool) {
	st := s.ft.stats(s.rg, field.ID)
	if st == nil || !st.HasNullCount() {
		return 0, 0, false
	}
	return st.NumValues() + st.NullCount(), st.NullCount(), true
}
