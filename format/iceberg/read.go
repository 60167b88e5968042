package iceberg

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/internal/lib/pqread"
	"github.com/sluicefeed/sluice/lake"
)

// This file decodes Iceberg data files with the engine's own Parquet reader
// (internal/lib/pqread), in the engine's goroutines: pqread turns a panic of
// arrow-go's decoder on a corrupt file into ErrCorrupt (lake.ErrUnreadable for
// the read), and the engine's guard any other panic into lake.ErrInternal.
// (iceberg-go's scan decodes in worker goroutines of its own, where no
// recover of the engine's reaches: a corrupt file ended the process.)
//
// It finds an Iceberg table's columns in its Parquet data files the way
// iceberg-go's scan does (table/arrow_scanner.go prepareToRead and
// ToRequestedSchema, table/internal/parquet_files.go pruneParquetColumns
// and GetRecords):
//
//   - a column is the file's column with the same Iceberg field id, at every
//     level (struct fields; list elements and map keys and values by
//     position, as pqread matches them); a field id written in the file is
//     authoritative;
//   - a file column without a field id (a file of a table migrated from
//     plain Parquet, or added with add_files) takes the id that the table's
//     name mapping (schema.name-mapping.default) gives its name, and is read
//     by that name;
//   - a column the file lacks is its initial-default (Iceberg v3) on every
//     row, else null (a required column without either fails the read, as
//     iceberg-go's does);
//   - types are widened by pqread's rules (int to long, float to double, a
//     decimal's precision, date to timestamp, string and binary variants),
//     into table.SchemaToArrowSchema of the columns: the types changeSchema
//     gives the images.
//
// The row lineage columns of Iceberg v3 (_row_id,
// _last_updated_sequence_number) are metadata columns, not fields of a
// table schema, and the engine selects fields of the window's end schema
// only: they are never read (a file that holds them, as compactions of v3
// tables write, keeps them under reserved field ids no schema field has).
//
// iceberg-go keeps what it does well: planning (manifests, which delete
// files apply to which data file, the byte ranges of tasks). Its scan still
// reads a data file that is not Parquet, and one whose columns have no
// field ids when the table has no name mapping (see fileColumns).

// errUseScan marks a data file the engine leaves to iceberg-go's scan.
var errUseScan = errors.New("feed: data file left to iceberg-go's scan")

// decode reads data file df into t's columns: the row groups pick chooses
// given its footer (nil: all); keep keeps the footer for the rest of the
// plan's read (see meta). It hands fn each batch with the file
// position of its first row (fn takes the batch over; its error ends the
// read and is returned as is), and returns the number of row groups read;
// errUseScan for a file that is iceberg-go's to read (nothing read then).
// Its errors are classified (readError): a corrupt file, on which the
// decoder may panic, is lake.ErrUnreadable.
func (f *icebergFiles) decode(ctx context.Context, snapshot int64, df iceberg.DataFile, t *icebergTarget, keep bool,
	pick func(*pqread.Meta) ([]int, error), fn func(rec arrow.RecordBatch, first int64) error) (int, error) {
	if df.FileFormat() != iceberg.ParquetFile {
		return 0, errUseScan
	}
	what := "data file " + df.FilePath()
	fh, err := f.fs.Open(df.FilePath())
	if err != nil {
		return 0, lake.ReadError(f.name, snapshot, what, err)
	}
	defer fh.Close()
	m, err := f.meta(df.FilePath(), fh, keep)
	if err != nil {
		return 0, lake.ReadError(f.name, snapshot, what, err)
	}
	if m.Rows != df.Count() {
		return 0, lake.ReadError(f.name, snapshot, what,
			fmt.Errorf("its footer holds %d rows where its manifest entry says %d", m.Rows, df.Count()))
	}
	cols, ok, err := t.fileColumns(m, f.mapping)
	switch {
	case errors.Is(err, lake.ErrUnsupported):
		return 0, fmt.Errorf("snapshot %d of table %s: %s: %w", snapshot, f.name, what, err)
	case err != nil:
		return 0, lake.ReadError(f.name, snapshot, what, err)
	case !ok:
		return 0, errUseScan
	}
	rgs, err := pick(m)
	if err != nil {
		return 0, lake.ReadError(f.name, snapshot, what, err)
	}
	var fnErr error
	// The columns of a batch decode in parallel, as iceberg-go's scan
	// decodes them: the files read ahead of the one the consumer takes
	// hold two batches each, so the file being taken is the one decoding,
	// and it has the cores (in goroutines pqread owns, and recovers).
	err = pqread.Read(ctx, fh, t.schema, cols, pqread.Options{Allocator: f.mem, BatchRows: f.batchRows,
		RowGroups: rgs, Meta: m, Path: df.FilePath(), Parallelism: runtime.GOMAXPROCS(0)},
		func(rec arrow.RecordBatch, first int64) error {
			fnErr = fn(rec, first)
			return fnErr
		})
	switch {
	case fnErr != nil:
		return 0, fnErr
	case err != nil:
		return 0, lake.ReadError(f.name, snapshot, what, err)
	case rgs == nil:
		return len(m.RowGroups), nil
	}
	return len(rgs), nil
}

