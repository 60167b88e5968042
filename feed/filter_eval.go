package feed

import (
	"bytes"
	"cmp"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
)

// truth is a value of SQL's three-valued logic.
type truth uint8

const (
	isFalse truth = iota
	isTrue
	isUnknown // a comparison with null
)

func (t truth) not() truth {
	switch t {
	case isTrue:
		return isFalse
	case isFalse:
		return isTrue
	default:
		return isUnknown
	}
}

func and(a, b truth) truth {
	switch {
	case a == isFalse || b == isFalse:
		return isFalse
	case a == isTrue && b == isTrue:
		return isTrue
	default:
		return isUnknown
	}
}

func or(a, b truth) truth {
	switch {
	case a == isTrue || b == isTrue:
		return isTrue
	case a == isFalse && b == isFalse:
		return isFalse
	default:
		return isUnknown
	}
}

// rowFilter evaluates a filter on the rows of record batches with SQL's
// three-valued logic: a comparison with null is unknown, neither true nor
// false. The feed keeps an insert whose after-image is true, and a delete
// whose before-image is true or unknown (a delete is never dropped because
// a column it filters on is null).
type rowFilter struct {
	eval func(rec arrow.RecordBatch) ([]truth, error)
}

// compileFilter binds a filter to the end schema and prepares its
// evaluation. Records passed to it must hold the filter's columns by name.
func compileFilter(f *Filter, end *iceberg.Schema) (*rowFilter, error) {
	bound, err := iceberg.BindExpr(end, f.Expr, true)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidFilter, err)
	}
	eval, err := iceberg.VisitExpr(bound, &evalBuilder{schema: end})
	if err != nil {
		return nil, err
	}
	return &rowFilter{eval: eval}, nil
}

type evalFn = func(rec arrow.RecordBatch) ([]truth, error)

// evalBuilder turns a bound expression into an evaluator.
type evalBuilder struct{ schema *iceberg.Schema }

func constant(t truth) evalFn {
	return func(rec arrow.RecordBatch) ([]truth, error) {
		out := make([]truth, rec.NumRows())
		for i := range out {
			out[i] = t
		}
		return out, nil
	}
}

func (*evalBuilder) VisitTrue() evalFn  { return constant(isTrue) }
func (*evalBuilder) VisitFalse() evalFn { return constant(isFalse) }

func (*evalBuilder) VisitNot(child evalFn) evalFn {
	return func(rec arrow.RecordBatch) ([]truth, error) {
		v, err := child(rec)
		for i := range v {
			v[i] = v[i].not()
		}
		return v, err
	}
}

