package feed

import (
	"fmt"
	"maps"
	"slices"

	"github.com/apache/iceberg-go/table"
)

// Snapshot describes one snapshot of a table's lineage.
type Snapshot struct {
	// ID is the Iceberg snapshot id.
	ID int64 `json:"snapshot"`
	// ParentID is the parent snapshot's id, nil for the first snapshot.
	ParentID *int64 `json:"parent,omitempty"`
	// SequenceNumber is the snapshot's data sequence number (0 in format
	// v1 tables).
	SequenceNumber int64 `json:"sequence_number"`
	// CommitSeq is the snapshot's position in the table's commit order:
	// its sequence number, or for format v1 tables (which have none) its
	// 1-based position in the retained lineage.
	CommitSeq int64 `json:"commit_seq"`
	// TimestampMs is the commit time in milliseconds since the epoch.
	TimestampMs int64 `json:"timestamp_ms"`
	// Operation is the snapshot summary's operation: append, overwrite,
	// delete or replace.
	Operation string `json:"operation"`
	// Summary is the snapshot summary's properties.
	Summary map[string]string `json:"summary,omitempty"`
	// SchemaID is the id of the schema the snapshot was written with.
	SchemaID int `json:"schema_id"`
}

// Lineage returns the ancestry of the snapshot `head`, oldest first, as far
// back as the metadata retains it. A nil head yields the lineage of the
// main branch's current snapshot (empty for a table with no snapshot).
func Lineage(meta table.Metadata, head *int64) []Snapshot {
	var cur *table.Snapshot
	if head == nil {
		cur = meta.CurrentSnapshot()
	} else {
		cur = meta.SnapshotByID(*head)
	}
	var chain []*table.Snapshot
	seen := map[int64]bool{}
	for cur != nil && !seen[cur.SnapshotID] {
		seen[cur.SnapshotID] = true
		chain = append(chain, cur)
		if cur.ParentSnapshotID == nil {
			break
		}
		cur = meta.SnapshotByID(*cur.ParentSnapshotID)
	}
	slices.Reverse(chain)
	out := make([]Snapshot, len(chain))
	for i, s := range chain {
		out[i] = snapshotInfo(meta, s, int64(i+1))
	}
	return out
}

func snapshotInfo(meta table.Metadata, s *table.Snapshot, position int64) Snapshot {
	info := Snapshot{
		ID:             s.SnapshotID,
		ParentID:       s.ParentSnapshotID,
		SequenceNumber: s.SequenceNumber,
		CommitSeq:      s.SequenceNumber,
		TimestampMs:    s.TimestampMs,
		SchemaID:       meta.CurrentSchema().ID,
	}
	if meta.Version() < 2 {
		info.CommitSeq = position
	}
	if s.SchemaID != nil {
		info.SchemaID = *s.SchemaID
	}
	if s.Summary != nil {
		info.Operation = string(s.Summary.Operation)
		if len(s.Summary.Properties) > 0 {
			info.Summary = maps.Clone(map[string]string(s.Summary.Properties))
		}
	}
	return info
}

// NoSnapshot, as a window's end, names the empty state of a table before its
// first snapshot (Iceberg's "no current snapshot" id).
const NoSnapshot int64 = -1

// window is a resolved change window.
type window struct {
	// from is the exclusive start; nil for the start of history.
	from *int64
	// to is the inclusive end; nil for an empty table.
	to *Snapshot
	// snapshots are the snapshots of (from, to], oldest first.
	snapshots []Snapshot
}

