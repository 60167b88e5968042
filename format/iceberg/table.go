package iceberg

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/lake"
)

// NewTable presents an iceberg-go table to the engine. Its file IO is
// wrapped so that a panic in a storage client ends the read that met it
// instead of the process. cache keeps what planning reads of the table's
// snapshots across loads (nil: each plan reads its own).
func NewTable(tbl *table.Table, cache *Cache) lake.Table {
	tbl = guardTable(tbl)
	if cache == nil {
		cache = NewCache()
	}
	return &icebergTable{tbl: tbl, meta: tbl.Metadata(), cache: cache, location: tbl.MetadataLocation()}
}

// icebergTable is the Iceberg format behind the engine's Table seam.
type icebergTable struct {
	tbl   *table.Table
	meta  table.Metadata
	cache *Cache
	// location is the table's metadata file ("" when it has none).
	location string
}

func (t *icebergTable) Format() string     { return lake.FormatIceberg }
func (t *icebergTable) FormatVersion() int { return t.meta.Version() }

// History returns the lineage of head from the cache when this metadata
// file's was walked before. The caller gets its own slice of commits.
func (t *icebergTable) History(head *int64) lake.History {
	key := historyKey(t.location, head)
	h, ok := t.cache.history.Get(key)
	if !ok {
		h = icebergHistory(t.meta, head)
		if key != "" {
			t.cache.history.Add(key, h)
		}
	}
	h.Commits = slices.Clone(h.Commits)
	return h
}

func (t *icebergTable) HasCommit(id int64) bool { return t.meta.SnapshotByID(id) != nil }

func (t *icebergTable) Schema(_ context.Context, s *lake.Commit) (*lake.Schema, error) {
	sc, err := t.nativeSchema(s)
	if err != nil {
		return nil, err
	}
	out, err := SchemaFrom(sc)
	if err != nil {
		return nil, fmt.Errorf("%w: schema %d: %w", lake.ErrUnsupported, sc.ID, err)
	}
	return out, nil
}

// nativeSchema returns the iceberg-go schema of commit s (nil: the
// table's current schema).
func (t *icebergTable) nativeSchema(s *lake.Commit) (*iceberg.Schema, error) {
	if s == nil {
		return t.meta.CurrentSchema(), nil
	}
	for _, sc := range t.meta.Schemas() {
		if sc.ID == s.SchemaID {
			return sc, nil
		}
	}
	return nil, fmt.Errorf("%w: snapshot %d refers to schema %d, which the metadata lacks", lake.ErrUnsupported,
		s.ID, s.SchemaID)
}

func (t *icebergTable) Planner(ctx context.Context, opts lake.PlanOptions) (lake.Planner, error) {
	return newSnapshotPlanner(ctx, t, opts)
}

func (t *icebergTable) State(ctx context.Context, opts lake.StateOptions, s lake.Commit) (lake.LiveFiles, error) {
	scan := t.tbl.Scan(table.WithSnapshotID(s.ID), table.WithSelectedFields(opts.Columns...),
		table.WithCaseSensitive(true), table.WithMaxConcurrency(opts.Concurrency))
	defer scan.Close()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		return nil, lake.ReadError(opts.Table, s.ID, "manifests", err)
	}
	return icebergLive{t: t, tasks: tasks}, nil
}

// icebergLive are Iceberg file scan tasks whose every row is live (an
// append's added files, or a state's files with their deletes, which the
// engine applies as it reads them).
type icebergLive struct {
	t     *icebergTable
	tasks []table.FileScanTask
}

func (ls icebergLive) Len() int          { return len(ls.tasks) }
func (ls icebergLive) Path(i int) string { return ls.tasks[i].File.FilePath() }

func (ls icebergLive) Slice(lo, hi int) lake.LiveFiles {
	return icebergLive{t: ls.t, tasks: ls.tasks[lo:hi]}
}

func (ls icebergLive) Size() (files, bytes, records int64) {
	for _, t := range ls.tasks {
		files++
		bytes += t.Length
		records += t.File.Count()
	}
	return files, bytes, records
}

func (ls icebergLive) Read(ctx context.Context, r *lake.Read, commit int64, i int,
	fn func(arrow.RecordBatch) error) error {
	f, err := ls.t.files(r)
	if err != nil {
		return err
	}
	return f.liveTask(ctx, commit, ls.tasks[i], fn)
}

// icebergDiff is an Iceberg data file whose live rows a snapshot changed:
// the file with the delete files that apply to it before the snapshot (nil
// when the file did not exist then) and after it (nil when the snapshot
// removed it).
type icebergDiff struct {
	t      *icebergTable
	file   iceberg.DataFile
	seq    *int64
	before *table.FileScanTask
	after  *table.FileScanTask
	// keyFields are the field ids of the equality deletes that apply on
	// either side.
	keyFields []int
}

// newIcebergDiff completes an Iceberg file diff with its key fields.
func newIcebergDiff(d *icebergDiff) *icebergDiff {
	seen := map[int]bool{}
	for _, t := range []*table.FileScanTask{d.before, d.after} {
		if t == nil {
			continue
		}
		for _, df := range t.EqualityDeleteFiles {
			for _, id := range df.EqualityFieldIDs() {
				if !seen[id] {
					seen[id] = true
					d.keyFields = append(d.keyFields, id)
				}
			}
		}
	}
	return d
}

func (d *icebergDiff) Path() string     { return d.file.FilePath() }
func (d *icebergDiff) KeyFields() []int { return d.keyFields }

func (d *icebergDiff) Masks(ctx context.Context, r *lake.Read) (before, after *lake.Mask, err error) {
	f, err := d.t.files(r)
	if err != nil {
		return nil, nil, err
	}
	return f.deletes(ctx, d)
}

func (d *icebergDiff) Candidates(ctx context.Context, r *lake.Read, before, after *lake.Mask) ([]int, int, error) {
	f, err := d.t.files(r)
	if err != nil {
		return nil, 0, err
	}
	return f.candidates(ctx, d, before, after)
}

func (d *icebergDiff) Batches(ctx context.Context, r *lake.Read, commit int64, rgs []int, whole bool,
	fn func(rec arrow.RecordBatch, first int) error) error {
	f, err := d.t.files(r)
	if err != nil {
		return err
	}
	return f.batches(ctx, commit, d, rgs, whole, fn)
}
