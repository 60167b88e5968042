package iceberg

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/internal/lib/pqread"
	"github.com/sluicefeed/sluice/lake"
)

// icebergFiles reads the data files of an Iceberg plan with the engine's
// own Parquet reader (internal/lib/pqread), in the engine's goroutines, and its
// delete files itself; iceberg-go plans (manifests, which delete files
// apply to which data file). A data file the engine cannot match columns in
// (see icebergTarget.fileColumns), and one that is not Parquet, is read with
// iceberg-go's scan instead, as all were before.
type icebergFiles struct {
	tbl       *table.Table
	fs        iceio.IO
	name      string
	end       *iceberg.Schema
	mem       memory.Allocator
	mapping   iceberg.NameMapping
	batchRows int
	// scan holds the read's scan columns, read for appended and live
	// files with their deletes applied; full every column of the window's
	// end schema, narrow the columns the changes need; neither applies
	// deletes.
	scan, full, narrow *icebergTarget
	index              *deleteIndex
	stats              lake.ReadStats
	// lineage is set when the read asks for row lineage of a table that
	// keeps it: every target decodes the lineage columns after its own
	// (see rowlineage.go).
	lineage bool
	// mu guards footers and metas.
	mu      sync.Mutex
	footers map[string]*footer
	metas   map[string]*pqread.Meta
}

// filesKey keys an Iceberg table's file readers in a read's memo.
type filesKey struct{ t *icebergTable }

// files returns the table's file readers for read r, made once per read
// (under the read's context) and closed when it ends.
func (t *icebergTable) files(r *lake.Read) (*icebergFiles, error) {
	return lake.Memo(r, filesKey{t}, func(ctx context.Context) (*icebergFiles, error) {
		f, err := newIcebergFiles(ctx, t, r)
		if err != nil {
			return nil, err
		}
		r.OnClose(f.close)
		return f, nil
	})
}

func newIcebergFiles(ctx context.Context, it *icebergTable, r *lake.Read) (*icebergFiles, error) {
	tbl := it.tbl
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("open storage of table %s: %w", r.Table, err)
	}
	end, err := it.nativeSchema(&r.End)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", r.Table, err)
	}
	batchRows := min(r.BatchRows, pqread.DefaultBatchRows)
	f := &icebergFiles{tbl: tbl, fs: fsys, name: r.Table, end: end, mem: r.Allocator,
		mapping: tbl.Metadata().NameMapping(), batchRows: batchRows,
		index: newDeleteIndex(fsys, r.Allocator, r.Table), stats: r.Stats,
		footers: map[string]*footer{}, metas: map[string]*pqread.Meta{}}
	target := func(concurrency int, cols []string) (*icebergTarget, error) {
		if len(cols) == 1 && cols[0] == "*" {
			cols = icebergNames(end)
		}
		sub, err := end.Select(true, cols...)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", lake.ErrUnknownColumn, err)
		}
		// The fallback scan: batches of at most 16Ki rows (without a batch
		// size, iceberg-go decodes a row group's columns whole), and no row
		// filter (iceberg-go v0.7.0's scan filter drops matching rows, seen
		// with "small >= 60" on a nullable int column of a partitioned
		// table; the engine filters rows itself, with SQL's logic).
		scan := tbl.Scan(table.WithSnapshotID(r.End.ID), table.WithSelectedFields(cols...),
			table.WithCaseSensitive(true), table.WithMaxConcurrency(concurrency),
			table.WithArrowBatchSize(batchRows))
		t, err := newIcebergTarget(sub.Fields(), scan)
		if err != nil {
			scan.Close()
			return nil, fmt.Errorf("table %s: %w", r.Table, err)
		}
		return t, nil
	}
	if f.scan, err = target(r.Concurrency, r.Columns); err != nil {
		return nil, err
	}
	if f.full, err = target(1, icebergNames(end)); err != nil {
		f.close()
		return nil, err
	}
	if f.narrow, err = target(1, r.DiffColumns); err != nil {
		f.close()
		return nil, err
	}
	if f.lineage = r.Lineage && it.KeepsLineage(); f.lineage {
		for _, t := range []**icebergTarget{&f.scan, &f.full, &f.narrow} {
			if *t, err = (*t).withFields(lineageFields()); err != nil {
				f.close()
				return nil, fmt.Errorf("table %s: %w", r.Table, err)
			}
		}
	}
	return f, nil
}

func (f *icebergFiles) close() {
	for _, t := range []*icebergTarget{f.scan, f.full, f.narrow} {
		if t != nil {
			t.fallback.Close()
		}
	}
}

