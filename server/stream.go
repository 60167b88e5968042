package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"

	"github.com/sluicefeed/sluice/feed"
)

// serveStream serves an authorized stream request on a DoGet stream: it
// writes the events of the engine's stream (feed.Engine.Stream), which
// decides where the stream starts, what it sends and when it heartbeats.
// A consumer's acknowledged progress on the request's ref is where a
// stream that names it resumes. A follow stream never ends cleanly: it ends when the client
// cancels, on an error, or with Unavailable when the server shuts down.
func (s *Server) serveStream(ctx context.Context, r *request, stream flight.DataStreamWriter) error {
	sr := *r.stream
	table := sr.Table
	if r.consumer != "" {
		resume, err := s.resume(ctx, table, sr.Ref, r.consumer)
		if err != nil {
			return err
		}
		sr.Resume = resume
	}
	sr.Options, sr.Transient, sr.YieldPlans = s.follow, transient, s.cache != nil
	sr.Retrying = func(err error, wait time.Duration) {
		s.log.WarnContext(ctx, "follow stream: catalog unavailable, retrying", "table", clipName(table), "in", wait,
			"error", clipText(err.Error()))
	}
	var w *batchWriter
	defer func() {
		if w != nil {
			w.release()
		}
	}()
	var snapshots, heartbeats int64
	coalescedTo := feed.NoSnapshot // the coalesced window last logged
	serve := func(ctx context.Context) error {
		for ev, err := range s.engine.Stream(ctx, sr) {
			if err != nil {
				return err
			}
			kind := kindChanges
			switch ev.Kind {
			case feed.StreamStarted:
				s.log.DebugContext(ctx, "stream starts", "table", clipName(table), "follow", sr.Follow, "consumer", r.consumer,
					"by", ev.Start, "from", ev.Cursor.ID)
				w = s.newWriter(stream, table, ev.Schema, r.compression)
				continue
			case feed.StreamState:
				kind = kindState
			case feed.StreamHeartbeat:
				kind, heartbeats = kindHeartbeat, heartbeats+1
			case feed.StreamGap:
				g := ev.Gap
				s.log.WarnContext(ctx, "stream: resync required, the snapshot to go on from has expired",
					"table", clipName(table), "consumer", r.consumer, "lost", g.Lost, "earliest", g.Earliest,
					"on_gap", sr.OnGap)
				err := w.writeGap(ev.Batch, *g)
				ev.Batch.Record.Release()
				if err != nil {
					return err
				}
				continue
			case feed.StreamWindow:
				var rd sharedRead
				if ev.Plan != nil {
					rd = s.windowRead(ev.Plan)
				} else {
					rd = s.stateRead(ev.StatePlan)
				}
				if err := s.writeRead(ctx, w, rd, r.compression, func() { snapshots++ }); err != nil {
					return err
				}
				continue
			}
			if ev.Batch.SnapshotComplete {
				snapshots++
			}
			if c := ev.Coalesced; c != nil {
				if c.To != coalescedTo {
					coalescedTo = c.To
					s.log.WarnContext(ctx, "stream: the commits after the consumer's snapshot are gone; "+
						"their changes are coalesced into one window", "table", clipName(table), "consumer", r.consumer,
						"from", c.From, "to", c.To)
				}
				err := w.writeCoalesced(ev.Batch, *c)
				ev.Batch.Record.Release()
				if err != nil {
					return err
				}
				continue
			}
			err := w.write(ev.Batch, kind)
			ev.Batch.Record.Release()
			if err != nil {
				return err
			}
		}
		return w.close()
	}
	var err error
	if sr.Follow {
		err = s.untilShutdown(ctx, serve)
	} else {
		err = serve(ctx)
	}
	if w != nil {
		messages, bytes := w.sent()
		s.log.DebugContext(ctx, "stream done", "table", clipName(table), "follow", sr.Follow, "consumer", r.consumer,
			"snapshots", snapshots, "messages", messages, "bytes", bytes, "heartbeats", heartbeats)
	}
	if errors.Is(err, ErrShuttingDown) {
		return fmt.Errorf("%w: the follow stream of table %s ends; reconnect to resume", ErrShuttingDown, table)
	}
	if err != nil {
		return sendError(ctx, err)
	}
	return nil
}

// untilShutdown runs a call that lasts until its client leaves (a follow
// stream, WatchCommits) with a context that Shutdown ends: it returns
// ErrShuttingDown when the server shuts down first (or had), else fn's
// error, the client's cancellation as such.
func (s *Server) untilShutdown(ctx context.Context, fn func(context.Context) error) error {
	if s.shutdown.Err() != nil {
		return ErrShuttingDown
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(s.shutdown, stop)()
	err := fn(runCtx)
	switch {
	case err == nil:
		return nil
	case s.shutdown.Err() != nil && ctx.Err() == nil:
		return ErrShuttingDown
	default:
		return sendError(ctx, err)
	}
}

// transient reports whether an error may go away by itself: the catalog
// or storage could not be reached.
func transient(err error) bool {
	return codeOf(err) == codes.Unavailable && !errors.Is(err, ErrShuttingDown)
}
