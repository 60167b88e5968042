package pqread

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"golang.org/x/sync/errgroup"

	"github.com/sluicefeed/sluice/internal/lib/kernelctx"
)

// Errors of Read and Footer. They are wrapped with the file (Options.Path)
// and the column, so test them with errors.Is.
var (
	// ErrCorrupt is a file that cannot be decoded: its footer or its pages
	// are not valid Parquet, it is shorter than its footer says, or the
	// decoder failed on it (a panic in the decoder is turned into this
	// error, with the panic's value). Reading it again will not help.
	ErrCorrupt = errors.New("pqread: corrupt parquet file")
	// ErrCast is a column whose type in the file has no conversion to its
	// target type, or a value the conversion would change (a timestamp
	// with a sub-microsecond part read as microseconds, bytes that are not
	// UTF-8 read as a string).
	ErrCast = errors.New("pqread: cannot convert column")
	// ErrInvalid is a request that does not make sense: columns that do
	// not fit the target schema, row groups the file does not have.
	ErrInvalid = errors.New("pqread: invalid read")
)

// Column says where a target top-level column's values come from. At most
// one of FieldID, Name and Constant is set; none set means the file has no
// such column (one added after the file was written): it is null on every
// row.
type Column struct {
	// FieldID is the Parquet field_id of the column (Iceberg, Delta column
	// mapping in id mode). A file without that id leaves the column null.
	FieldID *int
	// Name is the column's name in the file: Delta's physical name, or the
	// logical name without column mapping. A name that matches no column
	// exactly matches one that differs in case, if only one does (as Spark
	// resolves columns).
	Name string
	// Constant is a value repeated on every row (Delta partition values),
	// cast to the target type by the same rules as the file's values. A
	// null scalar makes a null column.
	Constant scalar.Scalar
	// Children, for a nested column, says how its parts map: for a struct
	// one Column per target field (by the same rules, recursively: a struct
	// field the file lacks is null); for a list one Column for the element
	// and for a map two for the key and the value, of which only the
	// Children are used (to match the fields of a struct element). Nil
	// matches struct fields by name.
	Children []Column
}

// Options tune Read. The zero value reads the whole file with Go's
// allocator.
type Options struct {
	// Allocator allocates the batches (default memory.DefaultAllocator).
	Allocator memory.Allocator
	// BatchRows is the most rows a batch holds (default 16Ki). A batch
	// holds fewer at the end of the file and before a row group that is
	// not read.
	BatchRows int
	// RowGroups are the row groups to read, ascending without repeats; nil
	// reads every row group, an empty slice none.
	RowGroups []int
	// Meta is the file's footer, read before by Footer: Read then does
	// not read it again.
	Meta *Meta
	// Path names the file in errors.
	Path string
	// Parallelism is how many goroutines decode a batch's columns at once
	// (default 1). The Iceberg and Delta readers pass GOMAXPROCS: the
	// engine reads several files ahead but holds only two batches of each,
	// so the file the consumer takes is the one decoding, and it needs the
	// cores.
	Parallelism int
	// BufferSize, when positive, streams each column chunk through a
	// buffer of that many bytes. By default Read reads each column chunk of
	// a row group whole, with one read, before decoding it: fewer reads,
	// and more memory for large row groups.
	BufferSize int64
}

// DefaultBatchRows is the default of Options.BatchRows.
const DefaultBatchRows = 16 << 10

// Meta is what a file's footer tells about its rows.
type Meta struct {
	// Rows is the number of rows in the file.
	Rows int64
	// RowGroups are the file's row groups, in order.
	RowGroups []RowGroup
	// File is the parsed footer: schema, key-value metadata, and the
	// statistics of each column chunk (File.RowGroup(i).ColumnChunk(j)).
	File *metadata.FileMetaData

	size int64 // the file's size in bytes
}

// RowGroup is one row group of a file.
type RowGroup struct {
	// First is the file position (row index in the whole file) of its
	// first row.
	First int64
	// Rows is its number of rows.
	Rows int64
	// Offset and Size are the byte range of its column chunks.
	Offset, Size int64
}

// Footer reads a Parquet file's footer.
func Footer(f parquet.ReaderAtSeeker) (m *Meta, err error) {
	return readFooter(&source{r: f}, "")
}