// deletes returns what d's delete files delete before and after its
// snapshot.
func (f *icebergFiles) deletes(ctx context.Context, d *icebergDiff) (before, after *lake.Mask, err error) {
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

// footer returns the engine's footer of a data file the diff path reads
// row groups of, read once per plan read (with the pqread footer its
// batches read).
func (f *icebergFiles) footer(df iceberg.DataFile) (*footer, error) {
	f.mu.Lock()
	ft, ok := f.footers[df.FilePath()]
	f.mu.Unlock()
	if ok {
		return ft, nil
	}
	fh, err := f.fs.Open(df.FilePath())
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	m, err := f.meta(df.FilePath(), fh, true)
	if err != nil {
		return nil, err
	}
	ft = footerOf(m, df)
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
func (f *icebergFiles) candidates(ctx context.Context, d *icebergDiff, before, after *lake.Mask) ([]int, int, error) {
	ft, err := f.footer(d.file)
	if err != nil {
		return nil, 0, err
	}
	cand := make([]bool, len(ft.rows))
	for _, rg := range lake.ChangedRowGroups(ft.first, ft.rows, before.Positions, after.Positions) {
		cand[rg] = true
	}
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
					"schema lacks", lake.ErrUnsupported, df.FilePath(), id)
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
	var rgs []int
	for rg, c := range cand {
		if c {
			rgs = append(rgs, rg)
		}
	}
	return rgs, len(ft.rows), nil
}

// batches decodes d's file, or its row groups rgs (nil: all), without
// applying any delete (see lake.FileDiff.Batches).
func (f *icebergFiles) batches(ctx context.Context, snapshot int64, d *icebergDiff, rgs []int, whole bool,
	fn func(rec arrow.RecordBatch, first int) error) error {
	t := f.narrow
	if whole {
		t = f.full
	}
	rows := int64(0)
	groups, err := f.decode(ctx, snapshot, d.file, t, rgs != nil, func(*pqread.Meta) ([]int, error) { return rgs, nil },
		func(rec arrow.RecordBatch, first int64) error {
			rows += rec.NumRows()
			if f.lineage {
				var err error
				if rec, err = f.lineageOf(rec, first, d.file.FirstRowID(), d.seq); err != nil {
					return err
				}
			}
			return fn(rec, int(first))
		})
	if err == errUseScan {
		return f.scanBatches(ctx, snapshot, d, t, rgs, fn)
	}
	if err != nil {
		return err
	}
	f.stats.FileRead(rows, int64(groups))
	return nil
}

// scanBatches is batches with iceberg-go's scan, for a file the engine
// leaves to it.
func (f *icebergFiles) scanBatches(ctx context.Context, snapshot int64, d *icebergDiff, t *icebergTarget, rgs []int,
	fn func(rec arrow.RecordBatch, first int) error) error {
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
			return lake.ReadError(f.name, snapshot, "data file "+d.file.FilePath(), err)
		}
		runs = ft.runs(rgs)
		for _, r := range runs {
			tasks = append(tasks, table.FileScanTask{File: d.file, Start: r.start, Length: r.length,
				DataSequenceNumber: d.seq, FirstRowID: d.file.FirstRowID()})
		}
	}
	what := "data file " + d.file.FilePath()
	_, records, err := t.fallback.ReadTasks(ctx, tasks)
	if err != nil {
		return lake.ReadError(f.name, snapshot, what, err)
	}
	run, inRun, rows := 0, int64(0), int64(0)
	for rec, err := range records {
		if err != nil {
			return lake.ReadError(f.name, snapshot, what, err)
		}
		for run < len(runs) && inRun == runs[run].rows {
			run, inRun = run+1, 0
		}
		if run == len(runs) || inRun+rec.NumRows() > runs[run].rows {
			rec.Release()
			return fmt.Errorf("%w: data file %s: read more rows than its row groups hold", lake.ErrUnreadable,
				d.file.FilePath())
		}
		first := int(runs[run].pos + inRun)
		inRun += rec.NumRows()
		rows += rec.NumRows()
		if f.lineage {
			if rec, err = f.noLineage(rec); err != nil {
				return err
			}
		}
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
			lake.ErrUnreadable, d.file.FilePath(), rows, want)
	}
	groups := int64(0)
	if rgs != nil {
		groups = int64(len(rgs))
	} else if ft, _ := f.cachedFooter(d.file); ft != nil {
		groups = int64(len(ft.rows))
	}
	f.stats.FileRead(rows, groups)
	return nil
}

func (f *icebergFiles) cachedFooter(df iceberg.DataFile) (*footer, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft, ok := f.footers[df.FilePath()]
	return ft, ok
}

// icebergNames are the names of a schema's top-level columns.
func icebergNames(sc *iceberg.Schema) []string {
	names := make([]string, sc.NumFields())
	for i, f := range sc.Fields() {
		names[i] = f.Name
	}
	return names
}
