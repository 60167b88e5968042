package registry

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/lake"
	"github.com/sluicefeed/sluice/spark"
)

// sparkOnly loads a table that Spark alone serves: a name the
// configuration routes to a Spark server (backend auto or spark) that
// Sluice cannot read itself. ok is false when the configuration does not
// route it so. The table's lineage is its history as Spark reports it
// (DESCRIBE HISTORY for Delta, the snapshots metadata table for Iceberg),
// read again on each load, as the native formats read their logs, so that
// commit_seq, list_snapshots, follow streams and durable consumers work;
// its windows go to its Spark engine. A table no Spark engine serves is
// spark.ErrNoChangeEngine (FailedPrecondition), with the verdict's reason.
func (r *sparkRouter) sparkOnly(ctx context.Context, name string) (feed.Table, bool, error) {
	if !r.mayServeAlone(name) {
		return nil, false, nil
	}
	rt, _ := r.cfg.lookup(name)
	sess := r.sessions[rt.server]
	desc, err := r.describe(ctx, name, sess, rt.name)
	if err != nil {
		return nil, true, fmt.Errorf("table %s through Spark (%s): %w", name, sess.Remote(), err)
	}
	if desc.Format == spark.Other {
		return nil, true, fmt.Errorf("%w: table %s: Spark serves it as a %q table, and Sluice takes a history "+
			"only from Delta (DESCRIBE HISTORY) and Iceberg (its snapshots table)", lake.ErrUnsupported, name,
			desc.Provider)
	}
	t := spark.Table{Name: rt.name, Format: desc.Format}
	verdict, err := r.verdict(ctx, name, sess, t)
	if err != nil {
		return nil, true, fmt.Errorf("table %s through Spark (%s), which Sluice cannot read itself: %w", name,
			sess.Remote(), err)
	}
	commits, err := sess.History(ctx, t)
	if err != nil {
		r.forget(name)
		return nil, true, fmt.Errorf("table %s through Spark (%s): %w", name, sess.Remote(), err)
	}
	v := feed.Verdict{Backend: feed.BackendSpark, Remote: sess.Remote(), Chosen: string(verdict.Chosen),
		ServerVersion: verdict.ServerVersion, NativeExpected: verdict.NativeExpected,
		NativeUsable: verdict.NativeUsable, FellBack: verdict.FellBack,
		Reason: verdict.Reason + "; Sluice cannot read the table's files: its history is Spark's"}
	r.setMetric(name, v)
	tbl := &sparkTable{format: desc.Format, schema: desc.Schema, history: sparkHistory(desc.Format, commits)}
	route := feed.Route{Verdict: v, Backend: &sparkWindows{router: r, name: name, sess: sess, table: t,
		engine: verdict.Chosen}}
	return feed.Routed(tbl, route), true, nil
}

// mayServeAlone reports whether the configuration routes name to Spark
// with a backend other than native: Spark may serve it alone.
func (r *sparkRouter) mayServeAlone(name string) bool {
	rt, ok := r.cfg.lookup(name)
	return ok && rt.backend != BackendNative
}

// describe returns the cached description of a Spark-only table, or asks
// Spark (forgotten with the verdict).
func (r *sparkRouter) describe(ctx context.Context, name string, sess *spark.Session,
	sparkName spark.TableName) (spark.Description, error) {
	r.mu.Lock()
	d, ok := r.described[name]
	r.mu.Unlock()
	if ok {
		return d, nil
	}
	d, err := sess.Describe(ctx, sparkName)
	if err != nil {
		return d, err
	}
	r.mu.Lock()
	r.described[name] = d
	r.mu.Unlock()
	return d, nil
}