// readFooter reads the footer of src, turning a panic of the decoder into
// ErrCorrupt.
func readFooter(src *source, path string) (m *Meta, err error) {
	defer recoverTo(&err, path, "")
	size, err := src.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, classify(err, path, "")
	}
	pf, err := file.NewParquetReader(src)
	if err != nil {
		return nil, classify(err, path, "")
	}
	fm := pf.MetaData()
	m = &Meta{File: fm, size: size}
	pos := int64(0)
	for i := range fm.NumRowGroups() {
		rgm := fm.RowGroup(i)
		rows := rgm.NumRows()
		if rows < 0 {
			return nil, fmt.Errorf("%w: %s: row group %d has %d rows", ErrCorrupt, path, i, rows)
		}
		off, sz := byteRange(rgm)
		m.RowGroups = append(m.RowGroups, RowGroup{First: pos, Rows: rows, Offset: off, Size: sz})
		pos += rows
	}
	m.Rows = pos
	return m, nil
}

// byteRange is where a row group's column chunks lie in the file.
func byteRange(rgm *metadata.RowGroupMetaData) (off, size int64) {
	off, end := int64(-1), int64(0)
	for i := range rgm.NumColumns() {
		cc, err := rgm.ColumnChunk(i)
		if err != nil {
			continue
		}
		start, n := chunkRange(cc)
		if off < 0 || start < off {
			off = start
		}
		end = max(end, start+n)
	}
	if off < 0 {
		return rgm.FileOffset(), rgm.TotalCompressedSize()
	}
	return off, end - off
}

// chunkRange is where a column chunk's pages lie, as the decoder reads
// them.
func chunkRange(cc *metadata.ColumnChunkMetaData) (start, n int64) {
	start = cc.DataPageOffset()
	if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && start > cc.DictionaryPageOffset() {
		start = cc.DictionaryPageOffset()
	}
	return start, cc.TotalCompressedSize()
}

// LeafIndex is the Parquet leaf column index of the top-level primitive
// column c matches (by field id or name), for its statistics in
// m.File.RowGroup(i).ColumnChunk(index); false if c matches none, or a
// nested column.
func (m *Meta) LeafIndex(c Column) (int, bool) {
	root := m.File.Schema.Root()
	found := -1
	for i := range root.NumFields() {
		n := root.Field(i)
		switch {
		case c.FieldID != nil && int(n.FieldID()) == *c.FieldID,
			c.FieldID == nil && c.Name != "" && n.Name() == c.Name:
		default:
			continue
		}
		if found >= 0 {
			return 0, false
		}
		found = i
	}
	if found < 0 {
		return 0, false
	}
	n := root.Field(found)
	if n.Type() != schema.Primitive {
		return 0, false
	}
	idx := m.File.Schema.ColumnIndexByNode(n)
	return idx, idx >= 0
}

// Read decodes the Parquet file f into record batches of the schema target,
// field i holding the values columns[i] says, cast to the field's type
// when the file's type differs (see Column). It calls fn with each batch
// and the file position (row index in the whole file) of its first row;
// fn takes the batch over and must release it, also when it returns an
// error, which ends the read with that error.
//
// Read decodes only the leaf columns the target needs, in the calling
// goroutine unless Options.Parallelism says otherwise. A panic of the
// decoder on a corrupt file becomes ErrCorrupt; ctx is checked before each
// batch.
func Read(ctx context.Context, f parquet.ReaderAtSeeker, target *arrow.Schema, columns []Column, opts Options, fn func(rec arrow.RecordBatch, first int64) error) error {
	r := &reader{path: opts.Path, target: target, mem: opts.Allocator, batchRows: opts.BatchRows, par: opts.Parallelism}
	if r.mem == nil {
		r.mem = memory.DefaultAllocator
	}
	if r.batchRows <= 0 {
		r.batchRows = DefaultBatchRows
	}
	r.cc = &convCtx{mem: r.mem, ctx: kernelctx.For(ctx, r.mem)}
	defer r.release()
	if err := r.open(ctx, &source{r: f}, columns, opts); err != nil {
		return err
	}
	for _, run := range r.runs {
		for pos, end := run.first, run.first+run.rows; pos < end; {
			if err := ctx.Err(); err != nil {
				return err
			}
			n := int(min(int64(r.batchRows), end-pos))
			rec, err := r.batch(n)
			if err != nil {
				return err
			}
			if err := fn(rec, pos); err != nil {
				return err
			}
			pos += int64(n)
		}
	}
	return nil
}

