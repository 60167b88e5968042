package paimon

import (
	"context"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/sluicefeed/sluice/internal/lib/pqread"
	"github.com/sluicefeed/sluice/lake"
)

// reader is what one engine read of a Paimon table shares: the window's
// end schema, and the column sets it reads.
type reader struct {
	src  *Source
	name string
	end  *Schema
	r    *lake.Read
	// full is every column of the end schema, scan the read's columns,
	// narrow the columns changes need.
	full, scan, narrow *target
}

// target is a set of top-level columns of the end schema a read decodes.
type target struct {
	// ids are the columns' field ids, in order.
	ids []int
	// schema is the Arrow schema of the batches.
	schema *arrow.Schema
}

// readerKey keys a Paimon table's reader in a read's memo.
type readerKey struct{ src *Source }

// readerFor returns the table's reader for read r, made once per read.
func (s *Source) readerFor(_ context.Context, r *lake.Read) (*reader, error) {
	return lake.Memo(r, readerKey{s}, func(ctx context.Context) (*reader, error) {
		end, ls, err := s.lakeSchema(ctx, int64(r.End.SchemaID))
		if err != nil {
			return nil, err
		}
		rd := &reader{src: s, name: r.Table, end: end, r: r}
		if rd.full, err = newTarget(ls, ls.Names()); err != nil {
			return nil, err
		}
		if rd.scan, err = newTarget(ls, r.Columns); err != nil {
			return nil, err
		}
		if rd.narrow, err = newTarget(ls, r.DiffColumns); err != nil {
			return nil, err
		}
		return rd, nil
	})
}

func newTarget(ls *lake.Schema, cols []string) (*target, error) {
	if len(cols) == 1 && cols[0] == "*" {
		cols = ls.Names()
	}
	sub, err := ls.Select(cols...)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", lake.ErrUnknownColumn, err)
	}
	t := &target{schema: sub.ToArrow()}
	for _, f := range sub.Fields {
		t.ids = append(t.ids, f.ID)
	}
	return t, nil
}

// project returns the columns of tg from rec, a batch of the full target
// (rec itself, retained, when tg is the full target).
func (rd *reader) project(rec arrow.RecordBatch, tg *target) arrow.RecordBatch {
	if tg == rd.full || len(tg.ids) == len(rd.full.ids) {
		rec.Retain()
		return rec
	}
	cols := make([]arrow.Array, len(tg.ids))
	for i, id := range tg.ids {
		for j, fid := range rd.full.ids {
			if fid == id {
				cols[i] = rec.Column(j)
			}
		}
	}
	return array.NewRecordBatch(tg.schema, cols, rec.NumRows())
}

// deletionVector reads a data file's deletion vector (an empty bitmap for
// none), once per read. The bitmap is shared: callers must not modify it.
func (rd *reader) deletionVector(ctx context.Context, commit int64, path string, d *DeletionFile) (*roaring.Bitmap, error) {
	if d == nil {
		return roaring.New(), nil
	}
	type dvMemo struct {
		src *Source
		d   DeletionFile
	}
	return lake.Memo(rd.r, dvMemo{rd.src, *d}, func(ctx context.Context) (*roaring.Bitmap, error) {
		bm, err := rd.src.tbl.ReadDeletionVector(ctx, d.IndexFile, d.Vector)
		if err != nil {
			return nil, rd.fileError(commit, "the deletion vector of data file "+path, err)
		}
		return bm, nil
	})
}

// fileError classifies an error reading a file of the table.
func (rd *reader) fileError(commit int64, what string, err error) error {
	if err = lakeError(rd.name, err); err != nil {
		return lake.ReadError(rd.name, commit, what, err)
	}
	return nil
}

// readFile decodes file f in tg's columns (row groups rgs, nil: all; dv,
// if set, drops the rows it deletes) and hands each batch to fn with the
// file position of its first row.
func (rd *reader) readFile(ctx context.Context, commit int64, f liveFile, tg *target, rgs []int, dv *roaring.Bitmap,
	fn func(rec arrow.RecordBatch, first int64) error) error {
	err := rd.src.tbl.ReadFileAt(ctx, rd.end, &f.entry, ReadOptions{Fields: tg.ids, Output: tg.schema, RowGroups: rgs,
		DeletionVector: dv, BatchRows: min(rd.r.BatchRows, pqread.DefaultBatchRows), Stats: rd.r.Stats}, fn)
	return rd.fileError(commit, "data file "+f.path, err)
}

// liveFile is a data file of a plan, with its deletion vector.
type liveFile struct {
	entry ManifestEntry
	dv    *DeletionFile
	// path is the file's path under the table's folder.
	path string
}

// fileSet are data files of an append table whose every row not deleted
// by its deletion vector a read streams.
type fileSet struct {
	src   *Source
	files []liveFile
}

func (fs *fileSet) Len() int          { return len(fs.files) }
func (fs *fileSet) Path(i int) string { return fs.files[i].path }

func (fs *fileSet) Slice(lo, hi int) lake.LiveFiles {
	return &fileSet{src: fs.src, files: fs.files[lo:hi]}
}

func (fs *fileSet) Size() (files, bytes, records int64) {
	for _, f := range fs.files {
		files++
		bytes += f.entry.File.FileSize
		records += f.entry.File.RowCount
	}
	return files, bytes, records
}

