package delta

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"

	"github.com/sluicefeed/sluice/internal/lib/pqread"
	"github.com/sluicefeed/sluice/lake"
)

// changeTypeColumn is the column of Delta change data files that says what
// each row is.
const changeTypeColumn = "_change_type"

// deltaFiles reads the data files of a Delta plan with the engine's own
// Parquet reader: columns by physical name or field id (column mapping),
// partition values as constants, deletion vectors applied by the engine.
type deltaFiles struct {
	src       *deltaGen
	name      string
	mem       memory.Allocator
	end       *lake.Schema
	schema    *deltaSchema
	stats     lake.ReadStats
	batchRows int
	// scan holds the read's scan columns, full every column of the end
	// schema, narrow the columns the changes need.
	scan, full, narrow *deltaTarget
	// lineage is set when the read asks for row lineage of a table with
	// row tracking at its end (see rowlineage.go).
	lineage bool

	// mu guards dvs, metas and cdc.
	mu    sync.Mutex
	dvs   map[string]*roaring.Bitmap
	metas map[string]*pqread.Meta
	cdc   map[*cdcCommit]*cdcCounts
}

// deltaTarget is a set of columns a read decodes: the Arrow schema of its
// batches, and where each column comes from (before partition values).
type deltaTarget struct {
	schema  *arrow.Schema
	columns []pqread.Column
	// partition has, for each partition column of the target, its
	// physical name and Delta type; nil elsewhere.
	partition []*StructField
}

// deltaFilesKey keys a Delta table's file readers in a read's memo.
type deltaFilesKey struct{ g *deltaGen }

// files returns the table's file readers for read r, made once per read
// (under the read's context).
func (g *deltaGen) files(r *lake.Read) (*deltaFiles, error) {
	return lake.Memo(r, deltaFilesKey{g}, func(ctx context.Context) (*deltaFiles, error) {
		return newDeltaFiles(ctx, g, r)
	})
}

func newDeltaFiles(ctx context.Context, src *deltaGen, r *lake.Read) (*deltaFiles, error) {
	sc, err := src.schema(ctx, r.End.ID)
	if err != nil {
		return nil, err
	}
	f := &deltaFiles{src: src, name: r.Table, mem: r.Allocator, end: sc.logical, schema: sc, stats: r.Stats,
		batchRows: min(r.BatchRows, pqread.DefaultBatchRows), dvs: map[string]*roaring.Bitmap{},
		metas: map[string]*pqread.Meta{}, cdc: map[*cdcCommit]*cdcCounts{}, lineage: r.Lineage && sc.rows.enabled}
	all := sc.logical.Names()
	if f.full, err = f.target(all); err != nil {
		return nil, err
	}
	if f.scan, err = f.target(r.Columns); err != nil {
		return nil, err
	}
	if f.narrow, err = f.target(r.DiffColumns); err != nil {
		return nil, err
	}
	return f, nil
}

// target prepares the read of the given top-level columns of the end
// schema.
func (f *deltaFiles) target(cols []string) (*deltaTarget, error) {
	if len(cols) == 1 && cols[0] == "*" {
		cols = f.end.Names()
	}
	sub, err := f.end.Select(cols...)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", lake.ErrUnknownColumn, err)
	}
	sch := sub.ToArrow()
	t := &deltaTarget{schema: sch, columns: make([]pqread.Column, sch.NumFields()),
		partition: make([]*StructField, sch.NumFields())}
	for i, af := range sch.Fields() {
		sf, ok := f.schema.fields[af.Name]
		if !ok {
			return nil, fmt.Errorf("%w: column %q of table %s is not in its Delta schema", lake.ErrInternal, af.Name, f.name)
		}
		if f.schema.partition[af.Name] {
			t.partition[i] = &sf
			continue
		}
		t.columns[i] = columnOf(sf, af.Type, f.schema.mode)
	}
	return t, nil
}

// columnOf says where a Delta field's values are in its data files: by
// field id (column mapping mode id), physical name (mode name) or name,
// recursively for the fields of structs.
func columnOf(sf StructField, at arrow.DataType, mode ColumnMappingMode) pqread.Column {
	var c pqread.Column
	if id, ok := sf.FieldID(); ok && mode == MappingID {
		c.FieldID = &id
	} else {
		c.Name = sf.PhysicalName(mode)
	}
	c.Children = childColumns(sf.Type, at, mode)
	return c
}

