package feed

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/filter"
	"github.com/sluicefeed/sluice/internal/lib/kernelctx"
)

// Layouts of the change rows, the values of Request.Layout.
const (
	// LayoutRenderable is the default: the renderable change row (op,
	// before, after, snapshot, ts).
	LayoutRenderable = ""
	// LayoutFlat is one row per change: the data columns of its image,
	// then _change_type, _commit_version and _commit_timestamp, as Delta's
	// change data feed and Spark's CHANGES return them.
	LayoutFlat = "flat"
)

// Change types, the values of the _change_type column of the flat layout.
const (
	ChangeInsert          = "insert"
	ChangeDelete          = "delete"
	ChangeUpdatePreimage  = "update_preimage"
	ChangeUpdatePostimage = "update_postimage"
)

// Names of the columns the flat layout adds after the data columns.
const (
	ColChangeType      = "_change_type"
	ColCommitVersion   = "_commit_version"
	ColCommitTimestamp = "_commit_timestamp"
)

// flatColumns are the columns the flat layout adds, in order.
var flatColumns = []string{ColChangeType, ColCommitVersion, ColCommitTimestamp}

// changeTypes maps each op of the renderable row to its flat change type
// and tells whether the row's image is its before-image. An update row
// (fold_updates) has no flat form.
var changeTypes = map[string]struct {
	name   string
	before bool
}{
	OpInsert:       {ChangeInsert, false},
	OpDelete:       {ChangeDelete, true},
	OpUpdateBefore: {ChangeUpdatePreimage, true},
	OpUpdateAfter:  {ChangeUpdatePostimage, false},
}

// validateLayout checks the request's layout and what it combines with.
func (r Request) validateLayout() error {
	switch r.Layout {
	case LayoutRenderable:
		return nil
	case LayoutFlat:
		if r.FoldUpdates {
			return fmt.Errorf("%w: fold_updates makes one update row of two images, which the flat layout "+
				"(one image per row) cannot hold: leave out fold_updates, or the layout", ErrInvalidRequest)
		}
		return nil
	default:
		return fmt.Errorf("%w: layout %q: want \"\" (the renderable row, the default) or %q", ErrInvalidRequest,
			filter.Clip(r.Layout), LayoutFlat)
	}
}

// flatSchema returns the flat layout of a renderable change schema: the
// image's fields (the projected data columns, nullable, in order), then
// _change_type utf8, _commit_version int64 and _commit_timestamp
// timestamp[us, UTC], none of them null. A data column named like one of
// the added columns is ErrInvalidRequest: the layout cannot hold both.
func flatSchema(table string, renderable *arrow.Schema) (*arrow.Schema, error) {
	image := imageType(renderable)
	fields := slices.Clone(image.Fields())
	for _, f := range fields {
		if slices.Contains(flatColumns, f.Name) {
			return nil, fmt.Errorf("%w: table %s has a column %q, a name the flat layout gives its own column "+
				"(%s): leave it out of columns, or read the default layout", ErrInvalidRequest, table, f.Name,
				strings.Join(flatColumns, ", "))
		}
	}
	fields = append(fields,
		arrow.Field{Name: ColChangeType, Type: arrow.BinaryTypes.String, Nullable: false},
		arrow.Field{Name: ColCommitVersion, Type: arrow.PrimitiveTypes.Int64, Nullable: false},
		arrow.Field{Name: ColCommitTimestamp, Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: false},
	)
	return arrow.NewSchema(fields, nil), nil
}

// flattened turns the renderable batches of seq into the plan's flat
// layout; without one it returns seq as it is.
func (e *Engine) flattened(ctx context.Context, p *Plan, seq iter.Seq2[Batch, error]) iter.Seq2[Batch, error] {
	if p.flat == nil {
		return seq
	}
	return func(yield func(Batch, error) bool) {
		f := &flattener{mem: e.opts.Allocator, schema: p.flat, types: map[string]arrow.Array{},
			maxRows: e.opts.MaxBatchRows}
		defer f.release()
		ctx := kernelctx.For(ctx, e.opts.Allocator)
		for b, err := range seq {
			if err != nil {
				yield(b, err)
				return
			}
			rec, err := f.flatten(ctx, b.Record)
			if err != nil {
				yield(Batch{}, err)
				return
			}
			b.Record = rec
			if !yield(b, nil) {
				return
			}
		}
	}
}

