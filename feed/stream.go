package feed

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// StreamEventKind tells what a StreamEvent carries.
type StreamEventKind int

// Kinds of stream events.
const (
	// StreamStarted is the first event of every stream, before any rows:
	// it carries the stream's schema and where it starts, and no batch.
	StreamStarted StreamEventKind = iota
	// StreamState carries rows of a full state, as inserts of its
	// snapshot; the state's last batch has SnapshotComplete true.
	StreamState
	// StreamChanges carries changes of a snapshot, as Engine.Read yields
	// them; the snapshot's last batch has SnapshotComplete true.
	StreamChanges
	// StreamHeartbeat carries a 0-row batch of a follow stream that has had
	// nothing to yield for the heartbeat interval. Its snapshot is the
	// cursor, and SnapshotComplete is false.
	StreamHeartbeat
	// StreamWindow carries a planned window (Plan) or full state
	// (StatePlan) instead of its batches, on a stream whose request sets
	// YieldPlans: the consumer reads it (Engine.Read or ReadState, or a
	// read shared with other streams) before it takes the next event. It
	// has no batch; its Cursor is where the stream stands once the read
	// is whole.
	StreamWindow
	// StreamGap carries a 0-row batch that says the stream lost its place:
	// the snapshot it would go on from has left the table's retained
	// history (Gap says which, and the earliest snapshot a stream can
	// start from now). With OnGapResync the current snapshot's full state
	// follows; else the stream ends with ErrResyncRequired.
	StreamGap
)

// String names the kind, for logs and tests.
func (k StreamEventKind) String() string {
	switch k {
	case StreamStarted:
		return "started"
	case StreamState:
		return "state"
	case StreamChanges:
		return "changes"
	case StreamHeartbeat:
		return "heartbeat"
	case StreamWindow:
		return "window"
	case StreamGap:
		return "gap"
	default:
		return fmt.Sprintf("StreamEventKind(%d)", int(k))
	}
}

// StreamEvent is one event of a stream.
type StreamEvent struct {
	Kind StreamEventKind
	// Batch holds the rows of StreamState and StreamChanges events and the
	// 0-row batch of a heartbeat; the consumer owns its Record and must
	// release it. StreamStarted has no batch (a nil Record).
	Batch Batch
	// Schema is the schema of every batch of the stream.
	Schema *arrow.Schema
	// Cursor is where the stream stands once the event is consumed: the
	// last snapshot every change of which has been yielded (a full state
	// counting as the changes up to its snapshot), from which a stream can
	// resume with StartFromSnapshot and miss nothing. Its ID is NoSnapshot
	// while there is none: before the table's first snapshot, or while a
	// full state has not been yielded whole.
	Cursor Snapshot
	// Start, on StreamStarted, says what decided where the stream starts
	// ("start latest-full", "consumer progress", ...), for logs.
	Start string
	// Plan, on StreamWindow, is the planned window to read; StatePlan the
	// planned full state (one of them is set).
	Plan      *Plan
	StatePlan *StatePlan
	// Gap, on StreamGap, describes the gap.
	Gap *Gap
	// Coalesced, on the StreamChanges events of a coalesced window (see
	// StrategyCoalesced), says from which snapshot the changes run and why
	// the commits between were coalesced; nil on others.
	Coalesced *Coalesced
}

// errStopped ends a stream whose consumer stopped taking events.
var errStopped = errors.New("feed: stream consumer stopped")

