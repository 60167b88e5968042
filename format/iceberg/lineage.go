package iceberg

import (
	"slices"

	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/lake"
)

// Lineage returns the ancestry of the snapshot `head`, oldest first, as far
// back as the metadata retains it. A nil head yields the lineage of the
// main branch's current snapshot (empty for a table with no snapshot).
func Lineage(meta table.Metadata, head *int64) []lake.Commit {
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
	out := make([]lake.Commit, len(chain))
	current := meta.CurrentSchema().ID // a copy of the schema per call: once, not per snapshot
	for i, s := range chain {
		out[i] = snapshotInfo(current, s)
		if meta.Version() < 2 {
			var parent *lake.Commit
			if i > 0 {
				parent = &out[i-1]
			}
			out[i].CommitSeq = v1CommitSeq(out[i], parent)
		}
	}
	return out
}

// v1CommitSeq is the commit_seq of a snapshot of a format v1 table, whose
// snapshots have no sequence number, given its parent's (nil when the
// parent is not retained): its commit time in milliseconds times
// lake.TimeCommitScale, or one more than its parent's when that is not smaller
// (commits in the same millisecond, a clock that went back).
//
// A v1 table's metadata keeps no count of its commits: expiring snapshots
// removes them, and Java, iceberg-go and pyiceberg also prune their entries
// from the snapshot log: see lake.TimeCommitSeq.
func v1CommitSeq(s lake.Commit, parent *lake.Commit) int64 { return lake.TimeCommitSeq(s, parent) }

// snapshotInfo is the lineage entry of s, a copy the metadata returned
// (its summary becomes the entry's), in a table whose current schema is
// currentSchema.
func snapshotInfo(currentSchema int, s *table.Snapshot) lake.Commit {
	info := lake.Commit{
		ID:             s.SnapshotID,
		ParentID:       s.ParentSnapshotID,
		SequenceNumber: s.SequenceNumber,
		CommitSeq:      s.SequenceNumber,
		TimestampMs:    s.TimestampMs,
		SchemaID:       currentSchema,
	}
	if s.SchemaID != nil {
		info.SchemaID = *s.SchemaID
	}
	if s.Summary != nil {
		info.Operation = string(s.Summary.Operation)
		if len(s.Summary.Properties) > 0 {
			info.Summary = map[string]string(s.Summary.Properties)
		}
	}
	return info
}

// icebergHistory returns the retained lineage of head (nil: the main
// branch's current snapshot) and what is known of its expired part.
//
// Writers leave different traces of expiry: Java (Spark) and iceberg-go
// keep the oldest retained snapshot's parent id, whose snapshot is gone;
// pyiceberg 0.12 drops that parent id. So expiry is read from every trace:
// a parent id the metadata no longer holds, a sequence number above the
// first one (v2 and later: the first snapshot of a table has sequence
// number 1, and no retained snapshot explains the gap), and the snapshot
// log naming snapshots the metadata no longer holds.
func icebergHistory(meta table.Metadata, head *int64) lake.History {
	h := lake.History{Commits: Lineage(meta, head), ExpiredIDs: map[int64]bool{}, CountsCommits: meta.Version() >= 2}
	if len(h.Commits) == 0 {
		return h
	}
	first := h.Commits[0]
	if first.ParentID != nil {
		// Lineage stops at a parent the metadata does not hold.
		h.Expired = true
		h.ExpiredIDs[*first.ParentID] = true
	}
	onLineage := make(map[int64]bool, len(h.Commits))
	for _, c := range h.Commits {
		onLineage[c.ID] = true
	}
	for entry := range meta.SnapshotLogs() {
		// The metadata holds the lineage's snapshots; others are looked up
		// (each lookup copies the snapshot).
		if !onLineage[entry.SnapshotID] && meta.SnapshotByID(entry.SnapshotID) == nil {
			h.ExpiredIDs[entry.SnapshotID] = true
			if entry.TimestampMs <= first.TimestampMs {
				h.Expired = true
			}
		}
	}
	if meta.Version() >= 2 && first.SequenceNumber > 1 {
		// The first snapshot of a table has sequence number 1. A gap below
		// the oldest retained one is expired history, unless a retained
		// snapshot off this lineage (another branch, a replaced table's
		// history) holds the lower numbers.
		explained := false
		for _, s := range meta.Snapshots() {
			if s.SequenceNumber < first.SequenceNumber {
				explained = true
				break
			}
		}
		if !explained {
			h.Expired = true
		}
	}
	return h
}
