package feed

import (
	"context"
	"errors"
	"iter"
	"slices"
	"time"
)

// WatchCommits yields the table's commit position, then one position per
// new commit to its main branch, in commit order, as the table's watcher
// sees them land (after a rollback: the new position). The watcher is
// shared with every follow stream and watch of the table: it loads the
// table about once per PollInterval however many watch it, and a watch
// starts from its latest load when that is less than PollInterval old. For
// a table without snapshots the first position has no snapshot. It ends
// only with an error: ctx's, or a failure other than a transient one
// (transient reports those; nil: errors wrapping ErrStorageUnavailable),
// which it retries, waiting from PollInterval up to MaxBackoff and telling
// retrying (when set) of each.
func (e *Engine) WatchCommits(ctx context.Context, table string, opts FollowOptions, transient func(error) bool,
	retrying func(err error, wait time.Duration)) iter.Seq2[TableStatus, error] {
	return e.WatchCommitsOn(ctx, table, "", opts, transient, retrying)
}

// WatchCommitsOn is WatchCommits on the table's branch or tag ref (empty:
// the main branch): it yields the ref's head, then one position per new
// commit on the ref's lineage (a tag moved elsewhere: its new position),
// each with the ref (its Head the position's snapshot). An unknown ref,
// or one dropped while watched, ends it with ErrRefNotFound.
func (e *Engine) WatchCommitsOn(ctx context.Context, table, ref string, opts FollowOptions,
	transient func(error) bool, retrying func(err error, wait time.Duration)) iter.Seq2[TableStatus, error] {
	opts = opts.WithDefaults()
	if transient == nil {
		transient = func(err error) bool { return errors.Is(err, ErrStorageUnavailable) }
	}
	return func(yield func(TableStatus, error) bool) {
		sub := e.watch(table, opts.PollInterval)
		defer sub.close()
		idle := func(wake <-chan struct{}) error {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-wake:
				return nil
			}
		}
		var last *Snapshot
		var seen uint64
		first := true
		delay := opts.PollInterval
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		defer timer.Stop()
		for {
			if err := ctx.Err(); err != nil {
				yield(TableStatus{}, err)
				return
			}
			st, err := sub.next(seen, idle)
			if err != nil {
				yield(TableStatus{}, err)
				return
			}
			seen = st.seq
			if st.err != nil {
				if !transient(st.err) {
					yield(TableStatus{}, st.err)
					return
				}
				if retrying != nil {
					retrying(st.err, delay)
				}
				timer.Reset(delay)
				select {
				case <-ctx.Done():
					yield(TableStatus{}, ctx.Err())
					return
				case <-timer.C:
				}
				delay = min(2*delay, opts.MaxBackoff)
				continue
			}
			delay = opts.PollInterval
			lineage := st.history().Snapshots
			var on *Ref
			if ref != "" {
				view, r, err := onRef(ctx, table, st.tbl, ref)
				if err != nil {
					yield(TableStatus{}, err)
					return
				}
				lineage, on = historyAt(view, nil).Snapshots, r
			}
			for _, c := range newCommits(table, lineage, last, first, on) {
				if !yield(c, nil) {
					return
				}
			}
			first = false
			if n := len(lineage); n > 0 {
				c := lineage[n-1]
				last = &c
			}
		}
	}
}

// newCommits returns the positions a watch yields for a poll that found
// lineage, last being the current snapshot of the previous poll: the
// current position on the first poll; then every snapshot after last, or
// the new current snapshot when last left the lineage (a rollback). A
// watch of a ref gives its positions the ref, headed at each position.
func newCommits(table string, lineage []Snapshot, last *Snapshot, first bool, ref *Ref) []TableStatus {
	var cur *Snapshot
	if n := len(lineage); n > 0 {
		cur = &lineage[n-1]
	}
	var out []Snapshot
	switch {
	case first && cur == nil:
		return []TableStatus{{Table: table, Ref: ref}}
	case first:
		out = []Snapshot{*cur}
	case cur == nil || (last != nil && cur.ID == last.ID):
	case last == nil:
		out = lineage
	default:
		if i := slices.IndexFunc(lineage, func(x Snapshot) bool { return x.ID == last.ID }); i >= 0 {
			out = lineage[i+1:]
		} else {
			out = []Snapshot{*cur}
		}
	}
	sts := make([]TableStatus, len(out))
	for i, sn := range out {
		id := sn.ID
		sts[i] = TableStatus{Table: table, CommitSeq: sn.CommitSeq, Snapshot: &id, TimestampMs: sn.TimestampMs}
		if ref != nil {
			r := *ref
			r.Head = &id
			sts[i].Ref = &r
		}
	}
	return sts
}
