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

// routedRead is how a routed window is read from its backend, and what the
// engine computes on the backend's rows afterwards.
type routedRead struct {
	// columns are the images' columns the backend sends, and schema their
	// change row: the plan's, or wider by the columns the engine needs
	// (identity and filter columns for net changes, filter columns for a
	// filter the backend does not evaluate exactly).
	columns []string
	schema  *arrow.Schema
	// filter is given to the backend (nil: none).
	filter filter.Expr
	// sluiceFilter is set when the engine evaluates the plan's filter on
	// the backend's rows (update pairs whole), then projects the images to
	// the plan's columns.
	sluiceFilter bool
}

// planRouting decides who computes a routed window's filter, fold_updates
// and net_changes, and adds it to the verdict's reason:
//
//   - net_changes: the engine nets the backend's changes with its own
//     bounded netting (readNet, which spills), read with the identity and
//     filter columns, and filters the net changes as a native read does.
//     Spark's own netting is not SPEC's (Delta's netChanges nets by row
//     id, Iceberg's net_changes whole rows without update pairs), so it is
//     not asked for;
//   - a filter: the backend evaluates what it can translate (FilterPusher),
//     keeping update pairs whole; the engine evaluates the filter again
//     when the backend's part is not all of it, on images read with the
//     filter's columns;
//   - fold_updates: the engine folds the backend's update pairs (Spark has
//     no folded form).
func (p *Plan) planRouting() error {
	r := routedRead{columns: p.Columns, schema: p.schema}
	var notes []string
	switch {
	case p.NetChanges:
		if p.wideColumns != nil {
			r.columns = p.wideColumns
		}
		r.schema = p.wide
		notes = append(notes, "net_changes: Sluice nets the changes Spark computes, per identity (Spark nets by "+
			"row id or whole row)")
		if p.filter != nil {
			notes = append(notes, "the filter applies to the net changes, in Sluice")
		}
	case p.filter != nil:
		pushed, exact := false, false
		if fp, ok := routeBackend(p).(FilterPusher); ok {
			pushed, exact = fp.PushFilter(p.filter.Expr)
		}
		if pushed {
			r.filter = p.filter.Expr
		}
		switch {
		case pushed && exact:
			notes = append(notes, "the filter is evaluated in Spark's SQL, update pairs whole")
		case pushed:
			notes = append(notes, "part of the filter is evaluated in Spark's SQL, all of it again by Sluice after "+
				"the read")
		default:
			notes = append(notes, "the filter is evaluated by Sluice after the read (Spark SQL cannot write it)")
		}
		if !exact {
			r.sluiceFilter = true
			cols := slices.Clone(p.Columns)
			for _, c := range p.filter.Columns {
				if top := strings.SplitN(c, ".", 2)[0]; !slices.Contains(cols, top) {
					cols = append(cols, top)
				}
			}
			if len(cols) > len(p.Columns) {
				schema, err := changeSchema(p.end, cols)
				if err != nil {
					return err
				}
				r.columns, r.schema = cols, schema
			}
		}
	}
	if p.foldUpdates {
		notes = append(notes, "fold_updates: Sluice folds Spark's update pairs")
	}
	p.routing = r
	if len(notes) > 0 {
		p.Backend.Reason += "; " + strings.Join(notes, "; ")
	}
	return nil
}

// routedChanges streams a routed window's changes in the plan's schema:
// the backend's, netted, filtered, projected and folded as planRouting
// decided.
func (e *Engine) routedChanges(ctx context.Context, p *Plan) iter.Seq2[Batch, error] {
	src := e.readRouted(ctx, p)
	switch {
	case p.NetChanges:
		return func(yield func(Batch, error) bool) { e.readNet(ctx, p, src, yield) }
	case p.routing.sluiceFilter || p.foldUpdates:
		return e.routedPost(ctx, p, src)
	}
	return src
}