// meta returns a data file's footer: the one read before in this plan's
// read, else read now, and kept when keep is true (a file the diff path
// reads row groups of, which snapshots of the window may read again; a
// file read whole is read once, and holding the footers of every file of a
// large state would hold much memory).
func (f *icebergFiles) meta(path string, r parquet.ReaderAtSeeker, keep bool) (*pqread.Meta, error) {
	f.mu.Lock()
	m, ok := f.metas[path]
	f.mu.Unlock()
	if ok {
		return m, nil
	}
	m, err := pqread.Footer(r)
	if err != nil {
		return nil, err
	}
	if keep {
		f.mu.Lock()
		f.metas[path] = m
		f.mu.Unlock()
	}
	return m, nil
}

// footerOf is the engine's footer of a data file (row groups and their
// statistics, as readFooter reads them) from its pqread footer.
func footerOf(m *pqread.Meta, df iceberg.DataFile) *footer {
	ft := &footer{meta: m.File, colByID: map[int]int{}, fileSize: m.File.GetSourceFileSize()}
	for i, rg := range m.RowGroups {
		ft.rows = append(ft.rows, rg.Rows)
		ft.first = append(ft.first, rg.First)
		ft.offsets = append(ft.offsets, splitOffset(m.File.RowGroup(i)))
	}
	// iceberg-go selects row groups by the data file's split offsets when
	// they are valid, as readFooter does.
	if so := df.SplitOffsets(); len(so) == len(ft.rows) && slices.IsSorted(so) && (len(so) == 0 || so[0] >= 0) {
		ft.offsets = slices.Clone(so)
	}
	sc := m.File.Schema
	for i := range sc.NumColumns() {
		col := sc.Column(i)
		if col.ColumnPath().String() == col.Name() { // a top-level column
			ft.colByID[int(col.SchemaNode().FieldID())] = i
		}
	}
	return ft
}

// liveTask streams the live rows of a file scan task to send: the row
// groups its byte range selects (taskRowGroups), without the rows its
// delete files delete, by the engine's own masks (as the diff path applies
// them). send takes over each batch.
func (f *icebergFiles) liveTask(ctx context.Context, snapshot int64, task table.FileScanTask,
	send func(arrow.RecordBatch) error) error {
	var dels *lake.Mask
	if len(task.DeleteFiles)+len(task.EqualityDeleteFiles)+len(task.DeletionVectorFiles) > 0 {
		var err error
		if dels, err = f.index.forTask(ctx, &task, int(task.File.Count())); err != nil {
			return lake.ReadError(f.name, snapshot, "the delete files of data file "+task.File.FilePath(), err)
		}
	}
	t, keyCol, ok, err := f.keyTarget(dels)
	if err != nil {
		return err
	}
	if !ok {
		return f.scanTask(ctx, snapshot, task, send)
	}
	n := f.scan.schema.NumFields()
	_, err = f.decode(ctx, snapshot, task.File, t, false,
		func(m *pqread.Meta) ([]int, error) { return taskRowGroups(task, m) },
		func(rec arrow.RecordBatch, first int64) error {
			if dels != nil {
				deleted, err := dels.Deleted(rec, int(first), keyCol)
				if err != nil {
					rec.Release()
					return err
				}
				kept, err := lake.SelectRows(ctx, f.mem, rec, func(r int) bool { return !deleted[r] })
				rec.Release()
				if err != nil || kept == nil {
					return err
				}
				rec = kept
			}
			if t != f.scan {
				// Without the key columns added for the equality deletes.
				scanCols := array.NewRecordBatch(f.scan.schema, rec.Columns()[:n], rec.NumRows())
				rec.Release()
				rec = scanCols
			}
			if f.lineage {
				var err error
				if rec, err = f.lineageOf(rec, first, task.File.FirstRowID(), task.DataSequenceNumber); err != nil {
					return err
				}
			}
			return send(rec)
		})
	if err == errUseScan {
		return f.scanTask(ctx, snapshot, task, send)
	}
	return err
}

