package feed

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// Sides of the rows a snapshot's files yield.
const (
	sideDeleted  = 0 // live before the snapshot, not after
	sideInserted = 1 // live after the snapshot, not before
)

// diffReader computes the changes of snapshots that delete rows: for each
// touched data file it reads the row groups whose rows may change (all of
// them for a file added or removed) and compares, batch by batch, the
// positions live before and after the snapshot.
type diffReader struct {
	mem     memory.Allocator
	fs      iceio.IO
	full    *table.Scan // every column of the window's end schema
	narrow  *table.Scan // the columns the changes need (nil: same as full)
	deletes *deleteIndex
	end     *iceberg.Schema
	name    string
	// concurrency bounds the files read at once.
	concurrency int
	// mu guards footers.
	mu      sync.Mutex
	footers map[string]*footer
	stats   *counters
	// spill and budget hold the rows of a snapshot that both deletes and
	// inserts rows while its carry-over rows cancel and its update pairs
	// form.
	//
	// Snapshots read ahead compute their changes at the same time (the
	// read-ahead keeps the files they read within --read-concurrency); the
	// budget, which never blocks, bounds what they hold. (A lock held while
	// emitting would deadlock: a later snapshot holding it waits for the
	// consumer, which waits for an earlier one.)
	spill  *spillDir
	budget *budget
}

func newDiffReader(ctx context.Context, e *Engine, p *Plan, spill *spillDir) (*diffReader, error) {
	fsys, err := p.tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("open storage of table %s: %w", p.Table, err)
	}
	scan := func(fields ...string) *table.Scan {
		// Batches of 16Ki rows: without a batch size, iceberg-go decodes a
		// row group's columns whole (hundreds of MiB for a large file).
		return p.tbl.Scan(table.WithSnapshotID(*p.To), table.WithSelectedFields(fields...),
			table.WithCaseSensitive(true), table.WithMaxConcurrency(1),
			table.WithArrowBatchSize(min(e.opts.MaxBatchRows, 16<<10)))
	}
	mem := e.opts.Allocator
	d := &diffReader{mem: mem, fs: fsys, full: scan("*"), deletes: newDeleteIndex(fsys, mem, p.Table), end: p.end,
		name: p.Table, concurrency: max(1, e.opts.ReadConcurrency), footers: map[string]*footer{}, stats: &e.stats,
		spill: spill, budget: e.budget}
	if narrow := p.diffColumns(); len(narrow) < len(p.end.Fields()) {
		d.narrow = scan(narrow...)
	}
	return d, nil
}

func (d *diffReader) close() {
	d.full.Close()
	if d.narrow != nil {
		d.narrow.Close()
	}
}

func (d *diffReader) footer(df iceberg.DataFile) (*footer, error) {
	d.mu.Lock()
	ft, ok := d.footers[df.FilePath()]
	d.mu.Unlock()
	if ok {
		return ft, nil
	}
	ft, err := readFooter(d.fs, df)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.footers[df.FilePath()] = ft
	d.mu.Unlock()
	return ft, nil
}

// readBatches decodes a data file, or the row groups rgs of it (sorted;
// nil: the whole file), without applying any delete, and hands each batch
// to fn with the file position of its first row. fn takes over the batch.
func (d *diffReader) readBatches(ctx context.Context, snapshot int64, fd fileDiff, rgs []int, ft *footer,
	scan *table.Scan, fn func(rec arrow.RecordBatch, first int) error) error {
	var tasks []table.FileScanTask
	var runs []rowGroupRun
	if rgs == nil {
		tasks = []table.FileScanTask{{File: fd.file, Start: 0, Length: fd.file.FileSizeBytes(),
			DataSequenceNumber: fd.seq, FirstRowID: fd.file.FirstRowID()}}
		runs = []rowGroupRun{{pos: 0, rows: fd.file.Count()}}
	} else {
		runs = ft.runs(rgs)
		for _, r := range runs {
			tasks = append(tasks, table.FileScanTask{File: fd.file, Start: r.start, Length: r.length,
				DataSequenceNumber: fd.seq, FirstRowID: fd.file.FirstRowID()})
		}
	}
	what := "data file " + fd.file.FilePath()
	_, records, err := scan.ReadTasks(ctx, tasks)
	if err != nil {
		return readError(d.name, snapshot, what, err)
	}
	run, inRun, rows := 0, int64(0), int64(0)
	for rec, err := range records {
		if err != nil {
			return readError(d.name, snapshot, what, err)
		}
		for run < len(runs) && inRun == runs[run].rows {
			run, inRun = run+1, 0
		}
		if run == len(runs) || inRun+rec.NumRows() > runs[run].rows {
			rec.Release()
			return fmt.Errorf("%w: data file %s: read more rows than its row groups hold", ErrUnreadable,
				fd.file.FilePath())
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
			ErrUnreadable, fd.file.FilePath(), rows, want)
	}
	d.stats.filesRead.Add(1)
	d.stats.rowsDecoded.Add(rows)
	if rgs != nil {
		d.stats.rowGroupsRead.Add(int64(len(rgs)))
	} else if ft != nil {
		d.stats.rowGroupsRead.Add(int64(len(ft.rows)))
	}
	return nil
}

