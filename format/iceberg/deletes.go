package iceberg

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"

	"github.com/sluicefeed/sluice/internal/lib/rowkey"
	"github.com/sluicefeed/sluice/lake"
)

// Field ids of the position delete file columns (Iceberg spec).
const (
	posDeleteFilePathID = 2147483546
	posDeletePosID      = 2147483545
)

// deleteIndex reads delete files and remembers what they say for the length
// of one read: a delete file usually applies to several data files and to
// several snapshots of a window.
type deleteIndex struct {
	fs  iceio.IO
	mem memory.Allocator
	// table names the table in errors; snapshot is 0 (errors then name the
	// file, and the caller the snapshot).
	table    string
	snapshot int64
	// mu guards the maps below (files are read in parallel); a file read by
	// two readers at once is read twice, which is harmless.
	mu sync.Mutex
	// pos maps a position delete file to the positions it deletes, per data
	// file path.
	pos map[string]map[string]*roaring.Bitmap
	// eq maps an equality delete file to the keys it deletes, and eqValues
	// to the values of each of its equality fields.
	eq       map[string]map[string]struct{}
	eqValues map[string][][]any
	// dv maps a deletion vector (path and offset) to its positions.
	dv map[string]*roaring.Bitmap
}

func newDeleteIndex(fs iceio.IO, mem memory.Allocator, table string) *deleteIndex {
	return &deleteIndex{fs: fs, mem: mem, table: table, pos: map[string]map[string]*roaring.Bitmap{},
		eq: map[string]map[string]struct{}{}, eqValues: map[string][][]any{}, dv: map[string]*roaring.Bitmap{}}
}

// forTask returns what task's delete files delete in its data file (of
// rows rows).
func (x *deleteIndex) forTask(ctx context.Context, task *table.FileScanTask, rows int) (*lake.Mask, error) {
	mask, err := x.positionMask(task, task.File.FilePath(), rows, ctx)
	if err != nil {
		return nil, err
	}
	out := &lake.Mask{Positions: mask}
	for _, df := range task.EqualityDeleteFiles {
		keys, err := x.equalityDeletes(ctx, df)
		if err != nil {
			return nil, err
		}
		if len(keys) > 0 {
			out.Equality = append(out.Equality, lake.EqualityDeletes{File: df.FilePath(), Fields: df.EqualityFieldIDs(),
				Keys: keys})
		}
	}
	return out, nil
}

// positionMask returns the positions of dataPath (of rows rows) that
// task's position deletes and deletion vectors delete, as a compressed
// bitmap the caller owns.
func (x *deleteIndex) positionMask(task *table.FileScanTask, dataPath string, rows int, ctx context.Context) (*roaring.Bitmap, error) {
	mask := roaring.New()
	if rows > math.MaxUint32 {
		return nil, fmt.Errorf("%w: data file %s has %d rows, more than a deletion mask holds", lake.ErrUnsupported,
			dataPath, rows)
	}
	mark := func(positions *roaring.Bitmap, from string) error {
		if positions == nil || positions.IsEmpty() {
			return nil
		}
		if last := positions.Maximum(); int64(last) >= int64(rows) {
			return fmt.Errorf("%w: %s deletes position %d of %s, which has %d rows",
				lake.ErrUnsupported, from, last, dataPath, rows)
		}
		mask.Or(positions)
		return nil
	}
	for _, df := range task.DeleteFiles {
		positions, err := x.positionDeletes(ctx, df, dataPath)
		if err != nil {
			return nil, err
		}
		if err := mark(positions, "position delete file "+df.FilePath()); err != nil {
			return nil, err
		}
	}
	for _, df := range task.DeletionVectorFiles {
		positions, err := x.deletionVector(df)
		if err != nil {
			return nil, err
		}
		if err := mark(positions, "deletion vector "+df.FilePath()); err != nil {
			return nil, err
		}
	}
	return mask, nil
}