// list returns the Sluice names of the tables the configuration routes to
// Spark (but for backend native): its tables entries, and the tables Spark
// lists in each routed namespace. A server that cannot list a namespace
// is skipped (logged): the listing shows the rest.
func (r *sparkRouter) list(ctx context.Context) []string {
	var names []string
	for i, s := range r.cfg.Servers {
		for name, rt := range s.Tables {
			if pick(rt.Backend, s.Backend) != BackendNative {
				names = append(names, name)
			}
		}
		for ns, rt := range s.Namespaces {
			if pick(rt.Backend, s.Backend) == BackendNative {
				continue
			}
			sparkNS, err := spark.ParseTableName(rt.Name)
			if err != nil {
				continue // Validate refused it
			}
			tables, err := r.sessions[i].ListTables(ctx, sparkNS)
			if err != nil {
				r.log.Warn("spark: cannot list a namespace", "remote", r.sessions[i].Remote(), "namespace", rt.Name,
					"err", err)
				continue
			}
			for _, t := range tables {
				if _, err := catalog.ParseName(ns + "." + t); err == nil {
					names = append(names, ns+"."+t)
				}
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// sparkHistory is a Spark-only table's lineage: a Delta table's versions
// (commit_seq the version, as natively), an Iceberg table's snapshots
// (commit_seq from commit times, as for Iceberg format v1 tables: the
// snapshots table has no sequence numbers).
func sparkHistory(f spark.Format, commits []spark.Commit) lake.History {
	h := lake.History{Commits: make([]lake.Commit, len(commits))}
	for i, c := range commits {
		lc := lake.Commit{ID: c.Version, ParentID: c.Parent, TimestampMs: c.Time.UnixMilli(),
			Operation: c.Operation}
		if f == spark.Delta {
			lc.SequenceNumber, lc.CommitSeq = c.Version, c.Version
		} else {
			var parent *lake.Commit
			if i > 0 {
				parent = &h.Commits[i-1]
			}
			lc.CommitSeq = lake.TimeCommitSeq(lc, parent)
		}
		h.Commits[i] = lc
	}
	if len(commits) == 0 {
		return h
	}
	first := commits[0]
	if f == spark.Delta {
		h.CountsCommits, h.TimeOrdered = true, true
		h.Expired, h.ExpiredBelow = first.Version > 0, first.Version
		return h
	}
	if first.Parent != nil {
		h.Expired = true
		h.ExpiredIDs = map[int64]bool{*first.Parent: true}
	}
	return h
}

// sparkTable is the lineage and schema of a table that Spark alone
// serves. It has no files for the engine to read: its windows go to
// Spark (feed.Route with Native false), and what needs the files (a
// stream's full state, a native read) is lake.ErrUnsupported.
type sparkTable struct {
	format  spark.Format
	schema  *lake.Schema
	history lake.History
}

func (t *sparkTable) Format() string {
	if t.format == spark.Delta {
		return lake.FormatDelta
	}
	return lake.FormatIceberg
}

// FormatVersion is 0: Spark does not report it.
func (t *sparkTable) FormatVersion() int { return 0 }

// History returns the main lineage, or its part up to head.
func (t *sparkTable) History(head *int64) lake.History {
	h := t.history
	if head == nil {
		return h
	}
	for i, c := range h.Commits {
		if c.ID == *head {
			h.Commits = h.Commits[:i+1]
			return h
		}
	}
	h.Commits = nil
	return h
}

// Ref refuses every branch and tag (lake.ErrUnsupported): Spark's change
// engines read a table's main branch, and Sluice cannot read this table's
// files to follow another.
func (t *sparkTable) Ref(_ context.Context, name string) (lake.Ref, lake.Table, error) {
	return lake.Ref{}, nil, fmt.Errorf("%w: ref %q: a table only Spark serves is read on its main branch, "+
		"where Spark's change engines read it", lake.ErrUnsupported, name)
}

// HasCommit reports whether id is a commit of the lineage.
func (t *sparkTable) HasCommit(id int64) bool {
	return slices.ContainsFunc(t.history.Commits, func(c lake.Commit) bool { return c.ID == id })
}

// Schema is the table's current schema, whatever the commit: Spark reads
// every window in it.
func (t *sparkTable) Schema(context.Context, *lake.Commit) (*lake.Schema, error) {
	return t.schema, nil
}

// Planner is refused: Spark computes the table's windows.
func (t *sparkTable) Planner(_ context.Context, opts lake.PlanOptions) (lake.Planner, error) {
	return nil, fmt.Errorf("%w: table %s is served by Spark alone: Sluice cannot read its files", lake.ErrUnsupported,
		opts.Table)
}

// State is refused: a full state of a table Spark alone serves would be
// read by Spark, which this version does not do.
func (t *sparkTable) State(_ context.Context, opts lake.StateOptions, _ lake.Commit) (lake.LiveFiles, error) {
	return nil, fmt.Errorf("%w: table %s is served by Spark alone, and its full state (latest-full, "+
		"from-snapshot-full) is not served: start a stream with latest or from-snapshot", lake.ErrUnsupported,
		strings.TrimSpace(opts.Table))
}