// reader is the state of one Read.
type reader struct {
	path      string
	target    *arrow.Schema
	mem       memory.Allocator
	batchRows int
	par       int
	cc        *convCtx

	proj  *projection
	runs  []run
	cols  []*pqarrow.ColumnReader // the decoded top-level fields
	names []string                // their names in the file, for errors
	colOf []int                   // per target field: its index in cols (fromFile)
	fixed []arrow.Array           // per target field: its array of constants or nulls, sliced per batch
}

// run is consecutive row groups read: their rows are consecutive in the
// file, so a batch may span them.
type run struct{ first, rows int64 }

// open reads the footer (unless given), plans the projection, checks the
// byte ranges it will read, and sets up the column readers.
func (r *reader) open(ctx context.Context, src *source, columns []Column, opts Options) (err error) {
	meta := opts.Meta
	if meta == nil {
		if meta, err = readFooter(src, r.path); err != nil {
			return err
		}
	}
	if meta.size == 0 {
		if meta.size, err = src.Seek(0, io.SeekEnd); err != nil {
			return classify(err, r.path, "")
		}
	}
	rgs, err := r.plan(meta, opts.RowGroups)
	if err != nil {
		return err
	}
	defer recoverTo(&err, r.path, "")
	props := parquet.NewReaderProperties(r.mem)
	if opts.BufferSize > 0 {
		props.BufferedStreamEnabled = true
		props.BufferSize = opts.BufferSize
	}
	pf, err := file.NewParquetReader(src, file.WithReadProps(props), file.WithMetadata(meta.File))
	if err != nil {
		return classify(err, r.path, "")
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(r.batchRows), PreAllocBinaryData: true}, r.mem)
	if err != nil {
		return classify(err, r.path, "")
	}
	if r.proj, err = project(fr.Manifest, r.target, columns); err != nil {
		return err
	}
	leaves := make([]int, 0, len(r.proj.leaves))
	for i := range meta.File.Schema.NumColumns() {
		if r.proj.leaves[i] {
			leaves = append(leaves, i)
		}
	}
	if err := checkRanges(meta, rgs, leaves, r.path); err != nil {
		return err
	}
	if err := r.makeFixed(); err != nil {
		return err
	}
	if len(leaves) == 0 || len(rgs) == 0 {
		return nil
	}
	fields, err := fr.Manifest.GetFieldIndices(leaves)
	if err != nil {
		return classify(err, r.path, "")
	}
	cols, _, err := fr.GetFieldReaders(ctx, leaves, rgs)
	if err != nil {
		return classify(err, r.path, "")
	}
	r.cols = cols
	r.colOf = make([]int, len(r.proj.nodes))
	for i, fi := range fields {
		r.names = append(r.names, fr.Manifest.Fields[fi].Field.Name)
		for j, n := range r.proj.nodes {
			if n.from == fromFile && n.field == fi {
				r.colOf[j] = i
			}
		}
	}
	return nil
}

// plan checks the row groups asked for and groups them into runs.
func (r *reader) plan(meta *Meta, want []int) ([]int, error) {
	if want == nil {
		want = make([]int, len(meta.RowGroups))
		for i := range want {
			want[i] = i
		}
	}
	for i, rg := range want {
		if rg < 0 || rg >= len(meta.RowGroups) || (i > 0 && rg <= want[i-1]) {
			return nil, fmt.Errorf("%w: %s: row groups %v of %d: not ascending in range", ErrInvalid, r.path, want, len(meta.RowGroups))
		}
		g := meta.RowGroups[rg]
		if g.Rows == 0 {
			continue
		}
		if i > 0 && rg == want[i-1]+1 && len(r.runs) > 0 {
			r.runs[len(r.runs)-1].rows += g.Rows
			continue
		}
		r.runs = append(r.runs, run{first: g.First, rows: g.Rows})
	}
	return want, nil
}