// positionDeletes returns the positions of dataPath that a position delete
// file deletes (nil: none). The bitmap is shared: the caller must not
// modify it.
func (x *deleteIndex) positionDeletes(ctx context.Context, df iceberg.DataFile, dataPath string) (*roaring.Bitmap, error) {
	x.mu.Lock()
	byFile, ok := x.pos[df.FilePath()]
	x.mu.Unlock()
	if ok {
		return byFile[dataPath], nil
	}
	byFile = map[string]*roaring.Bitmap{}
	err := x.readParquet(ctx, df, func(rec arrow.RecordBatch) error {
		pathIdx, posIdx := fieldIndex(rec.Schema(), posDeleteFilePathID, "file_path"),
			fieldIndex(rec.Schema(), posDeletePosID, "pos")
		if pathIdx < 0 || posIdx < 0 {
			return fmt.Errorf("%w: position delete file %s lacks file_path or pos", lake.ErrUnsupported, df.FilePath())
		}
		paths, err := stringsOf(rec.Column(pathIdx))
		if err != nil {
			return err
		}
		pos, ok := rec.Column(posIdx).(*array.Int64)
		if !ok {
			return fmt.Errorf("%w: position delete file %s has pos of type %s", lake.ErrUnsupported, df.FilePath(),
				rec.Column(posIdx).DataType())
		}
		for i := range int(rec.NumRows()) {
			p := pos.Value(i)
			if p < 0 || p > math.MaxUint32 {
				return fmt.Errorf("%w: position delete file %s deletes position %d of %s", lake.ErrUnsupported,
					df.FilePath(), p, paths(i))
			}
			bm := byFile[paths(i)]
			if bm == nil {
				bm = roaring.New()
				// The key outlives the batch, whose buffers may be reused.
				byFile[strings.Clone(paths(i))] = bm
			}
			bm.Add(uint32(p))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	x.mu.Lock()
	x.pos[df.FilePath()] = byFile
	x.mu.Unlock()
	return byFile[dataPath], nil
}

// deletionVector returns the positions a deletion vector deletes. The
// bitmap is shared: the caller must not modify it.
func (x *deleteIndex) deletionVector(df iceberg.DataFile) (*roaring.Bitmap, error) {
	key := df.FilePath()
	if off := df.ContentOffset(); off != nil {
		key += "@" + strconv.FormatInt(*off, 10)
	}
	x.mu.Lock()
	positions, ok := x.dv[key]
	x.mu.Unlock()
	if ok {
		return positions, nil
	}
	bitmap, err := dv.ReadDV(x.fs, df)
	if err != nil {
		return nil, lake.ReadError(x.table, x.snapshot, "deletion vector "+df.FilePath(), err)
	}
	positions = roaring.New()
	for p := range bitmap.Positions() {
		if p > math.MaxUint32 {
			return nil, fmt.Errorf("%w: deletion vector %s deletes position %d", lake.ErrUnsupported, df.FilePath(), p)
		}
		positions.Add(uint32(p))
	}
	positions.RunOptimize()
	x.mu.Lock()
	x.dv[key] = positions
	x.mu.Unlock()
	return positions, nil
}

// equalityDeletes returns the keys an equality delete file deletes, encoded
// by rowkey.Row over its equality fields in order.
func (x *deleteIndex) equalityDeletes(ctx context.Context, df iceberg.DataFile) (map[string]struct{}, error) {
	x.mu.Lock()
	keys, ok := x.eq[df.FilePath()]
	x.mu.Unlock()
	if ok {
		return keys, nil
	}
	ids := df.EqualityFieldIDs()
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: equality delete file %s names no equality field", lake.ErrUnsupported, df.FilePath())
	}
	keys = map[string]struct{}{}
	values := make([][]any, len(ids))
	var key []byte
	err := x.readParquet(ctx, df, func(rec arrow.RecordBatch) error {
		cols := make([]arrow.Array, len(ids))
		for i, id := range ids {
			idx := fieldIndex(rec.Schema(), id, "")
			if idx < 0 {
				return fmt.Errorf("%w: equality delete file %s lacks the column of field %d", lake.ErrUnsupported,
					df.FilePath(), id)
			}
			cols[i] = rec.Column(idx)
		}
		for r := range int(rec.NumRows()) {
			var err error
			if key, err = rowkey.Row(key[:0], cols, r); err != nil {
				return fmt.Errorf("%w: %w", lake.ErrUnsupported, err)
			}
			if _, dup := keys[string(key)]; dup {
				continue
			}
			keys[string(key)] = struct{}{}
			for i, c := range cols {
				values[i] = append(values[i], boundValue(c, r))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	x.mu.Lock()
	x.eq[df.FilePath()], x.eqValues[df.FilePath()] = keys, values
	x.mu.Unlock()
	return keys, nil
}

// equalityValues returns, per equality field of an equality delete file,
// the values it deletes (for comparison with statistics).
func (x *deleteIndex) equalityValues(ctx context.Context, df iceberg.DataFile) ([][]any, error) {
	if _, err := x.equalityDeletes(ctx, df); err != nil {
		return nil, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.eqValues[df.FilePath()], nil
}

// boundValue returns value i of arr in the domain decodeBound compares:
// int64 for integers, dates and times, float64 for floats, string for
// strings; nil for null; incomparable for another type (statistics then
// never exclude it).
func boundValue(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Int8:
		return int64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	case *array.Date32:
		return int64(a.Value(i))
	case *array.Time64:
		return int64(a.Value(i))
	case *array.Timestamp:
		return int64(a.Value(i))
	case *array.Float32:
		return float64(a.Value(i))
	case *array.Float64:
		return a.Value(i)
	case *array.Boolean:
		if a.Value(i) {
			return int64(1)
		}
		return int64(0)
	case *array.String:
		return strings.Clone(a.Value(i)) // kept past the batch, whose buffers may be reused
	case *array.LargeString:
		return strings.Clone(a.Value(i))
	default:
		return incomparable{}
	}
}

// incomparable is a value statistics cannot rule out.
type incomparable struct{}

// readParquet streams the record batches of a delete file.
func (x *deleteIndex) readParquet(ctx context.Context, df iceberg.DataFile, fn func(arrow.RecordBatch) error) error {
	if df.FileFormat() != iceberg.ParquetFile {
		return fmt.Errorf("%w: delete file %s is %s; only Parquet delete files are read", lake.ErrUnsupported,
			df.FilePath(), df.FileFormat())
	}
	f, err := x.fs.Open(df.FilePath())
	if err != nil {
		return lake.ReadError(x.table, x.snapshot, "delete file "+df.FilePath(), err)
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return lake.ReadError(x.table, x.snapshot, "delete file "+df.FilePath(), err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, x.mem)
	if err != nil {
		return lake.ReadError(x.table, x.snapshot, "delete file "+df.FilePath(), err)
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return lake.ReadError(x.table, x.snapshot, "delete file "+df.FilePath(), err)
	}
	defer rr.Release()
	for rr.Next() {
		if err := fn(rr.RecordBatch()); err != nil {
			return err
		}
	}
	if err := rr.Err(); err != nil {
		return lake.ReadError(x.table, x.snapshot, "delete file "+df.FilePath(), err)
	}
	return nil
}

// fieldIndex finds a column by its Parquet field id, else by name.
func fieldIndex(s *arrow.Schema, id int, name string) int {
	want := strconv.Itoa(id)
	for i, f := range s.Fields() {
		if v, ok := f.Metadata.GetValue("PARQUET:field_id"); ok && v == want {
			return i
		}
	}
	if name != "" {
		if idx := s.FieldIndices(name); len(idx) == 1 {
			return idx[0]
		}
	}
	return -1
}

// stringsOf returns an accessor of a string column's values.
func stringsOf(arr arrow.Array) (func(int) string, error) {
	switch a := arr.(type) {
	case *array.String:
		return a.Value, nil
	case *array.LargeString:
		return a.Value, nil
	case *array.Binary:
		return func(i int) string { return string(a.Value(i)) }, nil
	case *array.Dictionary:
		inner, err := stringsOf(a.Dictionary())
		if err != nil {
			return nil, err
		}
		return func(i int) string { return inner(a.GetValueIndex(i)) }, nil
	default:
		return nil, fmt.Errorf("%w: file_path column of type %s", lake.ErrUnsupported, arr.DataType())
	}
}
