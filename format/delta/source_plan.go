package delta

import (
	"context"
	"fmt"
	"slices"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/sluicefeed/sluice/lake"
)

// deltaSchema is a Delta schema prepared for the engine.
type deltaSchema struct {
	logical *lake.Schema
	fields  map[string]StructField // by logical name
	mode    ColumnMappingMode
	// partition are the partition columns' logical names.
	partition map[string]bool
	// rows is the table's row tracking at the version (see rowlineage.go).
	rows rowTracking
}

// schema returns the schema of version v, after checking that Sluice can
// read the table's protocol at v.
func (s *deltaGen) schema(ctx context.Context, v int64) (*deltaSchema, error) {
	p, m, err := s.log.Metadata(ctx, v)
	if err != nil {
		return nil, deltaError(s.name, err)
	}
	if err := CheckProtocol(p); err != nil {
		return nil, fmt.Errorf("%w: version %d: %w", lake.ErrUnsupported, v, err)
	}
	key := fmt.Sprint(mappingSupported(p)) + "\x00" + m.SchemaString + "\x00" +
		m.Configuration["columnMapping.mode"] + "\x00" +
		strings.Join(m.PartitionColumns, "\x00") + "\x00" + rowTrackingKey(p, m)
	s.mu.Lock()
	sc, ok := s.schemas[key]
	s.mu.Unlock()
	if ok {
		return sc, nil
	}
	st, err := ParseSchema(m.SchemaString)
	if err != nil {
		return nil, fmt.Errorf("%w: table %s, version %d: %w", lake.ErrUnsupported, s.name, v, err)
	}
	mode, err := MappingMode(m.Configuration)
	if err != nil {
		return nil, fmt.Errorf("%w: table %s, version %d: %w", lake.ErrUnsupported, s.name, v, err)
	}
	if !mappingSupported(p) {
		// The protocol has readers honour the mode only when the table's
		// protocol has the columnMapping feature.
		mode = MappingNone
	}
	logical, err := ToLake(st, mode)
	if err != nil {
		return nil, fmt.Errorf("%w: table %s, version %d: %w", lake.ErrUnsupported, s.name, v, err)
	}
	sc = &deltaSchema{logical: logical, fields: map[string]StructField{}, mode: mode,
		partition: map[string]bool{}, rows: rowTrackingOf(p, m)}
	for _, f := range st.Fields {
		sc.fields[f.Name] = f
	}
	for _, c := range m.PartitionColumns {
		sc.partition[c] = true
	}
	s.mu.Lock()
	s.schemas[key] = sc
	s.mu.Unlock()
	return sc, nil
}

// mappingSupported reports whether a protocol has the columnMapping
// feature: reader version 2, or 3 with the feature listed.
func mappingSupported(p Protocol) bool {
	switch {
	case p.MinReaderVersion == 2:
		return true
	case p.MinReaderVersion >= 3:
		return slices.Contains(p.ReaderFeatures, "columnMapping")
	}
	return false
}

// deltaFile is a Delta data file (or change data file) a read decodes.
type deltaFile struct {
	path      string
	partition map[string]*string
	dv        *DeletionVector
	size      int64
	rows      int64 // -1: unknown
	// baseRowID and rowVersion are the file's row tracking: the id of its
	// first row and the default commit version of its rows (nil: none).
	baseRowID, rowVersion *int64
	// ordinal is the file's place among its commit's change data files,
	// commit the commit's change data files.
	ordinal int
	commit  *cdcCommit
}

// cdcCommit is the change data files of one commit.
type cdcCommit struct {
	files []deltaFile
}

// deltaDiff is a Delta data file whose live rows a commit changed: its
// deletion vectors before and after (set when the file is present on that
// side; a nil vector deletes nothing).
type deltaDiff struct {
	src               *deltaGen
	file              deltaFile
	inBefore, inAfter bool
	dvBefore, dvAfter *DeletionVector
}

// deltaLive are Delta files whose every row not deleted by their deletion
// vector a read streams.
type deltaLive struct {
	src   *deltaGen
	files []deltaFile
}

