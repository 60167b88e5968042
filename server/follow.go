package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"

	"github.com/sluicefeed/sluice/feed"
	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
)

// serveStream serves a stream request on a DoGet stream: the full state or
// the changes where the stream starts, window after window up to the
// current snapshot, and then, when the request follows the table, each new
// commit as the poll sees it, with heartbeats while there is nothing to
// send. A follow stream never ends cleanly: it ends when the client
// cancels, on an error, or with Unavailable when the server shuts down.
func (s *Server) serveStream(ctx context.Context, req *sluicev1.ChangeRequest, stream flight.DataStreamWriter) error {
	sr, err := parseStream(req)
	if err != nil {
		return err
	}
	callCtx := ctx
	if sr.follow {
		if s.shutdown.Err() != nil {
			return ErrShuttingDown
		}
		var stop context.CancelFunc
		ctx, stop = context.WithCancel(ctx)
		defer stop()
		defer context.AfterFunc(s.shutdown, stop)()
	}
	f := &follower{s: s, sr: sr, stream: stream}
	defer func() {
		if f.w != nil {
			f.w.release()
		}
	}()
	err = f.run(ctx)
	if f.w != nil {
		messages, bytes := f.w.sent()
		s.log.DebugContext(callCtx, "stream done", "table", sr.window.Table, "follow", sr.follow, "consumer", sr.consumer,
			"snapshots", f.snapshots, "messages", messages, "bytes", bytes, "heartbeats", f.heartbeats)
	}
	if err != nil && sr.follow && s.shutdown.Err() != nil && callCtx.Err() == nil {
		return fmt.Errorf("%w: the follow stream of table %s ends; reconnect to resume", ErrShuttingDown, sr.window.Table)
	}
	if err != nil {
		return sendError(callCtx, err)
	}
	return nil
}

// follower runs one stream.
type follower struct {
	s      *Server
	sr     streamRequest
	stream flight.DataStreamWriter

	w        *batchWriter // nil until the first message
	lastSend time.Time    // when the last batch went out

	// cursor is the last snapshot streamed completely (or skipped): the
	// exclusive start of the next window; nil for the start of history.
	cursor *int64
	// at describes the cursor for heartbeats (ID NoSnapshot when nil).
	at feed.Snapshot

	snapshots, heartbeats int64
}

func (f *follower) run(ctx context.Context) error {
	s := f.s
	var pos position
	err := f.retry(ctx, func() error {
		var err error
		pos, err = s.resolveStart(ctx, f.sr)
		return err
	})
	if err != nil {
		return err
	}
	s.log.DebugContext(ctx, "stream starts", "table", f.sr.window.Table, "follow", f.sr.follow,
		"consumer", f.sr.consumer, "by", pos.how, "from", pos.from)
	f.at = feed.Snapshot{ID: feed.NoSnapshot}
	if pos.state != nil {
		if err := f.streamState(ctx, *pos.state); err != nil {
			return err
		}
	}
	f.cursor, f.at = pos.from, pos.at
	notBefore := pos.notBefore
	delay := s.follow.PollInterval
	for {
		var hist feed.History
		err := f.retry(ctx, func() error {
			var err error
			hist, err = s.engine.History(ctx, f.sr.window.Table)
			return err
		})
		if err != nil {
			return err
		}
		next, err := f.pending(hist)
		if err != nil {
			return err
		}
		if notBefore != nil {
			for len(next) > 0 && next[0].TimestampMs < *notBefore {
				f.advance(next[0])
				next = next[1:]
			}
			if len(next) > 0 {
				notBefore = nil
			}
		}
		if !f.sr.follow {
			// A bounded stream ends at the snapshot current when it started.
			end := -1
			if pos.current != nil {
				end = slices.IndexFunc(next, func(x feed.Snapshot) bool { return x.ID == pos.current.ID })
			}
			next = next[:end+1]
			if len(next) == 0 {
				return f.close(ctx)
			}
		}
		if len(next) == 0 {
			if err := f.wait(ctx, delay); err != nil {
				return err
			}
			continue
		}
		end := next[min(len(next), s.follow.MaxWindowSnapshots)-1]
		if err := f.streamWindow(ctx, end); err != nil {
			return err
		}
	}
}

// pending returns the snapshots of the lineage after the cursor.
func (f *follower) pending(hist feed.History) ([]feed.Snapshot, error) {
	table := f.sr.window.Table
	lineage := hist.Snapshots
	if f.cursor == nil {
		if hist.Expired {
			return nil, fmt.Errorf("%w: the history of table %s before snapshot %d has expired, so it cannot be "+
				"streamed from its start%s", feed.ErrResyncRequired, table, lineage[0].ID, earliestStart(hist))
		}
		return lineage, nil
	}
	if i := slices.IndexFunc(lineage, func(x feed.Snapshot) bool { return x.ID == *f.cursor }); i >= 0 {
		return lineage[i+1:], nil
	}
	if len(lineage) > 0 && lineage[0].ParentID != nil && *lineage[0].ParentID == *f.cursor {
		return lineage, nil
	}
	return nil, fmt.Errorf("%w: snapshot %d, where the stream stands, is no longer on the lineage of table %s "+
		"(it expired, or the history was rewritten)%s", feed.ErrResyncRequired, *f.cursor, table, earliestStart(hist))
}

// advance moves the cursor past a snapshot.
func (f *follower) advance(s feed.Snapshot) {
	id := s.ID
	f.cursor, f.at = &id, s
}

