package feed

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/apache/iceberg-go"

	"github.com/sluicefeed/sluice/format/delta"
)

// DeltaSource serves one Delta table to the engine. It is long-lived (one
// per table, for as long as the table is served): it keeps what it read of
// the table's commits, which never change once written. It is safe for
// concurrent use.
type DeltaSource struct {
	log  *delta.Table
	fsys fs.FS
	name string

	// mu guards infos.
	mu sync.Mutex
	// infos are the lineage entries of the versions read so far.
	infos map[int64]Snapshot
	// schemas are the parsed schemas, by metaData content.
	schemas map[string]*deltaSchema
}

// NewDeltaSource serves the Delta table log, whose files fsys holds (rooted
// at the table's root folder), under name.
func NewDeltaSource(log *delta.Table, fsys fs.FS, name string) *DeltaSource {
	return &DeltaSource{log: log, fsys: fsys, name: name, infos: map[int64]Snapshot{},
		schemas: map[string]*deltaSchema{}}
}

// Load returns the table's current state: its versions and their commits,
// as the engine's Table.
func (s *DeltaSource) Load(ctx context.Context) (Table, error) {
	vs, err := s.log.Versions(ctx)
	if err != nil {
		return nil, deltaError(s.name, err)
	}
	// The lineage starts at the oldest version whose commit is there, with
	// every later one: its changes can be read without the state before
	// it. When log cleanup left only a checkpoint of the oldest readable
	// version, the lineage starts there, with no parent to start after.
	first, withCommit := max(vs.EarliestStart, 0), true
	if vs.EarliestStart > 0 {
		var err error
		if first, withCommit, err = s.oldestCommit(ctx, vs.EarliestStart); err != nil {
			return nil, err
		}
	}
	t := &deltaTable{src: s, versions: vs, first: first}
	for v := first; v <= vs.Latest; v++ {
		info, err := s.info(ctx, v, v == first && !withCommit)
		if err != nil {
			return nil, err
		}
		if v == first && first > 0 && withCommit {
			// Expired, but a window can start right after it.
			parent := v - 1
			info.ParentID = &parent
		}
		t.lineage = append(t.lineage, info)
	}
	p, _, err := s.log.Metadata(ctx, vs.Latest)
	if err != nil {
		return nil, deltaError(s.name, err)
	}
	t.readerVersion = p.MinReaderVersion
	return t, nil
}

// oldestCommit returns the oldest version at or below start (a version
// whose state can be rebuilt, every later commit present) whose commit and
// every later one are still there, or start itself with false when its
// commit is gone.
func (s *DeltaSource) oldestCommit(ctx context.Context, start int64) (int64, bool, error) {
	has := func(v int64) (bool, error) {
		_, err := s.log.Commit(ctx, v)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, delta.ErrLogCleaned), errors.Is(err, delta.ErrVersionNotFound):
			return false, nil
		}
		return false, deltaError(s.name, err)
	}
	ok, err := has(start)
	if err != nil || !ok {
		return start, false, err
	}
	v := start
	for v > 0 {
		ok, err := has(v - 1)
		if err != nil {
			return 0, false, err
		}
		if !ok {
			break
		}
		v--
	}
	return v, true, nil
}

// info returns the lineage entry of version v; oldest is set for the
// oldest readable version of a table whose earlier history was cleaned up,
// which has no parent a window can start from.
func (s *DeltaSource) info(ctx context.Context, v int64, oldest bool) (Snapshot, error) {
	s.mu.Lock()
	info, ok := s.infos[v]
	s.mu.Unlock()
	if !ok {
		info = Snapshot{ID: v, SequenceNumber: v, CommitSeq: v}
		c, err := s.log.Commit(ctx, v)
		switch {
		case err == nil:
			info.TimestampMs = c.TimestampMs()
			if c.CommitInfo != nil {
				info.Operation = c.CommitInfo.Operation
			}
		case errors.Is(err, delta.ErrLogCleaned) && oldest:
			// Only a checkpoint is left of the oldest version.
			snap, err := s.log.Snapshot(ctx, v)
			if err != nil {
				return Snapshot{}, deltaError(s.name, err)
			}
			info.TimestampMs = snap.TimestampMs
		default:
			return Snapshot{}, deltaError(s.name, err)
		}
		s.mu.Lock()
		s.infos[v] = info
		s.mu.Unlock()
	}
	if v > 0 && !oldest {
		parent := v - 1
		info.ParentID = &parent
	}
	return info, nil
}

// deltaError classifies an error of the Delta log for the engine.
func deltaError(name string, err error) error {
	switch {
	case errors.Is(err, delta.ErrLogCleaned):
		return fmt.Errorf("%w: %w", ErrResyncRequired, err)
	case errors.Is(err, delta.ErrVersionNotFound):
		return fmt.Errorf("%w: %w", ErrSnapshotNotFound, err)
	case errors.Is(err, delta.ErrUnsupportedFeature), errors.Is(err, delta.ErrUnsupported):
		return fmt.Errorf("%w: %w", ErrUnsupported, err)
	case errors.Is(err, delta.ErrCorrupt), errors.Is(err, delta.ErrNotTable):
		return fmt.Errorf("%w: %w", ErrUnreadable, err)
	case errors.Is(err, fs.ErrNotExist):
		return readError(name, 0, "a file of its log", err)
	}
	return err
}

// deltaTable is one loaded state of a Delta table behind the engine's
// Table seam. Versions are its snapshots: version v's id, sequence number
// and commit_seq are v, and its parent is v-1.
type deltaTable struct {
	src      *DeltaSource
	versions delta.Versions
	// first is the oldest version served; lineage has the versions from
	// first to the latest, in order.
	first         int64
	lineage       []Snapshot
	readerVersion int
}

func (t *deltaTable) Format() string     { return FormatDelta }
func (t *deltaTable) FormatVersion() int { return t.readerVersion }

func (t *deltaTable) history(head *int64) History {
	h := History{Snapshots: t.lineage, expiredIDs: map[int64]bool{}, version: 2, timeOrdered: true}
	if head != nil {
		n := int(*head - t.first + 1)
		if n <= 0 || n > len(t.lineage) {
			h.Snapshots = nil
		} else {
			h.Snapshots = t.lineage[:n]
		}
	}
	if t.first > 0 {
		h.Expired = true
		for v := range t.first {
			h.expiredIDs[v] = true
		}
	}
	return h
}

func (t *deltaTable) hasSnapshot(id int64) bool { return id >= t.first && id <= t.versions.Latest }

func (t *deltaTable) schemaOf(ctx context.Context, s *Snapshot) (*iceberg.Schema, error) {
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

func (t *deltaTable) planner(_ context.Context, p *Plan, prune *pruner, _ *planCache) (commitPlanner, error) {
	return &deltaPlanner{src: t.src, name: p.Table, prune: prune}, nil
}

func (t *deltaTable) files(ctx context.Context, e *Engine, p *Plan) (fileSource, error) {
	return newDeltaFiles(ctx, e, p, t.src)
}

func (t *deltaTable) planState(ctx context.Context, _ *Engine, p *Plan, s Snapshot) (liveFiles, error) {
	snap, err := t.src.log.Snapshot(ctx, s.ID)
	if err != nil {
		return nil, deltaError(p.Table, err)
	}
	files := deltaLive{}
	for _, a := range snap.Files {
		files = append(files, deltaFile{path: a.Path, partition: a.PartitionValues, dv: a.DeletionVector,
			size: a.Size, rows: recordCount(a.Stats)})
	}
	return files, nil
}
