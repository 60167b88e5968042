package feed

import (
	"context"
	"errors"
	"fmt"
)

// What a stream does at a gap (StreamRequest.OnGap).
const (
	// OnGapFail ends the stream with ErrResyncRequired after its
	// StreamGap event: the default.
	OnGapFail = ""
	// OnGapResync streams the full state at the current snapshot after the
	// StreamGap event, then the changes of every later commit.
	OnGapResync = "resync"
)

// Gap describes where a stream lost its place: the snapshot it would have
// gone on from left the table's retained history (it expired, or the
// history was rewritten), so the changes since are no longer known.
type Gap struct {
	// Lost is the snapshot the stream would have gone on from: a
	// consumer's acknowledged snapshot, the request's from_snapshot or the
	// stream's own cursor; NoSnapshot for the start of the history.
	Lost int64
	// Earliest is the earliest snapshot a stream can start from now (as
	// from_snapshot); NoSnapshot when the table has no snapshot.
	Earliest int64
	// Current is the table's current snapshot, whose full state a resync
	// streams; NoSnapshot when the table has none.
	Current int64
	// Reason is the ErrResyncRequired error that says why.
	Reason error
}

// newGap describes the gap that cause (an ErrResyncRequired error) reports
// on the history hist, with the stream standing at lost.
func newGap(hist History, lost *int64, cause error) Gap {
	g := Gap{Lost: NoSnapshot, Earliest: NoSnapshot, Current: NoSnapshot, Reason: cause}
	if lost != nil {
		g.Lost = *lost
	}
	if n := len(hist.Snapshots); n > 0 {
		g.Current = hist.Snapshots[n-1].ID
		g.Earliest = hist.Snapshots[0].ID
		if e, ok := hist.EarliestStart(); ok {
			g.Earliest = e
		}
	}
	return g
}

// lostAt is the snapshot a start position would have gone on from: the
// consumer's acknowledged snapshot, else the request's from_snapshot (nil
// for neither).
func (s *streamer) lostAt() *int64 {
	if s.req.FromSnapshot != nil {
		return s.req.FromSnapshot
	}
	if s.req.Resume != nil {
		return &s.req.Resume.Snapshot
	}
	return nil
}

// gap handles a stream that cannot go on from where it stands (cause wraps
// ErrResyncRequired; any other error is returned as it is). When the
// snapshot it stands at is still readable though the commits after it
// expired (a protected consumer's tag keeps it), the changes since are
// still known as a whole: it streams them as one coalesced window (see
// StrategyCoalesced) and returns the position after the current snapshot.
// Else it yields a StreamGap event, a 0-row batch, and then with
// OnGapResync returns the position of the current snapshot's full state,
// from which the stream goes on; else it returns cause, which ends the
// stream. Never a silent skip.
func (s *streamer) gap(ctx context.Context, lost *int64, cause error) (position, error) {
	if !errors.Is(cause, ErrResyncRequired) {
		return position{}, cause
	}
	hist := s.history() // on a ref, its own lineage: its head is the current snapshot
	if ok, err := s.coalesce(ctx, lost, hist); err != nil || ok {
		if err != nil {
			return position{}, err
		}
		cur := &hist.Snapshots[len(hist.Snapshots)-1]
		return position{from: &cur.ID, current: cur, at: *cur, how: s.how}, nil
	}
	g := newGap(hist, lost, cause)
	if s.how == "" {
		s.how = "a gap: " + onGapName(s.req.OnGap)
	}
	if err := s.startedAtGap(ctx, hist); err != nil {
		return position{}, err
	}
	rec := emptyRecord(s.e.opts.Allocator, s.schema)
	at := s.at
	if lost != nil && at.ID != *lost {
		at = Snapshot{ID: *lost}
		if r := s.req.Resume; r != nil && r.Snapshot == *lost {
			at.CommitSeq = r.CommitSeq // what the consumer's progress kept of it
		}
	}
	ev := StreamEvent{Kind: StreamGap, Batch: Batch{Record: rec, Snapshot: at}, Cursor: s.at, Gap: &g}
	if err := s.emit(ctx, ev); err != nil {
		return position{}, err
	}
	if s.req.OnGap != OnGapResync {
		return position{}, cause
	}
	n := len(hist.Snapshots)
	if n == 0 {
		return position{}, fmt.Errorf("%w (and the table has no snapshot to resync to)", cause)
	}
	cur := &hist.Snapshots[n-1]
	return position{state: cur, from: &cur.ID, current: cur, at: *cur, how: "resync after a gap"}, nil
}

// onGapName names an OnGap value for logs.
func onGapName(v string) string {
	if v == OnGapFail {
		return "fail"
	}
	return v
}

// startedAtGap yields StreamStarted, when the stream has not yet, with the
// schema of the table's current snapshot: the history before it may not
// be readable.
func (s *streamer) startedAtGap(ctx context.Context, hist History) error {
	n := len(hist.Snapshots)
	if s.schema != nil || n == 0 {
		return s.started(s.pin(ctx), nil)
	}
	cur := hist.Snapshots[n-1].ID
	w := s.shape()
	w.FromSnapshot, w.ToSnapshot = &cur, &cur
	schema, err := s.e.Schema(s.pin(ctx), w)
	if err != nil {
		return err
	}
	return s.started(ctx, schema)
}