// streamState streams the full state at snapshot snap.
func (f *follower) streamState(ctx context.Context, snap feed.Snapshot) error {
	req := f.sr.window
	req.ToSnapshot = &snap.ID
	var sp *feed.StatePlan
	err := f.retry(ctx, func() error {
		var err error
		sp, err = f.s.engine.PlanState(ctx, req)
		return err
	})
	if err != nil {
		return err
	}
	if err := f.ensureWriter(sp.Schema()); err != nil {
		return err
	}
	for b, err := range f.s.engine.ReadState(ctx, sp) {
		if err != nil {
			return err
		}
		err := f.send(ctx, b, kindState)
		b.Record.Release()
		if err != nil {
			return err
		}
	}
	f.snapshots++
	f.advance(snap)
	return nil
}

// streamWindow plans the window (cursor, end] and streams it.
func (f *follower) streamWindow(ctx context.Context, end feed.Snapshot) error {
	req := f.sr.window
	req.FromSnapshot, req.ToSnapshot = f.cursor, &end.ID
	var p *feed.Plan
	err := f.retry(ctx, func() error {
		var err error
		p, err = f.s.engine.Plan(ctx, req)
		return err
	})
	if err != nil {
		return err
	}
	if err := f.ensureWriter(p.Schema()); err != nil {
		return err
	}
	for b, err := range f.s.engine.Read(ctx, p) {
		if err != nil {
			return err
		}
		complete := b.SnapshotComplete
		snap := b.Snapshot
		err := f.send(ctx, b, kindChanges)
		b.Record.Release()
		if err != nil {
			return err
		}
		if complete {
			f.snapshots++
			f.advance(snap)
		}
	}
	f.advance(end)
	return nil
}

// ensureWriter starts the Arrow stream with the schema of its first batch,
// and checks that later batches keep that schema: an Arrow stream has one,
// so a schema change ends a stream with ErrSchemaChanged.
func (f *follower) ensureWriter(schema *arrow.Schema) error {
	if f.w == nil {
		f.w = f.s.newWriter(f.stream, f.sr.window.Table, schema, f.sr.compression)
		return nil
	}
	if !f.w.schema.Equal(schema) {
		from := "the start of history"
		if f.cursor != nil {
			from = fmt.Sprintf("snapshot %d", *f.cursor)
		}
		return fmt.Errorf("%w: the schema of table %s changed after %s (the stream's change rows are %s; "+
			"from here on they are %s): open a new stream from %s to read on", ErrSchemaChanged, f.sr.window.Table,
			from, f.w.schema, schema, from)
	}
	return nil
}

// send writes one batch, unless the stream's context has ended.
func (f *follower) send(ctx context.Context, b feed.Batch, kind int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := f.w.writeKind(b, kind); err != nil {
		return err
	}
	f.lastSend = time.Now()
	return nil
}

// heartbeat sends a 0-row batch that says where the stream stands.
func (f *follower) heartbeat(ctx context.Context) error {
	if f.w == nil {
		schema, err := f.s.engine.Schema(ctx, f.sr.window)
		if err != nil {
			return err
		}
		if err := f.ensureWriter(schema); err != nil {
			return err
		}
	}
	rec := emptyRecord(f.w.schema, f)
	defer rec.Release()
	f.heartbeats++
	return f.send(ctx, feed.Batch{Record: rec, Snapshot: f.at}, kindHeartbeat)
}

func emptyRecord(schema *arrow.Schema, f *follower) arrow.RecordBatch {
	cols := make([]arrow.Array, len(schema.Fields()))
	for i, fd := range schema.Fields() {
		cols[i] = array.MakeArrayOfNull(f.s.mem, fd.Type, 0)
	}
	rec := array.NewRecordBatch(schema, cols, 0)
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// close ends a bounded stream cleanly; the schema goes out even when no
// batch did.
func (f *follower) close(ctx context.Context) error {
	if f.w == nil {
		schema, err := f.s.engine.Schema(ctx, f.sr.window)
		if err != nil {
			return err
		}
		if err := f.ensureWriter(schema); err != nil {
			return err
		}
	}
	return f.w.close()
}

// wait waits d, sending heartbeats when the stream has been quiet for the
// heartbeat interval. It returns early with the context's error.
func (f *follower) wait(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		now := time.Now()
		beat := f.lastSend.Add(f.s.follow.HeartbeatInterval)
		if f.sr.follow && !now.Before(beat) {
			if err := f.heartbeat(ctx); err != nil {
				return err
			}
			continue
		}
		if !now.Before(deadline) {
			return nil
		}
		next := deadline
		if f.sr.follow && beat.Before(next) {
			next = beat
		}
		timer.Reset(next.Sub(now))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
	}
}

// retry runs op until it succeeds; in a follow stream it retries errors
// that say the catalog or storage is unavailable, waiting from the poll
// interval up to MaxBackoff, doubling, with heartbeats meanwhile.
func (f *follower) retry(ctx context.Context, op func() error) error {
	delay := f.s.follow.PollInterval
	for {
		err := op()
		if err == nil || !f.sr.follow || !transient(err) {
			return err
		}
		f.s.log.WarnContext(ctx, "follow stream: catalog unavailable, retrying", "table", f.sr.window.Table,
			"in", delay, "error", err.Error())
		if err := f.wait(ctx, delay); err != nil {
			return err
		}
		delay = min(2*delay, f.s.follow.MaxBackoff)
	}
}

// transient reports whether an error may go away by itself: the catalog
// or storage could not be reached.
func transient(err error) bool {
	return codeOf(err) == codes.Unavailable && !errors.Is(err, ErrShuttingDown)
}
