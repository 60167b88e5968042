package paimon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/parquet"

	"github.com/sluicefeed/sluice/internal/lib/kernelctx"
	"github.com/sluicefeed/sluice/internal/lib/pqread"
	"github.com/sluicefeed/sluice/lake"
)

// The system columns of a primary-key table's data files.
const (
	// SequenceNumberColumn is the record's sequence number within its
	// bucket: the later record of a key has the higher one.
	SequenceNumberColumn = "_SEQUENCE_NUMBER"
	// ValueKindColumn is the record's row kind (RowKind).
	ValueKindColumn = "_VALUE_KIND"
)

// RowKind is the kind of a primary-key table's record.
type RowKind int8

// The row kinds, as _VALUE_KIND stores them.
const (
	// RowInsert (+I) inserts a row.
	RowInsert RowKind = 0
	// RowUpdateBefore (-U) is the old image of an update.
	RowUpdateBefore RowKind = 1
	// RowUpdateAfter (+U) is the new image of an update.
	RowUpdateAfter RowKind = 2
	// RowDelete (-D) deletes a row.
	RowDelete RowKind = 3
)

// String is the row kind's short form (+I, -U, +U, -D).
func (k RowKind) String() string {
	switch k {
	case RowInsert:
		return "+I"
	case RowUpdateBefore:
		return "-U"
	case RowUpdateAfter:
		return "+U"
	case RowDelete:
		return "-D"
	}
	return fmt.Sprintf("RowKind(%d)", int8(k))
}

// ReadOptions tune ReadFile.
type ReadOptions struct {
	// SystemColumns prepends the _SEQUENCE_NUMBER (int64) and _VALUE_KIND
	// (int8) columns of a primary-key table's file to the batches.
	SystemColumns bool
	// DeletionVector, if set, drops the rows at the positions it holds.
	DeletionVector *roaring.Bitmap
	// Fields, when set, are the ids of the target's fields to read, in
	// the order of the batches' columns (nil: every field of the target).
	Fields []int
	// Output, when set, is the Arrow schema the read fields are read as
	// (one field per read field, in order; the system columns are not in
	// it): values convert to its types by pqread's widening rules. Nil:
	// the target's own Arrow types.
	Output *arrow.Schema
	// RowGroups are the row groups to read, ascending (nil: all).
	RowGroups []int
	// BatchRows bounds the rows of a batch (0: pqread's default).
	BatchRows int
	// Stats, when set, counts the file read.
	Stats lake.ReadStats
}

// OutputSchema is the Arrow schema of the batches ReadFile returns for
// target: its columns, after the system columns when asked for.
func OutputSchema(target *Schema, systemColumns bool) (*arrow.Schema, error) {
	sc, err := target.ArrowSchema()
	if err != nil {
		return nil, err
	}
	if !systemColumns {
		return sc, nil
	}
	fields := append([]arrow.Field{
		{Name: SequenceNumberColumn, Type: arrow.PrimitiveTypes.Int64},
		{Name: ValueKindColumn, Type: arrow.PrimitiveTypes.Int8},
	}, sc.Fields()...)
	return arrow.NewSchema(fields, nil), nil
}

// fileFormat is the format of a data file, by its extension.
func fileFormat(name string) string {
	ext := path.Ext(name)
	return strings.ToLower(strings.TrimPrefix(ext, "."))
}

// ReadFile reads entry e's data (or changelog) file as batches of target
// (usually the schema of the snapshot being read): columns match by field
// id through the schema the file was written with, a column the file
// lacks is null, and a type widened since is converted. It calls fn with
// each batch; fn takes the batch over and must release it. A file in a
// format other than Parquet fails with ErrUnsupportedFormat.
func (t *Table) ReadFile(ctx context.Context, target *Schema, e *ManifestEntry, opts ReadOptions, fn func(arrow.RecordBatch) error) error {
	return t.ReadFileAt(ctx, target, e, opts, func(rec arrow.RecordBatch, _ int64) error { return fn(rec) })
}

