package feed

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// icebergFiles reads the data files of an Iceberg plan with iceberg-go's
// scan, and its delete files itself.
type icebergFiles struct {
	tbl  *table.Table
	fs   iceio.IO
	name string
	end  *iceberg.Schema
	// scan reads appended and live files in the plan's scan columns, with
	// their deletes applied.
	scan *table.Scan
	// full reads every column of the window's end schema, narrow the
	// columns the changes need (nil: same as full); neither applies deletes
	// (tasks are built without delete files).
	full, narrow *table.Scan
	index        *deleteIndex
	stats        *counters
	// mu guards footers.
	mu      sync.Mutex
	footers map[string]*footer
}

func newIcebergFiles(ctx context.Context, e *Engine, p *Plan, tbl *table.Table) (*icebergFiles, error) {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("open storage of table %s: %w", p.Table, err)
	}
	scan := func(concurrency int, fields ...string) *table.Scan {
		// Batches of 16Ki rows: without a batch size, iceberg-go decodes a
		// row group's columns whole (hundreds of MiB for a large file).
		//
		// No row filter: iceberg-go v0.7.0's scan filter drops matching rows
		// (seen with "small >= 60" on a nullable int column of a partitioned
		// table; TestOracle's filter cases catch it); the engine filters
		// rows itself, with SQL's logic.
		return tbl.Scan(table.WithSnapshotID(*p.To), table.WithSelectedFields(fields...),
			table.WithCaseSensitive(true), table.WithMaxConcurrency(concurrency),
			table.WithArrowBatchSize(min(e.opts.MaxBatchRows, 16<<10)))
	}
	f := &icebergFiles{tbl: tbl, fs: fsys, name: p.Table, end: p.end,
		scan: scan(e.opts.ReadConcurrency, p.scanFields...), full: scan(1, "*"),
		index: newDeleteIndex(fsys, e.opts.Allocator, p.Table), stats: &e.stats, footers: map[string]*footer{}}
	if narrow := p.diffColumns(); len(narrow) < len(p.end.Fields()) {
		f.narrow = scan(1, narrow...)
	}
	return f, nil
}

func (f *icebergFiles) close() {
	f.scan.Close()
	f.full.Close()
	if f.narrow != nil {
		f.narrow.Close()
	}
}

func (f *icebergFiles) live(ctx context.Context, snapshot int64, files liveFiles) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		tasks := files.(icebergTasks)
		_, records, err := f.scan.ReadTasks(ctx, tasks)
		if err != nil {
			yield(nil, readError(f.name, snapshot, f.whichFile(ctx, tasks, err), err))
			return
		}
		for rec, err := range records {
			if err != nil {
				yield(nil, readError(f.name, snapshot, f.whichFile(ctx, tasks, err), err))
				return
			}
			if !yield(rec, nil) {
				return
			}
		}
	}
}

// whichFile names, for an error reading several data files at once, the
// file at fault: the first whose footer cannot be read, else all of them.
func (f *icebergFiles) whichFile(ctx context.Context, tasks []table.FileScanTask, err error) string {
	if len(tasks) == 1 {
		return "data file " + tasks[0].File.FilePath()
	}
	if ctx.Err() == nil && !isNotExist(err) {
		for _, t := range tasks {
			if _, ferr := readFooter(f.fs, t.File); ferr != nil {
				return "data file " + t.File.FilePath()
			}
		}
	}
	paths := make([]string, len(tasks))
	for i, t := range tasks {
		paths[i] = t.File.FilePath()
	}
	return "one of the data files " + strings.Join(paths, ", ")
}

func (f *icebergFiles) deletes(ctx context.Context, fd fileDiff) (before, after *fileDeletes, err error) {
	d := fd.src.(icebergDiff)
	rows := int(d.file.Count())
	if d.before != nil {
		if before, err = f.index.forTask(ctx, d.before, rows); err != nil {
			return nil, nil, err
		}
	}
	if d.after != nil {
		if after, err = f.index.forTask(ctx, d.after, rows); err != nil {
			return nil, nil, err
		}
	}
	return before, after, nil
}

func (f *icebergFiles) footer(df iceberg.DataFile) (*footer, error) {
	f.mu.Lock()
	ft, ok := f.footers[df.FilePath()]
	f.mu.Unlock()
	if ok {
		return ft, nil
	}
	ft, err := readFooter(f.fs, df)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.footers[df.FilePath()] = ft
	f.mu.Unlock()
	return ft, nil
}

