package feed

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// position is where a stream starts.
type position struct {
	// state, when set, is the snapshot whose full state is streamed first.
	state *Snapshot
	// from is the exclusive start of the first window: the last snapshot
	// the stream counts as streamed; nil for the start of history.
	from *int64
	// notBefore, when set, skips the snapshots committed before it
	// (from-timestamp on a history that has not reached the time yet).
	notBefore *int64
	// current is the table's current snapshot when the stream started
	// (nil for an empty table): where a bounded stream ends.
	current *Snapshot
	// at describes from (ID NoSnapshot for the start of history).
	at Snapshot
	// how names what decided the position, for logs.
	how string
}

// startPosition decides where the stream starts: an explicit FromSnapshot
// or FromTimestampMs, else the consumer's progress (Resume), else the
// start mode.
func (s *streamer) startPosition(ctx context.Context) (position, error) {
	req := s.req
	table := req.Table
	hist := s.history()
	lineage := hist.Snapshots
	pos := position{}
	if n := len(lineage); n > 0 {
		pos.current = &lineage[n-1]
	}
	mode := req.Start
	switch {
	case req.FromSnapshot != nil && mode == "":
		mode = StartFromSnapshot
	case req.FromTimestampMs != nil:
		mode = StartFromTimestamp
	case req.FromSnapshot == nil && req.Resume != nil:
		r := req.Resume
		if !hist.Startable(r.Snapshot) {
			return position{}, fmt.Errorf("%w: consumer %s acknowledged snapshot %d (commit_seq %d) of table %s, "+
				"which is no longer on the table's retained lineage (it expired, or the history was rewritten)%s; "+
				"reset the consumer (reset_consumer) and start again", ErrResyncRequired, quoteName(r.Consumer),
				r.Snapshot, r.CommitSeq, table, earliestStart(hist))
		}
		from := r.Snapshot
		pos.from, pos.how = &from, "consumer progress"
		pos.at = describe(lineage, pos.from)
		return pos, nil
	}
	if mode == "" {
		mode = StartLatestFull
	}
	pos.how = "start " + mode
	switch mode {
	case StartLatestFull:
		if pos.current != nil {
			pos.state = pos.current
			pos.from = &pos.current.ID
		}
	case StartLatest:
		if pos.current != nil {
			pos.from = &pos.current.ID
		}
	case StartFromSnapshot:
		if !hist.Startable(*req.FromSnapshot) {
			return position{}, s.badStart(ctx, hist, *req.FromSnapshot, "")
		}
		pos.from = req.FromSnapshot
	case StartFromSnapshotFull:
		i := slices.IndexFunc(lineage, func(x Snapshot) bool { return x.ID == *req.FromSnapshot })
		if i < 0 {
			return position{}, s.badStart(ctx, hist, *req.FromSnapshot, "its full state ")
		}
		pos.state, pos.from = &lineage[i], req.FromSnapshot
	case StartFromTimestamp:
		ts := *req.FromTimestampMs
		i := slices.IndexFunc(lineage, func(x Snapshot) bool { return x.TimestampMs >= ts })
		switch {
		case len(lineage) == 0:
			pos.notBefore = &ts
		case i == 0 && hist.Expired && hist.timeOrdered && lineage[0].ParentID != nil:
			// Commit times grow along the lineage (Delta): start where a
			// window from that time starts, after the expired parent of
			// the oldest retained commit.
			pos.from = lineage[0].ParentID
		case i == 0 && hist.Expired:
			return position{}, fmt.Errorf("%w: from_timestamp_ms %d: the first retained snapshot of table %s (%d) "+
				"was committed at %d, at or after that time, and the history before it has expired%s",
				ErrResyncRequired, ts, table, lineage[0].ID, lineage[0].TimestampMs, earliestStart(hist))
		case i == 0:
			// The whole history: from its start.
		case i > 0:
			pos.from = &lineage[i-1].ID
		default:
			// Later than every snapshot: wait for the first commit at or
			// after the time.
			pos.from, pos.notBefore = &lineage[len(lineage)-1].ID, &ts
		}
	}
	pos.at = describe(lineage, pos.from)
	return pos, nil
}

// describe returns the snapshot of the lineage named id, as far as the
// lineage knows it: the expired parent of the oldest retained snapshot has
// the commit sequence just before it.
func describe(lineage []Snapshot, id *int64) Snapshot {
	if id == nil {
		return Snapshot{ID: NoSnapshot}
	}
	if i := slices.IndexFunc(lineage, func(x Snapshot) bool { return x.ID == *id }); i >= 0 {
		return lineage[i]
	}
	out := Snapshot{ID: *id}
	if len(lineage) > 0 {
		out.CommitSeq = lineage[0].CommitSeq - 1
	}
	return out
}

// earliestStart names the earliest snapshot a stream can start from, for
// messages.
func earliestStart(hist History) string {
	if len(hist.Snapshots) == 0 {
		return ""
	}
	if e, ok := hist.EarliestStart(); ok {
		return fmt.Sprintf(" (the earliest snapshot a stream can start from is %d, or start latest-full)", e)
	}
	return fmt.Sprintf(" (its first snapshot is %d)", hist.Snapshots[0].ID)
}

// badStart explains why a stream cannot start from snapshot id: the
// expired parent of the oldest retained snapshot has no readable state; an
// id the table does not know is "resync required" when the table's history
// has expired (the id is most likely an expired snapshot), else NotFound; a
// known snapshot off the main lineage is ErrNotAncestor.
func (s *streamer) badStart(ctx context.Context, hist History, id int64, what string) error {
	table := s.req.Table
	lineage := hist.Snapshots
	expired := hist.Expired
	if (expired && lineage[0].ParentID != nil && *lineage[0].ParentID == id) || hist.KnownExpired(id) {
		return fmt.Errorf("%w: snapshot %d of table %s has expired, so %scannot be read%s",
			ErrResyncRequired, id, table, what, earliestStart(hist))
	}
	w := s.shape()
	w.FromSnapshot = &id
	_, err := s.e.Schema(ctx, w)
	switch {
	case err == nil:
		if s.ref != nil {
			return fmt.Errorf("%w: snapshot %d is not on the lineage of %s", ErrNotAncestor, id, refLabel(table, s.ref))
		}
		return fmt.Errorf("%w: snapshot %d is not on the main lineage of table %s", ErrNotAncestor, id, table)
	case errors.Is(err, ErrResyncRequired), errors.Is(err, ErrSnapshotNotFound) && expired:
		return fmt.Errorf("%w: snapshot %d is not among the retained snapshots of table %s, whose history before "+
			"snapshot %d has expired%s", ErrResyncRequired, id, table, lineage[0].ID, earliestStart(hist))
	default:
		return err
	}
}
