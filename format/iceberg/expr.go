package iceberg

import (
	"github.com/apache/iceberg-go"

	"github.com/sluicefeed/sluice/filter"
	"github.com/sluicefeed/sluice/lake"
)

// ExprTo converts a filter expression to an unbound iceberg-go expression
// over the same columns (referenced by their full names), for iceberg-go's
// scans and evaluators. Binding it to the schema the filter was parsed
// against gives the filter's meaning.
func ExprTo(e filter.Expr) iceberg.BooleanExpression {
	switch e := e.(type) {
	case filter.And:
		return iceberg.NewAnd(ExprTo(e.Left), ExprTo(e.Right))
	case filter.Or:
		return iceberg.NewOr(ExprTo(e.Left), ExprTo(e.Right))
	case filter.Not:
		return iceberg.NewNot(ExprTo(e.Child))
	case filter.True:
		return iceberg.AlwaysTrue{}
	case filter.False:
		return iceberg.AlwaysFalse{}
	case filter.IsNull:
		return iceberg.UnaryPredicate(iceberg.OpIsNull, iceberg.Reference(e.Column.Path))
	case filter.NotNull:
		return iceberg.UnaryPredicate(iceberg.OpNotNull, iceberg.Reference(e.Column.Path))
	case filter.Compare:
		return iceberg.LiteralPredicate(ops[e.Op], iceberg.Reference(e.Column.Path), LiteralOf(e.Value))
	case filter.In:
		return iceberg.SetPredicate(iceberg.OpIn, iceberg.Reference(e.Column.Path), literals(e.Values))
	case filter.NotIn:
		return iceberg.SetPredicate(iceberg.OpNotIn, iceberg.Reference(e.Column.Path), literals(e.Values))
	}
	return iceberg.AlwaysTrue{} // no other expressions exist
}

var ops = map[filter.Op]iceberg.Operation{filter.OpEQ: iceberg.OpEQ, filter.OpNE: iceberg.OpNEQ,
	filter.OpLT: iceberg.OpLT, filter.OpLE: iceberg.OpLTEQ, filter.OpGT: iceberg.OpGT, filter.OpGE: iceberg.OpGTEQ}

func literals(vs []lake.Value) []iceberg.Literal {
	out := make([]iceberg.Literal, len(vs))
	for i, v := range vs {
		out[i] = LiteralOf(v)
	}
	return out
}
