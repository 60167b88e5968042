package delta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Snapshot is the state of a table at one version.
type Snapshot struct {
	Version  int64
	Protocol Protocol
	Metadata Metadata
	// Files are the live data files, with their deletion vectors, sorted
	// by path.
	Files []*Add
	// TimestampMs is the time of the commit at Version (see
	// Commit.TimestampMs), or the checkpoint file's modification time when
	// log cleanup removed that commit.
	TimestampMs int64

	// live are Files by path, for rolling the state forward.
	live map[string]*Add
}

// dvID returns a deletion vector's unique id ("Derived Fields" in
// PROTOCOL.md): storageType, pathOrInlineDv and "@offset" when there is an
// offset; "" without a deletion vector.
func dvID(dv *DeletionVector) string {
	if dv == nil {
		return ""
	}
	id := dv.StorageType + dv.PathOrInlineDv
	if dv.Offset != nil {
		id += "@" + strconv.Itoa(int(*dv.Offset))
	}
	return id
}

// replay rolls a state forward commit by commit ("Action Reconciliation"
// in PROTOCOL.md): the latest protocol and metaData win; a logical file is
// keyed by (path, deletion vector id) and a valid state holds one per path,
// so an add replaces the file of its path whatever its deletion vector, and
// a remove drops the file of its path only when the deletion vectors match
// (a remove of the old vector next to an add of a new one leaves the new
// one, in whatever order the commit lists them).
type replay struct {
	protocol *Protocol
	metadata *Metadata
	live     map[string]*Add
	// from is the snapshot the replay started from (nil from a checkpoint
	// or from nothing), and touched the paths changed since.
	from    *Snapshot
	touched map[string]bool
}

func newReplay(from *Snapshot) *replay {
	r := &replay{live: map[string]*Add{}, touched: map[string]bool{}, from: from}
	if from != nil {
		p, m := from.Protocol, from.Metadata
		r.protocol, r.metadata = &p, &m
		r.live = maps.Clone(from.live)
	}
	return r
}

// fromCheckpoint starts the replay from a checkpoint's state.
func (r *replay) fromCheckpoint(cp *checkpointActions) {
	r.protocol, r.metadata = cp.protocol, cp.metadata
	for _, a := range cp.adds {
		r.live[a.Path] = a
	}
}

func (r *replay) apply(c *Commit) {
	if c.Protocol != nil {
		r.protocol = c.Protocol
	}
	if c.Metadata != nil {
		r.metadata = c.Metadata
	}
	for _, rm := range c.Removes {
		if a, ok := r.live[rm.Path]; ok && dvID(a.DeletionVector) == dvID(rm.DeletionVector) {
			delete(r.live, rm.Path)
			r.touched[rm.Path] = true
		}
	}
	for _, a := range c.Adds {
		r.live[a.Path] = a
		r.touched[a.Path] = true
	}
}

// snapshot returns the replay's state as the snapshot of version.
func (r *replay) snapshot(version, timestampMs int64) *Snapshot {
	s := &Snapshot{Version: version, Protocol: *r.protocol, Metadata: *r.metadata, TimestampMs: timestampMs, live: r.live}
	if r.from == nil {
		s.Files = slices.SortedFunc(maps.Values(r.live), byPath)
		return s
	}
	// Merge the files the replay did not touch, sorted already, with the
	// touched ones still live.
	var added []*Add
	for p := range r.touched {
		if a, ok := r.live[p]; ok {
			added = append(added, a)
		}
	}
	slices.SortFunc(added, byPath)
	s.Files = make([]*Add, 0, len(r.live))
	i := 0
	for _, a := range r.from.Files {
		if r.touched[a.Path] {
			continue
		}
		for ; i < len(added) && added[i].Path < a.Path; i++ {
			s.Files = append(s.Files, added[i])
		}
		s.Files = append(s.Files, a)
	}
	s.Files = append(s.Files, added[i:]...)
	return s
}

func byPath(a, b *Add) int { return strings.Compare(a.Path, b.Path) }

