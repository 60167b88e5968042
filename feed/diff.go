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
	"golang.org/x/sync/errgroup"
)

// fileData is decoded rows of one data file, in file order: row r of
// batches[b] is the file's position first[b]+r. It may hold only some of
// the file's row groups.
type fileData struct {
	batches []arrow.RecordBatch
	first   []int
	rows    int // the rows held
}

func (d *fileData) release() {
	for _, b := range d.batches {
		b.Release()
	}
	d.batches = nil
}

// changeSet holds the changes of one snapshot as full-width rows (every
// column of the end schema): the rows it deletes and the rows it inserts.
type changeSet struct {
	dels, ins []arrow.RecordBatch
}

func (c *changeSet) release() {
	for _, r := range c.dels {
		r.Release()
	}
	for _, r := range c.ins {
		r.Release()
	}
	c.dels, c.ins = nil, nil
}

// diffReader computes the changes of snapshots that delete rows: for each
// touched data file it reads the row groups whose rows may change (all of
// them for a file added or removed) and compares the positions live before
// and after the snapshot.
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
	// serial computes one snapshot's changes at a time, so that snapshots
	// read ahead stay within concurrency files and one change set in
	// memory; they wait their turn.
	serial sync.Mutex
}

func newDiffReader(ctx context.Context, mem memory.Allocator, p *Plan, concurrency int, stats *counters) (*diffReader, error) {
	fsys, err := p.tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("open storage of table %s: %w", p.Table, err)
	}
	scan := func(fields ...string) *table.Scan {
		return p.tbl.Scan(table.WithSnapshotID(*p.To), table.WithSelectedFields(fields...),
			table.WithCaseSensitive(true), table.WithMaxConcurrency(1))
	}
	d := &diffReader{mem: mem, fs: fsys, full: scan("*"), deletes: newDeleteIndex(fsys, mem, p.Table), end: p.end,
		name: p.Table, concurrency: max(1, concurrency), footers: map[string]*footer{}, stats: stats}
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

// read decodes a data file, or the row groups rgs of it (sorted; nil: the
// whole file), without applying any delete.
func (d *diffReader) read(ctx context.Context, snapshot int64, fd fileDiff, rgs []int, ft *footer,
	scan *table.Scan) (*fileData, error) {
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
		return nil, readError(d.name, snapshot, what, err)
	}
	data := &fileData{}
	run, inRun := 0, int64(0)
	for rec, err := range records {
		if err != nil {
			data.release()
			return nil, readError(d.name, snapshot, what, err)
		}
		for run < len(runs) && inRun == runs[run].rows {
			run, inRun = run+1, 0
		}
		if run == len(runs) || inRun+rec.NumRows() > runs[run].rows {
			rec.Release()
			data.release()
			return nil, fmt.Errorf("data file %s: read more rows than its row groups hold", fd.file.FilePath())
		}
		data.batches = append(data.batches, rec)
		data.first = append(data.first, int(runs[run].pos+inRun))
		inRun += rec.NumRows()
		data.rows += int(rec.NumRows())
	}
	want := int64(0)
	for _, r := range runs {
		want += r.rows
	}
	if int64(data.rows) != want {
		data.release()
		return nil, fmt.Errorf("data file %s: read %d rows where its manifest entry and footer say %d",
			fd.file.FilePath(), data.rows, want)
	}
	d.stats.filesRead.Add(1)
	d.stats.rowsDecoded.Add(int64(data.rows))
	if rgs != nil {
		d.stats.rowGroupsRead.Add(int64(len(rgs)))
	} else if ft != nil {
		d.stats.rowGroupsRead.Add(int64(len(ft.rows)))
	}
	return data, nil
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

