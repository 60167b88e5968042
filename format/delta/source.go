package delta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/sluicefeed/sluice/internal/lib/storage"
	"github.com/sluicefeed/sluice/lake"
)

// Source serves one Delta table to the engine. It is long-lived (one
// per table, for as long as the table is served): it keeps what it read of
// the table's commits, which never change once written. It is safe for
// concurrent use.
type Source struct {
	fsys fs.FS
	name string
	opts []Option

	// mu guards origin and gen.
	mu sync.Mutex
	// origin identifies the table gen holds: its oldest log file (name,
	// size, modification time). A table deleted and created again in the
	// same folder has another one, and gets a new gen.
	origin string
	gen    *deltaGen
}

// deltaGen is one table in a Delta source's folder: its log and what was
// read of it. A loaded state, and the plans and reads made from it, keep
// their gen, whatever happens to the folder meanwhile.
type deltaGen struct {
	log  *Table
	fsys fs.FS
	name string

	// mu guards lineage, lineageFirst, and schemas.
	mu sync.Mutex
	// lineage are the lineage entries of the versions read so far, from
	// the oldest served on, in order (see load); loaded tables share its
	// prefixes, so an entry never changes once added.
	lineage []lake.Commit
	// lineageFirst is how lineage's oldest entry was found: see
	// lineageStart.
	lineageFirst lineageStart
	// schemas are the parsed schemas, by metaData content.
	schemas map[string]*deltaSchema
}

// NewSource serves the Delta table whose files fsys holds (rooted at
// the table's root folder) under name; opts are the log's options
// (WithRoot). It fails with the log's error when the folder holds no
// Delta table.
func NewSource(ctx context.Context, fsys fs.FS, name string, opts ...Option) (*Source, error) {
	s := &Source{fsys: fsys, name: name, opts: opts}
	if err := s.reset(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// reset opens the log afresh and empties the caches.
func (s *Source) reset(ctx context.Context) error {
	log, err := Open(ctx, s.fsys, s.name, s.opts...)
	if err != nil {
		return deltaError(s.name, err)
	}
	vs, err := log.Versions(ctx)
	if err != nil {
		return deltaError(s.name, err)
	}
	g := &deltaGen{log: log, fsys: s.fsys, name: s.name, schemas: map[string]*deltaSchema{}}
	s.mu.Lock()
	s.origin, s.gen = vs.Origin, g
	s.mu.Unlock()
	return nil
}

// Load returns the table's current state: its versions and their commits,
// as the engine's Table. When the folder holds another table than the one
// read before (deleted and created again), what was read of the old one
// is dropped first: versions of the two are unrelated.
func (s *Source) Load(ctx context.Context) (lake.Table, error) {
	s.mu.Lock()
	g, origin := s.gen, s.origin
	s.mu.Unlock()
	// One listing of the log tells both the versions and whether the
	// folder still holds the same table.
	vs, err := g.log.Versions(ctx)
	if err != nil {
		return nil, deltaError(g.name, err)
	}
	if vs.Origin != origin {
		// Log cleanup also changes the oldest file: starting over then
		// costs reads, never a wrong answer.
		if err := s.reset(ctx); err != nil {
			return nil, err
		}
		s.mu.Lock()
		g = s.gen
		s.mu.Unlock()
		if vs, err = g.log.Versions(ctx); err != nil {
			return nil, deltaError(g.name, err)
		}
	}
	return g.load(ctx, vs)
}

// deltaError classifies an error of the Delta log for the engine.
func deltaError(name string, err error) error {
	switch {
	case errors.Is(err, ErrLogCleaned):
		return fmt.Errorf("%w: %w", lake.ErrResyncRequired, err)
	case errors.Is(err, ErrVersionNotFound):
		return fmt.Errorf("%w: %w", lake.ErrSnapshotNotFound, err)
	case errors.Is(err, ErrUnsupportedFeature), errors.Is(err, ErrUnsupported):
		return fmt.Errorf("%w: %w", lake.ErrUnsupported, err)
	case errors.Is(err, storage.ErrOutsideRoot):
		// A log file that a symbolic link leads out of the table's root.
		return fmt.Errorf("%w: table %s: %w", lake.ErrUnsupported, name, err)
	case errors.Is(err, ErrCorrupt), errors.Is(err, ErrNotTable):
		return fmt.Errorf("%w: %w", lake.ErrUnreadable, err)
	case errors.Is(err, fs.ErrNotExist), lake.StorageFault(err), lake.StorageDown(err):
		return lake.ReadError(name, 0, "a file of its log", err)
	}
	return err
}

// deltaTable is one loaded state of a Delta table behind the engine's
// Table seam. Versions are its snapshots: version v's id, sequence number
// and commit_seq are v, and its parent is v-1.
type deltaTable struct {
	src      *deltaGen
	versions Versions
	// first is the oldest version served; lineage has the versions from
	// first to the latest, in order.
	first         int64
	lineage       []lake.Commit
	readerVersion int
	// keepsLineage is set when the latest version has row tracking.
	keepsLineage bool
}

func (t *deltaTable) Format() string     { return lake.FormatDelta }
func (t *deltaTable) FormatVersion() int { return t.readerVersion }

func (t *deltaTable) History(head *int64) lake.History {
	h := lake.History{Commits: t.lineage, CountsCommits: true, TimeOrdered: true}
	if head != nil {
		n := int(*head - t.first + 1)
		if n <= 0 || n > len(t.lineage) {
			h.Commits = nil
		} else {
			h.Commits = t.lineage[:n:n]
		}
	}
	if t.first > 0 {
		h.Expired, h.ExpiredBelow = true, t.first
	}
	return h
}

func (t *deltaTable) HasCommit(id int64) bool { return id >= t.first && id <= t.versions.Latest }

// Ref fails: a Delta table has one line of versions, and no branches or
// tags (a version is named by its number or its time).
func (t *deltaTable) Ref(_ context.Context, name string) (lake.Ref, lake.Table, error) {
	return lake.Ref{}, nil, fmt.Errorf("%w: a Delta table has no branches or tags, so it has no ref %q: name a "+
		"version by from_snapshot/to_snapshot or a time by from_timestamp_ms/to_timestamp_ms", lake.ErrNoRefs, name)
}

func (t *deltaTable) Schema(ctx context.Context, s *lake.Commit) (*lake.Schema, error) {
	v := t.versions.Latest
	if s != nil {
		v = s.ID
	}
	sc, err := t.src.schema(ctx, v)
	if err != nil {
		return nil, err
	}
	return sc.logical, nil
}

func (t *deltaTable) Planner(_ context.Context, opts lake.PlanOptions) (lake.Planner, error) {
	return &deltaPlanner{src: t.src, name: opts.Table, prune: opts.Prune}, nil
}

func (t *deltaTable) State(ctx context.Context, opts lake.StateOptions, s lake.Commit) (lake.LiveFiles, error) {
	snap, err := t.src.log.Snapshot(ctx, s.ID)
	if err != nil {
		return nil, deltaError(opts.Table, err)
	}
	files := deltaLive{src: t.src}
	for _, a := range snap.Files {
		files.files = append(files.files, deltaFile{path: a.Path, partition: a.PartitionValues,
			baseRowID: a.BaseRowID, rowVersion: a.DefaultRowCommitVersion,
			dv: a.DeletionVector, size: a.Size, rows: recordCount(a.Stats)})
	}
	return files, nil
}
