package paimon

import (
	"context"
	"fmt"

	"github.com/sluicefeed/sluice/lake"
)

// planner plans the snapshots of one window of a Paimon table.
type planner struct {
	t    *lakeTable
	name string
	// prune skips files the filter rules out: an append table's appended
	// files by their partition and value statistics, a primary-key
	// table's by their partition and key statistics (nil: no filter to
	// push down).
	prune lake.Pruner
}

// bucketKey names a partition's bucket.
type bucketKey struct {
	partition string
	bucket    int
}

func (e *ManifestEntry) bucketKey() bucketKey { return bucketKey{string(e.PartitionBytes), e.Bucket} }

// dvKey names a data file's deletion vector.
type dvKey struct {
	bucketKey
	file string
}

// dvsOf indexes the deletion vectors of an index manifest by data file.
func dvsOf(index []IndexEntry) map[dvKey]DeletionFile {
	out := map[dvKey]DeletionFile{}
	for _, ie := range index {
		if ie.IndexType != IndexDeletionVectors {
			continue
		}
		for _, dv := range ie.DeletionVectors {
			out[dvKey{bucketKey{string(ie.PartitionBytes), ie.Bucket}, dv.DataFile}] = DeletionFile{IndexFile: ie.FileName, Vector: dv}
		}
	}
	return out
}

func (p *planner) Plan(ctx context.Context, c lake.Commit) (lake.Change, error) {
	out := lake.Change{Files: []lake.FilePlan{}}
	tbl := p.t.src.tbl
	sn, err := p.t.snapshot(c.ID)
	if err != nil {
		return out, err
	}
	ps, _, err := p.t.src.lakeSchema(ctx, sn.SchemaID)
	if err != nil {
		return out, err
	}
	opts, err := ps.TableOptions()
	if err != nil {
		return out, lakeError(p.name, err)
	}
	pk := len(ps.PrimaryKeys) > 0
	if pk {
		if err := tbl.checkReadable(ps, opts); err != nil {
			return out, lakeError(p.name, err)
		}
	}
	switch {
	case sn.CommitKind == CommitAnalyze:
		out.Strategy = lake.StrategyNoDataChange
		out.Reason = "an ANALYZE snapshot writes statistics only"
		return out, nil
	case sn.CommitKind == CommitCompact && (!pk || !opts.DeletionVectors):
		out.Strategy = lake.StrategyReplaceSkipped
		out.Reason = "a COMPACT snapshot rewrites files: the table's rows stay as they were"
		return out, nil
	}
	delta, err := tbl.Delta(ctx, sn)
	if err != nil {
		return out, lakeError(p.name, err)
	}
	if pk {
		return p.mergeDiff(ctx, sn, ps, opts, delta, out)
	}
	return p.appendChange(ctx, sn, ps, opts, delta, out)
}

// indexes returns the deletion vectors of snapshot sn and of its parent
// (none for the first snapshot).
func (p *planner) indexes(ctx context.Context, sn *Snapshot) (before, after []IndexEntry, err error) {
	tbl := p.t.src.tbl
	if after, err = tbl.IndexManifest(ctx, sn); err != nil {
		return nil, nil, lakeError(p.name, err)
	}
	if sn.ID > 1 {
		parent, err := tbl.Snapshot(ctx, sn.ID-1)
		if err != nil {
			return nil, nil, lakeError(p.name, err)
		}
		if before, err = tbl.IndexManifest(ctx, parent); err != nil {
			return nil, nil, lakeError(p.name, err)
		}
	}
	return before, after, nil
}

