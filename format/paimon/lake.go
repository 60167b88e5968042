package paimon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"sync"

	"github.com/sluicefeed/sluice/internal/lib/storage"
	"github.com/sluicefeed/sluice/lake"
)

// Source serves one Paimon table to the change engine through the format
// seam (package lake). It is long-lived (one per table, for as long as the
// table is served) and keeps what it read of the table: snapshots, schemas
// and manifests never change once written. It is safe for concurrent use.
type Source struct {
	tbl *Table

	// mu guards schemas and branches.
	mu sync.Mutex
	// schemas are the engine's schemas, by Paimon schema id.
	schemas map[int64]*lake.Schema
	// branches are the sources of the table's branches read so far, by
	// name.
	branches map[string]*Source
}

// NewSource serves the Paimon table whose folder fsys is rooted at under
// name. It fails, wrapping lake.ErrUnreadable, when the folder holds no
// Paimon table.
func NewSource(ctx context.Context, fsys fs.FS, name string, opts ...Option) (*Source, error) {
	t, err := Open(ctx, fsys, name, opts...)
	if err != nil {
		return nil, lakeError(name, err)
	}
	return &Source{tbl: t, schemas: map[int64]*lake.Schema{}, branches: map[string]*Source{}}, nil
}

// branch returns the source of the table's branch name, whose folder is
// dir (branch/branch-NAME), named NAME$branch_BRANCH as Paimon names it.
func (s *Source) branch(ctx context.Context, name, dir string) (*Source, error) {
	s.mu.Lock()
	b, ok := s.branches[name]
	s.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := NewSource(ctx, branchFS{root: s.tbl.fsys, dir: dir}, s.tbl.name+"$branch_"+name, WithAllocator(s.tbl.mem))
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := s.branches[name]; ok {
		return prev, nil
	}
	s.branches[name] = b
	return b, nil
}

// Table returns the Paimon table the source serves.
func (s *Source) Table() *Table { return s.tbl }

// Load returns the table's current state as the engine's Table: its
// snapshots still present, oldest first, each the child of the one before
// (Paimon numbers snapshots 1, 2, … and expires the oldest first).
func (s *Source) Load(ctx context.Context) (lake.Table, error) {
	snaps, err := s.tbl.SnapshotList(ctx)
	if err != nil {
		return nil, lakeError(s.tbl.name, err)
	}
	lt := &lakeTable{src: s}
	for i, sn := range snaps {
		c := lake.Commit{ID: sn.ID, SequenceNumber: sn.ID, CommitSeq: sn.ID, TimestampMs: sn.TimeMillis,
			Operation: sn.CommitKind, SchemaID: int(sn.SchemaID), Summary: snapshotSummary(sn)}
		if sn.ID > 1 && i > 0 {
			// The first snapshot still present has no parent a window can
			// start after once older ones expired: the state before it is
			// gone, and with it what its changes are computed from.
			parent := sn.ID - 1
			c.ParentID = &parent
		}
		lt.lineage = append(lt.lineage, c)
		lt.snaps = append(lt.snaps, sn)
	}
	return lt, nil
}

// snapshotSummary is what a snapshot says of itself beyond the commit's
// fields, as a commit summary.
func snapshotSummary(s *Snapshot) map[string]string {
	m := map[string]string{"commit-user": s.CommitUser, "commit-identifier": strconv.FormatInt(s.CommitIdentifier, 10)}
	for k, v := range map[string]*int64{"total-record-count": s.TotalRecordCount, "delta-record-count": s.DeltaRecordCount,
		"changelog-record-count": s.ChangelogRecordCount} {
		if v != nil {
			m[k] = strconv.FormatInt(*v, 10)
		}
	}
	return m
}

// lakeSchema returns the engine's schema of Paimon schema id.
func (s *Source) lakeSchema(ctx context.Context, id int64) (*Schema, *lake.Schema, error) {
	ps, err := s.tbl.Schema(ctx, id)
	if err != nil {
		return nil, nil, lakeError(s.tbl.name, err)
	}
	s.mu.Lock()
	ls, ok := s.schemas[id]
	s.mu.Unlock()
	if ok {
		return ps, ls, nil
	}
	if ls, err = ps.LakeSchema(); err != nil {
		return nil, nil, lakeError(s.tbl.name, fmt.Errorf("table %q: %w", s.tbl.name, err))
	}
	s.mu.Lock()
	s.schemas[id] = ls
	s.mu.Unlock()
	return ps, ls, nil
}