// Stream streams the changes of a table as StreamRequest says: a
// StreamStarted event, then the full state where the start mode asks for
// one, then the changes window by window (each planned with its end pinned,
// from the cursor), up to the snapshot current when the stream started.
// Without Follow the sequence then ends. With Follow it watches the table
// for new commits, yields each new commit's changes, and yields a
// heartbeat whenever it has yielded nothing for HeartbeatInterval; it ends
// only with an error, or when ctx ends (with ctx's error) or the consumer
// stops. The follow streams and WatchCommits calls of one table share one
// watcher, which loads the table's metadata once per PollInterval (the
// shortest among them) however many wait on it; a stream starts from the
// watcher's last load when that is less than PollInterval old, else from a
// load made at once, and plans its windows on the loaded metadata (see
// Poke for a wake-up before the interval). A bounded stream loads the
// table once itself.
//
// A start the retained history cannot serve is ErrResyncRequired, naming
// the earliest snapshot a stream can start from, never a silent jump; so is
// a cursor that leaves the lineage (its snapshot expired, or the history was
// rewritten). An unknown snapshot is ErrSnapshotNotFound, a known one off
// the main lineage ErrNotAncestor. When the change rows' schema changes
// under the stream (one stream has one schema) it ends with
// ErrSchemaChanged, naming the snapshot to resume from. A follow stream
// retries transient errors (see StreamRequest.Transient), with heartbeats,
// waiting from PollInterval up to MaxBackoff.
//
// Batches are produced on demand, as Engine.Read produces them.
func (e *Engine) Stream(ctx context.Context, req StreamRequest) iter.Seq2[StreamEvent, error] {
	return func(yield func(StreamEvent, error) bool) {
		req, err := req.Parse()
		if err != nil {
			yield(StreamEvent{}, err)
			return
		}
		s := &streamer{e: e, req: req, opts: req.Options.WithDefaults(), yield: yield,
			at: Snapshot{ID: NoSnapshot}}
		if s.req.Transient == nil {
			s.req.Transient = func(err error) bool { return errors.Is(err, ErrStorageUnavailable) }
		}
		if err := s.run(ctx); err != nil && !errors.Is(err, errStopped) {
			yield(StreamEvent{}, err)
		}
	}
}

// streamer runs one stream.
type streamer struct {
	e     *Engine
	req   StreamRequest
	opts  FollowOptions
	yield func(StreamEvent, error) bool

	// schema is the stream's schema, nil until StreamStarted is yielded.
	schema *arrow.Schema
	// how is what decided the start, for StreamStarted ("" until the
	// start position is known).
	how string
	// lastYield is when the last event went out.
	lastYield time.Time

	// cursor is the last snapshot yielded completely (or skipped): the
	// exclusive start of the next window; nil for the start of history.
	cursor *int64
	// at describes the cursor (ID NoSnapshot when nil).
	at Snapshot

	// sub is a follow stream's subscription to its table's watcher (nil
	// for a bounded stream).
	sub *watchSub
	// cur is the state of the table the stream works from (nil before the
	// first); seen is the watcher's number of the last state the stream
	// took, loaded or failed.
	cur  *tableState
	seen uint64
	// view is cur's table as seen on the request's ref (cur's table
	// without one), and ref that ref (nil without one).
	view Table
	ref  *Ref
}

// shape is the request's table and change shape, without a window.
func (s *streamer) shape() Request {
	r := s.req.Request
	r.FromSnapshot, r.FromTimestampMs, r.FromRef = nil, nil, ""
	return r
}

// take moves the stream on to state st of its table, as seen on the
// request's ref. A follow stream on a tag is ErrInvalidRequest: a tag
// does not move.
func (s *streamer) take(ctx context.Context, st *tableState) error {
	if s.req.Ref == "" {
		s.cur, s.view = st, st.tbl
		return nil
	}
	view, ref, err := onRef(ctx, s.req.Table, st.tbl, s.req.Ref)
	if err != nil {
		return err
	}
	if ref.Kind == RefTag && s.req.Follow {
		return fmt.Errorf("%w: %s %s of table %s names one snapshot and never moves, so it cannot be followed: "+
			"follow a branch, or read the tag's window without follow", ErrInvalidRequest, ref.Kind,
			quoteName(ref.Name), s.req.Table)
	}
	s.cur, s.view, s.ref = st, view, ref
	return nil
}

// history is the history of the lineage the stream follows: the main
// branch's, or its ref's.
func (s *streamer) history() History {
	if s.req.Ref == "" {
		return s.cur.history()
	}
	return historyAt(s.view, nil)
}