// appendChange plans a snapshot of an append table: its added files are
// inserts, unless it also removed files or changed deletion vectors, when
// the engine diffs the files it touched.
func (p *planner) appendChange(ctx context.Context, sn *Snapshot, ps *Schema, opts Options, delta []ManifestEntry,
	out lake.Change) (lake.Change, error) {
	tbl := p.t.src.tbl
	var adds, dels []ManifestEntry
	for _, e := range delta {
		if e.Kind == KindAdd {
			adds = append(adds, e)
		} else {
			dels = append(dels, e)
		}
	}
	var dvBefore, dvAfter map[dvKey]DeletionFile
	var dvChanged []ManifestEntry
	if opts.DeletionVectors || sn.IndexManifest != nil {
		bIdx, aIdx, err := p.indexes(ctx, sn)
		if err != nil {
			return out, err
		}
		dvBefore, dvAfter = dvsOf(bIdx), dvsOf(aIdx)
		touched := map[dvKey]bool{}
		for _, e := range delta {
			touched[dvKey{e.bucketKey(), e.File.FileName}] = true
		}
		changed := map[dvKey]bool{}
		for k, a := range dvAfter {
			if b, ok := dvBefore[k]; (!ok || b != a) && !touched[k] {
				changed[k] = true
			}
		}
		if len(changed) > 0 {
			live, err := tbl.LiveFiles(ctx, sn)
			if err != nil {
				return out, lakeError(p.name, err)
			}
			for _, e := range live {
				if changed[dvKey{e.bucketKey(), e.File.FileName}] {
					dvChanged = append(dvChanged, e)
				}
			}
		}
	}
	dvOf := func(m map[dvKey]DeletionFile, e *ManifestEntry) *DeletionFile {
		if d, ok := m[dvKey{e.bucketKey(), e.File.FileName}]; ok {
			return &d
		}
		return nil
	}
	if len(dels) == 0 && len(dvChanged) == 0 {
		out.Strategy = lake.StrategyPaimonAppend
		out.Reason = fmt.Sprintf("the snapshot (%s) only added %d data files", sn.CommitKind, len(adds))
		files := &fileSet{src: p.t.src}
		for i := range adds {
			e := &adds[i]
			if p.prune != nil {
				st, err := newFileStats(ctx, tbl, ps, e)
				if err != nil {
					return out, lakeError(p.name, err)
				}
				if !p.prune.MayMatch(st) {
					out.FilesSkipped++
					continue
				}
			}
			f, err := p.liveFile(ps, e, dvOf(dvAfter, e))
			if err != nil {
				return out, err
			}
			files.files = append(files.files, f)
			addFilePlan(&out, f, lake.RoleAdded)
		}
		if len(files.files) > 0 {
			out.Appended = files
		}
		return out, nil
	}
	add := func(e *ManifestEntry, inBefore, inAfter bool, role string) error {
		f, err := p.liveFile(ps, e, nil)
		if err != nil {
			return err
		}
		d := &fileDiff{src: p.t.src, file: f, inBefore: inBefore, inAfter: inAfter}
		if inBefore {
			d.dvBefore = dvOf(dvBefore, e)
		}
		if inAfter {
			d.dvAfter = dvOf(dvAfter, e)
		}
		out.Diffs = append(out.Diffs, d)
		addFilePlan(&out, f, role)
		return nil
	}
	for i := range dels {
		if err := add(&dels[i], true, false, lake.RoleRemoved); err != nil {
			return out, err
		}
	}
	for i := range dvChanged {
		if err := add(&dvChanged[i], true, true, lake.RoleDeletes); err != nil {
			return out, err
		}
	}
	for i := range adds {
		if err := add(&adds[i], false, true, lake.RoleAdded); err != nil {
			return out, err
		}
	}
	out.Rewrites = len(adds) > 0
	out.Strategy = lake.StrategyPaimonRewrite
	out.Reason = fmt.Sprintf("the snapshot (%s) removed %d data files, added %d and changed the deletion vectors "+
		"of %d: rows live before in removed files are deletes, added rows inserts, rows re-written unchanged cancel",
		sn.CommitKind, len(dels), len(adds), len(dvChanged))
	return out, nil
}

