package spark

import (
	"strings"
	"time"

	"github.com/sluicefeed/sluice/filter"
	"github.com/sluicefeed/sluice/lake"
)

// FromFilter translates a filter of Sluice's language (package filter,
// bound to the table's schema) into an [Expr] for Spark's SQL. It returns
// the expression to push and whether it is all of e:
//
//   - every node translates: the expression means exactly what e means,
//     with SQL's three-valued logic (a float column's NaN compares false,
//     as Sluice's evaluator has it), and exact is true;
//   - a conjunct of an AND does not translate: the rest is pushed, and
//     exact is false. What Spark keeps is then a superset of what e keeps
//     (a change e keeps, every conjunct keeps), and the caller evaluates e
//     on it;
//   - nothing translates (an OR, a NOT or the whole filter over a value
//     Spark SQL has no literal of here: time of day, UUID, binary and
//     fixed, a nanosecond timestamp with nanoseconds): nil.
//
// A nested column (addr.city) is written as its parts; a top-level column
// whose name holds a dot is matched by its whole name when the query is
// built.
func FromFilter(e filter.Expr) (pushed Expr, exact bool) {
	if e == nil {
		return nil, true
	}
	return translate(e)
}

func translate(e filter.Expr) (Expr, bool) {
	switch e := e.(type) {
	case filter.And:
		l, lok := translate(e.Left)
		r, rok := translate(e.Right)
		switch {
		case l == nil && r == nil:
			return nil, false
		case l == nil:
			return r, false
		case r == nil:
			return l, false
		}
		return And{l, r}, lok && rok
	case filter.Or:
		// A weaker side would weaken the OR: both must be exact.
		l, lok := translate(e.Left)
		r, rok := translate(e.Right)
		if !lok || !rok {
			return nil, false
		}
		return Or{l, r}, true
	case filter.Not:
		x, ok := translate(e.Child)
		if !ok {
			return nil, false // NOT of a weaker expression would be stronger
		}
		return Not{x}, true
	case filter.True:
		return Const(true), true
	case filter.False:
		return Const(false), true
	case filter.IsNull:
		return IsNull{Column: columnOf(e.Column)}, true
	case filter.NotNull:
		return IsNull{Column: columnOf(e.Column), Negated: true}, true
	case filter.Compare:
		op, ok := compareOps[e.Op]
		v, vok := valueOf(e.Value)
		if !ok || !vok {
			return nil, false
		}
		c := Compare{Column: columnOf(e.Column), Op: op, Value: v}
		if isFloat(e.Column.Type) {
			return NaNFalse{c}, true
		}
		return c, true
	case filter.In:
		vs, ok := valuesOf(e.Values)
		if !ok {
			return nil, false
		}
		return In{Column: columnOf(e.Column), Values: vs}, true
	case filter.NotIn:
		vs, ok := valuesOf(e.Values)
		if !ok {
			return nil, false
		}
		return In{Column: columnOf(e.Column), Values: vs, Negated: true}, true
	}
	return nil, false
}

var compareOps = map[filter.Op]CompareOp{
	filter.OpEQ: Eq, filter.OpNE: Ne, filter.OpLT: Lt, filter.OpLE: Le, filter.OpGT: Gt, filter.OpGE: Ge,
}

func columnOf(c filter.Column) Column { return Column(strings.Split(c.Path, ".")) }

func isFloat(t lake.Type) bool {
	switch t.(type) {
	case lake.FloatType, lake.DoubleType:
		return true
	}
	return false
}

func valuesOf(vs []lake.Value) ([]Value, bool) {
	if len(vs) == 0 {
		return nil, false
	}
	out := make([]Value, len(vs))
	for i, v := range vs {
		var ok bool
		if out[i], ok = valueOf(v); !ok {
			return nil, false
		}
	}
	return out, true
}

// valueOf is the Spark literal of a filter's value, of the Spark type its
// column has (Iceberg's timestamp is Spark's TIMESTAMP_NTZ, its
// timestamptz and Delta's timestamp Spark's TIMESTAMP); false for a value
// of a type this translation does not write.
func valueOf(v lake.Value) (Value, bool) {
	switch t := v.Type().(type) {
	case lake.BooleanType:
		return Bool(v.Bool()), true
	case lake.IntType, lake.LongType:
		return Int(v.Int()), true
	case lake.FloatType, lake.DoubleType:
		f := v.Float()
		return Float(f), f == f
	case lake.StringType:
		return String(v.Str()), true
	case lake.DecimalType:
		return Decimal(v.Decimal().ToString(int32(t.Scale))), true
	case lake.DateType:
		return Date(time.Unix(v.Int()*86400, 0).UTC()), true
	case lake.TimestampType:
		return TimestampNTZ(time.UnixMicro(v.Int()).UTC()), true
	case lake.TimestampTzType:
		return Timestamp(time.UnixMicro(v.Int()).UTC()), true
	case lake.TimestampNsType, lake.TimestampTzNsType:
		// Spark's timestamps hold microseconds.
		if v.Int()%1000 != 0 {
			return Value{}, false
		}
		micros := time.UnixMicro(v.Int() / 1000).UTC()
		if _, ok := t.(lake.TimestampNsType); ok {
			return TimestampNTZ(micros), true
		}
		return Timestamp(micros), true
	}
	return Value{}, false
}