// resolveWindow resolves and validates the request's window against the
// table's metadata.
func resolveWindow(name string, meta table.Metadata, req Request) (window, error) {
	main := Lineage(meta, nil)

	// The end of the window.
	var head *int64
	switch {
	case req.ToSnapshot != nil && *req.ToSnapshot == NoSnapshot:
		// The empty state before the first snapshot.
	case req.ToSnapshot != nil:
		if meta.SnapshotByID(*req.ToSnapshot) == nil {
			return window{}, fmt.Errorf("%w: to_snapshot %d is not a snapshot of table %s%s",
				ErrSnapshotNotFound, *req.ToSnapshot, name, earliestHint(main))
		}
		head = req.ToSnapshot
	case req.ToTimestampMs != nil:
		// As Iceberg's changelog view: the last ancestor of the current
		// snapshot committed at or before the time; before the first
		// snapshot, the window is empty.
		if s := lastAtOrBefore(main, *req.ToTimestampMs); s != nil {
			head = &s.ID
		} else if len(main) > 0 && main[0].ParentID != nil {
			return window{}, fmt.Errorf("%w: to_timestamp_ms %d is before the retained history of table %s%s",
				ErrResyncRequired, *req.ToTimestampMs, name, earliestHint(main))
		}
	case len(main) > 0:
		head = &main[len(main)-1].ID
	}
	if head == nil {
		// A table without snapshots: the window is empty unless it names a
		// start, which cannot exist.
		if req.FromSnapshot != nil {
			return window{}, fmt.Errorf("%w: from_snapshot %d: table %s has no snapshots",
				ErrSnapshotNotFound, *req.FromSnapshot, name)
		}
		return window{}, nil
	}
	lineage := Lineage(meta, head)
	w := window{to: &lineage[len(lineage)-1]}

	// The start of the window.
	switch {
	case req.FromSnapshot != nil:
		from := *req.FromSnapshot
		w.from = &from
		i := slices.IndexFunc(lineage, func(s Snapshot) bool { return s.ID == from })
		switch {
		case i >= 0:
			w.snapshots = lineage[i+1:]
		case lineage[0].ParentID != nil && *lineage[0].ParentID == from:
			// An expired start that is still the parent of the oldest
			// retained ancestor: Iceberg accepts it as an exclusive start.
			w.snapshots = lineage
		case meta.SnapshotByID(from) != nil:
			return window{}, fmt.Errorf("%w: from_snapshot %d is not an ancestor of snapshot %d in table %s",
				ErrNotAncestor, from, w.to.ID, name)
		default:
			return window{}, fmt.Errorf("%w: from_snapshot %d is not a snapshot of table %s%s",
				ErrSnapshotNotFound, from, name, earliestHint(lineage))
		}
	case req.FromTimestampMs != nil:
		i := slices.IndexFunc(lineage, func(s Snapshot) bool { return s.TimestampMs > *req.FromTimestampMs })
		if i < 0 {
			i = len(lineage)
		}
		if i == 0 && lineage[0].ParentID != nil {
			return window{}, fmt.Errorf("%w: from_timestamp_ms %d is before the retained history of table %s; "+
				"the earliest snapshot a window can start from is %d",
				ErrResyncRequired, *req.FromTimestampMs, name, *lineage[0].ParentID)
		}
		if i > 0 {
			from := lineage[i-1].ID
			w.from = &from
		}
		w.snapshots = lineage[i:]
	default:
		if lineage[0].ParentID != nil {
			return window{}, fmt.Errorf("%w: the history of table %s before snapshot %d has expired, so it cannot be "+
				"read from its start; the earliest snapshot a window can start from is %d",
				ErrResyncRequired, name, lineage[0].ID, *lineage[0].ParentID)
		}
		w.snapshots = lineage
	}
	return w, nil
}

// lastAtOrBefore returns the last snapshot of lineage committed at or before
// ts, or nil.
func lastAtOrBefore(lineage []Snapshot, ts int64) *Snapshot {
	var out *Snapshot
	for i := range lineage {
		if lineage[i].TimestampMs <= ts {
			out = &lineage[i]
		}
	}
	return out
}

func earliestHint(lineage []Snapshot) string {
	if len(lineage) == 0 {
		return ""
	}
	first := lineage[0]
	if first.ParentID != nil {
		return fmt.Sprintf(" (the earliest snapshot a window can start from is %d)", *first.ParentID)
	}
	return fmt.Sprintf(" (its first snapshot is %d)", first.ID)
}
