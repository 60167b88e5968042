package paimon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The commit kinds of a snapshot.
const (
	// CommitAppend adds data files (and changelog files).
	CommitAppend = "APPEND"
	// CommitCompact rewrites files without changing the table's rows.
	CommitCompact = "COMPACT"
	// CommitOverwrite replaces the files of partitions (or the table).
	CommitOverwrite = "OVERWRITE"
	// CommitAnalyze writes statistics only.
	CommitAnalyze = "ANALYZE"
)

const (
	snapshotDir    = "snapshot"
	snapshotPrefix = "snapshot-"
	tagDir         = "tag"
	tagPrefix      = "tag-"
	manifestDir    = "manifest"
	indexDir       = "index"
)

// Snapshot is one snapshot of a table (snapshot/snapshot-ID), or the
// snapshot a tag keeps. Log offsets, watermarks and statistics are not
// read.
type Snapshot struct {
	// Version is the snapshot format version.
	Version int `json:"version"`
	// ID is the snapshot id; snapshots are numbered 1, 2, … in commit
	// order, each the child of the one before.
	ID int64 `json:"id"`
	// SchemaID is the schema the snapshot was written with.
	SchemaID int64 `json:"schemaId"`
	// BaseManifestList names the manifest list of the files live before
	// the snapshot.
	BaseManifestList string `json:"baseManifestList"`
	// DeltaManifestList names the manifest list of the files the snapshot
	// added and removed.
	DeltaManifestList string `json:"deltaManifestList"`
	// ChangelogManifestList names the manifest list of the snapshot's
	// changelog files, if it has any.
	ChangelogManifestList *string `json:"changelogManifestList"`
	// IndexManifest names the index manifest (deletion vectors, hash
	// indexes), if any.
	IndexManifest *string `json:"indexManifest"`
	// CommitUser and CommitIdentifier identify the commit.
	CommitUser       string `json:"commitUser"`
	CommitIdentifier int64  `json:"commitIdentifier"`
	// CommitKind is APPEND, COMPACT, OVERWRITE or ANALYZE.
	CommitKind string `json:"commitKind"`
	// TimeMillis is the commit time in milliseconds since the epoch.
	TimeMillis int64 `json:"timeMillis"`
	// TotalRecordCount, DeltaRecordCount and ChangelogRecordCount count
	// records (not rows: a primary-key table's records merge).
	TotalRecordCount     *int64 `json:"totalRecordCount"`
	DeltaRecordCount     *int64 `json:"deltaRecordCount"`
	ChangelogRecordCount *int64 `json:"changelogRecordCount"`
}

// Time is the snapshot's commit time.
func (s *Snapshot) Time() time.Time { return time.UnixMilli(s.TimeMillis).UTC() }

// Parent is the id of the snapshot's parent, 0 for the first snapshot.
func (s *Snapshot) Parent() int64 { return s.ID - 1 }