// candidates returns the row groups of a file that stays in which a row
// may change live status: those holding a position that one side's
// position deletes or deletion vector delete (before and after) and the
// other's not, and those whose statistics may hold a key of an equality
// delete file that applies on one side only.
func (f *icebergFiles) candidates(ctx context.Context, fd fileDiff, before, after *fileDeletes) ([]int, int, error) {
	d := fd.src.(icebergDiff)
	ft, err := f.footer(d.file)
	if err != nil {
		return nil, 0, err
	}
	cand := positionCandidates(ft, before.positions, after.positions)
	eqBefore := map[string]bool{}
	for _, df := range d.before.EqualityDeleteFiles {
		eqBefore[df.FilePath()] = true
	}
	eqAfter := map[string]bool{}
	for _, df := range d.after.EqualityDeleteFiles {
		eqAfter[df.FilePath()] = true
	}
	check := func(df iceberg.DataFile) error {
		values, err := f.index.equalityValues(ctx, df)
		if err != nil {
			return err
		}
		fields := make([]iceberg.NestedField, len(df.EqualityFieldIDs()))
		for i, id := range df.EqualityFieldIDs() {
			fl, ok := f.end.FindFieldByID(id)
			if !ok {
				return fmt.Errorf("%w: equality delete file %s deletes by field %d, which the window's end "+
					"schema lacks", ErrUnsupported, df.FilePath(), id)
			}
			fields[i] = fl
		}
		for i, fl := range fields {
			if !fileMayContain(d.file, fl, values[i]) {
				return nil // no key of this file can be in the data file
			}
		}
	groups:
		for rg := range ft.rows {
			for i, fl := range fields {
				if !ft.mayContain(rg, fl, values[i]) {
					continue groups
				}
			}
			cand[rg] = true
		}
		return nil
	}
	for _, df := range d.after.EqualityDeleteFiles {
		if !eqBefore[df.FilePath()] {
			if err := check(df); err != nil {
				return nil, 0, err
			}
		}
	}
	for _, df := range d.before.EqualityDeleteFiles {
		if !eqAfter[df.FilePath()] {
			if err := check(df); err != nil {
				return nil, 0, err
			}
		}
	}
	return chosen(cand), len(ft.rows), nil
}

func (f *icebergFiles) batches(ctx context.Context, snapshot int64, fd fileDiff, rgs []int, whole bool,
	fn func(rec arrow.RecordBatch, first int) error) error {
	d := fd.src.(icebergDiff)
	scan := f.full
	if !whole && f.narrow != nil {
		scan = f.narrow
	}
	var tasks []table.FileScanTask
	var runs []rowGroupRun
	var ft *footer
	if rgs == nil {
		tasks = []table.FileScanTask{{File: d.file, Start: 0, Length: d.file.FileSizeBytes(),
			DataSequenceNumber: d.seq, FirstRowID: d.file.FirstRowID()}}
		runs = []rowGroupRun{{pos: 0, rows: d.file.Count()}}
	} else {
		var err error
		if ft, err = f.footer(d.file); err != nil {
			return readError(f.name, snapshot, "data file "+d.file.FilePath(), err)
		}
		runs = ft.runs(rgs)
		for _, r := range runs {
			tasks = append(tasks, table.FileScanTask{File: d.file, Start: r.start, Length: r.length,
				DataSequenceNumber: d.seq, FirstRowID: d.file.FirstRowID()})
		}
	}
	what := "data file " + d.file.FilePath()
	_, records, err := scan.ReadTasks(ctx, tasks)
	if err != nil {
		return readError(f.name, snapshot, what, err)
	}
	run, inRun, rows := 0, int64(0), int64(0)
	for rec, err := range records {
		if err != nil {
			return readError(f.name, snapshot, what, err)
		}
		for run < len(runs) && inRun == runs[run].rows {
			run, inRun = run+1, 0
		}
		if run == len(runs) || inRun+rec.NumRows() > runs[run].rows {
			rec.Release()
			return fmt.Errorf("%w: data file %s: read more rows than its row groups hold", ErrUnreadable,
				d.file.FilePath())
		}
		first := int(runs[run].pos + inRun)
		inRun += rec.NumRows()
		rows += rec.NumRows()
		if err := fn(rec, first); err != nil {
			return err
		}
	}
	want := int64(0)
	for _, r := range runs {
		want += r.rows
	}
	if rows != want {
		return fmt.Errorf("%w: data file %s: read %d rows where its manifest entry and footer say %d",
			ErrUnreadable, d.file.FilePath(), rows, want)
	}
	f.stats.filesRead.Add(1)
	f.stats.rowsDecoded.Add(rows)
	if rgs != nil {
		f.stats.rowGroupsRead.Add(int64(len(rgs)))
	} else if ft, _ := f.cachedFooter(d.file); ft != nil {
		f.stats.rowGroupsRead.Add(int64(len(ft.rows)))
	}
	return nil
}

func (f *icebergFiles) cachedFooter(df iceberg.DataFile) (*footer, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft, ok := f.footers[df.FilePath()]
	return ft, ok
}

func (f *icebergFiles) changeRows(_ context.Context, _ int64, fd fileDiff, _ bool,
	_ func(side int, rec arrow.RecordBatch) error) error {
	return fmt.Errorf("%w: Iceberg tables have no change files (%s)", ErrInternal, fd.path)
}