// childColumns maps the nested parts of a Delta type onto an Arrow type.
func childColumns(dt DataType, at arrow.DataType, mode ColumnMappingMode) []pqread.Column {
	switch t := dt.(type) {
	case *StructType:
		st, ok := at.(*arrow.StructType)
		if !ok {
			return nil
		}
		out := make([]pqread.Column, st.NumFields())
		for i, af := range st.Fields() {
			for _, sf := range t.Fields {
				if sf.Name == af.Name {
					out[i] = columnOf(sf, af.Type, mode)
				}
			}
		}
		return out
	case *ArrayType:
		lt, ok := at.(arrow.ListLikeType)
		if !ok {
			return nil
		}
		return []pqread.Column{{Children: childColumns(t.ElementType, lt.Elem(), mode)}}
	case *MapType:
		mt, ok := at.(*arrow.MapType)
		if !ok {
			return nil
		}
		return []pqread.Column{{Children: childColumns(t.KeyType, mt.KeyType(), mode)},
			{Children: childColumns(t.ValueType, mt.ItemType(), mode)}}
	}
	return nil
}

// read decodes file's rows groups rgs (nil: all) into the target's
// columns, with the file's partition values, and hands each batch to fn.
func (f *deltaFiles) read(ctx context.Context, snapshot int64, file deltaFile, t *deltaTarget, extra []pqread.Column,
	extraFields []arrow.Field, rgs []int, fn func(rec arrow.RecordBatch, first int64) error) error {
	what := "data file " + file.path
	cols := append([]pqread.Column(nil), t.columns...)
	for i, sf := range t.partition {
		if sf == nil {
			continue
		}
		phys := sf.PhysicalName(f.schema.mode)
		v, err := PartitionValue(file.partition[phys], sf.Type)
		if err != nil {
			return fmt.Errorf("%w: snapshot %d of table %s: %s: partition column %q: %w", lake.ErrUnreadable, snapshot,
				f.name, what, sf.Name, err)
		}
		cols[i] = pqread.Column{Constant: v}
	}
	// A data file read for row lineage decodes its materialized row
	// tracking columns last (a change data file has none: its rows get
	// null lineage).
	lineage := f.lineage && file.commit == nil
	if lineage {
		lc, lf := f.lineageColumns()
		extra, extraFields = append(slices.Clone(extra), lc...), append(slices.Clone(extraFields), lf...)
	}
	target := t.schema
	if len(extra) > 0 {
		cols = append(cols, extra...)
		target = arrow.NewSchema(append(append([]arrow.Field(nil), t.schema.Fields()...), extraFields...), nil)
	}
	r, closeFile, err := f.open(file)
	if err != nil {
		return lake.ReadError(f.name, snapshot, what, err)
	}
	defer closeFile()
	meta, err := f.meta(file, r)
	if err != nil {
		return lake.ReadError(f.name, snapshot, what, err)
	}
	rows := int64(0)
	// The columns of a batch decode in parallel, as Iceberg's files do:
	// the files read ahead of the one the consumer takes hold two batches
	// each, so the file being taken is the one decoding, and it has the
	// cores (in goroutines pqread owns, and recovers). delta-rs writes one
	// row group per file, so without this a one-file commit decodes on
	// one core while the other waits.
	err = pqread.Read(ctx, r, target, cols, pqread.Options{Allocator: f.mem, BatchRows: f.batchRows,
		RowGroups: rgs, Meta: meta, Path: file.path, Parallelism: runtime.GOMAXPROCS(0)},
		func(rec arrow.RecordBatch, first int64) error {
			rows += rec.NumRows()
			var err error
			switch {
			case lineage:
				rec, err = f.withLineage(rec, first, file)
			case f.lineage:
				rec, err = lake.WithLineage(f.mem, rec, first, nil, nil, lake.FileLineage{})
			}
			if err != nil {
				return err
			}
			return fn(rec, first)
		})
	if err != nil {
		return lake.ReadError(f.name, snapshot, what, err)
	}
	groups := int64(len(meta.RowGroups))
	if rgs != nil {
		groups = int64(len(rgs))
	}
	f.stats.FileRead(rows, groups)
	return nil
}

// open opens a file of the table for reading.
func (f *deltaFiles) open(file deltaFile) (parquet.ReaderAtSeeker, func(), error) {
	p, err := f.src.log.FilePath(file.path)
	if err != nil {
		return nil, nil, err
	}
	fh, err := f.src.fsys.Open(p)
	if err != nil {
		return nil, nil, err
	}
	r, ok := fh.(parquet.ReaderAtSeeker)
	if !ok {
		_ = fh.Close()
		return nil, nil, fmt.Errorf("%w: the storage of table %s cannot read %s at random offsets", lake.ErrInternal,
			f.name, p)
	}
	return r, func() { _ = fh.Close() }, nil
}

// meta returns a file's footer, read once per plan read.
func (f *deltaFiles) meta(file deltaFile, r parquet.ReaderAtSeeker) (*pqread.Meta, error) {
	f.mu.Lock()
	m, ok := f.metas[file.path]
	f.mu.Unlock()
	if ok {
		return m, nil
	}
	m, err := pqread.Footer(r)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.metas[file.path] = m
	f.mu.Unlock()
	return m, nil
}

