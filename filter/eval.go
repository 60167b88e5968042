package filter

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/sluicefeed/sluice/lake"
)

// Truth is a value of SQL's three-valued logic.
type Truth uint8

// The truth values.
const (
	IsFalse   Truth = iota
	IsTrue          //
	IsUnknown       // a comparison with null
)

// Not is the negation of t (unknown stays unknown).
func (t Truth) Not() Truth {
	switch t {
	case IsTrue:
		return IsFalse
	case IsFalse:
		return IsTrue
	default:
		return IsUnknown
	}
}

func and(a, b Truth) Truth {
	switch {
	case a == IsFalse || b == IsFalse:
		return IsFalse
	case a == IsTrue && b == IsTrue:
		return IsTrue
	default:
		return IsUnknown
	}
}

func or(a, b Truth) Truth {
	switch {
	case a == IsTrue || b == IsTrue:
		return IsTrue
	case a == IsFalse && b == IsFalse:
		return IsFalse
	default:
		return IsUnknown
	}
}

// RowEvaluator evaluates an expression on the rows of record batches with
// SQL's three-valued logic: a comparison with null is unknown, neither
// true nor false, and a comparison with NaN is false. The engine keeps an
// insert whose after-image is true, and a delete whose before-image is
// true or unknown.
type RowEvaluator struct {
	eval evalFn
}

type evalFn = func(rec arrow.RecordBatch) ([]Truth, error)

// NewRowEvaluator prepares the evaluation of e. Batches passed to Eval
// must hold e's columns by their paths: top-level columns by name, nested
// ones as fields of struct columns.
func NewRowEvaluator(e Expr) *RowEvaluator { return &RowEvaluator{eval: compile(e)} }

// Eval returns the truth of the expression for each row of rec. An error
// (a column rec lacks or holds in a type the value does not compare with)
// wraps ErrInvalidFilter.
func (r *RowEvaluator) Eval(rec arrow.RecordBatch) ([]Truth, error) { return r.eval(rec) }

func constantFn(t Truth) evalFn {
	return func(rec arrow.RecordBatch) ([]Truth, error) {
		out := make([]Truth, rec.NumRows())
		for i := range out {
			out[i] = t
		}
		return out, nil
	}
}

func combine(l, r evalFn, op func(a, b Truth) Truth) evalFn {
	return func(rec arrow.RecordBatch) ([]Truth, error) {
		a, err := l(rec)
		if err != nil {
			return nil, err
		}
		b, err := r(rec)
		if err != nil {
			return nil, err
		}
		for i := range a {
			a[i] = op(a[i], b[i])
		}
		return a, nil
	}
}

func compile(e Expr) evalFn {
	switch e := e.(type) {
	case True:
		return constantFn(IsTrue)
	case False:
		return constantFn(IsFalse)
	case Not:
		child := compile(e.Child)
		return func(rec arrow.RecordBatch) ([]Truth, error) {
			v, err := child(rec)
			for i := range v {
				v[i] = v[i].Not()
			}
			return v, err
		}
	case And:
		return combine(compile(e.Left), compile(e.Right), and)
	case Or:
		return combine(compile(e.Left), compile(e.Right), or)
	case IsNull:
		return rows(e.Column, func(arr arrow.Array, i int) (Truth, error) { return boolTruth(arr.IsNull(i)), nil })
	case NotNull:
		return rows(e.Column, func(arr arrow.Array, i int) (Truth, error) { return boolTruth(!arr.IsNull(i)), nil })
	case Compare:
		return rows(e.Column, func(arr arrow.Array, i int) (Truth, error) {
			if arr.IsNull(i) {
				return IsUnknown, nil
			}
			c, ok, err := compareValue(arr, i, e.Value)
			if err != nil || !ok {
				return IsFalse, err // NaN compares with nothing
			}
			return boolTruth(e.Op.holds(c)), nil
		})
	case In:
		return rows(e.Column, member(e.Values, false))
	case NotIn:
		return rows(e.Column, member(e.Values, true))
	}
	return func(arrow.RecordBatch) ([]Truth, error) {
		return nil, fmt.Errorf("%w: cannot evaluate %v on rows", ErrInvalidFilter, e)
	}
}

// member tests whether a row's value is one of values (not one, if
// negate).
func member(values []lake.Value, negate bool) func(arr arrow.Array, i int) (Truth, error) {
	return func(arr arrow.Array, i int) (Truth, error) {
		if arr.IsNull(i) {
			return IsUnknown, nil
		}
		found := false
		for _, v := range values {
			c, ok, err := compareValue(arr, i, v)
			if err != nil {
				return IsFalse, err
			}
			if ok && c == 0 {
				found = true
				break
			}
		}
		return boolTruth(found != negate), nil
	}
}