// parseSnapshot decodes a snapshot (or tag) file.
func parseSnapshot(data []byte) (*Snapshot, error) {
	var s Snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	switch {
	case s.ID <= 0:
		return nil, fmt.Errorf("snapshot id %d is not positive", s.ID)
	case s.SchemaID < 0:
		return nil, fmt.Errorf("schema id %d is negative", s.SchemaID)
	case s.BaseManifestList == "" || s.DeltaManifestList == "":
		return nil, fmt.Errorf("no base or delta manifest list")
	case s.CommitKind == "":
		return nil, fmt.Errorf("no commit kind")
	}
	for _, n := range []string{s.BaseManifestList, s.DeltaManifestList, deref(s.ChangelogManifestList), deref(s.IndexManifest)} {
		if !plainName(n) {
			return nil, fmt.Errorf("file name %q is not a plain name", n)
		}
	}
	return &s, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// plainName reports a file name without folders (or empty).
func plainName(n string) bool {
	return !strings.ContainsAny(n, "/\\") && n != "." && n != ".."
}

// SnapshotRange is the snapshots a table has: earliest to latest, each
// present (expiration removes the oldest first).
type SnapshotRange struct {
	// Earliest and Latest are the first and last snapshot ids still
	// present; both 0 for a table without snapshots.
	Earliest, Latest int64
}

// Snapshots returns the range of snapshot ids the table has. It lists
// snapshot/ (the EARLIEST and LATEST hints may be stale, and are only
// read when the folder cannot be listed).
func (t *Table) Snapshots(ctx context.Context) (SnapshotRange, error) {
	if err := ctx.Err(); err != nil {
		return SnapshotRange{}, err
	}
	entries, err := fs.ReadDir(t.fsys, snapshotDir)
	if errors.Is(err, fs.ErrNotExist) {
		return SnapshotRange{}, nil
	}
	if err != nil {
		return t.snapshotsFromHints(ctx, err)
	}
	var r SnapshotRange
	for _, e := range entries {
		id, ok := numbered(e.Name(), snapshotPrefix)
		if !ok {
			continue
		}
		if r.Earliest == 0 || id < r.Earliest {
			r.Earliest = id
		}
		r.Latest = max(r.Latest, id)
	}
	return r, nil
}

// snapshotsFromHints reads the range from the LATEST hint, moved forward
// to the last snapshot that exists (Paimon writes the hint after the
// snapshot), and the EARLIEST hint, or a search for the first snapshot
// still there when that hint is missing.
func (t *Table) snapshotsFromHints(ctx context.Context, listErr error) (SnapshotRange, error) {
	hint := func(name string) (int64, error) {
		b, err := fs.ReadFile(t.fsys, path.Join(snapshotDir, name))
		if err != nil {
			return 0, fmt.Errorf("table %q: listing %s: %w (and hint %s: %w)", t.name, snapshotDir, listErr, name, err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%w: table %q: hint %s holds %q", ErrCorrupt, t.name, name, b)
		}
		return n, nil
	}
	latest, err := hint("LATEST")
	if err != nil {
		return SnapshotRange{}, err
	}
	for {
		if err := ctx.Err(); err != nil {
			return SnapshotRange{}, err
		}
		if _, err := fs.Stat(t.fsys, snapshotFile(latest+1)); err != nil {
			break
		}
		latest++
	}
	earliest, err := hint("EARLIEST")
	if err != nil || earliest > latest {
		// Without a usable EARLIEST, find the first snapshot still there:
		// expiration removes a prefix, so the present ones are a range.
		lo, hi := int64(1), latest
		for lo < hi {
			if err := ctx.Err(); err != nil {
				return SnapshotRange{}, err
			}
			mid := lo + (hi-lo)/2
			if _, err := fs.Stat(t.fsys, snapshotFile(mid)); err == nil {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		earliest = lo
	}
	return SnapshotRange{Earliest: earliest, Latest: latest}, nil
}

func snapshotFile(id int64) string {
	return path.Join(snapshotDir, snapshotPrefix+strconv.FormatInt(id, 10))
}

// numbered parses PREFIX-N file names.
func numbered(name, prefix string) (int64, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != rest {
		return 0, false
	}
	return n, true
}

// Snapshot reads snapshot id. It fails with ErrSnapshotExpired for an id
// older than the earliest snapshot (or one removed while being read) and
// ErrSnapshotNotFound for one newer than the latest.
func (t *Table) Snapshot(ctx context.Context, id int64) (*Snapshot, error) {
	if s, ok := t.snapshots.Get(id); ok {
		return s, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := fs.ReadFile(t.fsys, snapshotFile(id))
	if errors.Is(err, fs.ErrNotExist) {
		r, rerr := t.Snapshots(ctx)
		if rerr != nil {
			return nil, rerr
		}
		if id <= 0 || id > r.Latest {
			return nil, fmt.Errorf("%w: table %q: snapshot %d (latest is %d)", ErrSnapshotNotFound, t.name, id, r.Latest)
		}
		return nil, fmt.Errorf("%w: table %q: snapshot %d (earliest is %d)", ErrSnapshotExpired, t.name, id, r.Earliest)
	}
	if err != nil {
		return nil, fmt.Errorf("table %q: snapshot %d: %w", t.name, id, err)
	}
	s, err := parseSnapshot(data)
	if err != nil {
		return nil, fmt.Errorf("%w: table %q: snapshot %d: %w", ErrCorrupt, t.name, id, err)
	}
	if s.ID != id {
		return nil, fmt.Errorf("%w: table %q: file of snapshot %d holds snapshot %d", ErrCorrupt, t.name, id, s.ID)
	}
	t.snapshots.Add(id, s)
	return s, nil
}

// Latest reads the table's latest snapshot; nil for a table without
// snapshots.
func (t *Table) Latest(ctx context.Context) (*Snapshot, error) {
	r, err := t.Snapshots(ctx)
	if err != nil || r.Latest == 0 {
		return nil, err
	}
	return t.Snapshot(ctx, r.Latest)
}

// SnapshotAt returns the latest snapshot committed at or before ts, or
// ErrSnapshotNotFound when every snapshot still present is newer (the
// snapshot of that time may have expired: then ErrSnapshotExpired).
func (t *Table) SnapshotAt(ctx context.Context, ts time.Time) (*Snapshot, error) {
	r, err := t.Snapshots(ctx)
	if err != nil {
		return nil, err
	}
	ms := ts.UnixMilli()
	lo, hi := r.Earliest, r.Latest
	var found *Snapshot
	for lo <= hi && lo > 0 {
		mid := lo + (hi-lo)/2
		s, err := t.Snapshot(ctx, mid)
		if err != nil {
			return nil, err
		}
		if s.TimeMillis <= ms {
			found, lo = s, mid+1
		} else {
			hi = mid - 1
		}
	}
	if found == nil {
		if r.Earliest > 1 {
			return nil, fmt.Errorf("%w: table %q: no snapshot at or before %s still present (earliest is %d)", ErrSnapshotExpired, t.name, ts.UTC().Format(time.RFC3339Nano), r.Earliest)
		}
		return nil, fmt.Errorf("%w: table %q: no snapshot at or before %s", ErrSnapshotNotFound, t.name, ts.UTC().Format(time.RFC3339Nano))
	}
	return found, nil
}

// Tags returns the table's tags (tag/tag-NAME) and the snapshots they
// keep, sorted by name. A tag keeps its snapshot's files after the
// snapshot itself expired.
func (t *Table) Tags(ctx context.Context) ([]Tag, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := fs.ReadDir(t.fsys, tagDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("table %q: listing %s: %w", t.name, tagDir, err)
	}
	var tags []Tag
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), tagPrefix)
		if !ok || name == "" || e.IsDir() {
			continue
		}
		s, err := t.Tag(ctx, name)
		if err != nil {
			return nil, err
		}
		tags = append(tags, Tag{Name: name, Snapshot: s})
	}
	slices.SortFunc(tags, func(a, b Tag) int { return strings.Compare(a.Name, b.Name) })
	return tags, nil
}

// Tag is a named snapshot.
type Tag struct {
	// Name is the tag's name.
	Name string
	// Snapshot is the snapshot it keeps.
	Snapshot *Snapshot
}

// Tag reads the snapshot that tag name keeps; ErrSnapshotNotFound when the
// table has no such tag.
func (t *Table) Tag(ctx context.Context, name string) (*Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !plainName(name) {
		return nil, fmt.Errorf("%w: table %q: tag %q", ErrSnapshotNotFound, t.name, name)
	}
	data, err := fs.ReadFile(t.fsys, path.Join(tagDir, tagPrefix+name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: table %q: tag %q", ErrSnapshotNotFound, t.name, name)
	}
	if err != nil {
		return nil, fmt.Errorf("table %q: tag %q: %w", t.name, name, err)
	}
	s, err := parseSnapshot(data)
	if err != nil {
		return nil, fmt.Errorf("%w: table %q: tag %q: %w", ErrCorrupt, t.name, name, err)
	}
	return s, nil
}

// SnapshotList reads every snapshot still present, in lineage order
// (oldest first). A snapshot expiring while the list is read ends it with
// ErrSnapshotExpired.
func (t *Table) SnapshotList(ctx context.Context) ([]*Snapshot, error) {
	r, err := t.Snapshots(ctx)
	if err != nil || r.Latest == 0 {
		return nil, err
	}
	out := make([]*Snapshot, 0, r.Latest-r.Earliest+1)
	for id := r.Earliest; id <= r.Latest; id++ {
		s, err := t.Snapshot(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