// dv returns the rows a deletion vector deletes (an empty bitmap for nil).
// The bitmap is shared: callers must not modify it.
func (f *deltaFiles) dv(snapshot int64, path string, dv *DeletionVector) (*roaring.Bitmap, error) {
	if dv == nil {
		return roaring.New(), nil
	}
	key := dv.StorageType + "/" + dv.PathOrInlineDv
	if dv.Offset != nil {
		key = fmt.Sprintf("%s@%d", key, *dv.Offset)
	}
	f.mu.Lock()
	bm, ok := f.dvs[key]
	f.mu.Unlock()
	if ok {
		return bm, nil
	}
	bm, err := ReadDeletionVector(f.src.fsys, dv)
	if err != nil {
		return nil, lake.ReadError(f.name, snapshot, "the deletion vector of data file "+path, err)
	}
	f.mu.Lock()
	f.dvs[key] = bm
	f.mu.Unlock()
	return bm, nil
}

func (ls deltaLive) Read(ctx context.Context, r *lake.Read, commit int64, i int,
	fn func(arrow.RecordBatch) error) error {
	f, err := ls.src.files(r)
	if err != nil {
		return err
	}
	return f.liveFile(ctx, commit, ls.files[i], fn)
}

// liveFile reads the rows of file its deletion vector keeps and hands
// each batch to send, which takes it over.
func (f *deltaFiles) liveFile(ctx context.Context, snapshot int64, file deltaFile,
	send func(rec arrow.RecordBatch) error) error {
	deleted, err := f.dv(snapshot, file.path, file.dv)
	if err != nil {
		return err
	}
	return f.read(ctx, snapshot, file, f.scan, nil, nil, nil, func(rec arrow.RecordBatch, first int64) error {
		if !deleted.IsEmpty() {
			kept, err := lake.SelectRows(ctx, f.mem, rec, func(r int) bool {
				return !deleted.Contains(uint32(first + int64(r)))
			})
			rec.Release()
			if err != nil || kept == nil {
				return err
			}
			rec = kept
		}
		return send(rec)
	})
}

func (d *deltaDiff) Path() string     { return d.file.path }
func (d *deltaDiff) KeyFields() []int { return nil }

func (d *deltaDiff) Masks(ctx context.Context, r *lake.Read) (before, after *lake.Mask, err error) {
	f, err := d.src.files(r)
	if err != nil {
		return nil, nil, err
	}
	if d.inBefore {
		bm, err := f.dv(0, d.file.path, d.dvBefore)
		if err != nil {
			return nil, nil, err
		}
		before = &lake.Mask{Positions: bm}
	}
	if d.inAfter {
		bm, err := f.dv(0, d.file.path, d.dvAfter)
		if err != nil {
			return nil, nil, err
		}
		after = &lake.Mask{Positions: bm}
	}
	return before, after, nil
}

func (d *deltaDiff) Candidates(ctx context.Context, r *lake.Read, before, after *lake.Mask) ([]int, int, error) {
	f, err := d.src.files(r)
	if err != nil {
		return nil, 0, err
	}
	fh, closeFile, err := f.open(d.file)
	if err != nil {
		return nil, 0, err
	}
	defer closeFile()
	m, err := f.meta(d.file, fh)
	if err != nil {
		return nil, 0, err
	}
	first, rows := make([]int64, len(m.RowGroups)), make([]int64, len(m.RowGroups))
	for i, rg := range m.RowGroups {
		first[i], rows[i] = rg.First, rg.Rows
	}
	return lake.ChangedRowGroups(first, rows, before.Positions, after.Positions), len(rows), nil
}

func (d *deltaDiff) Batches(ctx context.Context, r *lake.Read, snapshot int64, rgs []int, whole bool,
	fn func(rec arrow.RecordBatch, first int) error) error {
	f, err := d.src.files(r)
	if err != nil {
		return err
	}
	t := f.narrow
	if whole {
		t = f.full
	}
	return f.read(ctx, snapshot, d.file, t, nil, nil, rgs,
		func(rec arrow.RecordBatch, first int64) error { return fn(rec, int(first)) })
}

// changeSide maps a change data file's _change_type to the side of the
// change, and whether it is one image of an update: the standard values,
// and the update_pre/update_post some writers write.
var changeSide = map[string]struct {
	side   int
	update bool
}{
	"insert": {lake.SideInserted, false}, "update_postimage": {lake.SideInserted, true}, "update_post": {lake.SideInserted, true},
	"delete": {lake.SideDeleted, false}, "update_preimage": {lake.SideDeleted, true}, "update_pre": {lake.SideDeleted, true},
}