// rows applies test to every row of a column.
func rows(col Column, test func(arr arrow.Array, i int) (Truth, error)) evalFn {
	return func(rec arrow.RecordBatch) ([]Truth, error) {
		arr, err := columnAt(rec, col.Path)
		if err != nil {
			return nil, err
		}
		out := make([]Truth, arr.Len())
		for i := range out {
			if out[i], err = test(arr, i); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
}

func boolTruth(b bool) Truth {
	if b {
		return IsTrue
	}
	return IsFalse
}

// columnAt finds a column, or a field nested in struct columns, by its
// dotted path. A field under a null struct reads as null.
func columnAt(rec arrow.RecordBatch, path string) (arrow.Array, error) {
	parts := strings.Split(path, ".")
	idx := rec.Schema().FieldIndices(parts[0])
	if len(idx) != 1 {
		return nil, fmt.Errorf("%w: the filter's column %q is not in the decoded rows (%s)", ErrInvalidFilter, path, rec.Schema())
	}
	arr := rec.Column(idx[0])
	for _, p := range parts[1:] {
		base := arr
		m, masked := arr.(nullMasked)
		if masked {
			base = m.Array
		}
		st, ok := base.(*array.Struct)
		if !ok {
			return nil, fmt.Errorf("%w: the filter's column %q is not a struct field", ErrInvalidFilter, path)
		}
		i, ok := st.DataType().(*arrow.StructType).FieldIdx(p)
		if !ok {
			return nil, fmt.Errorf("%w: the filter's column %q is not in the decoded rows", ErrInvalidFilter, path)
		}
		child := st.Field(i)
		if masked || st.NullN() > 0 {
			child = nullMasked{Array: child, parent: arr}
		}
		arr = child
	}
	return arr, nil
}

// nullMasked reads a struct's child as null where the struct is.
type nullMasked struct {
	arrow.Array
	parent arrow.Array
}

func (n nullMasked) IsNull(i int) bool { return n.parent.IsNull(i) || n.Array.IsNull(i) }

// compareValue compares value i of arr (not null) with a value of the
// column's type. ok is false when the values are not ordered (NaN).
func compareValue(arr arrow.Array, i int, v lake.Value) (int, bool, error) {
	if m, ok := arr.(nullMasked); ok {
		arr = m.Array
	}
	if ext, ok := arr.(array.ExtensionArray); ok {
		arr = ext.Storage()
	}
	got := valueAt(arr, i, v.Type())
	if got.Valid() {
		if c, ok := lake.Compare(got, v); ok {
			return c, true, nil
		}
		if isNaN(got) || isNaN(v) {
			return 0, false, nil
		}
	}
	return 0, false, fmt.Errorf("%w: cannot compare a %s column with %v %v", ErrInvalidFilter, arr.DataType(), v.Type(), v)
}

// valueAt is value i of arr (not null, storage of an extension array) as a
// lake.Value of the Arrow array's own kind: a long for every integer, date,
// time and timestamp, a double for floats, a decimal of type t. It is
// invalid for a kind no filter compares.
func valueAt(arr arrow.Array, i int, t lake.Type) lake.Value {
	var got lake.Value
	switch a := arr.(type) {
	case *array.Int8:
		got = lake.LongValue(int64(a.Value(i)))
	case *array.Int16:
		got = lake.LongValue(int64(a.Value(i)))
	case *array.Int32:
		got = lake.LongValue(int64(a.Value(i)))
	case *array.Int64:
		got = lake.LongValue(a.Value(i))
	case *array.Date32:
		got = lake.LongValue(int64(a.Value(i)))
	case *array.Time64:
		got = lake.LongValue(int64(a.Value(i)))
	case *array.Timestamp:
		got = lake.LongValue(int64(a.Value(i)))
	case *array.Float32:
		got = lake.DoubleValue(float64(a.Value(i)))
	case *array.Float64:
		got = lake.DoubleValue(a.Value(i))
	case *array.Boolean:
		got = lake.BooleanValue(a.Value(i))
	case *array.String:
		got = lake.StringValue(a.Value(i))
	case *array.LargeString:
		got = lake.StringValue(a.Value(i))
	case *array.Binary:
		got = lake.BinaryValue(a.Value(i))
	case *array.LargeBinary:
		got = lake.BinaryValue(a.Value(i))
	case *array.FixedSizeBinary:
		got = lake.BinaryValue(a.Value(i))
	case *array.Decimal128:
		dt, _ := t.(lake.DecimalType)
		got = lake.DecimalValue(dt, a.Value(i))
	}
	return got
}

func isNaN(v lake.Value) bool {
	switch v.Type().(type) {
	case lake.FloatType, lake.DoubleType:
		f := v.Float()
		return f != f
	}
	return false
}