func (s *streamer) run(ctx context.Context) error {
	if s.req.Follow {
		s.sub = s.e.watch(s.req.Table, s.opts.PollInterval)
		defer s.sub.close()
	}
	var pos position
	err := s.retry(ctx, func() error {
		if err := s.refresh(ctx); err != nil {
			return err
		}
		if s.req.FromRef != "" {
			id, err := refHead(ctx, s.req.Table, s.view, "from_ref", s.req.FromRef)
			if err != nil {
				return err
			}
			if id == NoSnapshot {
				return fmt.Errorf("%w: from_ref %s of table %s is a branch without commits: leave from_ref out",
					ErrInvalidRequest, quoteName(s.req.FromRef), s.req.Table)
			}
			s.req.FromSnapshot, s.req.FromRef = &id, ""
		}
		var err error
		pos, err = s.startPosition(s.pin(ctx))
		return err
	})
	if err != nil {
		if pos, err = s.gap(ctx, s.lostAt(), err); err != nil {
			return err
		}
	}
	s.how = pos.how
	if pos.state != nil {
		if err := s.streamState(ctx, *pos.state); err != nil {
			return err
		}
	}
	s.cursor, s.at = pos.from, pos.at
	notBefore := pos.notBefore
	for {
		next, err := s.pending(s.history())
		if err != nil {
			// The cursor left the retained history under the stream.
			if pos, err = s.gap(ctx, s.cursor, err); err != nil {
				return err
			}
			if pos.state != nil {
				if err := s.streamState(ctx, *pos.state); err != nil {
					return err
				}
			}
			continue
		}
		if notBefore != nil {
			for len(next) > 0 && next[0].TimestampMs < *notBefore {
				s.advance(next[0])
				next = next[1:]
			}
			if len(next) > 0 {
				notBefore = nil
			}
		}
		if !s.req.Follow {
			// A bounded stream ends at the snapshot current when it started.
			end := -1
			if pos.current != nil {
				end = slices.IndexFunc(next, func(x Snapshot) bool { return x.ID == pos.current.ID })
			}
			next = next[:end+1]
			if len(next) == 0 {
				return s.started(ctx, nil)
			}
		}
		if len(next) == 0 {
			// Caught up: wait for the watcher's next load of the table.
			if err := s.retry(ctx, func() error { return s.refresh(ctx) }); err != nil {
				return err
			}
			continue
		}
		end := next[min(len(next), s.opts.MaxWindowSnapshots)-1]
		if err := s.streamWindow(ctx, end); err != nil {
			return err
		}
		if s.sub != nil {
			// Go on from a newer state when another stream's wait loaded one.
			if st := s.sub.newer(s.seen); st != nil {
				if err := s.take(ctx, st); err != nil {
					return err
				}
				s.seen = st.seq
			}
		}
	}
}

// refresh moves the stream on to a newer state of its table. A follow
// stream takes it from the table's watcher, shared with every stream that
// follows the table: the latest state when it is fresh (see
// watchSub.next), else the next one the watcher loads, waiting for it with
// heartbeats once the stream has started; a failed load is the error the
// stream retries or ends with. A bounded stream loads the table (once:
// its stream ends at the snapshot current then).
func (s *streamer) refresh(ctx context.Context) error {
	if s.sub == nil {
		start := time.Now()
		tbl, err := s.e.loadTable(ctx, s.req.Table)
		if err != nil {
			return err
		}
		return s.take(ctx, newTableState(0, tbl, nil, start))
	}
	st, err := s.sub.next(s.seen, func(wake <-chan struct{}) error { return s.idle(ctx, wake) })
	if err != nil {
		return err
	}
	s.seen = st.seq
	if st.err != nil {
		return st.err
	}
	return s.take(ctx, st)
}

// pin returns ctx with the stream's state of its table pinned (see
// withTable): the plans made with it read that state instead of loading
// the table again.
func (s *streamer) pin(ctx context.Context) context.Context {
	if s.cur == nil {
		return ctx
	}
	return withTable(ctx, s.req.Table, s.cur.tbl)
}

