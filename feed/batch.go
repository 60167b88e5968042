package feed

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/internal/lib/kernelctx"
)

// Batch is a record batch of renderable change rows, all made by one
// snapshot, in the plan's output schema.
type Batch struct {
	// Record holds the rows. The receiver of a Batch owns the record and
	// must Release it.
	Record arrow.RecordBatch
	// Snapshot is the snapshot that made the changes.
	Snapshot Snapshot
	// SnapshotComplete is true on the last batch of a snapshot: once it is
	// processed, every change of the snapshot has been seen, and a consumer
	// may checkpoint at the snapshot.
	SnapshotComplete bool
}

// assembler turns decoded data batches into change batches of bounded size.
// It caches constant columns (the null image, the op values, the snapshot
// and ts of the current snapshot) and slices them per batch.
type assembler struct {
	mem      memory.Allocator
	schema   *arrow.Schema
	image    *arrow.StructType
	maxRows  int
	maxBytes int64

	nullImage arrow.Array // all-null image
	ops       map[string]arrow.Array
	constFor  int64       // the snapshot whose constants are cached
	snapCol   arrow.Array // snapshot id of constFor
	tsCol     arrow.Array // commit time of constFor
}

func newAssembler(mem memory.Allocator, schema *arrow.Schema, maxRows int, maxBytes int64) *assembler {
	return &assembler{mem: mem, schema: schema, image: imageType(schema), maxRows: maxRows,
		maxBytes: maxBytes, ops: map[string]arrow.Array{}}
}

func (a *assembler) release() {
	for _, arr := range []arrow.Array{a.nullImage, a.snapCol, a.tsCol} {
		if arr != nil {
			arr.Release()
		}
	}
	for _, arr := range a.ops {
		arr.Release()
	}
	a.nullImage, a.snapCol, a.tsCol, a.ops = nil, nil, nil, map[string]arrow.Array{}
}

// image builds the image struct of rec's columns in the output order. rec
// must hold every image column (it may hold more, such as filter columns).
func (a *assembler) imageOf(rec arrow.RecordBatch) (*array.Struct, error) {
	cols := make([]arrow.Array, a.image.NumFields())
	for i, f := range a.image.Fields() {
		idx := rec.Schema().FieldIndices(f.Name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("feed: decoded batch lacks column %q (has %s)", f.Name, rec.Schema())
		}
		cols[i] = rec.Column(idx[0])
	}
	return array.NewStructArrayWithFields(cols, a.image.Fields())
}

// inserts turns a decoded batch of new rows into insert change batches of
// snapshot s. The caller keeps ownership of rec; the returned records are
// the caller's to release.
func (a *assembler) inserts(rec arrow.RecordBatch, s Snapshot) ([]arrow.RecordBatch, error) {
	return a.rows(OpInsert, rec, s)
}