// collect computes the changes of a snapshot from its file diffs.
func (d *diffReader) collect(ctx context.Context, sp SnapshotPlan) (*changeSet, error) {
	cs := &changeSet{}
	scan := d.full
	if d.narrow != nil && !sp.rewrites {
		scan = d.narrow // carry-over compares whole rows; nothing else does
	}
	// Files are read in parallel; their changes keep the plan's order.
	parts := make([]*changeSet, len(sp.diffs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(d.concurrency)
	for i, fd := range sp.diffs {
		parts[i] = &changeSet{}
		g.Go(func() error { return d.collectFile(gctx, sp.ID, fd, parts[i], scan) })
	}
	err := g.Wait()
	for _, part := range parts {
		cs.dels = append(cs.dels, part.dels...)
		cs.ins = append(cs.ins, part.ins...)
	}
	if err != nil {
		cs.release()
		return nil, err
	}
	return cs, nil
}

func (d *diffReader) collectFile(ctx context.Context, snapshot int64, fd fileDiff, cs *changeSet, scan *table.Scan) error {
	var rgs []int
	var ft *footer
	if fd.before != nil && fd.after != nil {
		// A file that stays: only rows whose deletes differ change. Read
		// just the row groups that may hold them.
		var err error
		if ft, err = d.footer(fd.file); err != nil {
			return readError(d.name, snapshot, "data file "+fd.file.FilePath(), err)
		}
		if rgs, err = d.candidates(ctx, fd, ft); err != nil {
			return err
		}
		if len(rgs) == 0 {
			return nil
		}
		if len(rgs) == len(ft.rows) {
			rgs = nil
		}
	}
	data, err := d.read(ctx, snapshot, fd, rgs, ft, scan)
	if err != nil {
		return err
	}
	defer data.release()
	if len(data.batches) == 0 {
		return nil
	}
	rows := int(fd.file.Count())
	keyCol := d.keyColumn(data.batches[0])
	var delBefore, delAfter *roaring.Bitmap
	if fd.before != nil {
		if delBefore, err = d.deletes.deleted(ctx, fd.before, data, rows, keyCol); err != nil {
			return err
		}
	}
	if fd.after != nil {
		if delAfter, err = d.deletes.deleted(ctx, fd.after, data, rows, keyCol); err != nil {
			return err
		}
	}
	liveBefore := func(p int) bool { return fd.before != nil && !delBefore.Contains(uint32(p)) }
	liveAfter := func(p int) bool { return fd.after != nil && !delAfter.Contains(uint32(p)) }
	for b, rec := range data.batches {
		off := data.first[b]
		dels, err := d.selectRows(ctx, rec, func(r int) bool { return liveBefore(off+r) && !liveAfter(off+r) })
		if err != nil {
			return err
		}
		if dels != nil {
			cs.dels = append(cs.dels, dels)
		}
		ins, err := d.selectRows(ctx, rec, func(r int) bool { return liveAfter(off+r) && !liveBefore(off+r) })
		if err != nil {
			return err
		}
		if ins != nil {
			cs.ins = append(cs.ins, ins)
		}
	}
	return nil
}

// candidates returns the row groups of a file that stays in which a row
// may change live status: those holding a position that one side's
// position deletes or deletion vector delete and the other's not, and
// those whose statistics may hold a key of an equality delete file that
// applies on one side only.
func (d *diffReader) candidates(ctx context.Context, fd fileDiff, ft *footer) ([]int, error) {
	rows := int(fd.file.Count())
	before, err := d.deletes.positionMask(fd.before, fd.file.FilePath(), rows, ctx)
	if err != nil {
		return nil, err
	}
	after, err := d.deletes.positionMask(fd.after, fd.file.FilePath(), rows, ctx)
	if err != nil {
		return nil, err
	}
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
func (d *diffReader) selectRows(ctx context.Context, rec arrow.RecordBatch, keep func(int) bool) (arrow.RecordBatch, error) {
	n := int(rec.NumRows())
	b := array.NewBooleanBuilder(d.mem)
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
	out, err := compute.FilterRecordBatch(compute.WithAllocator(ctx, d.mem), rec, mask, compute.DefaultFilterOptions())
	if err != nil {
		return nil, fmt.Errorf("select changed rows: %w", err)
	}
	return out, nil
}

// rowRef names row r of batch b of a list of batches.
type rowRef struct{ b, r int32 }

// refs lists the rows of batches in order.
func refs(batches []arrow.RecordBatch) []rowRef {
	var out []rowRef
	for b, rec := range batches {
		for r := range int(rec.NumRows()) {
			out = append(out, rowRef{int32(b), int32(r)})
		}
	}
	return out
}

// keyOf encodes the given columns of a referenced row.
func keyOf(buf []byte, batches []arrow.RecordBatch, ref rowRef, cols []int) ([]byte, error) {
	rec := batches[ref.b]
	var err error
	for _, c := range cols {
		if buf, err = appendKey(buf, rec.Column(c), int(ref.r)); err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// cancelCarryOver removes the rows that the snapshot deleted and re-inserted
// unchanged (a copy-on-write rewrite keeps the rows it did not change):
// every inserted row equal, in every column, to a deleted row cancels one
// such deleted row. It returns the remaining deleted and inserted rows.
func cancelCarryOver(cs *changeSet, dels, ins []rowRef) ([]rowRef, []rowRef, error) {
	if len(dels) == 0 || len(ins) == 0 {
		return dels, ins, nil
	}
	cols := make([]int, cs.dels[0].NumCols())
	for i := range cols {
		cols[i] = i
	}
	// Deleted rows chained by hash, compared column by column on a match:
	// no key is built for any row.
	rh := newRowHasher()
	delHash := make([][]uint64, len(cs.dels))
	for b, rec := range cs.dels {
		delHash[b] = rh.hashes(rec, cols)
	}
	next := make([]int32, len(dels))
	head := make(map[uint64]int32, len(dels))
	for i, ref := range dels {
		h := delHash[ref.b][ref.r]
		prev, ok := head[h]
		if !ok {
			prev = -1
		}
		next[i], head[h] = prev, int32(i)
	}
	insHash := make([][]uint64, len(cs.ins))
	for b, rec := range cs.ins {
		insHash[b] = rh.hashes(rec, cols)
	}
	same := newRowComparer(cs.dels, cs.ins, cols)
	cancelled := make([]bool, len(dels))
	var keptIns []rowRef
	for _, ref := range ins {
		match := int32(-1)
		if c, ok := head[insHash[ref.b][ref.r]]; ok {
			// The chain runs from the last deleted row to the first; cancel
			// the first one still standing.
			for ; c >= 0; c = next[c] {
				d := dels[c]
				if !cancelled[c] && same.equal(int(d.b), int(d.r), int(ref.b), int(ref.r)) {
					match = c
				}
			}
		}
		if match >= 0 {
			cancelled[match] = true
			continue
		}
		keptIns = append(keptIns, ref)
	}
	var keptDels []rowRef
	for i, ref := range dels {
		if !cancelled[i] {
			keptDels = append(keptDels, ref)
		}
	}
	return keptDels, keptIns, nil
}

// change is one output row: an op and the rows of its images (-1: none).
type change struct {
	op            string
	before, after int
}

// orderChanges arranges a snapshot's changes: deletes first, then update
// pairs (each update_before immediately followed by its update_after), then
// inserts. With identity columns, a deleted and an inserted row of the same
// key pair up, in order; with fold, a pair becomes one update row. Indexes
// are into dels and ins.
func orderChanges(cs *changeSet, dels, ins []rowRef, identity []int, fold bool) ([]change, error) {
	var out []change
	pairOf := make([]int, len(ins)) // the deleted row an inserted row pairs with, or -1
	for i := range pairOf {
		pairOf[i] = -1
	}
	paired := make([]bool, len(dels))
	if len(identity) > 0 && len(dels) > 0 && len(ins) > 0 {
		byKey := map[string][]int{}
		var key []byte
		var err error
		for i, ref := range dels {
			if key, err = keyOf(key[:0], cs.dels, ref, identity); err != nil {
				return nil, err
			}
			byKey[string(key)] = append(byKey[string(key)], i)
		}
		for i, ref := range ins {
			if key, err = keyOf(key[:0], cs.ins, ref, identity); err != nil {
				return nil, err
			}
			if q := byKey[string(key)]; len(q) > 0 {
				pairOf[i], paired[q[0]] = q[0], true
				byKey[string(key)] = q[1:]
			}
		}
	}
	for i := range dels {
		if !paired[i] {
			out = append(out, change{op: OpDelete, before: i, after: -1})
		}
	}
	for i, d := range pairOf {
		switch {
		case d < 0:
		case fold:
			out = append(out, change{op: OpUpdate, before: d, after: i})
		default:
			out = append(out, change{op: OpUpdateBefore, before: d, after: -1},
				change{op: OpUpdateAfter, before: -1, after: i})
		}
	}
	for i, d := range pairOf {
		if d < 0 {
			out = append(out, change{op: OpInsert, before: -1, after: i})
		}
	}
	return out, nil
}

// changes computes a snapshot's change batches, keeping those that the
// filter (nil: none) selects.
func (d *diffReader) changes(ctx context.Context, asm *assembler, p *Plan, sp SnapshotPlan,
	rf *rowFilter, fold bool) ([]arrow.RecordBatch, error) {
	d.serial.Lock()
	defer d.serial.Unlock()
	cs, err := d.collect(ctx, sp)
	if err != nil {
		return nil, err
	}
	defer cs.release()
	dels, ins := refs(cs.dels), refs(cs.ins)
	if sp.rewrites {
		if dels, ins, err = cancelCarryOver(cs, dels, ins); err != nil {
			return nil, err
		}
	}
	rows, err := orderChanges(cs, dels, ins, identityColumns(cs, p.Identity), fold)
	if err != nil {
		return nil, err
	}
	if rf != nil {
		before, err := evalBatches(rf, cs.dels)
		if err != nil {
			return nil, err
		}
		after, err := evalBatches(rf, cs.ins)
		if err != nil {
			return nil, err
		}
		rows = filterChanges(rows, pick(before, globalIndex(cs.dels, dels)), pick(after, globalIndex(cs.ins, ins)))
	}
	// The images of the rows that remain, in the order of dels and ins.
	befores, err := d.gather(ctx, asm, cs.dels, dels)
	if err != nil {
		return nil, err
	}
	defer befores.Release()
	afters, err := d.gather(ctx, asm, cs.ins, ins)
	if err != nil {
		return nil, err
	}
	defer afters.Release()
	return asm.changes(ctx, befores, afters, rows, sp.Snapshot)
}

// pick returns values[at[i]] for each i.
func pick(values []truth, at []int) []truth {
	out := make([]truth, len(at))
	for i, g := range at {
		out[i] = values[g]
	}
	return out
}

// filterChanges keeps the changes the filter selects: an insert whose
// after-image matches, a delete whose before-image matches or is unknown
// (null in a filtered column), and an update pair, whole, when either image
// does. before and after are the filter's values on the rows the changes
// index.
func filterChanges(rows []change, before, after []truth) []change {
	beforeMatches := func(c change) bool { return c.before >= 0 && before[c.before] != isFalse }
	afterMatches := func(c change) bool { return c.after >= 0 && after[c.after] == isTrue }
	out := rows[:0]
	for i := 0; i < len(rows); i++ {
		c := rows[i]
		if c.op == OpUpdateBefore && i+1 < len(rows) {
			pair := rows[i+1]
			if beforeMatches(c) || afterMatches(pair) {
				out = append(out, c, pair)
			}
			i++
			continue
		}
		if beforeMatches(c) || afterMatches(c) {
			out = append(out, c)
		}
	}
	return out
}

// evalBatches evaluates a filter on the rows of batches, in order.
func evalBatches(rf *rowFilter, batches []arrow.RecordBatch) ([]truth, error) {
	var out []truth
	for _, rec := range batches {
		v, err := rf.eval(rec)
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
	}
	return out, nil
}

// gather builds the projected images of the referenced rows, in order
// (refs are ordered by batch, then row).
func (d *diffReader) gather(ctx context.Context, asm *assembler, batches []arrow.RecordBatch, list []rowRef) (arrow.Array, error) {
	if len(list) == 0 {
		return array.MakeArrayOfNull(d.mem, asm.image, 0), nil
	}
	var parts []arrow.Array
	defer func() {
		for _, a := range parts {
			a.Release()
		}
	}()
	ctx = compute.WithAllocator(ctx, d.mem)
	for i := 0; i < len(list); {
		b := list[i].b
		j := i
		for j < len(list) && list[j].b == b {
			j++
		}
		img, err := asm.imageOf(batches[b])
		if err != nil {
			return nil, err
		}
		if j-i == img.Len() {
			parts = append(parts, img) // every row of the batch, in order
		} else {
			idx := array.NewInt32Builder(d.mem)
			for _, ref := range list[i:j] {
				idx.Append(ref.r)
			}
			indices := idx.NewArray()
			idx.Release()
			taken, err := compute.TakeArray(ctx, img, indices)
			indices.Release()
			img.Release()
			if err != nil {
				return nil, fmt.Errorf("gather images: %w", err)
			}
			parts = append(parts, taken)
		}
		i = j
	}
	if len(parts) == 1 {
		parts[0].Retain()
		return parts[0], nil
	}
	out, err := array.Concatenate(parts, d.mem)
	if err != nil {
		return nil, fmt.Errorf("concatenate images: %w", err)
	}
	return out, nil
}

// globalIndex maps each referenced row to its index in the concatenation
// of batches.
func globalIndex(batches []arrow.RecordBatch, list []rowRef) []int {
	offsets := make([]int, len(batches))
	n := 0
	for i, b := range batches {
		offsets[i] = n
		n += int(b.NumRows())
	}
	out := make([]int, len(list))
	for i, ref := range list {
		out[i] = offsets[ref.b] + int(ref.r)
	}
	return out
}

// identityColumns finds the identity columns in the changed rows.
func identityColumns(cs *changeSet, identity []string) []int {
	var rec arrow.RecordBatch
	switch {
	case len(cs.dels) > 0:
		rec = cs.dels[0]
	case len(cs.ins) > 0:
		rec = cs.ins[0]
	default:
		return nil
	}
	var out []int
	for _, n := range identity {
		if idx := rec.Schema().FieldIndices(n); len(idx) == 1 {
			out = append(out, idx[0])
		}
	}
	return out
}
