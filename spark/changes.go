package spark

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Op is a change row's operation, in Sluice's vocabulary.
type Op uint8

// The operations.
const (
	OpInsert Op = iota + 1
	OpDelete
	OpUpdateBefore
	OpUpdateAfter
)

// String is the op's name in Sluice's wire: insert, delete, update_before,
// update_after.
func (o Op) String() string {
	switch o {
	case OpInsert:
		return "insert"
	case OpDelete:
		return "delete"
	case OpUpdateBefore:
		return "update_before"
	case OpUpdateAfter:
		return "update_after"
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// ParseChangeType maps a _change_type of either dialect onto an Op: Spark
// 4.2's CHANGES and Delta's (insert, delete, update_preimage,
// update_postimage) and Iceberg's changelog view (INSERT, DELETE,
// UPDATE_BEFORE, UPDATE_AFTER). Any other value is ErrUnknownChangeType:
// a read fails rather than drop a row it does not understand.
func ParseChangeType(s string) (Op, error) {
	switch s {
	case "insert", "INSERT":
		return OpInsert, nil
	case "delete", "DELETE":
		return OpDelete, nil
	case "update_preimage", "UPDATE_BEFORE":
		return OpUpdateBefore, nil
	case "update_postimage", "UPDATE_AFTER":
		return OpUpdateAfter, nil
	}
	return 0, fmt.Errorf("%w: %q", ErrUnknownChangeType, s)
}

// ChangeSchema is the schema of the batches a read yields for data columns
// fields (SPEC §3, the renderable change row): op (utf8), before and after
// (structs of the data columns, all nullable), snapshot (int64: the Delta
// version or Iceberg snapshot id) and ts (timestamp[us, UTC]; the commit's
// time).
func ChangeSchema(fields []arrow.Field) *arrow.Schema {
	img := make([]arrow.Field, len(fields))
	for i, f := range fields {
		img[i] = arrow.Field{Name: f.Name, Type: f.Type, Nullable: true, Metadata: f.Metadata}
	}
	st := arrow.StructOf(img...)
	return arrow.NewSchema([]arrow.Field{
		{Name: "op", Type: arrow.BinaryTypes.String},
		{Name: "before", Type: st, Nullable: true},
		{Name: "after", Type: st, Nullable: true},
		{Name: "snapshot", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
}

// stringValues is a utf8 or large utf8 array.
type stringValues interface {
	arrow.Array
	Value(int) string
}

// changeOps maps a batch's change type column onto ops.
func changeOps(col arrow.Array) ([]Op, error) {
	kinds, ok := col.(stringValues)
	if !ok {
		return nil, fmt.Errorf("%w: _change_type is %s, not a string", ErrUnknownChangeType, col.DataType())
	}
	ops := make([]Op, kinds.Len())
	for i := range ops {
		if kinds.IsNull(i) {
			return nil, fmt.Errorf("%w: a null _change_type", ErrUnknownChangeType)
		}
		op, err := ParseChangeType(kinds.Value(i))
		if err != nil {
			return nil, err
		}
		ops[i] = op
	}
	return ops, nil
}

// canceller turns the query's batches (see query) into change rows,
// cancelling update pairs whose images are equal. A pair may straddle two
// batches: the update_before that ends a batch is held until the next one.
type canceller struct {
	mem   memory.Allocator
	nproj int                 // the projected data columns come first
	image bool                // a whole-image column follows colTime
	times map[int64]time.Time // commit times by version; nil: the query's
	held  arrow.RecordBatch   // a one-row update_before, or nil
}

func newCanceller(mem memory.Allocator, nproj int, image bool, times map[int64]time.Time) *canceller {
	if len(times) == 0 {
		times = nil
	}
	return &canceller{mem: mem, nproj: nproj, image: image, times: times}
}

// push takes one batch of the query (the caller keeps its reference) and
// returns the change batches it completes, which the caller releases.
func (c *canceller) push(rec arrow.RecordBatch) (outs []arrow.RecordBatch, err error) {
	defer func() {
		if err != nil {
			releaseAll(outs)
			outs = nil
		}
	}()
	if rec.NumCols() < int64(c.nproj+3) {
		return nil, fmt.Errorf("%w: a result of %d columns, not %d", ErrQuery, rec.NumCols(), c.nproj+3)
	}
	ops, err := changeOps(rec.Column(c.nproj))
	if err != nil {
		return nil, err
	}
	n := len(ops)
	if n == 0 {
		return nil, nil // a held row waits for a batch with rows
	}
	keep := make([]bool, n)
	for i := range keep {
		keep[i] = true
	}
	if c.held != nil {
		held := c.held
		c.held = nil
		if ops[0] == OpUpdateAfter && c.sameImage(held, 0, rec, 0) {
			keep[0] = false
		} else {
			out, err := c.render(held, []Op{OpUpdateBefore})
			if err != nil {
				held.Release()
				return nil, err
			}
			outs = append(outs, out)
		}
		held.Release()
	}
	for i := 0; i+1 < n; i++ {
		if keep[i] && ops[i] == OpUpdateBefore && ops[i+1] == OpUpdateAfter && c.sameImage(rec, i, rec, i+1) {
			keep[i], keep[i+1] = false, false
			i++
		}
	}
	if keep[n-1] && ops[n-1] == OpUpdateBefore {
		c.held = rec.NewSlice(int64(n-1), int64(n))
		keep[n-1] = false
	}
	kept, keptOps, err := c.filter(rec, ops, keep)
	if err != nil {
		return nil, err
	}
	defer kept.Release()
	if kept.NumRows() == 0 {
		return outs, nil
	}
	out, err := c.render(kept, keptOps)
	if err != nil {
		return nil, err
	}
	return append(outs, out), nil
}

// flush returns the held row, once the query's result has ended.
func (c *canceller) flush() ([]arrow.RecordBatch, error) {
	if c.held == nil {
		return nil, nil
	}
	held := c.held
	c.held = nil
	defer held.Release()
	out, err := c.render(held, []Op{OpUpdateBefore})
	if err != nil {
		return nil, err
	}
	return []arrow.RecordBatch{out}, nil
}

// release drops the held row of a read that ended early.
func (c *canceller) release() {
	if c.held != nil {
		c.held.Release()
		c.held = nil
	}
}

// sameImage reports whether row i of a and row j of b carry the same
// image: the projected columns, and the whole image when projected away.
func (c *canceller) sameImage(a arrow.RecordBatch, i int, b arrow.RecordBatch, j int) bool {
	cols := make([]int, 0, c.nproj+1)
	for k := range c.nproj {
		cols = append(cols, k)
	}
	if c.image {
		cols = append(cols, c.nproj+3)
	}
	for _, k := range cols {
		if !array.SliceEqual(a.Column(k), int64(i), int64(i+1), b.Column(k), int64(j), int64(j+1)) {
			return false
		}
	}
	return true
}

// filter keeps the rows of rec (and ops) that keep marks; the batch
// returned is the caller's to release.
func (c *canceller) filter(rec arrow.RecordBatch, ops []Op, keep []bool) (arrow.RecordBatch, []Op, error) {
	all := true
	for _, k := range keep {
		all = all && k
	}
	if all {
		rec.Retain()
		return rec, ops, nil
	}
	mask := array.NewBooleanBuilder(c.mem)
	defer mask.Release()
	mask.AppendValues(keep, nil)
	m := mask.NewBooleanArray()
	defer m.Release()
	ctx := compute.WithAllocator(context.Background(), c.mem)
	out, err := compute.FilterRecordBatch(ctx, rec, m, compute.DefaultFilterOptions())
	if err != nil {
		return nil, nil, fmt.Errorf("spark: cancel no-op updates: %w", err)
	}
	kept := make([]Op, 0, out.NumRows())
	for i, k := range keep {
		if k {
			kept = append(kept, ops[i])
		}
	}
	return out, kept, nil
}

// render builds the change rows of rec, whose rows have ops. The images
// share the data columns' buffers; only op (and ts for Iceberg) is new.
func (c *canceller) render(rec arrow.RecordBatch, ops []Op) (arrow.RecordBatch, error) {
	n := len(ops)
	fields := rec.Schema().Fields()[:c.nproj]
	schema := ChangeSchema(fields)
	st := schema.Field(1).Type.(*arrow.StructType)

	opb := array.NewStringBuilder(c.mem)
	defer opb.Release()
	opb.Reserve(n)
	for _, op := range ops {
		opb.Append(op.String())
	}
	opArr := opb.NewArray()
	defer opArr.Release()

	children := make([]arrow.ArrayData, c.nproj)
	for k := range c.nproj {
		children[k] = rec.Column(k).Data()
	}
	image := func(valid func(Op) bool) arrow.Array {
		bits := memory.NewResizableBuffer(c.mem)
		bits.Resize(int(bitutil.BytesForBits(int64(n))))
		nulls := 0
		for i, op := range ops {
			if valid(op) {
				bitutil.SetBit(bits.Bytes(), i)
			} else {
				bitutil.ClearBit(bits.Bytes(), i)
				nulls++
			}
		}
		data := array.NewData(st, n, []*memory.Buffer{bits}, children, nulls, 0)
		bits.Release()
		defer data.Release()
		return array.MakeFromData(data)
	}
	before := image(func(op Op) bool { return op == OpDelete || op == OpUpdateBefore })
	defer before.Release()
	after := image(func(op Op) bool { return op == OpInsert || op == OpUpdateAfter })
	defer after.Release()

	version, ok := rec.Column(c.nproj + 1).(*array.Int64)
	if !ok {
		return nil, fmt.Errorf("%w: the commit version is %s, not int64", ErrQuery, rec.Column(c.nproj+1).DataType())
	}
	ts, err := c.commitTimes(rec.Column(c.nproj+2), version)
	if err != nil {
		return nil, err
	}
	defer ts.Release()
	return array.NewRecordBatch(schema, []arrow.Array{opArr, before, after, version, ts}, int64(n)), nil
}

var tsUTC = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// commitTimes is the ts column: Spark's commit timestamps as
// timestamp[us, UTC] (the same instants, whatever the session's zone),
// or, for Iceberg's view, which has none, the history's times by version.
func (c *canceller) commitTimes(col arrow.Array, version *array.Int64) (arrow.Array, error) {
	if c.times != nil {
		b := array.NewTimestampBuilder(c.mem, tsUTC)
		defer b.Release()
		for i := range version.Len() {
			t, ok := c.times[version.Value(i)]
			if !ok || version.IsNull(i) {
				b.AppendNull()
				continue
			}
			b.Append(arrow.Timestamp(t.UnixMicro()))
		}
		return b.NewArray(), nil
	}
	tt, ok := col.DataType().(*arrow.TimestampType)
	if !ok || tt.Unit != arrow.Microsecond {
		return nil, fmt.Errorf("%w: the commit timestamp is %s, not timestamp[us]", ErrQuery, col.DataType())
	}
	data := array.NewData(tsUTC, col.Len(), col.Data().Buffers(), nil, col.NullN(), col.Data().Offset())
	defer data.Release()
	return array.MakeFromData(data), nil
}

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}