// pending returns the snapshots of the lineage after the cursor.
func (s *streamer) pending(hist History) ([]Snapshot, error) {
	table := s.req.Table
	lineage := hist.Snapshots
	if s.cursor == nil {
		if hist.Expired {
			return nil, fmt.Errorf("%w: the history of table %s before snapshot %d has expired, so it cannot be "+
				"streamed from its start%s", ErrResyncRequired, table, lineage[0].ID, earliestStart(hist))
		}
		return lineage, nil
	}
	if i := slices.IndexFunc(lineage, func(x Snapshot) bool { return x.ID == *s.cursor }); i >= 0 {
		return lineage[i+1:], nil
	}
	if len(lineage) > 0 && lineage[0].ParentID != nil && *lineage[0].ParentID == *s.cursor {
		return lineage, nil
	}
	return nil, fmt.Errorf("%w: snapshot %d, where the stream stands, is no longer on the lineage of table %s "+
		"(it expired, or the history was rewritten)%s", ErrResyncRequired, *s.cursor, table, earliestStart(hist))
}

// advance moves the cursor past a snapshot.
func (s *streamer) advance(snap Snapshot) {
	id := snap.ID
	s.cursor, s.at = &id, snap
}

// streamState yields the full state at snapshot snap.
func (s *streamer) streamState(ctx context.Context, snap Snapshot) error {
	req := s.shape()
	req.ToSnapshot = &snap.ID
	var sp *StatePlan
	err := s.retry(ctx, func() error {
		var err error
		sp, err = s.e.PlanState(s.pin(ctx), req)
		return err
	})
	if err != nil {
		return err
	}
	if err := s.started(ctx, sp.Schema()); err != nil {
		return err
	}
	if s.req.YieldPlans {
		if err := s.emit(ctx, StreamEvent{Kind: StreamWindow, StatePlan: sp, Cursor: snap}); err != nil {
			return err
		}
		s.advance(snap)
		return nil
	}
	for b, err := range s.e.ReadState(ctx, sp) {
		if err != nil {
			return err
		}
		cursor := s.at
		if b.SnapshotComplete {
			cursor = b.Snapshot
		}
		if err := s.emit(ctx, StreamEvent{Kind: StreamState, Batch: b, Cursor: cursor}); err != nil {
			return err
		}
	}
	s.advance(snap)
	return nil
}

// streamWindow plans the window (cursor, end] and yields its changes.
func (s *streamer) streamWindow(ctx context.Context, end Snapshot) error {
	req := s.shape()
	req.FromSnapshot, req.ToSnapshot = s.cursor, &end.ID
	var p *Plan
	err := s.retry(ctx, func() error {
		var err error
		p, err = s.e.Plan(s.pin(ctx), req)
		return err
	})
	if err != nil {
		return err
	}
	if err := s.started(ctx, p.Schema()); err != nil {
		return err
	}
	if s.req.YieldPlans {
		if err := s.emit(ctx, StreamEvent{Kind: StreamWindow, Plan: p, Cursor: end}); err != nil {
			return err
		}
		s.advance(end)
		return nil
	}
	for b, err := range s.e.Read(ctx, p) {
		if err != nil {
			return err
		}
		if b.SnapshotComplete {
			s.advance(b.Snapshot)
		}
		if err := s.emit(ctx, StreamEvent{Kind: StreamChanges, Batch: b, Cursor: s.at}); err != nil {
			return err
		}
	}
	s.advance(end)
	return nil
}

// started yields StreamStarted with the schema of the first batch to come
// (nil: the schema of the table's current snapshot) when it has not been
// yielded yet; after it, it checks that a batch's schema is the stream's:
// a schema change ends the stream with ErrSchemaChanged.
func (s *streamer) started(ctx context.Context, schema *arrow.Schema) error {
	if s.schema != nil {
		if schema == nil || s.schema.Equal(schema) {
			return nil
		}
		from := "the start of history"
		if s.cursor != nil {
			from = fmt.Sprintf("snapshot %d", *s.cursor)
		}
		return fmt.Errorf("%w: the schema of table %s changed after %s (the stream's change rows are %s; "+
			"from here on they are %s): open a new stream from %s to read on", ErrSchemaChanged, s.req.Table,
			from, s.schema, schema, from)
	}
	if schema == nil {
		var err error
		if schema, err = s.e.Schema(s.pin(ctx), s.shape()); err != nil {
			return err
		}
	}
	s.schema = schema
	return s.emit(ctx, StreamEvent{Kind: StreamStarted, Cursor: s.at, Start: s.how})
}

