package server

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sluicefeed/sluice/feed"
)

// watchCommits sends the table's commit position, then one position per
// new commit, in commit order, as the poll sees them land. It ends only
// with an error: the caller's cancellation, a failure other than an
// unavailable catalog (which it retries with backoff), or ErrShuttingDown.
func (s *Server) watchCommits(ctx context.Context, table string, send func(feed.TableStatus) error) error {
	if err := requireTable(table); err != nil {
		return err
	}
	if s.shutdown.Err() != nil {
		return ErrShuttingDown
	}
	callCtx := ctx
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(s.shutdown, stop)()
	err := s.watch(ctx, table, send)
	if s.shutdown.Err() != nil && callCtx.Err() == nil {
		return fmt.Errorf("%w: watching table %s ends; reconnect to resume", ErrShuttingDown, table)
	}
	return sendError(callCtx, err)
}

func (s *Server) watch(ctx context.Context, table string, send func(feed.TableStatus) error) error {
	var last *feed.Snapshot
	first := true
	delay := s.follow.PollInterval
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		lineage, err := s.engine.Snapshots(ctx, table)
		if err != nil {
			if !transient(err) {
				return err
			}
			s.log.WarnContext(ctx, "watch commits: catalog unavailable, retrying", "table", table, "in", delay,
				"error", err.Error())
			timer.Reset(delay)
			delay = min(2*delay, s.follow.MaxBackoff)
			continue
		}
		delay = s.follow.PollInterval
		var out []feed.Snapshot
		var cur *feed.Snapshot
		if n := len(lineage); n > 0 {
			cur = &lineage[n-1]
		}
		switch {
		case first:
			first = false
			if cur == nil {
				if err := send(feed.TableStatus{Table: table}); err != nil {
					return err
				}
			} else {
				out = []feed.Snapshot{*cur}
			}
		case cur == nil || (last != nil && cur.ID == last.ID):
		case last == nil:
			out = lineage
		default:
			if i := slices.IndexFunc(lineage, func(x feed.Snapshot) bool { return x.ID == last.ID }); i >= 0 {
				out = lineage[i+1:]
			} else {
				// The history was rewritten (a rollback): the new position.
				out = []feed.Snapshot{*cur}
			}
		}
		for _, sn := range out {
			id := sn.ID
			if err := send(feed.TableStatus{Table: table, CommitSeq: sn.CommitSeq, Snapshot: &id,
				TimestampMs: sn.TimestampMs}); err != nil {
				return err
			}
		}
		if cur != nil {
			c := *cur
			last = &c
		}
		timer.Reset(s.follow.PollInterval)
	}
}