// routedPost filters (SPEC §3, update pairs whole), projects and folds the
// batches of a routed read. An update pair that straddles two batches of
// a commit is put together first: the update_before that ends a batch
// which does not end its commit waits for the next batch.
func (e *Engine) routedPost(ctx context.Context, p *Plan, src iter.Seq2[Batch, error]) iter.Seq2[Batch, error] {
	return func(yield func(Batch, error) bool) {
		mem := e.opts.Allocator
		kctx := kernelctx.For(ctx, mem)
		var rf *filter.RowEvaluator
		if p.routing.sluiceFilter {
			rf = filter.NewRowEvaluator(p.filter.Expr)
		}
		var held arrow.RecordBatch
		defer func() {
			if held != nil {
				held.Release()
			}
		}()
		for b, err := range src {
			if err != nil {
				yield(Batch{}, err)
				return
			}
			rec := b.Record
			if held != nil {
				joined, err := concatRecords(mem, held, rec)
				held.Release()
				held = nil
				rec.Release()
				if err != nil {
					yield(Batch{}, err)
					return
				}
				rec = joined
			}
			ops, err := opValues(rec)
			if err != nil {
				rec.Release()
				yield(Batch{}, err)
				return
			}
			if n := int64(len(ops)); !b.SnapshotComplete && n > 0 && ops[n-1] == OpUpdateBefore {
				held = rec.NewSlice(n-1, n)
				rest := rec.NewSlice(0, n-1)
				rec.Release()
				rec, ops = rest, ops[:n-1]
			}
			out, err := postBatch(kctx, mem, p, rf, rec, ops)
			rec.Release()
			if err != nil {
				yield(Batch{}, err)
				return
			}
			if out.NumRows() == 0 && !b.SnapshotComplete {
				out.Release()
				continue
			}
			b.Record = out
			if !yield(b, nil) {
				return
			}
		}
	}
}

// postBatch filters, projects and folds one batch of whole update pairs
// (ops are its ops), into a new batch in the plan's schema.
func postBatch(ctx context.Context, mem memory.Allocator, p *Plan, rf *filter.RowEvaluator, rec arrow.RecordBatch,
	ops []string) (arrow.RecordBatch, error) {
	rec.Retain()
	defer func() { rec.Release() }()
	if rf != nil {
		kept, keptOps, err := filterPairs(ctx, mem, rf, rec, ops)
		if err != nil {
			return nil, err
		}
		rec.Release()
		rec, ops = kept, keptOps
	}
	if p.routing.schema != p.schema {
		projected, err := projectImages(rec, p.schema)
		if err != nil {
			return nil, err
		}
		rec.Release()
		rec = projected
	}
	if p.foldUpdates {
		folded, err := foldPairs(ctx, mem, p.schema, rec, ops)
		if err != nil {
			return nil, err
		}
		rec.Release()
		rec = folded
	}
	rec.Retain()
	return rec, nil
}

// opValues returns the op of each row of a change batch.
func opValues(rec arrow.RecordBatch) ([]string, error) {
	col, ok := rec.Column(0).(*array.String)
	if !ok {
		return nil, fmt.Errorf("%w: the change row's op is %s", ErrInternal, rec.Column(0).DataType())
	}
	ops := make([]string, col.Len())
	for i := range ops {
		ops[i] = col.Value(i)
	}
	return ops, nil
}

// filterPairs keeps the changes of rec that the filter selects, as a
// native read does (filterChanges): an insert or update_after whose image
// matches, a delete or update_before whose image does not fail to, and an
// update pair whole when either image matches. It returns a new batch and
// its ops.
func filterPairs(ctx context.Context, mem memory.Allocator, rf *filter.RowEvaluator, rec arrow.RecordBatch,
	ops []string) (arrow.RecordBatch, []string, error) {
	eval := func(col int) ([]filter.Truth, error) {
		img, ok := rec.Column(col).(*array.Struct)
		if !ok {
			return nil, fmt.Errorf("%w: the change row's image is %s", ErrInternal, rec.Column(col).DataType())
		}
		view := array.RecordFromStructArray(img, nil)
		defer view.Release()
		return rf.Eval(view)
	}
	before, err := eval(1)
	if err != nil {
		return nil, nil, err
	}
	after, err := eval(2)
	if err != nil {
		return nil, nil, err
	}
	rows := make([]change, len(ops))
	for i, op := range ops {
		rows[i] = change{op: op, before: -1, after: -1}
		switch op {
		case OpDelete, OpUpdateBefore:
			rows[i].before = i
		default:
			rows[i].after = i
		}
	}
	keep := make([]bool, len(ops))
	for _, c := range filterChanges(rows, before, after) {
		keep[max(c.before, c.after)] = true
	}
	keptOps := make([]string, 0, len(ops))
	for i, k := range keep {
		if k {
			keptOps = append(keptOps, ops[i])
		}
	}
	if len(keptOps) == len(ops) {
		rec.Retain()
		return rec, ops, nil
	}
	b := array.NewBooleanBuilder(mem)
	defer b.Release()
	b.AppendValues(keep, nil)
	mask := b.NewArray()
	defer mask.Release()
	out, err := compute.FilterRecordBatch(ctx, rec, mask, compute.DefaultFilterOptions())
	if err != nil {
		return nil, nil, fmt.Errorf("feed: filter a routed batch: %w", err)
	}
	return out, keptOps, nil
}