func combine(l, r evalFn, op func(a, b truth) truth) evalFn {
	return func(rec arrow.RecordBatch) ([]truth, error) {
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

func (*evalBuilder) VisitAnd(l, r evalFn) evalFn { return combine(l, r, and) }
func (*evalBuilder) VisitOr(l, r evalFn) evalFn  { return combine(l, r, or) }

func (*evalBuilder) VisitUnbound(p iceberg.UnboundPredicate) evalFn {
	return func(arrow.RecordBatch) ([]truth, error) {
		return nil, fmt.Errorf("%w: unbound predicate %s", ErrInvalidFilter, p)
	}
}

func (b *evalBuilder) VisitBound(p iceberg.BoundPredicate) evalFn {
	field := p.Ref().Field()
	path, ok := b.schema.FindColumnName(field.ID)
	if !ok {
		return b.VisitUnbound(nil)
	}
	column := func(rec arrow.RecordBatch) (arrow.Array, error) { return columnAt(rec, path) }
	var test func(arr arrow.Array, i int) (truth, error)
	switch p := p.(type) {
	case iceberg.BoundUnaryPredicate:
		switch p.Op() {
		case iceberg.OpIsNull:
			test = func(arr arrow.Array, i int) (truth, error) { return boolTruth(arr.IsNull(i)), nil }
		case iceberg.OpNotNull:
			test = func(arr arrow.Array, i int) (truth, error) { return boolTruth(!arr.IsNull(i)), nil }
		default:
			return unsupportedPredicate(p)
		}
	case iceberg.BoundLiteralPredicate:
		want := ordering(p.Op())
		if want == nil {
			return unsupportedPredicate(p)
		}
		lit := p.Literal()
		test = func(arr arrow.Array, i int) (truth, error) {
			if arr.IsNull(i) {
				return isUnknown, nil
			}
			c, ok, err := compareValue(arr, i, lit)
			if err != nil || !ok {
				return isFalse, err // NaN compares with nothing
			}
			return boolTruth(want(c)), nil
		}
	case iceberg.BoundSetPredicate:
		lits := p.Literals().Members()
		negate := p.Op() == iceberg.OpNotIn
		if !negate && p.Op() != iceberg.OpIn {
			return unsupportedPredicate(p)
		}
		test = func(arr arrow.Array, i int) (truth, error) {
			if arr.IsNull(i) {
				return isUnknown, nil
			}
			found := false
			for _, lit := range lits {
				c, ok, err := compareValue(arr, i, lit)
				if err != nil {
					return isFalse, err
				}
				if ok && c == 0 {
					found = true
					break
				}
			}
			return boolTruth(found != negate), nil
		}
	default:
		return unsupportedPredicate(p)
	}
	return func(rec arrow.RecordBatch) ([]truth, error) {
		arr, err := column(rec)
		if err != nil {
			return nil, err
		}
		out := make([]truth, arr.Len())
		for i := range out {
			if out[i], err = test(arr, i); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
}

func unsupportedPredicate(p iceberg.BooleanExpression) evalFn {
	return func(arrow.RecordBatch) ([]truth, error) {
		return nil, fmt.Errorf("%w: cannot evaluate %s on rows", ErrInvalidFilter, p)
	}
}

func boolTruth(b bool) truth {
	if b {
		return isTrue
	}
	return isFalse
}

func ordering(op iceberg.Operation) func(c int) bool {
	switch op {
	case iceberg.OpEQ:
		return func(c int) bool { return c == 0 }
	case iceberg.OpNEQ:
		return func(c int) bool { return c != 0 }
	case iceberg.OpLT:
		return func(c int) bool { return c < 0 }
	case iceberg.OpLTEQ:
		return func(c int) bool { return c <= 0 }
	case iceberg.OpGT:
		return func(c int) bool { return c > 0 }
	case iceberg.OpGTEQ:
		return func(c int) bool { return c >= 0 }
	default:
		return nil
	}
}

// columnAt finds a column, or a field nested in struct columns, by its
// dotted path. A field under a null struct reads as null.
func columnAt(rec arrow.RecordBatch, path string) (arrow.Array, error) {
	parts := strings.Split(path, ".")
	idx := rec.Schema().FieldIndices(parts[0])
	if len(idx) != 1 {
		return nil, fmt.Errorf("feed: the filter's column %q is not in the decoded rows (%s)", path, rec.Schema())
	}
	arr := rec.Column(idx[0])
	for _, p := range parts[1:] {
		st, ok := arr.(*array.Struct)
		if !ok {
			return nil, fmt.Errorf("feed: the filter's column %q is not a struct field", path)
		}
		i, ok := st.DataType().(*arrow.StructType).FieldIdx(p)
		if !ok {
			return nil, fmt.Errorf("feed: the filter's column %q is not in the decoded rows", path)
		}
		child := st.Field(i)
		if st.NullN() > 0 {
			child = withParentNulls(st, child)
		}
		arr = child
	}
	return arr, nil
}

// withParentNulls reads a struct's child as null where the struct is.
func withParentNulls(parent *array.Struct, child arrow.Array) arrow.Array {
	return nullMasked{Array: child, parent: parent}
}

type nullMasked struct {
	arrow.Array
	parent arrow.Array
}

func (n nullMasked) IsNull(i int) bool { return n.parent.IsNull(i) || n.Array.IsNull(i) }

// compareValue compares value i of arr (not null) with a literal of the
// column's type. ok is false when the values are not ordered (NaN).
func compareValue(arr arrow.Array, i int, lit iceberg.Literal) (int, bool, error) {
	if m, ok := arr.(nullMasked); ok {
		arr = m.Array
	}
	switch a := arr.(type) {
	case *array.Int8:
		return compareInt(int64(a.Value(i)), lit)
	case *array.Int16:
		return compareInt(int64(a.Value(i)), lit)
	case *array.Int32:
		return compareInt(int64(a.Value(i)), lit)
	case *array.Int64:
		return compareInt(a.Value(i), lit)
	case *array.Date32:
		return compareInt(int64(a.Value(i)), lit)
	case *array.Time64:
		return compareInt(int64(a.Value(i)), lit)
	case *array.Timestamp:
		return compareInt(int64(a.Value(i)), lit)
	case *array.Float32:
		return compareFloat(float64(a.Value(i)), lit)
	case *array.Float64:
		return compareFloat(a.Value(i), lit)
	case *array.Boolean:
		l, ok := lit.(iceberg.BoolLiteral)
		if !ok {
			break
		}
		return cmp.Compare(b2i(a.Value(i)), b2i(bool(l))), true, nil
	case *array.String:
		return compareString(a.Value(i), lit)
	case *array.LargeString:
		return compareString(a.Value(i), lit)
	case *array.Binary:
		return compareBytes(a.Value(i), lit)
	case *array.LargeBinary:
		return compareBytes(a.Value(i), lit)
	case *array.FixedSizeBinary:
		return compareBytes(a.Value(i), lit)
	case *array.Decimal128:
		l, ok := lit.(iceberg.DecimalLiteral)
		if !ok {
			break
		}
		return decimalCmp(a.Value(i), l.Val), true, nil
	}
	return 0, false, fmt.Errorf("%w: cannot compare a %s column with %s", ErrInvalidFilter, arr.DataType(), lit)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func compareInt(v int64, lit iceberg.Literal) (int, bool, error) {
	switch l := lit.(type) {
	case iceberg.Int32Literal:
		return cmp.Compare(v, int64(l)), true, nil
	case iceberg.Int64Literal:
		return cmp.Compare(v, int64(l)), true, nil
	case iceberg.DateLiteral:
		return cmp.Compare(v, int64(l)), true, nil
	case iceberg.TimeLiteral:
		return cmp.Compare(v, int64(l)), true, nil
	case iceberg.TimestampLiteral:
		return cmp.Compare(v, int64(l)), true, nil
	case iceberg.TimestampNsLiteral:
		return cmp.Compare(v, int64(l)), true, nil
	}
	return 0, false, fmt.Errorf("%w: cannot compare an integer column with %s", ErrInvalidFilter, lit)
}

func compareFloat(v float64, lit iceberg.Literal) (int, bool, error) {
	var l float64
	switch x := lit.(type) {
	case iceberg.Float32Literal:
		l = float64(x)
	case iceberg.Float64Literal:
		l = float64(x)
	default:
		return 0, false, fmt.Errorf("%w: cannot compare a float column with %s", ErrInvalidFilter, lit)
	}
	if v != v || l != l { // NaN
		return 0, false, nil
	}
	return cmp.Compare(v, l), true, nil
}

func compareString(v string, lit iceberg.Literal) (int, bool, error) {
	l, ok := lit.(iceberg.StringLiteral)
	if !ok {
		return 0, false, fmt.Errorf("%w: cannot compare a string column with %s", ErrInvalidFilter, lit)
	}
	return strings.Compare(v, string(l)), true, nil
}

func compareBytes(v []byte, lit iceberg.Literal) (int, bool, error) {
	switch l := lit.(type) {
	case iceberg.BinaryLiteral:
		return bytes.Compare(v, l), true, nil
	case iceberg.FixedLiteral:
		return bytes.Compare(v, l), true, nil
	case iceberg.UUIDLiteral:
		return bytes.Compare(v, l[:]), true, nil
	}
	return 0, false, fmt.Errorf("%w: cannot compare a binary column with %s", ErrInvalidFilter, lit)
}

func decimalCmp(a, b decimal128.Num) int {
	switch {
	case a.Less(b):
		return -1
	case b.Less(a):
		return 1
	default:
		return 0
	}
}