// mergeDiff plans a snapshot of a primary-key table: the merged state of
// each bucket it touched, before and after it, compared by key.
func (p *planner) mergeDiff(ctx context.Context, sn *Snapshot, ps *Schema, opts Options, delta []ManifestEntry,
	out lake.Change) (lake.Change, error) {
	tbl := p.t.src.tbl
	level0 := len(delta) > 0
	for _, e := range delta {
		if e.Kind != KindAdd || e.File.Level != 0 {
			level0 = false
		}
	}
	if opts.DeletionVectors && level0 {
		out.Strategy = lake.StrategyNoDataChange
		out.Reason = fmt.Sprintf("the snapshot only added %d level-0 files, which a table with deletion vectors "+
			"reads once a compaction moved them up (the compaction's snapshot has the changes)", len(delta))
		return out, nil
	}
	touched := map[bucketKey]bool{}
	// changed are the files the snapshot added or removed, or whose
	// deletion vector it changed.
	changed := map[dvKey]bool{}
	for _, e := range delta {
		touched[e.bucketKey()] = true
		changed[dvKey{e.bucketKey(), e.File.FileName}] = true
	}
	var bIdx, aIdx []IndexEntry
	if opts.DeletionVectors {
		var err error
		if bIdx, aIdx, err = p.indexes(ctx, sn); err != nil {
			return out, err
		}
		// A bucket whose deletion vectors changed changed its rows.
		before, after := dvsOf(bIdx), dvsOf(aIdx)
		for k, a := range after {
			if b, ok := before[k]; !ok || b != a {
				touched[k.bucketKey], changed[k] = true, true
			}
		}
		for k := range before {
			if _, ok := after[k]; !ok {
				touched[k.bucketKey], changed[k] = true, true
			}
		}
	}
	if len(touched) == 0 {
		out.Strategy = lake.StrategyNoDataChange
		out.Reason = "the snapshot changed no data file and no deletion vector"
		return out, nil
	}
	base, err := tbl.entries(ctx, sn.BaseManifestList)
	if err != nil {
		return out, lakeError(p.name, fmt.Errorf("snapshot %d: %w", sn.ID, err))
	}
	before, err := mergeEntries(base)
	if err != nil {
		return out, lakeError(p.name, fmt.Errorf("table %q: snapshot %d: %w", tbl.name, sn.ID, err))
	}
	after, err := mergeEntries(append(base, delta...))
	if err != nil {
		return out, lakeError(p.name, fmt.Errorf("table %q: snapshot %d: %w", tbl.name, sn.ID, err))
	}
	keep, err := keyFilter(ps, touched, changed, before, after)
	if err != nil {
		return out, lakeError(p.name, err)
	}
	var read, unread int
	// pruned are the files of touched buckets the filter rules out by
	// their partition and key statistics (keyFileStats says why that is
	// safe): on both sides alike, so a key they hold merges alike.
	pruned := map[dvKey]bool{}
	if p.prune != nil {
		for _, es := range [][]ManifestEntry{before, after} {
			for i := range es {
				e := &es[i]
				k := dvKey{e.bucketKey(), e.File.FileName}
				if _, done := pruned[k]; done || !touched[k.bucketKey] {
					continue
				}
				st, err := keyFileStats(ctx, tbl, ps, e)
				if err != nil {
					return out, lakeError(p.name, err)
				}
				pruned[k] = !p.prune.MayMatch(st)
				if pruned[k] {
					out.FilesSkipped++
				}
			}
		}
	}
	in := func(es []ManifestEntry) []ManifestEntry {
		var kept []ManifestEntry
		for _, e := range es {
			switch {
			case !touched[e.bucketKey()], pruned[dvKey{e.bucketKey(), e.File.FileName}]:
			case keep(&e):
				kept = append(kept, e)
				read++
			default:
				unread++
			}
		}
		return kept
	}
	diffs := map[bucketKey]*bucketDiff{}
	var order []bucketKey
	bucket := func(sp Split) *bucketDiff {
		k := bucketKey{string(sp.PartitionBytes), sp.Bucket}
		d, ok := diffs[k]
		if !ok {
			d = &bucketDiff{src: p.t.src}
			diffs[k] = d
			order = append(order, k)
		}
		return d
	}
	for _, sp := range splitsOf(in(before), bIdx) {
		bucket(sp).before = &sp
	}
	for _, sp := range splitsOf(in(after), aIdx) {
		bucket(sp).after = &sp
	}
	for _, k := range order {
		d := diffs[k]
		sp := d.after
		if sp == nil {
			sp = d.before
		}
		dir, err := tbl.bucketPath(ps, opts, &sp.Files[0])
		if err != nil {
			return out, lakeError(p.name, err)
		}
		d.path = dir
		out.ChangeFiles = append(out.ChangeFiles, d)
		for _, s := range []*Split{d.before, d.after} {
			if s == nil {
				continue
			}
			for i := range s.Files {
				out.BytesRead += s.Files[i].File.FileSize
				out.RecordsRead += s.Files[i].File.RowCount
			}
		}
	}
	for i := range delta {
		e := &delta[i]
		f, err := p.liveFile(ps, e, nil)
		if err != nil {
			return out, err
		}
		role := lake.RoleAdded
		if e.Kind == KindDelete {
			role = lake.RoleRemoved
		}
		out.Files = append(out.Files, lake.FilePlan{Path: f.path, Content: lake.ContentData, Role: role,
			RecordCount: e.File.RowCount, FileSizeBytes: e.File.FileSize})
	}
	out.Rewrites = true
	out.Strategy = lake.StrategyPaimonMergeDiff
	out.Reason = fmt.Sprintf("primary-key table (merge engine %s): the merged rows of the %d buckets the snapshot "+
		"(%s) touched, before and after it, compared by key; of their files, the %d whose key range meets a "+
		"changed file's are read (%d left alone)", opts.MergeEngine, len(order), sn.CommitKind, read, unread)
	if p.prune != nil {
		out.Reason += fmt.Sprintf("; the filter ruled out %d files by their partition and primary-key statistics",
			out.FilesSkipped)
	}
	return out, nil
}

