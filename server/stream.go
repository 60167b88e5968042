package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicefeed/sluice/feed"
	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
	"github.com/sluicefeed/sluice/progress"
)

// Start modes of a stream request (ChangeRequest.start).
const (
	// StartLatestFull streams the full state of the current snapshot as
	// inserts, then the changes of every later commit. The default when the
	// request gives no start and its consumer has no progress.
	StartLatestFull = "latest-full"
	// StartLatest streams the changes after the snapshot current when the
	// stream starts (on an empty table: from its first commit).
	StartLatest = "latest"
	// StartFromSnapshot streams the changes after from_snapshot.
	StartFromSnapshot = "from-snapshot"
	// StartFromSnapshotFull streams the full state at from_snapshot, then
	// the changes after it.
	StartFromSnapshotFull = "from-snapshot-full"
	// StartFromTimestamp streams the changes from the first snapshot
	// committed at or after from_timestamp_ms.
	StartFromTimestamp = "from-timestamp"
)

var startModes = []string{StartLatestFull, StartLatest, StartFromSnapshot, StartFromSnapshotFull, StartFromTimestamp}

// maxConsumerLen bounds a consumer id.
const maxConsumerLen = 200

// streamRequest is a validated stream request: a follow stream, or a
// bounded one that starts by a start mode or a consumer's progress.
type streamRequest struct {
	// window holds the table and the shape of the changes (columns,
	// filter, identity, fold_updates), without window fields.
	window      feed.Request
	follow      bool
	start       string // the start mode, "" when the request gives none
	consumer    string
	from        *int64
	fromTs      *int64
	compression string
}

// parseStream validates a stream request.
func parseStream(req *sluicev1.ChangeRequest) (streamRequest, error) {
	if !slices.Contains(compressions, req.GetCompression()) {
		return streamRequest{}, badRequestf("compression %q: want \"\" (none), \"lz4\" or \"zstd\"", req.GetCompression())
	}
	sr := streamRequest{follow: req.GetFollow(), start: req.GetStart(), consumer: req.GetConsumer(),
		from: req.FromSnapshot, fromTs: req.FromTimestampMs, compression: req.GetCompression()}
	w := windowRequest(req)
	w.FromSnapshot, w.FromTimestampMs = nil, nil
	sr.window = w
	switch {
	case req.ToSnapshot != nil || req.ToTimestampMs != nil:
		return sr, badRequestf("a stream (follow, start or consumer) has no end: leave out to_snapshot and to_timestamp_ms")
	case req.GetNetChanges():
		return sr, badRequestf("net_changes collapses a window; a stream (follow, start or consumer) sends every change")
	case sr.from != nil && sr.fromTs != nil:
		return sr, badRequestf("give from_snapshot or from_timestamp_ms, not both")
	}
	if sr.start != "" && !slices.Contains(startModes, sr.start) {
		return sr, badRequestf("start %q: want %s", sr.start, strings.Join(startModes, ", "))
	}
	switch sr.start {
	case StartFromSnapshot, StartFromSnapshotFull:
		if sr.from == nil {
			return sr, badRequestf("start %q needs from_snapshot", sr.start)
		}
	case StartFromTimestamp:
		if sr.fromTs == nil {
			return sr, badRequestf("start %q needs from_timestamp_ms", sr.start)
		}
	}
	if sr.from != nil && sr.start != "" && sr.start != StartFromSnapshot && sr.start != StartFromSnapshotFull {
		return sr, badRequestf("from_snapshot goes with start %q or %q, not %q", StartFromSnapshot,
			StartFromSnapshotFull, sr.start)
	}
	if sr.fromTs != nil && sr.start != "" && sr.start != StartFromTimestamp {
		return sr, badRequestf("from_timestamp_ms goes with start %q, not %q", StartFromTimestamp, sr.start)
	}
	if sr.consumer != "" {
		if err := checkConsumer(sr.consumer); err != nil {
			return sr, err
		}
	}
	return sr, sr.window.Validate()
}

// checkConsumer validates a consumer id.
func checkConsumer(id string) error {
	if id == "" {
		return badRequestf("consumer is required")
	}
	if len(id) > maxConsumerLen {
		return badRequestf("consumer id of %d bytes is longer than %d", len(id), maxConsumerLen)
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:@/-", r)
		if !ok {
			return badRequestf("consumer id %q: use letters, digits and . _ : @ / - only", id)
		}
	}
	return nil
}

// position is where a stream starts.
type position struct {
	// state, when set, is the snapshot whose full state is streamed first.
	state *feed.Snapshot
	// from is the exclusive start of the first window: the last snapshot
	// the stream counts as streamed; nil for the start of history.
	from *int64
	// notBefore, when set, skips the snapshots committed before it
	// (from-timestamp on a history that has not reached the time yet).
	notBefore *int64
	// current is the table's current snapshot when the stream started
	// (nil for an empty table): where a bounded stream ends.
	current *feed.Snapshot
	// at describes the from snapshot, for heartbeats (ID NoSnapshot for
	// the start of history).
	at feed.Snapshot
	// how names what decided the position, for logs.
	how string
}