// keyColumn resolves an equality field id to its column in decoded rows.
func (d *diffReader) keyColumn(rec arrow.RecordBatch) func(id int) (int, error) {
	return func(id int) (int, error) {
		name, ok := d.end.FindColumnName(id)
		if idx := rec.Schema().FieldIndices(name); ok && len(idx) == 1 {
			return idx[0], nil
		}
		return 0, fmt.Errorf("%w: field %d is not a top-level column of the window's end schema", ErrUnsupported, id)
	}
}

// fileChanges reads one touched data file and hands its changed rows to
// emit, batch by batch in file order: the rows live before the snapshot
// and not after (sideDeleted), and the other way (sideInserted). emit
// takes over each batch.
func (d *diffReader) fileChanges(ctx context.Context, snapshot int64, fd fileDiff, scan *table.Scan,
	emit func(side int, rec arrow.RecordBatch) error) error {
	rows := int(fd.file.Count())
	var before, after *fileDeletes
	var err error
	if fd.before != nil {
		if before, err = d.deletes.forTask(ctx, fd.before, rows); err != nil {
			return err
		}
	}
	if fd.after != nil {
		if after, err = d.deletes.forTask(ctx, fd.after, rows); err != nil {
			return err
		}
	}
	var rgs []int
	var ft *footer
	if before != nil && after != nil {
		// A file that stays: only rows whose deletes differ change. Read
		// just the row groups that may hold them.
		if ft, err = d.footer(fd.file); err != nil {
			return readError(d.name, snapshot, "data file "+fd.file.FilePath(), err)
		}
		if rgs, err = d.candidates(ctx, fd, ft, before.positions, after.positions); err != nil {
			return err
		}
		if len(rgs) == 0 {
			return nil
		}
		if len(rgs) == len(ft.rows) {
			rgs = nil
		}
	}
	return d.readBatches(ctx, snapshot, fd, rgs, ft, scan, func(rec arrow.RecordBatch, first int) error {
		defer rec.Release()
		keyCol := d.keyColumn(rec)
		// A side's rows are live unless its deletes delete them; a side
		// without the file (nil deletes) has none live.
		var deletedBefore, deletedAfter []bool
		if before != nil {
			if deletedBefore, err = before.deleted(rec, first, keyCol); err != nil {
				return err
			}
		}
		if after != nil {
			if deletedAfter, err = after.deleted(rec, first, keyCol); err != nil {
				return err
			}
		}
		liveBefore := func(r int) bool { return deletedBefore != nil && !deletedBefore[r] }
		liveAfter := func(r int) bool { return deletedAfter != nil && !deletedAfter[r] }
		for _, side := range []int{sideDeleted, sideInserted} {
			out, err := selectRows(ctx, d.mem, rec, func(r int) bool {
				if side == sideDeleted {
					return liveBefore(r) && !liveAfter(r)
				}
				return liveAfter(r) && !liveBefore(r)
			})
			if err != nil {
				return err
			}
			if out == nil {
				continue
			}
			if err := emit(side, out); err != nil {
				return err
			}
		}
		return nil
	})
}