func (fs *fileSet) Read(ctx context.Context, r *lake.Read, commit int64, i int, fn func(arrow.RecordBatch) error) error {
	rd, err := fs.src.readerFor(ctx, r)
	if err != nil {
		return err
	}
	f := fs.files[i]
	dv, err := rd.deletionVector(ctx, commit, f.path, f.dv)
	if err != nil {
		return err
	}
	return rd.readFile(ctx, commit, f, rd.scan, nil, dv, func(rec arrow.RecordBatch, _ int64) error {
		if rec.NumRows() == 0 {
			rec.Release()
			return nil
		}
		return fn(rec)
	})
}

// splitFiles is one bucket of a primary-key table's state.
type splitFiles struct {
	split *Split
	// path is the bucket's folder under the table's folder.
	path string
}

// splitSet is the buckets of a primary-key table's state: a read streams
// each bucket's merged rows.
type splitSet struct {
	src    *Source
	splits []splitFiles
}

func (ss *splitSet) Len() int          { return len(ss.splits) }
func (ss *splitSet) Path(i int) string { return ss.splits[i].path }

func (ss *splitSet) Slice(lo, hi int) lake.LiveFiles {
	return &splitSet{src: ss.src, splits: ss.splits[lo:hi]}
}

func (ss *splitSet) Size() (files, bytes, records int64) {
	for _, s := range ss.splits {
		for i := range s.split.Files {
			files++
			bytes += s.split.Files[i].File.FileSize
			records += s.split.Files[i].File.RowCount
		}
	}
	return files, bytes, records
}

func (ss *splitSet) Read(ctx context.Context, r *lake.Read, commit int64, i int, fn func(arrow.RecordBatch) error) error {
	rd, err := ss.src.readerFor(ctx, r)
	if err != nil {
		return err
	}
	return rd.mergeBucket(ctx, commit, ss.splits[i].path, ss.splits[i].split, func(rec arrow.RecordBatch) error {
		defer rec.Release()
		return fn(rd.project(rec, rd.scan))
	})
}

// mergeBucket reads the merged rows of a primary-key table's bucket in
// every column of the end schema; fn takes each batch over.
func (rd *reader) mergeBucket(ctx context.Context, commit int64, path string, sp *Split, fn func(arrow.RecordBatch) error) error {
	err := rd.src.tbl.readSplit(ctx, rd.end, rd.full.schema, sp, min(rd.r.BatchRows, pqread.DefaultBatchRows), fn)
	return rd.fileError(commit, "the files of bucket "+path, err)
}

// fileDiff is a data file of an append table whose live rows a snapshot
// changed: removed, added, or with another deletion vector.
type fileDiff struct {
	src               *Source
	file              liveFile
	inBefore, inAfter bool
	dvBefore, dvAfter *DeletionFile
}

func (d *fileDiff) Path() string     { return d.file.path }
func (d *fileDiff) KeyFields() []int { return nil }

func (d *fileDiff) Masks(ctx context.Context, r *lake.Read) (before, after *lake.Mask, err error) {
	rd, err := d.src.readerFor(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	if d.inBefore {
		bm, err := rd.deletionVector(ctx, 0, d.file.path, d.dvBefore)
		if err != nil {
			return nil, nil, err
		}
		before = &lake.Mask{Positions: bm}
	}
	if d.inAfter {
		bm, err := rd.deletionVector(ctx, 0, d.file.path, d.dvAfter)
		if err != nil {
			return nil, nil, err
		}
		after = &lake.Mask{Positions: bm}
	}
	return before, after, nil
}

func (d *fileDiff) Candidates(ctx context.Context, r *lake.Read, before, after *lake.Mask) ([]int, int, error) {
	rd, err := d.src.readerFor(ctx, r)
	if err != nil {
		return nil, 0, err
	}
	m, err := rd.src.tbl.fileMeta(rd.end, &d.file.entry)
	if err != nil {
		return nil, 0, rd.fileError(0, "data file "+d.file.path, err)
	}
	first, rows := make([]int64, len(m.RowGroups)), make([]int64, len(m.RowGroups))
	for i, rg := range m.RowGroups {
		first[i], rows[i] = rg.First, rg.Rows
	}
	return lake.ChangedRowGroups(first, rows, before.Positions, after.Positions), len(rows), nil
}

func (d *fileDiff) Batches(ctx context.Context, r *lake.Read, commit int64, rgs []int, whole bool,
	fn func(rec arrow.RecordBatch, first int) error) error {
	rd, err := d.src.readerFor(ctx, r)
	if err != nil {
		return err
	}
	tg := rd.narrow
	if whole {
		tg = rd.full
	}
	return rd.readFile(ctx, commit, d.file, tg, rgs, nil, func(rec arrow.RecordBatch, first int64) error {
		return fn(rec, int(first))
	})
}

// fileMeta reads the footer of entry e's data file.
func (t *Table) fileMeta(s *Schema, e *ManifestEntry) (*pqread.Meta, error) {
	name, err := t.FilePath(s, e)
	if err != nil {
		return nil, err
	}
	src, closeFn, err := t.openData(name)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	m, err := pqread.Footer(src)
	if err != nil {
		return nil, fmt.Errorf("%w: table %q: data file %s: %w", ErrCorrupt, t.name, name, err)
	}
	return m, nil
}
