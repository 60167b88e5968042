package feed

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicefeed/sluice/lake"
)

// Snapshot describes one commit of a table's lineage (an Iceberg snapshot,
// a Delta version): its id, parent, sequence number, commit_seq, time,
// operation, summary and schema.
type Snapshot = lake.Commit

// History is the retained lineage of a table's branch head, oldest first,
// with what the table's metadata tells of the part that has expired.
type History struct {
	// Snapshots is the retained lineage, oldest first.
	Snapshots []Snapshot
	// Expired reports that snapshots before Snapshots[0] have expired: a
	// window cannot start at the beginning of the history.
	Expired bool
	// expiredIDs are expired snapshots the metadata still names (the
	// parent link, the snapshot log).
	expiredIDs map[int64]bool
	// countsCommits is set when commit_seq differences count commits
	// (lake.History.CountsCommits).
	countsCommits bool
	// expiredBelow, when positive, says every id in [0, expiredBelow) is an
	// expired commit (Delta versions are contiguous).
	expiredBelow int64
	// timeOrdered is set when commit times grow along the lineage, as Delta
	// versions' do: a start time before the retained history then starts
	// at the earliest start, as Delta's startingTimestamp does, when the
	// oldest retained commit can be read.
	timeOrdered bool
}

// historyOf is the history a format reports, for the engine's rules.
func historyOf(h lake.History) History {
	return History{Snapshots: h.Commits, Expired: h.Expired, expiredIDs: h.ExpiredIDs,
		countsCommits: h.CountsCommits, expiredBelow: h.ExpiredBelow, timeOrdered: h.TimeOrdered}
}

// historyAt returns the history of tbl's head (nil: the main branch's
// current commit).
func historyAt(tbl Table, head *int64) History { return historyOf(tbl.History(head)) }

// EarliestStart returns the earliest snapshot a window or stream can start
// right after, when the history has expired: the oldest retained
// snapshot's parent when its id is known (its changes can then be read
// from the oldest retained snapshot on), else the oldest retained snapshot
// itself. ok is false when the history has not expired: a window may then
// start at the beginning of the history.
func (h History) EarliestStart() (id int64, ok bool) {
	if !h.Expired || len(h.Snapshots) == 0 {
		return 0, false
	}
	if p := h.Snapshots[0].ParentID; p != nil {
		return *p, true
	}
	return h.Snapshots[0].ID, true
}

// Startable reports whether a window or stream can start right after
// snapshot id: it is on the retained lineage, or it is the earliest start.
func (h History) Startable(id int64) bool {
	if slices.ContainsFunc(h.Snapshots, func(s Snapshot) bool { return s.ID == id }) {
		return true
	}
	e, ok := h.EarliestStart()
	return ok && e == id
}

// CommitsSince returns how many commits to the lineage came after a
// snapshot with the given commit_seq that may have left the retained
// history (a consumer's acknowledged snapshot): the difference of the
// commit_seq values in format v2 and later (whose sequence numbers also
// count commits to other branches), and in format v1, whose commit_seq
// counts time, the retained snapshots after it (the commits that expired
// since are not known).
func (h History) CommitsSince(commitSeq int64) int64 {
	n := len(h.Snapshots)
	if n == 0 {
		return 0
	}
	if h.countsCommits {
		return max(0, h.Snapshots[n-1].CommitSeq-commitSeq)
	}
	i, _ := slices.BinarySearchFunc(h.Snapshots, commitSeq+1, func(s Snapshot, cs int64) int {
		return cmp.Compare(s.CommitSeq, cs)
	})
	return int64(n - i)
}

// KnownExpired reports whether id names a snapshot that the metadata says
// existed and has expired.
func (h History) KnownExpired(id int64) bool {
	return h.expiredIDs[id] || (id >= 0 && id < h.expiredBelow)
}

// EarliestHint is a parenthesized hint for messages (with a leading space):
// the earliest snapshot a window can start from, or the table's first
// snapshot; "" for an empty history.
func (h History) EarliestHint() string {
	if len(h.Snapshots) == 0 {
		return ""
	}
	if e, ok := h.EarliestStart(); ok {
		return fmt.Sprintf(" (the history before snapshot %d has expired; the earliest snapshot a window can start "+
			"from is %d)", h.Snapshots[0].ID, e)
	}
	return fmt.Sprintf(" (its first snapshot is %d)", h.Snapshots[0].ID)
}