// emit yields an event, unless the stream's context has ended (then it
// releases the event's batch and returns the context's error).
func (s *streamer) emit(ctx context.Context, ev StreamEvent) error {
	if err := ctx.Err(); err != nil {
		if ev.Batch.Record != nil {
			ev.Batch.Record.Release()
		}
		return err
	}
	ev.Schema = s.schema
	if !s.yield(ev, nil) {
		return errStopped
	}
	s.lastYield = time.Now()
	return nil
}

// heartbeat yields a 0-row batch that says where the stream stands.
func (s *streamer) heartbeat(ctx context.Context) error {
	if err := s.started(ctx, nil); err != nil {
		return err
	}
	rec := emptyRecord(s.e.opts.Allocator, s.schema)
	return s.emit(ctx, StreamEvent{Kind: StreamHeartbeat, Batch: Batch{Record: rec, Snapshot: s.at}, Cursor: s.at})
}

// wait waits d; a follow stream yields heartbeats meanwhile whenever it has
// been quiet for the heartbeat interval. It returns early with the
// context's error.
func (s *streamer) wait(ctx context.Context, d time.Duration) error {
	return s.waitFor(ctx, time.Now().Add(d), nil, true)
}

// idle waits until wake is closed (the table's watcher published a state),
// with heartbeats once the stream knows where it starts. It returns early
// with the context's error.
func (s *streamer) idle(ctx context.Context, wake <-chan struct{}) error {
	return s.waitFor(ctx, time.Time{}, wake, s.how != "")
}

// waitFor waits until deadline (zero: no deadline) or until wake is closed
// (nil: never), yielding heartbeats meanwhile, when beats is set and the
// stream follows, whenever it has been quiet for the heartbeat interval.
// It returns early with the context's error.
func (s *streamer) waitFor(ctx context.Context, deadline time.Time, wake <-chan struct{}, beats bool) error {
	beats = beats && s.req.Follow
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		now := time.Now()
		beat := s.lastYield.Add(s.opts.HeartbeatInterval)
		if beats && !now.Before(beat) {
			if err := s.heartbeat(ctx); err != nil {
				return err
			}
			continue
		}
		if !deadline.IsZero() && !now.Before(deadline) {
			return nil
		}
		next := deadline
		if beats && (next.IsZero() || beat.Before(next)) {
			next = beat
		}
		var fire <-chan time.Time
		if !next.IsZero() {
			timer.Reset(next.Sub(now))
			fire = timer.C
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
			return nil
		case <-fire:
		}
	}
}

// retry runs op until it succeeds; a follow stream retries transient
// errors, waiting from the poll interval up to MaxBackoff, doubling, with
// heartbeats meanwhile.
func (s *streamer) retry(ctx context.Context, op func() error) error {
	delay := s.opts.PollInterval
	for {
		err := op()
		if err == nil || !s.req.Follow || !s.req.Transient(err) {
			return err
		}
		if s.req.Retrying != nil {
			s.req.Retrying(err, delay)
		}
		if err := s.wait(ctx, delay); err != nil {
			return err
		}
		delay = min(2*delay, s.opts.MaxBackoff)
	}
}

// emptyRecord returns a 0-row batch of schema.
func emptyRecord(mem memory.Allocator, schema *arrow.Schema) arrow.RecordBatch {
	cols := make([]arrow.Array, len(schema.Fields()))
	for i, f := range schema.Fields() {
		cols[i] = array.MakeArrayOfNull(mem, f.Type, 0)
	}
	rec := array.NewRecordBatch(schema, cols, 0)
	for _, c := range cols {
		c.Release()
	}
	return rec
}