// keyTarget returns the target a task with deletes dels is read in: the
// scan columns, and after them the key columns of its equality deletes
// that they lack; keyCol resolves a key's field id to its column. ok is
// false when a key is not a top-level field of the window's end schema (a
// nested field, or one dropped since): the engine's masks compare
// top-level columns only (as in the diff path), so iceberg-go's scan, which
// matches keys by field id in the file, reads that task as it did before.
func (f *icebergFiles) keyTarget(dels *lake.Mask) (t *icebergTarget, keyCol func(id int) (int, error), ok bool,
	err error) {
	idx := map[int]int{}
	for i, fl := range f.scan.fields {
		idx[fl.ID] = i
	}
	keyCol = func(id int) (int, error) {
		if i, ok := idx[id]; ok {
			return i, nil
		}
		return 0, fmt.Errorf("%w: field %d is not a column read", lake.ErrInternal, id)
	}
	if dels == nil || len(dels.Equality) == 0 {
		return f.scan, keyCol, true, nil
	}
	var extra []iceberg.NestedField
	for _, eq := range dels.Equality {
		for _, id := range eq.Fields {
			if _, ok := idx[id]; ok {
				continue
			}
			i := slices.IndexFunc(f.end.Fields(), func(fl iceberg.NestedField) bool { return fl.ID == id })
			if i < 0 {
				return nil, nil, false, nil
			}
			idx[id] = len(f.scan.fields) + len(extra)
			extra = append(extra, f.end.Field(i))
		}
	}
	if t, err = f.scan.withFields(extra); err != nil {
		return nil, nil, false, err
	}
	return t, keyCol, true, nil
}

// scanTask is liveTask with iceberg-go's scan (which applies the task's
// deletes itself), for a task the engine leaves to it.
func (f *icebergFiles) scanTask(ctx context.Context, snapshot int64, task table.FileScanTask,
	send func(arrow.RecordBatch) error) error {
	what := "data file " + task.File.FilePath()
	_, records, err := f.scan.fallback.ReadTasks(ctx, []table.FileScanTask{task})
	if err != nil {
		return lake.ReadError(f.name, snapshot, what, err)
	}
	for rec, err := range records {
		if err != nil {
			return lake.ReadError(f.name, snapshot, what, err)
		}
		if f.lineage {
			if rec, err = f.noLineage(rec); err != nil {
				return err
			}
		}
		if err := send(rec); err != nil {
			return err
		}
	}
	return nil
}

// taskRowGroups returns the row groups of a file scan task's data file
// (whose footer is m) that the task reads, as iceberg-go's reader selects
// them: every row group (nil) for a task that covers the file whole; for
// a byte range (the runs of row groups a filter's pushdown keeps, a split
// of a large file), the row groups whose offset lies in it: the data
// file's split offsets when they are one valid offset per row group, else
// each row group's first page.
func taskRowGroups(task table.FileScanTask, m *pqread.Meta) ([]int, error) {
	if task.Start == 0 && (task.Length == 0 || task.Length == task.File.FileSizeBytes()) {
		return nil, nil
	}
	size := m.File.GetSourceFileSize()
	start, length := task.Start, task.Length
	if size > 0 && start >= 0 && start <= size && length > size-start {
		length = size - start
	}
	if start < 0 || length <= 0 || start > size || length > size-start {
		return nil, fmt.Errorf("its scan task reads bytes %d+%d of a file of %d", task.Start, task.Length, size)
	}
	offsets := task.File.SplitOffsets()
	valid := len(offsets) == len(m.RowGroups)
	for i, off := range offsets {
		valid = valid && off >= 0 && off < size && (i == 0 || off > offsets[i-1])
	}
	if !valid {
		offsets = make([]int64, len(m.RowGroups))
		for i := range offsets {
			offsets[i] = splitOffset(m.File.RowGroup(i))
		}
	}
	rgs := []int{}
	for i, off := range offsets {
		if off >= start && off < start+length {
			rgs = append(rgs, i)
		}
	}
	return rgs, nil
}