// rangeHint is EarliestHint with the latest snapshot too: what a window
// may name.
func (h History) rangeHint() string {
	n := len(h.Snapshots)
	if n == 0 {
		return " (it has no snapshots)"
	}
	return strings.TrimSuffix(h.EarliestHint(), ")") + fmt.Sprintf("; its latest snapshot is %d)", h.Snapshots[n-1].ID)
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
// table's metadata. On a ref (onRef: tbl is the table as seen on a branch
// or tag), the window's end must be on the ref's lineage.
func resolveWindow(name string, tbl Table, req Request, onRef bool) (window, error) {
	main := historyAt(tbl, nil)

	// The end of the window.
	var head *int64
	switch {
	case req.ToSnapshot != nil && *req.ToSnapshot == NoSnapshot:
		// The empty state before the first snapshot.
	case req.ToSnapshot != nil:
		if !tbl.HasCommit(*req.ToSnapshot) {
			if main.KnownExpired(*req.ToSnapshot) {
				return window{}, fmt.Errorf("%w: to_snapshot %d of table %s has expired%s",
					ErrResyncRequired, *req.ToSnapshot, name, main.EarliestHint())
			}
			if n := len(main.Snapshots); n > 0 && tbl.Format() == FormatDelta && *req.ToSnapshot > main.Snapshots[n-1].ID {
				return window{}, fmt.Errorf("%w: to_snapshot %d is not a snapshot of table %s: it is past the latest version, %d",
					ErrSnapshotNotFound, *req.ToSnapshot, name, main.Snapshots[n-1].ID)
			}
			return window{}, fmt.Errorf("%w: to_snapshot %d is not a snapshot of table %s%s",
				ErrSnapshotNotFound, *req.ToSnapshot, name, main.rangeHint())
		}
		if onRef && !slices.ContainsFunc(main.Snapshots, func(s Snapshot) bool { return s.ID == *req.ToSnapshot }) {
			return window{}, fmt.Errorf("%w: to_snapshot %d is not on the lineage of %s%s", ErrNotAncestor,
				*req.ToSnapshot, name, main.rangeHint())
		}
		head = req.ToSnapshot
	case req.ToTimestampMs != nil:
		// As Iceberg's changelog view: the last ancestor of the current
		// snapshot committed at or before the time; before the first
		// snapshot, the window is empty.
		if s := lastAtOrBefore(main.Snapshots, *req.ToTimestampMs); s != nil {
			head = &s.ID
		} else if main.Expired {
			return window{}, fmt.Errorf("%w: to_timestamp_ms %d is before the retained history of table %s%s",
				ErrResyncRequired, *req.ToTimestampMs, name, main.EarliestHint())
		}
	case len(main.Snapshots) > 0:
		head = &main.Snapshots[len(main.Snapshots)-1].ID
	}
	if head == nil {
		// A table without snapshots, or a window ending before the first
		// one: the window is empty unless it names a start, which cannot
		// exist.
		if req.FromSnapshot != nil {
			if len(main.Snapshots) == 0 {
				return window{}, fmt.Errorf("%w: from_snapshot %d: table %s has no snapshots",
					ErrSnapshotNotFound, *req.FromSnapshot, name)
			}
			return window{}, fmt.Errorf("%w: from_snapshot %d is after the window's end (the empty state before "+
				"the first snapshot of table %s): swap them", ErrNotAncestor, *req.FromSnapshot, name)
		}
		return window{}, nil
	}
	hist := historyAt(tbl, head)
	lineage := hist.Snapshots
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
		case tbl.HasCommit(from):
			if slices.ContainsFunc(historyAt(tbl, &from).Snapshots, func(s Snapshot) bool { return s.ID == w.to.ID }) {
				return window{}, fmt.Errorf("%w: from_snapshot %d comes after to_snapshot %d on the lineage of "+
					"table %s: swap them", ErrNotAncestor, from, w.to.ID, name)
			}
			if fl := historyAt(tbl, &from).Snapshots; hist.Expired && len(fl) > 0 &&
				fl[len(fl)-1].TimestampMs < lineage[0].TimestampMs {
				// Older than the earliest retained ancestor, on a lineage
				// cut by expiry: most likely an ancestor whose successors
				// expired while it stayed readable (a tag keeps it).
				return window{}, fmt.Errorf("%w: from_snapshot %d is still readable, but the lineage of snapshot %d "+
					"in table %s no longer reaches it: the commits after it expired, so the window cannot be read "+
					"commit by commit. A stream from it (follow, or a consumer's subscription) gets their changes "+
					"as one coalesced window of net changes%s", ErrResyncRequired, from, w.to.ID, name,
					hist.EarliestHint())
			}
			return window{}, fmt.Errorf("%w: from_snapshot %d is not an ancestor of snapshot %d in table %s",
				ErrNotAncestor, from, w.to.ID, name)
		case hist.Expired || main.KnownExpired(from):
			// Most likely one of the expired snapshots: the writer may have
			// dropped every trace of its id.
			return window{}, fmt.Errorf("%w: from_snapshot %d is not among the retained snapshots of table %s%s",
				ErrResyncRequired, from, name, hist.EarliestHint())
		default:
			return window{}, fmt.Errorf("%w: from_snapshot %d is not a snapshot of table %s%s",
				ErrSnapshotNotFound, from, name, main.rangeHint())
		}
	case req.FromTimestampMs != nil:
		i := slices.IndexFunc(lineage, func(s Snapshot) bool { return s.TimestampMs > *req.FromTimestampMs })
		if i < 0 {
			i = len(lineage)
		}
		if i == 0 && hist.Expired {
			if p := lineage[0].ParentID; hist.timeOrdered && p != nil {
				from := *p
				w.from = &from
				w.snapshots = lineage
				break
			}
			return window{}, fmt.Errorf("%w: from_timestamp_ms %d is before the retained history of table %s%s",
				ErrResyncRequired, *req.FromTimestampMs, name, hist.EarliestHint())
		}
		if i > 0 {
			from := lineage[i-1].ID
			w.from = &from
		}
		w.snapshots = lineage[i:]
	default:
		if hist.Expired {
			return window{}, fmt.Errorf("%w: the history of table %s before snapshot %d has expired, so it cannot be "+
				"read from its start%s", ErrResyncRequired, name, lineage[0].ID, hist.EarliestHint())
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
