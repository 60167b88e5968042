package feed

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// IcebergTable presents an iceberg-go table to the engine. Its file IO is
// wrapped so that a panic in a storage client ends the read that met it
// instead of the process.
func IcebergTable(tbl *table.Table) Table {
	tbl = guardTable(tbl)
	return &icebergTable{tbl: tbl, meta: tbl.Metadata()}
}

// icebergTable is the Iceberg format behind the engine's Table seam.
type icebergTable struct {
	tbl  *table.Table
	meta table.Metadata
}

func (t *icebergTable) Format() string     { return FormatIceberg }
func (t *icebergTable) FormatVersion() int { return t.meta.Version() }

func (t *icebergTable) history(head *int64) History { return historyOf(t.meta, head) }

func (t *icebergTable) hasSnapshot(id int64) bool { return t.meta.SnapshotByID(id) != nil }

func (t *icebergTable) schemaOf(_ context.Context, s *Snapshot) (*iceberg.Schema, error) {
	if s == nil {
		return t.meta.CurrentSchema(), nil
	}
	for _, sc := range t.meta.Schemas() {
		if sc.ID == s.SchemaID {
			return sc, nil
		}
	}
	return nil, fmt.Errorf("%w: snapshot %d refers to schema %d, which the metadata lacks", ErrUnsupported,
		s.ID, s.SchemaID)
}

func (t *icebergTable) planner(ctx context.Context, p *Plan, prune *pruner, cache *planCache) (commitPlanner, error) {
	return newSnapshotPlanner(ctx, t.tbl, p.Table, prune, cache)
}

func (t *icebergTable) files(ctx context.Context, e *Engine, p *Plan) (fileSource, error) {
	return newIcebergFiles(ctx, e, p, t.tbl)
}

func (t *icebergTable) planState(ctx context.Context, e *Engine, p *Plan, s Snapshot) (liveFiles, error) {
	scan := t.tbl.Scan(table.WithSnapshotID(s.ID), table.WithSelectedFields(p.scanFields...),
		table.WithCaseSensitive(true), table.WithMaxConcurrency(e.opts.ReadConcurrency))
	defer scan.Close()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		return nil, readError(p.Table, s.ID, "manifests", err)
	}
	return icebergTasks(tasks), nil
}

// icebergTasks are Iceberg file scan tasks whose every row is live (an
// append's added files, or a state's files with their deletes, which the
// engine applies as it reads them).
type icebergTasks []table.FileScanTask

func (ts icebergTasks) count() int { return len(ts) }

func (ts icebergTasks) size() (files, bytes, records int64) {
	for _, t := range ts {
		files++
		bytes += t.Length
		records += t.File.Count()
	}
	return files, bytes, records
}

// icebergDiff is an Iceberg data file whose live rows a snapshot changed:
// the file with the delete files that apply to it before the snapshot (nil
// when the file did not exist then) and after it (nil when the snapshot
// removed it).
type icebergDiff struct {
	file   iceberg.DataFile
	seq    *int64
	before *table.FileScanTask
	after  *table.FileScanTask
}

// newFileDiff describes an Iceberg file diff for the engine.
func newFileDiff(d icebergDiff) fileDiff {
	fd := fileDiff{path: d.file.FilePath(), rows: d.file.Count(), src: d}
	seen := map[int]bool{}
	for _, t := range []*table.FileScanTask{d.before, d.after} {
		if t == nil {
			continue
		}
		for _, df := range t.EqualityDeleteFiles {
			for _, id := range df.EqualityFieldIDs() {
				if !seen[id] {
					seen[id] = true
					fd.keyFields = append(fd.keyFields, id)
				}
			}
		}
	}
	return fd
}