// Snapshot returns the state of the table at version: its protocol,
// metadata and live files. It starts from a cached snapshot of an older
// version when there is one (a follower reads version after version),
// else from the newest checkpoint at or before version. It fails with
// ErrUnsupportedFeature when the protocol at version has reader features
// Sluice cannot read, ErrVersionNotFound beyond the latest version,
// ErrLogCleaned when log cleanup removed what the state needs, and
// ErrCorrupt for a malformed log.
func (t *Table) Snapshot(ctx context.Context, version int64) (*Snapshot, error) {
	if version < 0 {
		return nil, fmt.Errorf("%w: table %q, version %d", ErrVersionNotFound, t.name, version)
	}
	if s, ok := t.snapshots.Get(version); ok {
		return s, nil
	}
	if from := t.cachedSnapshotBefore(version, incrementalLimit); from != nil {
		s, err := t.rollForward(ctx, newReplay(from), from.Version, version)
		if err == nil {
			return t.keepSnapshot(s)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	var s *Snapshot
	err := t.withListing(ctx, func(l *listing) error {
		var err error
		s, err = t.snapshotFrom(ctx, l, version)
		return err
	})
	if err != nil {
		return nil, err
	}
	return t.keepSnapshot(s)
}

// snapshotFrom rebuilds the state at version with the log listing l. An
// error wrapping fs.ErrNotExist means a file l names is gone.
func (t *Table) snapshotFrom(ctx context.Context, l *listing, version int64) (*Snapshot, error) {
	cp, err := t.base(l, version)
	if err != nil {
		return nil, err
	}
	// Refuse an unsupported protocol before reading the files, whose
	// meaning the protocol may have changed.
	p, _, err := t.metadataFrom(ctx, version, cp)
	if err != nil {
		return nil, err
	}
	if err := t.checkSnapshotProtocol(version, p); err != nil {
		return nil, err
	}
	if from := t.cachedSnapshotBefore(version, -1); from != nil && (cp == nil || from.Version >= cp.version) {
		return t.rollForward(ctx, newReplay(from), from.Version, version)
	}
	return t.replayFromCheckpoint(ctx, cp, version)
}

// keepSnapshot caches s, or fails when Sluice cannot read its protocol.
func (t *Table) keepSnapshot(s *Snapshot) (*Snapshot, error) {
	if err := t.checkSnapshotProtocol(s.Version, s.Protocol); err != nil {
		return nil, err
	}
	t.snapshots.Add(s.Version, s)
	t.metadata.Add(s.Version, protocolMetadata{protocol: s.Protocol, metadata: s.Metadata})
	return s, nil
}

func (t *Table) checkSnapshotProtocol(version int64, p Protocol) error {
	if why := unsupportedProtocol(p); why != "" {
		return fmt.Errorf("%w: table %q, version %d: %s", ErrUnsupportedFeature, t.name, version, why)
	}
	return nil
}

// replayFromCheckpoint rebuilds the state at version from checkpoint cp
// (from commit 0 when cp is nil) and the commits after it.
func (t *Table) replayFromCheckpoint(ctx context.Context, cp *checkpoint, version int64) (*Snapshot, error) {
	r := newReplay(nil)
	after := int64(-1)
	if cp != nil {
		cpa, err := t.readCheckpoint(ctx, cp, true)
		if err != nil {
			return nil, err
		}
		r.fromCheckpoint(cpa)
		after = cp.version
		if cp.version == version {
			return t.checkpointSnapshot(ctx, r, cpa, version)
		}
	}
	return t.rollForward(ctx, r, after, version)
}

// checkpointSnapshot returns the state read from the checkpoint at version,
// with the time of the commit at version, or of the checkpoint when log
// cleanup removed that commit.
func (t *Table) checkpointSnapshot(ctx context.Context, r *replay, cpa *checkpointActions, version int64) (*Snapshot, error) {
	ts := cpa.modTime.UnixMilli()
	c, err := t.commit(ctx, version)
	switch {
	case err == nil:
		ts = c.TimestampMs()
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	return r.snapshot(version, ts), nil
}

// rollForward applies the commits after..version to r. An error wrapping
// fs.ErrNotExist means a commit file is missing.
func (t *Table) rollForward(ctx context.Context, r *replay, after, version int64) (*Snapshot, error) {
	var last *Commit
	for v := after + 1; v <= version; v++ {
		c, err := t.commit(ctx, v)
		if err != nil {
			return nil, err
		}
		r.apply(c)
		last = c
	}
	if last == nil {
		return nil, fmt.Errorf("table %q, version %d: no commit to roll forward by after version %d", t.name, version, after)
	}
	if r.protocol == nil || r.metadata == nil {
		return nil, fmt.Errorf("%w: table %q, version %d: no protocol or no metaData action in commits 0 to %d",
			ErrCorrupt, t.name, version, version)
	}
	return r.snapshot(version, last.TimestampMs()), nil
}

// cachedSnapshotBefore returns the newest cached snapshot older than
// version, at most limit versions older (any when limit < 0), or nil.
func (t *Table) cachedSnapshotBefore(version int64, limit int64) *Snapshot {
	var best *Snapshot
	for _, v := range t.snapshots.Keys() {
		if v >= version || (limit >= 0 && version-v > limit) || (best != nil && v <= best.Version) {
			continue
		}
		if s, ok := t.snapshots.Peek(v); ok {
			best = s
		}
	}
	return best
}