// lakeError classifies an error of the package for the engine: an expired
// snapshot (or a file expiration removed) asks the consumer to resync, an
// unknown snapshot is not found, what the package does not read is
// unsupported, a corrupt table unreadable, and storage errors as every
// format's are.
func lakeError(name string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, lake.ErrResyncRequired), errors.Is(err, lake.ErrSnapshotNotFound),
		errors.Is(err, lake.ErrUnsupported), errors.Is(err, lake.ErrUnreadable),
		errors.Is(err, lake.ErrStorageUnavailable), errors.Is(err, lake.ErrUnknownColumn):
		return err
	case errors.Is(err, ErrSnapshotExpired):
		return fmt.Errorf("%w: %w; re-read the table's current state and follow it from there", lake.ErrResyncRequired, err)
	case errors.Is(err, ErrSnapshotNotFound):
		return fmt.Errorf("%w: %w", lake.ErrSnapshotNotFound, err)
	case errors.Is(err, ErrUnsupportedMergeEngine), errors.Is(err, ErrUnsupportedFormat), errors.Is(err, ErrUnsupported):
		return fmt.Errorf("%w: %w", lake.ErrUnsupported, err)
	case errors.Is(err, storage.ErrOutsideRoot):
		return fmt.Errorf("%w: table %s: %w", lake.ErrUnsupported, name, err)
	case errors.Is(err, ErrCorrupt), errors.Is(err, ErrNotTable):
		return fmt.Errorf("%w: %w", lake.ErrUnreadable, err)
	case errors.Is(err, fs.ErrNotExist), lake.StorageFault(err), lake.StorageDown(err):
		return lake.ReadError(name, 0, "a file of its metadata", err)
	}
	return err
}

// lakeTable is one loaded state of a Paimon table behind the engine's
// Table seam. Snapshots are its commits: snapshot id, sequence number and
// commit_seq are the id, and the parent of snapshot n is n-1.
type lakeTable struct {
	src *Source
	// lineage are the snapshots present, oldest first; snaps the same.
	lineage []lake.Commit
	snaps   []*Snapshot
}

func (t *lakeTable) Format() string { return lake.FormatPaimon }

func (t *lakeTable) FormatVersion() int {
	if len(t.snaps) == 0 {
		return 0
	}
	return t.snaps[len(t.snaps)-1].Version
}

func (t *lakeTable) first() int64 {
	if len(t.lineage) == 0 {
		return 0
	}
	return t.lineage[0].ID
}

func (t *lakeTable) History(head *int64) lake.History {
	h := lake.History{Commits: t.lineage, CountsCommits: true, TimeOrdered: true}
	if head != nil {
		n := int(*head - t.first() + 1)
		if n <= 0 || n > len(t.lineage) {
			h.Commits = nil
		} else {
			h.Commits = t.lineage[:n]
		}
	}
	if f := t.first(); f > 1 {
		h.Expired, h.ExpiredBelow = true, f
	}
	return h
}

func (t *lakeTable) HasCommit(id int64) bool {
	return len(t.lineage) > 0 && id >= t.first() && id <= t.lineage[len(t.lineage)-1].ID
}

// snapshot returns the snapshot of commit id.
func (t *lakeTable) snapshot(id int64) (*Snapshot, error) {
	if !t.HasCommit(id) {
		return nil, fmt.Errorf("%w: table %s: snapshot %d", lake.ErrSnapshotNotFound, t.src.tbl.name, id)
	}
	return t.snaps[id-t.first()], nil
}

func (t *lakeTable) Schema(ctx context.Context, c *lake.Commit) (*lake.Schema, error) {
	var id int64
	switch {
	case c != nil:
		id = int64(c.SchemaID)
	case len(t.snaps) > 0:
		id = t.snaps[len(t.snaps)-1].SchemaID
	default:
		ids, err := t.src.tbl.SchemaIDs(ctx)
		if err != nil {
			return nil, lakeError(t.src.tbl.name, err)
		}
		id = ids[len(ids)-1]
	}
	_, ls, err := t.src.lakeSchema(ctx, id)
	return ls, err
}

func (t *lakeTable) Planner(_ context.Context, opts lake.PlanOptions) (lake.Planner, error) {
	return &planner{t: t, name: opts.Table, prune: opts.Prune}, nil
}

// The seam's interfaces this package implements.
var (
	_ lake.Table      = (*lakeTable)(nil)
	_ lake.Planner    = (*planner)(nil)
	_ lake.LiveFiles  = (*fileSet)(nil)
	_ lake.LiveFiles  = (*splitSet)(nil)
	_ lake.FileDiff   = (*fileDiff)(nil)
	_ lake.ChangeFile = (*bucketDiff)(nil)
	_ lake.Stats      = (*fileStats)(nil)
)