// rows turns a decoded batch into change batches of snapshot s whose rows
// are all op: OpInsert (the rows are the after-images) or OpDelete (the
// before-images). The caller keeps ownership of rec; the returned records
// are the caller's to release.
func (a *assembler) rows(op string, rec arrow.RecordBatch, s Snapshot) ([]arrow.RecordBatch, error) {
	if rec.NumRows() == 0 {
		return nil, nil
	}
	img, err := a.imageOf(rec)
	if err != nil {
		return nil, err
	}
	defer img.Release()
	before, after := arrow.Array(nil), arrow.Array(img)
	if op == OpDelete {
		before, after = img, nil
	}

	var out []arrow.RecordBatch
	release := func() {
		for _, r := range out {
			r.Release()
		}
	}
	for _, span := range a.split(img) {
		r, err := a.assemble(op, before, after, span, s)
		if err != nil {
			release()
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// empty returns a 0-row change batch, to carry a snapshot's completion.
func (a *assembler) empty() arrow.RecordBatch {
	cols := make([]arrow.Array, len(a.schema.Fields()))
	for i, f := range a.schema.Fields() {
		cols[i] = array.MakeArrayOfNull(a.mem, f.Type, 0)
	}
	rec := array.NewRecordBatch(a.schema, cols, 0)
	for _, c := range cols {
		c.Release()
	}
	return rec
}

type span struct{ off, n int }

// split cuts an image array into spans of at most maxRows rows and about
// maxBytes bytes, the null image of the other side included.
func (a *assembler) split(img arrow.Array) []span {
	n := img.Len()
	total := dataSize(img.Data(), 0, n) * 2
	rows := a.maxRows
	if total > a.maxBytes {
		rows = max(1, int(int64(n)*a.maxBytes/total))
	}
	var spans []span
	var cut func(off, n int)
	cut = func(off, n int) {
		if n > 1 && dataSize(img.Data(), off, n)*2 > a.maxBytes {
			half := n / 2
			cut(off, half)
			cut(off+half, n-half)
			return
		}
		spans = append(spans, span{off, n})
	}
	for off := 0; off < n; off += rows {
		cut(off, min(rows, n-off))
	}
	return spans
}

// assemble builds one change batch: op for every row, the before and after
// images (nil meaning all null) sliced to sp.
func (a *assembler) assemble(op string, before, after arrow.Array, sp span, s Snapshot) (arrow.RecordBatch, error) {
	if sp.n > a.maxRows {
		return nil, fmt.Errorf("feed: span of %d rows exceeds the batch limit of %d", sp.n, a.maxRows)
	}
	if size := imageSize(before, sp) + imageSize(after, sp); sp.n == 1 && size > HardMaxBatchBytes {
		return nil, fmt.Errorf("%w: a row of snapshot %d takes %d bytes, more than the %d a batch may hold",
			ErrTooLarge, s.ID, size, HardMaxBatchBytes)
	}
	a.prepare(s, sp.n)
	cols := []arrow.Array{
		array.NewSlice(a.opColumn(op, sp.n), 0, int64(sp.n)),
		a.sliceImage(before, sp),
		a.sliceImage(after, sp),
		array.NewSlice(a.snapCol, 0, int64(sp.n)),
		array.NewSlice(a.tsCol, 0, int64(sp.n)),
	}
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	return array.NewRecordBatch(a.schema, cols, int64(sp.n)), nil
}

func imageSize(img arrow.Array, sp span) int64 {
	if img == nil {
		return 0
	}
	return dataSize(img.Data(), sp.off, sp.n)
}

func (a *assembler) sliceImage(img arrow.Array, sp span) arrow.Array {
	if img == nil {
		if a.nullImage == nil || a.nullImage.Len() < sp.n {
			if a.nullImage != nil {
				a.nullImage.Release()
			}
			a.nullImage = nullStruct(a.mem, a.image, a.capacity(sp.n))
		}
		return array.NewSlice(a.nullImage, 0, int64(sp.n))
	}
	return array.NewSlice(img, int64(sp.off), int64(sp.off+sp.n))
}

// capacity is the length of a cached constant column that holds n rows:
// the next power of two, at most maxRows, so that growing is rare and small
// snapshots stay cheap.
func (a *assembler) capacity(n int) int {
	c := 1024
	for c < n {
		c *= 2
	}
	return max(n, min(c, a.maxRows))
}

// opColumn returns a cached column of op values at least n long.
func (a *assembler) opColumn(op string, n int) arrow.Array {
	if arr, ok := a.ops[op]; ok {
		if arr.Len() >= n {
			return arr
		}
		arr.Release()
	}
	size := a.capacity(n)
	b := array.NewStringBuilder(a.mem)
	defer b.Release()
	b.Reserve(size)
	b.ReserveData(size * len(op))
	for range size {
		b.Append(op)
	}
	arr := b.NewArray()
	a.ops[op] = arr
	return arr
}

// prepare caches the snapshot and ts columns of snapshot s, at least n
// long.
func (a *assembler) prepare(s Snapshot, n int) {
	if a.snapCol != nil && a.constFor == s.ID && a.snapCol.Len() >= n {
		return
	}
	if a.snapCol != nil {
		a.snapCol.Release()
		a.tsCol.Release()
	}
	size := a.capacity(n)
	sb := array.NewInt64Builder(a.mem)
	defer sb.Release()
	tb := array.NewTimestampBuilder(a.mem, arrow.FixedWidthTypes.Timestamp_us.(*arrow.TimestampType))
	defer tb.Release()
	sb.Reserve(size)
	tb.Reserve(size)
	ts := arrow.Timestamp(s.TimestampMs * 1000)
	for range size {
		sb.UnsafeAppend(s.ID)
		tb.UnsafeAppend(ts)
	}
	a.snapCol, a.tsCol, a.constFor = sb.NewArray(), tb.NewArray(), s.ID
}

// changesEach assembles change batches of snapshot s from images, and
// hands each to emit (which takes it over) as soon as it is assembled, so
// that a snapshot's output is never held whole: befores and afters are
// struct arrays of images, and each change names its op and the rows of
// its images (-1: none).
func (a *assembler) changesEach(ctx context.Context, befores, afters arrow.Array, rows []change, s Snapshot,
	emit func(arrow.RecordBatch) error) error {
	if len(rows) == 0 {
		return nil
	}
	perRow := int64(1)
	if n := befores.Len(); n > 0 {
		perRow += dataSize(befores.Data(), 0, n) / int64(n)
	}
	if n := afters.Len(); n > 0 {
		perRow += dataSize(afters.Data(), 0, n) / int64(n)
	}
	chunk := int(min(int64(a.maxRows), max(1, a.maxBytes/(perRow*2))))
	for start := 0; start < len(rows); start += chunk {
		r, err := a.assembleChanges(ctx, befores, afters, rows[start:min(start+chunk, len(rows))], s)
		if err != nil {
			return err
		}
		if err := emit(r); err != nil {
			return err
		}
	}
	return nil
}

func (a *assembler) assembleChanges(ctx context.Context, befores, afters arrow.Array, rows []change, s Snapshot) (arrow.RecordBatch, error) {
	n := len(rows)
	ops := array.NewStringBuilder(a.mem)
	defer ops.Release()
	for _, c := range rows {
		ops.Append(c.op)
	}
	opCol := ops.NewArray()
	defer opCol.Release()
	before, err := a.takeImages(ctx, befores, rows, func(c change) int { return c.before })
	if err != nil {
		return nil, err
	}
	defer before.Release()
	after, err := a.takeImages(ctx, afters, rows, func(c change) int { return c.after })
	if err != nil {
		return nil, err
	}
	defer after.Release()
	a.prepare(s, n)
	snap := array.NewSlice(a.snapCol, 0, int64(n))
	defer snap.Release()
	ts := array.NewSlice(a.tsCol, 0, int64(n))
	defer ts.Release()
	return array.NewRecordBatch(a.schema, []arrow.Array{opCol, before, after, snap, ts}, int64(n)), nil
}

// takeImages gathers the images rows name (nulls where a row has none).
func (a *assembler) takeImages(ctx context.Context, images arrow.Array, rows []change, pick func(change) int) (arrow.Array, error) {
	// Rows that name consecutive images (a run of deletes or inserts) are a
	// slice of the images: no copy.
	if first := pick(rows[0]); first >= 0 {
		run := true
		for i, c := range rows {
			if pick(c) != first+i {
				run = false
				break
			}
		}
		if run {
			return array.NewSlice(images, int64(first), int64(first+len(rows))), nil
		}
	}
	idx := array.NewInt64Builder(a.mem)
	defer idx.Release()
	some := false
	for _, c := range rows {
		if i := pick(c); i >= 0 {
			idx.Append(int64(i))
			some = true
		} else {
			idx.AppendNull()
		}
	}
	if !some {
		return a.sliceImage(nil, span{0, len(rows)}), nil
	}
	indices := idx.NewArray()
	defer indices.Release()
	out, err := compute.TakeArray(kernelctx.For(ctx, a.mem), images, indices)
	if err != nil {
		return nil, fmt.Errorf("assemble images: %w", err)
	}
	return out, nil
}

// nullStruct builds an all-null struct array of n rows whose children hold
// zeros and no validity bitmap: under a null struct a child's values do
// not matter, and children without bitmaps cost the IPC writer neither a
// bitmap allocation nor its bytes on the wire. Its bitmap and its
// children's values are the process's shared zero region
// (arrowpool.Zeros), read-only, which no release frees: nothing writes to
// an image, it is only sliced, gathered from and encoded.
func nullStruct(mem memory.Allocator, st *arrow.StructType, n int) arrow.Array {
	children := make([]arrow.ArrayData, st.NumFields())
	for i, f := range st.Fields() {
		children[i] = zeroData(mem, f.Type, n)
	}
	defer func() {
		for _, c := range children {
			c.Release()
		}
	}()
	validity := arrowpool.Zeros(int(bitutil.BytesForBits(int64(n))))
	data := array.NewData(st, n, []*memory.Buffer{validity}, children, n, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// zeroData returns n zero values of type dt without a validity bitmap,
// over the shared zero region, where the layout allows (nested and other
// types fall back to nulls from mem).
func zeroData(mem memory.Allocator, dt arrow.DataType, n int) arrow.ArrayData {
	zeros := arrowpool.Zeros
	switch t := dt.(type) {
	case *arrow.BooleanType:
		values := zeros(int(bitutil.BytesForBits(int64(n))))
		defer values.Release()
		return array.NewData(dt, n, []*memory.Buffer{nil, values}, nil, 0, 0)
	case arrow.FixedWidthDataType:
		values := zeros((n*t.BitWidth() + 7) / 8)
		defer values.Release()
		return array.NewData(dt, n, []*memory.Buffer{nil, values}, nil, 0, 0)
	case *arrow.StringType, *arrow.BinaryType:
		offsets := zeros((n + 1) * 4)
		defer offsets.Release()
		return array.NewData(dt, n, []*memory.Buffer{nil, offsets, nil}, nil, 0, 0)
	case *arrow.LargeStringType, *arrow.LargeBinaryType:
		offsets := zeros((n + 1) * 8)
		defer offsets.Release()
		return array.NewData(dt, n, []*memory.Buffer{nil, offsets, nil}, nil, 0, 0)
	default:
		arr := array.MakeArrayOfNull(mem, dt, n)
		defer arr.Release()
		d := arr.Data()
		d.Retain()
		return d
	}
}