// ReadFileAt is ReadFile handing fn, with each batch, the file position of
// its first row (before any deletion vector dropped rows).
func (t *Table) ReadFileAt(ctx context.Context, target *Schema, e *ManifestEntry, opts ReadOptions, fn func(rec arrow.RecordBatch, first int64) error) error {
	if f := fileFormat(e.File.FileName); f != "parquet" {
		return fmt.Errorf("%w: table %q: data file %s is %s (only Parquet is read)", ErrUnsupportedFormat, t.name, e.File.FileName, strings.ToUpper(f))
	}
	name, err := t.FilePath(target, e)
	if err != nil {
		return err
	}
	fileSchema, err := t.Schema(ctx, e.File.SchemaID)
	if err != nil {
		return err
	}
	fields := target.Fields
	if opts.Fields != nil {
		fields = make([]Field, len(opts.Fields))
		for i, id := range opts.Fields {
			f, ok := target.Field(id)
			if !ok {
				return fmt.Errorf("table %q: schema %d has no field %d", t.name, target.ID, id)
			}
			fields[i] = f
		}
	}
	out := opts.Output
	if out == nil {
		if out, err = (&Schema{Fields: fields}).ArrowSchema(); err != nil {
			return fmt.Errorf("table %q: %w", t.name, err)
		}
	}
	if out.NumFields() != len(fields) {
		return fmt.Errorf("table %q: %d output columns for %d fields", t.name, out.NumFields(), len(fields))
	}
	if opts.SystemColumns {
		out = arrow.NewSchema(append([]arrow.Field{
			{Name: SequenceNumberColumn, Type: arrow.PrimitiveTypes.Int64},
			{Name: ValueKindColumn, Type: arrow.PrimitiveTypes.Int8},
		}, out.Fields()...), nil)
	}
	var cols []pqread.Column
	if opts.SystemColumns {
		cols = append(cols, pqread.Column{Name: SequenceNumberColumn}, pqread.Column{Name: ValueKindColumn})
	}
	for _, f := range fields {
		if ff, ok := fileSchema.Field(f.ID); ok {
			cols = append(cols, pqread.Column{Name: ff.Name})
		} else {
			cols = append(cols, pqread.Column{})
		}
	}
	src, closeFn, err := t.openData(name)
	if err != nil {
		return err
	}
	defer closeFn()
	meta, err := pqread.Footer(src)
	if err != nil {
		return fmt.Errorf("%w: table %q: data file %s: %w", ErrCorrupt, t.name, name, err)
	}
	dv := opts.DeletionVector
	var rows int64
	err = pqread.Read(ctx, src, out, cols, pqread.Options{Allocator: t.mem, Path: name, Meta: meta,
		RowGroups: opts.RowGroups, BatchRows: opts.BatchRows}, func(rec arrow.RecordBatch, first int64) error {
		rows += rec.NumRows()
		if dv != nil && !dv.IsEmpty() {
			kept, err := t.applyDV(ctx, rec, first, dv)
			rec.Release()
			if err != nil {
				return err
			}
			rec = kept
		}
		return fn(rec, first)
	})
	if err != nil {
		if errors.Is(err, pqread.ErrCorrupt) || errors.Is(err, pqread.ErrCast) {
			return fmt.Errorf("%w: table %q: %w", ErrCorrupt, t.name, err)
		}
		return fmt.Errorf("table %q: %w", t.name, err)
	}
	if opts.Stats != nil {
		groups := int64(len(meta.RowGroups))
		if opts.RowGroups != nil {
			groups = int64(len(opts.RowGroups))
		}
		opts.Stats.FileRead(rows, groups)
	}
	return nil
}

// openData opens a data file for the Parquet reader, reading it whole
// when the file system's files cannot seek.
func (t *Table) openData(name string) (parquet.ReaderAtSeeker, func(), error) {
	f, err := t.fsys.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%w: table %q: data file %s is missing (expired?)", ErrSnapshotExpired, t.name, name)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("table %q: %s: %w", t.name, name, err)
	}
	if r, ok := f.(parquet.ReaderAtSeeker); ok {
		return r, func() { _ = f.Close() }, nil
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, nil, fmt.Errorf("table %q: %s: %w", t.name, name, err)
	}
	return bytes.NewReader(data), func() {}, nil
}

// applyDV drops the rows of rec (whose first row is at file position
// first) that dv deletes.
func (t *Table) applyDV(ctx context.Context, rec arrow.RecordBatch, first int64, dv *roaring.Bitmap) (arrow.RecordBatch, error) {
	n := rec.NumRows()
	b := array.NewBooleanBuilder(t.mem)
	defer b.Release()
	b.Reserve(int(n))
	for i := range n {
		b.UnsafeAppend(!dv.Contains(uint32(first + i)))
	}
	mask := b.NewBooleanArray()
	defer mask.Release()
	return compute.FilterRecordBatch(kernelctx.For(ctx, t.mem), rec, mask, compute.DefaultFilterOptions())
}