// describe returns the snapshot of the lineage named id, as far as the
// lineage knows it: the expired parent of the oldest retained snapshot has
// the commit sequence just before it.
func describe(lineage []feed.Snapshot, id *int64) feed.Snapshot {
	if id == nil {
		return feed.Snapshot{ID: feed.NoSnapshot}
	}
	if i := slices.IndexFunc(lineage, func(x feed.Snapshot) bool { return x.ID == *id }); i >= 0 {
		return lineage[i]
	}
	out := feed.Snapshot{ID: *id}
	if len(lineage) > 0 {
		out.CommitSeq = lineage[0].CommitSeq - 1
	}
	return out
}

// requireProgress returns the progress store, or Unimplemented.
func (s *Server) requireProgress() (ProgressStore, error) {
	if s.progress == nil {
		return nil, errNotImplemented("durable consumers need a progress store, and this server has none")
	}
	return s.progress, nil
}

// resolveStart decides where a stream starts: an explicit from_snapshot or
// from_timestamp_ms, else the consumer's progress, else the start mode.
func (s *Server) resolveStart(ctx context.Context, sr streamRequest) (position, error) {
	pos, hist, err := s.startPosition(ctx, sr)
	if err != nil {
		return position{}, err
	}
	pos.at = describe(hist.Snapshots, pos.from)
	return pos, nil
}

func (s *Server) startPosition(ctx context.Context, sr streamRequest) (position, feed.History, error) {
	table := sr.window.Table
	hist, err := s.engine.History(ctx, table)
	if err != nil {
		return position{}, hist, err
	}
	lineage := hist.Snapshots
	pos := position{}
	if n := len(lineage); n > 0 {
		pos.current = &lineage[n-1]
	}
	mode := sr.start
	switch {
	case sr.from != nil && mode == "":
		mode = StartFromSnapshot
	case sr.fromTs != nil:
		mode = StartFromTimestamp
	case sr.from == nil && sr.consumer != "":
		store, err := s.requireProgress()
		if err != nil {
			return position{}, hist, err
		}
		cp, err := store.Get(ctx, table, sr.consumer)
		switch {
		case err == nil:
			if !hist.Startable(cp.Snapshot) {
				return position{}, hist, fmt.Errorf("%w: consumer %q acknowledged snapshot %d (commit_seq %d) of table %s, "+
					"which is no longer on the table's retained lineage (it expired, or the history was rewritten)%s; "+
					"reset the consumer (reset_consumer) and start again", feed.ErrResyncRequired, sr.consumer,
					cp.Snapshot, cp.CommitSeq, table, earliestStart(hist))
			}
			from := cp.Snapshot
			pos.from, pos.how = &from, "consumer progress"
			return pos, hist, nil
		case errors.Is(err, progress.ErrNotFound):
		default:
			return position{}, hist, err
		}
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
		if !hist.Startable(*sr.from) {
			return position{}, hist, s.badStart(ctx, sr, hist, *sr.from, "")
		}
		pos.from = sr.from
	case StartFromSnapshotFull:
		i := slices.IndexFunc(lineage, func(x feed.Snapshot) bool { return x.ID == *sr.from })
		if i < 0 {
			return position{}, hist, s.badStart(ctx, sr, hist, *sr.from, "its full state ")
		}
		pos.state, pos.from = &lineage[i], sr.from
	case StartFromTimestamp:
		ts := *sr.fromTs
		i := slices.IndexFunc(lineage, func(x feed.Snapshot) bool { return x.TimestampMs >= ts })
		switch {
		case len(lineage) == 0:
			pos.notBefore = &ts
		case i == 0 && hist.Expired:
			return position{}, hist, fmt.Errorf("%w: from_timestamp_ms %d: the first retained snapshot of table %s (%d) "+
				"was committed at %d, at or after that time, and the history before it has expired%s",
				feed.ErrResyncRequired, ts, table, lineage[0].ID, lineage[0].TimestampMs, earliestStart(hist))
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
	return pos, hist, nil
}

// earliestStart names the earliest snapshot a stream can start from, for
// messages.
func earliestStart(hist feed.History) string {
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
// known snapshot off the main lineage is InvalidArgument.
func (s *Server) badStart(ctx context.Context, sr streamRequest, hist feed.History, id int64, what string) error {
	table := sr.window.Table
	lineage := hist.Snapshots
	expired := hist.Expired
	if (expired && lineage[0].ParentID != nil && *lineage[0].ParentID == id) || hist.KnownExpired(id) {
		return fmt.Errorf("%w: snapshot %d of table %s has expired, so %scannot be read%s",
			feed.ErrResyncRequired, id, table, what, earliestStart(hist))
	}
	w := sr.window
	w.FromSnapshot = &id
	_, err := s.engine.Schema(ctx, w)
	switch {
	case err == nil:
		return fmt.Errorf("%w: snapshot %d is not on the main lineage of table %s", feed.ErrNotAncestor, id, table)
	case errors.Is(err, feed.ErrResyncRequired), errors.Is(err, feed.ErrSnapshotNotFound) && expired:
		return fmt.Errorf("%w: snapshot %d is not among the retained snapshots of table %s, whose history before "+
			"snapshot %d has expired%s", feed.ErrResyncRequired, id, table, lineage[0].ID, earliestStart(hist))
	default:
		return err
	}
}