// checkRanges checks that the column chunks to read lie within the file,
// so that the decoder neither allocates from a nonsense size nor reads
// past the end (which, where pqarrow reads a struct's children in
// goroutines of its own, no recover of ours could catch), and that each
// is compressed with a codec the decoder has (arrow-go's page reader
// allocates its buffers before it looks the codec up, and drops them
// unreleased when it finds none).
func checkRanges(meta *Meta, rgs, leaves []int, path string) error {
	for _, rg := range rgs {
		rgm := meta.File.RowGroup(rg)
		if rgm.NumColumns() != meta.File.Schema.NumColumns() {
			return fmt.Errorf("%w: %s: row group %d has %d column chunks for %d columns", ErrCorrupt, path, rg, rgm.NumColumns(), meta.File.Schema.NumColumns())
		}
		for _, leaf := range leaves {
			cc, err := rgm.ColumnChunk(leaf)
			if err != nil {
				return fmt.Errorf("%w: %s: row group %d: column %d: %w", ErrCorrupt, path, rg, leaf, err)
			}
			start, n := chunkRange(cc)
			if start < 0 || n < 0 || start > meta.size || n > meta.size-start {
				return fmt.Errorf("%w: %s: row group %d: column %s: bytes %d+%d outside a file of %d",
					ErrCorrupt, path, rg, meta.File.Schema.Column(leaf).Path(), start, n, meta.size)
			}
			if _, err := compress.GetCodec(cc.Compression()); err != nil {
				return fmt.Errorf("%w: %s: row group %d: column %s: %w", ErrCorrupt, path, rg,
					meta.File.Schema.Column(leaf).Path(), err)
			}
		}
	}
	return nil
}

// makeFixed builds, once, the arrays of the target fields that are
// constants or nulls, as long as the longest batch; each batch takes a
// slice.
func (r *reader) makeFixed() error {
	longest := 0
	for _, run := range r.runs {
		longest = max(longest, int(min(run.rows, int64(r.batchRows))))
	}
	r.fixed = make([]arrow.Array, len(r.proj.nodes))
	for i, n := range r.proj.nodes {
		if n.from == fromFile {
			continue
		}
		a, err := n.build(r.cc, nil, longest)
		if err != nil {
			return err
		}
		r.fixed[i] = a
	}
	return nil
}

// batch decodes the next n rows into a batch of the target schema.
func (r *reader) batch(n int) (arrow.RecordBatch, error) {
	arrs, err := r.decode(n)
	if err != nil {
		return nil, err
	}
	defer releaseAll(arrs)
	cols := make([]arrow.Array, len(r.proj.nodes))
	defer releaseAll(cols)
	for i, nd := range r.proj.nodes {
		if nd.from != fromFile {
			cols[i] = array.NewSlice(r.fixed[i], 0, int64(n))
			continue
		}
		if err := guard(r.path, nd.path, func() (err error) {
			cols[i], err = nd.conv(r.cc, arrs[r.colOf[i]])
			return err
		}); err != nil {
			return nil, err
		}
	}
	return array.NewRecordBatch(r.target, cols, int64(n)), nil
}

// decode reads the next n rows of each decoded field.
func (r *reader) decode(n int) ([]arrow.Array, error) {
	arrs := make([]arrow.Array, len(r.cols))
	one := func(i int) error {
		return guard(r.path, r.names[i], func() error {
			ch, err := r.cols[i].NextBatch(int64(n))
			if err != nil {
				return classify(err, r.path, r.names[i])
			}
			defer ch.Release()
			a, err := single(ch, r.mem)
			if err != nil {
				return classify(err, r.path, r.names[i])
			}
			if a.Len() != n {
				a.Release()
				return fmt.Errorf("%w: %s: decoded %d rows where the footer has %d", ErrCorrupt, where(r.path, r.names[i]), a.Len(), n)
			}
			if a, err = validate(a); err != nil {
				return fmt.Errorf("%w: %s: %w", ErrCorrupt, where(r.path, r.names[i]), err)
			}
			arrs[i] = a
			return nil
		})
	}
	var err error
	if r.par <= 1 || len(r.cols) < 2 {
		for i := range r.cols {
			if err = one(i); err != nil {
				break
			}
		}
	} else {
		var g errgroup.Group
		g.SetLimit(r.par)
		for i := range r.cols {
			g.Go(func() error { return one(i) })
		}
		err = g.Wait()
	}
	if err != nil {
		releaseAll(arrs)
		return nil, err
	}
	return arrs, nil
}

// release releases the column readers and the fixed arrays.
func (r *reader) release() {
	for _, c := range r.cols {
		// A reader that panicked may panic again on release.
		func() {
			defer func() { _ = recover() }()
			c.Release()
		}()
	}
	releaseAll(r.fixed)
}

func releaseAll(arrs []arrow.Array) {
	for i, a := range arrs {
		if a != nil {
			a.Release()
			arrs[i] = nil
		}
	}
}