// projectImages returns rec with its images cut to the image fields of
// schema (a change row of fewer columns), sharing their buffers.
func projectImages(rec arrow.RecordBatch, schema *arrow.Schema) (arrow.RecordBatch, error) {
	st := imageType(schema)
	cols := make([]arrow.Array, 5)
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for j := range cols {
		if j != 1 && j != 2 {
			cols[j] = rec.Column(j)
			cols[j].Retain()
			continue
		}
		img, ok := rec.Column(j).(*array.Struct)
		if !ok {
			return nil, fmt.Errorf("%w: the change row's image is %s", ErrInternal, rec.Column(j).DataType())
		}
		from := img.DataType().(*arrow.StructType)
		children := make([]arrow.ArrayData, st.NumFields())
		for k, f := range st.Fields() {
			idx, ok := from.FieldIdx(f.Name)
			if !ok {
				return nil, fmt.Errorf("%w: the routed image has no column %s", ErrInternal, f.Name)
			}
			children[k] = img.Data().Children()[idx]
		}
		data := array.NewData(st, img.Len(), img.Data().Buffers()[:1], children, img.NullN(), img.Data().Offset())
		cols[j] = array.MakeFromData(data)
		data.Release()
	}
	return array.NewRecordBatch(schema, cols, rec.NumRows()), nil
}

// foldPairs turns each update pair of rec (an update_before right before
// its update_after) into one update row with both images, as a native
// read's fold_updates does.
func foldPairs(ctx context.Context, mem memory.Allocator, schema *arrow.Schema, rec arrow.RecordBatch,
	ops []string) (arrow.RecordBatch, error) {
	opb := array.NewStringBuilder(mem)
	defer opb.Release()
	bi, ai := array.NewInt32Builder(mem), array.NewInt32Builder(mem)
	defer bi.Release()
	defer ai.Release()
	for i := 0; i < len(ops); i++ {
		if ops[i] == OpUpdateBefore && i+1 < len(ops) && ops[i+1] == OpUpdateAfter {
			opb.Append(OpUpdate)
			bi.Append(int32(i))
			ai.Append(int32(i + 1))
			i++
			continue
		}
		opb.Append(ops[i])
		bi.Append(int32(i))
		ai.Append(int32(i))
	}
	if opb.Len() == len(ops) {
		rec.Retain()
		return rec, nil
	}
	bidx, aidx := bi.NewArray(), ai.NewArray()
	defer bidx.Release()
	defer aidx.Release()
	cols := make([]arrow.Array, 5)
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	cols[0] = opb.NewArray()
	for j, idx := range map[int]arrow.Array{1: bidx, 2: aidx, 3: bidx, 4: bidx} {
		var err error
		if cols[j], err = compute.TakeArray(ctx, rec.Column(j), idx); err != nil {
			return nil, fmt.Errorf("feed: fold a routed batch: %w", err)
		}
	}
	return array.NewRecordBatch(schema, cols, int64(cols[0].Len())), nil
}

// concatRecords returns a batch of a's rows then b's (of one schema).
func concatRecords(mem memory.Allocator, a, b arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, a.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for j := range cols {
		var err error
		if cols[j], err = array.Concatenate([]arrow.Array{a.Column(j), b.Column(j)}, mem); err != nil {
			return nil, fmt.Errorf("feed: join an update pair across batches: %w", err)
		}
	}
	return array.NewRecordBatch(a.Schema(), cols, a.NumRows()+b.NumRows()), nil
}