// pairColumn is the column added to the rows of change data files that
// pairs update images: the k-th update pre-image of a commit (its change
// data files in log order, each in row order) pairs with its k-th update
// post-image. Writers write both in the same order (Delta's Spark writer
// derives both from one pass over the updated rows, also when an update
// moves rows to another partition's file; delta-rs as two runs of the
// updated rows). Inserts and deletes have none. With identity columns,
// those pair updates instead.
const pairColumn = "__sluice_update_pair"

// cdcCounts is where each change data file of a commit starts counting its
// update pre- and post-images: the images of the files before it.
type cdcCounts struct {
	once      sync.Once
	pre, post []int64
	err       error
}

// counts returns the update image counts of the change data files of
// file's commit, reading their _change_type columns once per read.
func (f *deltaFiles) counts(ctx context.Context, snapshot int64, file deltaFile) (*cdcCounts, error) {
	f.mu.Lock()
	c, ok := f.cdc[file.commit]
	if !ok {
		c = &cdcCounts{}
		f.cdc[file.commit] = c
	}
	f.mu.Unlock()
	c.once.Do(func() {
		target := &deltaTarget{schema: arrow.NewSchema(nil, nil)}
		extra := []pqread.Column{{Name: changeTypeColumn}}
		extraFields := []arrow.Field{{Name: changeTypeColumn, Type: arrow.BinaryTypes.String, Nullable: true}}
		var pre, post int64
		for _, cf := range file.commit.files {
			c.pre, c.post = append(c.pre, pre), append(c.post, post)
			err := f.read(ctx, snapshot, cf, target, extra, extraFields, nil, func(rec arrow.RecordBatch, _ int64) error {
				defer rec.Release()
				kinds := rec.Column(0).(*array.String)
				for i := range kinds.Len() {
					if k, ok := changeSide[kinds.Value(i)]; ok && k.update {
						if k.side == lake.SideDeleted {
							pre++
						} else {
							post++
						}
					}
				}
				return nil
			})
			if err != nil {
				c.err = err
				return
			}
		}
	})
	return c, c.err
}

// deltaChange is a change data file of a commit.
type deltaChange struct {
	src  *deltaGen
	file deltaFile
}

func (c deltaChange) Path() string { return c.file.path }

func (c deltaChange) Rows(ctx context.Context, r *lake.Read, snapshot int64, whole bool,
	emit func(side int, rec arrow.RecordBatch) error) error {
	f, err := c.src.files(r)
	if err != nil {
		return err
	}
	t := f.narrow
	if whole {
		t = f.full
	}
	file := c.file
	n := t.schema.NumFields()
	counts, err := f.counts(ctx, snapshot, file)
	if err != nil {
		return err
	}
	pre, post := counts.pre[file.ordinal], counts.post[file.ordinal]
	extra := []pqread.Column{{Name: changeTypeColumn}}
	extraFields := []arrow.Field{{Name: changeTypeColumn, Type: arrow.BinaryTypes.String, Nullable: true}}
	return f.read(ctx, snapshot, file, t, extra, extraFields, nil, func(rec arrow.RecordBatch, _ int64) error {
		defer rec.Release()
		kinds, ok := rec.Column(n).(*array.String)
		if !ok {
			return fmt.Errorf("%w: snapshot %d of table %s: change data file %s: %s is not a string column",
				lake.ErrUnreadable, snapshot, f.name, file.path, changeTypeColumn)
		}
		sides := make([]int, rec.NumRows())
		pairs := array.NewInt64Builder(f.mem)
		defer pairs.Release()
		for i := range sides {
			kind, ok := changeSide[kinds.Value(i)]
			if !ok || kinds.IsNull(i) {
				return fmt.Errorf("%w: snapshot %d of table %s: change data file %s: unknown %s %q",
					lake.ErrUnreadable, snapshot, f.name, file.path, changeTypeColumn, kinds.Value(i))
			}
			sides[i] = kind.side
			switch {
			case !kind.update:
				pairs.AppendNull()
			case kind.side == lake.SideDeleted:
				pairs.Append(pre)
				pre++
			default:
				pairs.Append(post)
				post++
			}
		}
		pairArr := pairs.NewArray()
		defer pairArr.Release()
		fields := append(append([]arrow.Field(nil), t.schema.Fields()...),
			arrow.Field{Name: pairColumn, Type: arrow.PrimitiveTypes.Int64, Nullable: true})
		cols := append(append([]arrow.Array(nil), rec.Columns()[:n]...), pairArr)
		data := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
		defer data.Release()
		return lake.EmitSides(ctx, f.mem, data, func(r, side int) bool { return sides[r] == side }, emit)
	})
}