// flattener turns renderable change batches into flat ones, from the same
// arrays wherever it can: a batch whose rows all carry the same image side
// (the inserts of an append, the deletes of a delete) becomes the children
// of that image struct, the commit columns are the renderable batch's
// snapshot and ts columns, and a batch of one change type slices a cached
// column of that type. Only a batch that mixes the sides (update pairs)
// gathers its rows.
type flattener struct {
	mem     memory.Allocator
	schema  *arrow.Schema
	maxRows int
	types   map[string]arrow.Array // cached _change_type columns, by value
}

func (f *flattener) release() {
	for _, arr := range f.types {
		arr.Release()
	}
	f.types = nil
}

// flatten returns the flat form of a renderable batch; it takes over rec
// (releasing it) and returns a record the caller releases.
func (f *flattener) flatten(ctx context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	defer rec.Release()
	n := int(rec.NumRows())
	if n == 0 {
		return emptyRecord(f.mem, f.schema), nil
	}
	ops, ok := rec.Column(0).(*array.String)
	if !ok {
		return nil, fmt.Errorf("feed: flatten: op column is %s, not utf8", rec.Column(0).DataType())
	}
	before, ok1 := rec.Column(1).(*array.Struct)
	after, ok2 := rec.Column(2).(*array.Struct)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("feed: flatten: the images are %s and %s, not structs",
			rec.Column(1).DataType(), rec.Column(2).DataType())
	}
	// Which side each row's image is on, and whether one op holds them all.
	sides := make([]bool, n)
	befores := 0
	same := true
	first := ops.Value(0)
	prev, onBefore := "", false
	for i := range n {
		if op := ops.Value(i); i == 0 || op != prev {
			ct, ok := changeTypes[op]
			if !ok {
				return nil, fmt.Errorf("%w: a %q row has no flat form (fold_updates with the flat layout)",
					ErrInvalidRequest, op)
			}
			prev, onBefore = op, ct.before
			same = same && op == first
		}
		sides[i] = onBefore
		if onBefore {
			befores++
		}
	}

	cols := make([]arrow.Array, 0, f.schema.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	switch befores {
	case n, 0:
		img := after
		if befores == n {
			img = before
		}
		for j := range img.NumField() {
			c := img.Field(j)
			c.Retain()
			cols = append(cols, c)
		}
	default:
		img, err := gatherImages(ctx, f.mem, before, after, sides)
		if err != nil {
			return nil, err
		}
		for j := range img.NumField() {
			c := img.Field(j)
			c.Retain()
			cols = append(cols, c)
		}
		img.Release()
	}

	if same {
		cols = append(cols, array.NewSlice(f.typeColumn(changeTypes[first].name, n), 0, int64(n)))
	} else {
		b := array.NewStringBuilder(f.mem)
		b.Reserve(n)
		for i := range n {
			b.Append(changeTypes[ops.Value(i)].name)
		}
		cols = append(cols, b.NewArray())
		b.Release()
	}
	for _, c := range rec.Columns()[3:5] {
		c.Retain()
		cols = append(cols, c)
	}
	return array.NewRecordBatch(f.schema, cols, int64(n)), nil
}

// gatherImages returns the struct of each row's image: the before-image
// where sides is true, the after-image elsewhere.
func gatherImages(ctx context.Context, mem memory.Allocator, before, after *array.Struct, sides []bool) (*array.Struct, error) {
	both, err := array.Concatenate([]arrow.Array{before, after}, mem)
	if err != nil {
		return nil, fmt.Errorf("feed: flatten: %w", err)
	}
	defer both.Release()
	n := len(sides)
	ib := array.NewInt32Builder(mem)
	defer ib.Release()
	ib.Reserve(n)
	for i, b := range sides {
		if b {
			ib.UnsafeAppend(int32(i))
		} else {
			ib.UnsafeAppend(int32(n + i))
		}
	}
	idx := ib.NewArray()
	defer idx.Release()
	out, err := compute.TakeArray(ctx, both, idx)
	if err != nil {
		return nil, fmt.Errorf("feed: flatten: %w", err)
	}
	return out.(*array.Struct), nil
}

// typeColumn returns a cached column of change type t at least n long.
func (f *flattener) typeColumn(t string, n int) arrow.Array {
	if arr, ok := f.types[t]; ok {
		if arr.Len() >= n {
			return arr
		}
		arr.Release()
	}
	size := 1024
	for size < n {
		size *= 2
	}
	size = max(n, min(size, f.maxRows))
	b := array.NewStringBuilder(f.mem)
	defer b.Release()
	b.Reserve(size)
	b.ReserveData(size * len(t))
	for range size {
		b.Append(t)
	}
	arr := b.NewArray()
	f.types[t] = arr
	return arr
}