// liveFile describes entry e's file, with its deletion vector dv (nil:
// none).
func (p *planner) liveFile(ps *Schema, e *ManifestEntry, dv *DeletionFile) (liveFile, error) {
	path, err := p.t.src.tbl.FilePath(ps, e)
	if err != nil {
		return liveFile{}, lakeError(p.name, err)
	}
	return liveFile{entry: *e, dv: dv, path: path}, nil
}

// addFilePlan shows a data file the change reads.
func addFilePlan(out *lake.Change, f liveFile, role string) {
	out.Files = append(out.Files, lake.FilePlan{Path: f.path, Content: lake.ContentData, Role: role,
		RecordCount: f.entry.File.RowCount, FileSizeBytes: f.entry.File.FileSize})
	out.BytesRead += f.entry.File.FileSize
	out.RecordsRead += f.entry.File.RowCount
}

func (t *lakeTable) State(ctx context.Context, opts lake.StateOptions, c lake.Commit) (lake.LiveFiles, error) {
	tbl := t.src.tbl
	sn, err := t.snapshot(c.ID)
	if err != nil {
		return nil, err
	}
	ps, _, err := t.src.lakeSchema(ctx, sn.SchemaID)
	if err != nil {
		return nil, err
	}
	topts, err := ps.TableOptions()
	if err != nil {
		return nil, lakeError(opts.Table, err)
	}
	if err := tbl.checkReadable(ps, topts); err != nil {
		return nil, lakeError(opts.Table, err)
	}
	splits, err := tbl.Splits(ctx, sn)
	if err != nil {
		return nil, lakeError(opts.Table, err)
	}
	if len(ps.PrimaryKeys) > 0 {
		st := &splitSet{src: t.src}
		for i := range splits {
			sp := &splits[i]
			dir, err := tbl.bucketPath(ps, topts, &sp.Files[0])
			if err != nil {
				return nil, lakeError(opts.Table, err)
			}
			st.splits = append(st.splits, splitFiles{split: sp, path: dir})
		}
		return st, nil
	}
	files := &fileSet{src: t.src}
	p := &planner{t: t, name: opts.Table}
	for _, sp := range splits {
		for i := range sp.Files {
			e := &sp.Files[i]
			var dv *DeletionFile
			if d, ok := sp.DeletionVectors[e.File.FileName]; ok {
				dv = &d
			}
			f, err := p.liveFile(ps, e, dv)
			if err != nil {
				return nil, err
			}
			files.files = append(files.files, f)
		}
	}
	return files, nil
}

// keyFilter returns which files of the touched buckets a merge diff
// reads: those whose key range meets the key range of a changed file of
// their bucket (added, removed, or with a changed deletion vector). A key
// outside every changed file's range has all its records in files the
// snapshot left alone, so its merged row is the same before and after;
// and the files read are the same on both sides but for the changed ones,
// so a key that some of them hold only in part merges alike on both. A
// bucket with a changed file of unknown key range reads every file.
func keyFilter(ps *Schema, touched map[bucketKey]bool, changed map[dvKey]bool,
	before, after []ManifestEntry) (func(*ManifestEntry) bool, error) {
	var types []DataType
	for _, f := range ps.TrimmedPrimaryKeys() {
		types = append(types, f.Type)
	}
	ranges := map[bucketKey][]keyRange{}
	whole := map[bucketKey]bool{}
	for _, es := range [][]ManifestEntry{before, after} {
		for i := range es {
			e := &es[i]
			k := e.bucketKey()
			if !touched[k] || !changed[dvKey{k, e.File.FileName}] {
				continue
			}
			r, ok, err := fileKeyRange(&e.File, types)
			if err != nil {
				return nil, fmt.Errorf("data file %s: key range: %w", e.File.FileName, err)
			}
			if !ok {
				whole[k] = true
				continue
			}
			ranges[k] = append(ranges[k], r)
		}
	}
	return func(e *ManifestEntry) bool {
		k := e.bucketKey()
		if whole[k] || changed[dvKey{k, e.File.FileName}] {
			return true
		}
		r, ok, err := fileKeyRange(&e.File, types)
		if err != nil || !ok {
			return true
		}
		for _, c := range ranges[k] {
			if o, err := r.overlaps(c); err != nil || o {
				return true
			}
		}
		return false
	}, nil
}