func (ls deltaLive) Len() int          { return len(ls.files) }
func (ls deltaLive) Path(i int) string { return ls.files[i].path }

func (ls deltaLive) Slice(lo, hi int) lake.LiveFiles {
	return deltaLive{src: ls.src, files: ls.files[lo:hi]}
}

func (ls deltaLive) Size() (files, bytes, records int64) {
	for _, f := range ls.files {
		files++
		bytes += f.size
		records += max(f.rows, 0)
	}
	return files, bytes, records
}

// recordCount returns numRecords of an add's statistics, -1 when absent.
func recordCount(stats string) int64 {
	if stats == "" {
		return -1
	}
	var st struct {
		NumRecords *int64 `json:"numRecords"`
	}
	if json.Unmarshal([]byte(stats), &st) != nil || st.NumRecords == nil {
		return -1
	}
	return *st.NumRecords
}

// deltaPlanner plans the versions of a window of a Delta table.
type deltaPlanner struct {
	src  *deltaGen
	name string
	// prune skips added files the filter rules out by their partition
	// values and statistics (nil: no filter to push down).
	prune lake.Pruner
}

func (dp *deltaPlanner) Plan(ctx context.Context, s lake.Commit) (lake.Change, error) {
	out := lake.Change{Files: []lake.FilePlan{}}
	sc, err := dp.src.schema(ctx, s.ID)
	if err != nil {
		return out, err
	}
	c, err := dp.src.log.Commit(ctx, s.ID)
	if err != nil {
		return out, deltaError(dp.name, err)
	}
	if len(c.CDCs) > 0 {
		out.Strategy = lake.StrategyDeltaCDCFiles
		out.Reason = fmt.Sprintf("the commit wrote %d change data files (cdc actions): their rows are its changes",
			len(c.CDCs))
		commit := &cdcCommit{}
		for i, cdc := range c.CDCs {
			f := deltaFile{path: cdc.Path, partition: cdc.PartitionValues, size: cdc.Size, rows: -1, ordinal: i,
				commit: commit}
			commit.files = append(commit.files, f)
			out.ChangeFiles = append(out.ChangeFiles, deltaChange{src: dp.src, file: f})
			out.Files = append(out.Files, lake.FilePlan{Path: cdc.Path, Content: lake.ContentChangeData, Role: lake.RoleAdded,
				RecordCount: -1, FileSizeBytes: cdc.Size})
			out.BytesRead += cdc.Size
		}
		out.Rewrites = true
		out.PairKey = pairColumn
		return out, nil
	}

	var adds []*Add
	var removes []*Remove
	for _, a := range c.Adds {
		if a.DataChange {
			adds = append(adds, a)
		}
	}
	for _, r := range c.Removes {
		if r.DataChange {
			removes = append(removes, r)
		}
	}
	if len(adds) == 0 && len(removes) == 0 {
		out.Strategy = lake.StrategyNoDataChange
		out.Reason = "no add or remove action with dataChange=true"
		if len(c.Adds)+len(c.Removes) > 0 {
			out.Reason = fmt.Sprintf("its %d add and %d remove actions all have dataChange=false (%s): "+
				"files were rewritten, no row changed", len(c.Adds), len(c.Removes), orUnknown(s.Operation))
		}
		return out, nil
	}
	withDV := slices.ContainsFunc(adds, func(a *Add) bool { return a.DeletionVector != nil })
	if len(removes) == 0 && !withDV {
		out.Strategy = lake.StrategyDeltaAdd
		out.Reason = fmt.Sprintf("the commit only added %d files", len(adds))
		files := deltaLive{src: dp.src}
		for _, a := range adds {
			if dp.prune != nil && !dp.prune.MayMatch(newDeltaFileStats(sc, a)) {
				out.FilesSkipped++
				continue
			}
			f := deltaFile{path: a.Path, partition: a.PartitionValues, size: a.Size, rows: recordCount(a.Stats),
				baseRowID: a.BaseRowID, rowVersion: a.DefaultRowCommitVersion}
			files.files = append(files.files, f)
			addDeltaFile(&out, f, lake.RoleAdded)
		}
		if files.files != nil {
			out.Appended = files
		}
		return out, nil
	}

	added := map[string]*Add{}
	for _, a := range adds {
		added[a.Path] = a
	}
	var parent map[string]*Add // the state before, for removes without partition values
	pairs := 0
	for _, r := range removes {
		d := &deltaDiff{src: dp.src, inBefore: true, dvBefore: r.DeletionVector}
		d.file = deltaFile{path: r.Path, partition: r.PartitionValues, rows: -1, baseRowID: r.BaseRowID,
			rowVersion: r.DefaultRowCommitVersion}
		if r.Size != nil {
			d.file.size = *r.Size
		}
		if r.Stats != "" {
			d.file.rows = recordCount(r.Stats)
		}
		if a, ok := added[r.Path]; ok {
			d.inAfter, d.dvAfter = true, a.DeletionVector
			d.file.partition, d.file.size, d.file.rows = a.PartitionValues, a.Size, recordCount(a.Stats)
			d.file.baseRowID, d.file.rowVersion = a.BaseRowID, a.DefaultRowCommitVersion
			delete(added, r.Path)
			pairs++
		} else if d.file.partition == nil || sc.rows.enabled && d.file.baseRowID == nil {
			// The state before has what the remove leaves out.
			if parent == nil {
				if parent, err = dp.parentFiles(ctx, s.ID); err != nil {
					return out, err
				}
			}
			if a, ok := parent[r.Path]; ok {
				if d.file.partition == nil {
					d.file.partition = a.PartitionValues
				}
				if d.file.baseRowID == nil {
					d.file.baseRowID, d.file.rowVersion = a.BaseRowID, a.DefaultRowCommitVersion
				}
			}
		}
		role := lake.RoleRemoved
		if d.inAfter {
			role = lake.RoleDeletes
		}
		out.Diffs = append(out.Diffs, d)
		addDeltaFile(&out, d.file, role)
	}
	for _, a := range adds {
		if _, ok := added[a.Path]; !ok {
			continue // paired with its remove
		}
		d := &deltaDiff{src: dp.src, inAfter: true, dvAfter: a.DeletionVector,
			file: deltaFile{path: a.Path, partition: a.PartitionValues, size: a.Size, rows: recordCount(a.Stats),
				baseRowID: a.BaseRowID, rowVersion: a.DefaultRowCommitVersion}}
		out.Diffs = append(out.Diffs, d)
		addDeltaFile(&out, d.file, lake.RoleAdded)
	}
	out.Rewrites = len(adds) > 0
	planLineage(&out, sc)
	if pairs == len(removes) && pairs == len(adds) {
		out.Strategy = lake.StrategyDeltaDVDiff
		out.Reason = fmt.Sprintf("the commit changed the deletion vectors of %d files (an add and a remove of "+
			"each path): rows newly deleted are deletes, rows restored inserts", pairs)
	} else {
		out.Strategy = lake.StrategyDeltaAddRemove
		out.Reason = fmt.Sprintf("no change data files: changes derived from %d removed and %d added files "+
			"(dataChange=true), rows re-written unchanged cancel", len(removes), len(adds))
	}
	return out, nil
}

// parentFiles returns the live files of the version before v, by path.
func (dp *deltaPlanner) parentFiles(ctx context.Context, v int64) (map[string]*Add, error) {
	snap, err := dp.src.log.Snapshot(ctx, v-1)
	if err != nil {
		return nil, deltaError(dp.name, err)
	}
	out := make(map[string]*Add, len(snap.Files))
	for _, a := range snap.Files {
		out[a.Path] = a
	}
	return out, nil
}

// addDeltaFile shows a data file the change reads.
func addDeltaFile(out *lake.Change, f deltaFile, role string) {
	out.Files = append(out.Files, lake.FilePlan{Path: f.path, Content: lake.ContentData, Role: role, RecordCount: f.rows,
		FileSizeBytes: f.size})
	out.BytesRead += f.size
	out.RecordsRead += max(f.rows, 0)
}

func orUnknown(op string) string {
	if op == "" {
		return "operation not recorded"
	}
	return op
}