// candidates returns the row groups of a file that stays in which a row
// may change live status: those holding a position that one side's
// position deletes or deletion vector delete (before and after) and the
// other's not, and those whose statistics may hold a key of an equality
// delete file that applies on one side only.
func (d *diffReader) candidates(ctx context.Context, fd fileDiff, ft *footer, before, after *roaring.Bitmap) ([]int, error) {
	cand := make([]bool, len(ft.rows))
	changed := roaring.Xor(before, after).Iterator()
	for changed.HasNext() {
		rg := ft.rowGroupOf(int64(changed.Next()))
		cand[rg] = true
		// Skip the rest of the row group.
		if end := ft.first[rg] + ft.rows[rg]; end <= math.MaxUint32 {
			changed.AdvanceIfNeeded(uint32(end))
		} else {
			break
		}
	}
	eqBefore := map[string]bool{}
	for _, df := range fd.before.EqualityDeleteFiles {
		eqBefore[df.FilePath()] = true
	}
	eqAfter := map[string]bool{}
	for _, df := range fd.after.EqualityDeleteFiles {
		eqAfter[df.FilePath()] = true
	}
	check := func(df iceberg.DataFile) error {
		values, err := d.deletes.equalityValues(ctx, df)
		if err != nil {
			return err
		}
		fields := make([]iceberg.NestedField, len(df.EqualityFieldIDs()))
		for i, id := range df.EqualityFieldIDs() {
			f, ok := d.end.FindFieldByID(id)
			if !ok {
				return fmt.Errorf("%w: equality delete file %s deletes by field %d, which the window's end "+
					"schema lacks", ErrUnsupported, df.FilePath(), id)
			}
			fields[i] = f
		}
		for i, f := range fields {
			if !fileMayContain(fd.file, f, values[i]) {
				return nil // no key of this file can be in the data file
			}
		}
	groups:
		for rg := range ft.rows {
			for i, f := range fields {
				if !ft.mayContain(rg, f, values[i]) {
					continue groups
				}
			}
			cand[rg] = true
		}
		return nil
	}
	for _, df := range fd.after.EqualityDeleteFiles {
		if !eqBefore[df.FilePath()] {
			if err := check(df); err != nil {
				return nil, err
			}
		}
	}
	for _, df := range fd.before.EqualityDeleteFiles {
		if !eqAfter[df.FilePath()] {
			if err := check(df); err != nil {
				return nil, err
			}
		}
	}
	var out []int
	for rg, c := range cand {
		if c {
			out = append(out, rg)
		}
	}
	return out, nil
}

// selectRows returns the rows of rec for which keep is true, or nil when
// there is none.
func selectRows(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, keep func(int) bool) (arrow.RecordBatch, error) {
	n := int(rec.NumRows())
	b := array.NewBooleanBuilder(mem)
	defer b.Release()
	b.Reserve(n)
	count := 0
	for r := range n {
		k := keep(r)
		b.UnsafeAppend(k)
		if k {
			count++
		}
	}
	switch count {
	case 0:
		return nil, nil
	case n:
		rec.Retain()
		return rec, nil
	}
	mask := b.NewArray()
	defer mask.Release()
	out, err := compute.FilterRecordBatch(compute.WithAllocator(ctx, mem), rec, mask, compute.DefaultFilterOptions())
	if err != nil {
		return nil, fmt.Errorf("select changed rows: %w", err)
	}
	return out, nil
}

// fileItem is a changed-rows batch of a file, or the error that ended the
// file's read.
type fileItem struct {
	side int
	rec  arrow.RecordBatch
	err  error
}

// eachFile reads the snapshot's touched files, up to concurrency at once,
// and hands their changed rows to fn in plan order: file after file, each
// file's batches in file order. A file read ahead of the one fn is taking
// holds at most two batches, so memory stays bounded however large the
// files. fn takes over each batch.
func (d *diffReader) eachFile(ctx context.Context, sp SnapshotPlan, scan *table.Scan,
	fn func(side int, rec arrow.RecordBatch) error) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	chans := make([]chan fileItem, len(sp.diffs))
	started := 0
	defer func() {
		cancel()
		for _, ch := range chans[:started] {
			for it := range ch {
				if it.rec != nil {
					it.rec.Release()
				}
			}
		}
		wg.Wait()
	}()
	start := func(i int) {
		ch := make(chan fileItem, 2)
		chans[i] = ch
		fd := sp.diffs[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(ch)
			send := func(it fileItem) error {
				select {
				case ch <- it:
					return nil
				case <-ctx.Done():
					if it.rec != nil {
						it.rec.Release()
					}
					return ctx.Err()
				}
			}
			err := guard(func() error {
				return d.fileChanges(ctx, sp.ID, fd, scan, func(side int, rec arrow.RecordBatch) error {
					return send(fileItem{side: side, rec: rec})
				})
			})
			if err != nil && ctx.Err() == nil {
				_ = send(fileItem{err: err})
			}
		}()
	}
	for i := range sp.diffs {
		for started < len(sp.diffs) && started < i+d.concurrency {
			start(started)
			started++
		}
		for it := range chans[i] {
			if it.err != nil {
				return it.err
			}
			if err := fn(it.side, it.rec); err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}
