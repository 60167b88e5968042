package spark

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// Read reads the window of req through Spark and yields it as batches of
// the renderable change row (see [ChangeSchema]): op, the before and after
// images of the projected columns, the commit's version (snapshot) and
// time (ts). Changes come in lineage order, deletes before inserts within
// a commit, each update_before right before its update_after; update pairs
// whose images are equal (no-op updates) are cancelled.
//
// Each batch is forwarded as Spark sends it: the read holds one batch of
// Spark's at a time (and the one row of an update pair split across two).
// A yielded batch is released when yield returns: Retain it to keep it.
//
// The window is pinned when the read starts (an absent To is the latest
// commit then); a timestamp bound is resolved to the last commit at or
// before it with the table's History, as the native engine does. An empty
// window yields nothing and sends no query.
//
// When ctx ends, or the caller stops early, the Spark operation is
// interrupted. A server that goes away mid-read ends the sequence with
// ErrUnavailable: a read that ends without an error is complete.
func (s *Session) Read(ctx context.Context, req Request) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		if err := s.read(ctx, req, yield); err != nil {
			yield(nil, err)
		}
	}
}

func (s *Session) read(ctx context.Context, req Request, yield func(arrow.RecordBatch, error) bool) error {
	if req.Engine != EngineIcebergChangelogView && req.Engine != EngineSparkNative {
		return fmt.Errorf("%w: engine %q does not read through Spark", ErrInvalidRequest, req.Engine)
	}
	if req.Engine == EngineSparkNative && req.Table.Format == Delta {
		if err := s.enableDeltaChangelog(ctx); err != nil {
			return err
		}
	}
	hist, err := s.History(ctx, req.Table)
	if err != nil {
		return err
	}
	w, empty, err := pinWindow(req.Window, hist)
	if err != nil || empty {
		return err
	}
	data, err := s.columns(ctx, req.Table)
	if err != nil {
		return err
	}
	q, err := buildQuery(req, data, w)
	if err != nil {
		return err
	}
	times := map[int64]time.Time{}
	if req.Engine == EngineIcebergChangelogView {
		for _, c := range hist {
			times[c.Version] = c.Time
		}
		if err := s.Exec(ctx, q.call); err != nil {
			return err
		}
		defer s.dropView(ctx, q.view)
	}
	op, err := s.start(ctx, sqlPlan(q.sql), q.sql)
	if err != nil {
		return err
	}
	defer op.close()
	nproj := len(req.Columns)
	if nproj == 0 {
		nproj = len(data)
	}
	c := newCanceller(s.mem, nproj, q.image, times)
	defer c.release()
	for {
		rec, err := op.next()
		if errors.Is(err, errEndOfResult) {
			break
		}
		if err != nil {
			return err
		}
		outs, err := c.push(rec)
		rec.Release()
		if err != nil {
			return err
		}
		if !forward(outs, yield) {
			return nil
		}
	}
	outs, err := c.flush()
	if err != nil {
		return err
	}
	forward(outs, yield)
	return nil
}

// forward yields batches, releasing each after yield returns (and the
// rest when yield stops).
func forward(outs []arrow.RecordBatch, yield func(arrow.RecordBatch, error) bool) bool {
	for i, out := range outs {
		ok := yield(out, nil)
		out.Release()
		if !ok {
			for _, rest := range outs[i+1:] {
				rest.Release()
			}
			return false
		}
	}
	return true
}

// pinWindow resolves w against the table's history (oldest first): an
// absent To is the latest commit, a time the last commit at or before
// it. empty reports a window with no commits.
func pinWindow(w Window, hist []Commit) (cw changelogWindow, empty bool, err error) {
	if len(hist) == 0 {
		return cw, true, nil
	}
	index := func(b Bound, what string) (int, error) {
		if v, ok := b.Version(); ok {
			for i, c := range hist {
				if c.Version == v {
					return i, nil
				}
			}
			if v < hist[0].Version {
				return 0, fmt.Errorf("%w: %s version %d is before the table's retained history (earliest %d)",
					ErrHistoryExpired, what, v, hist[0].Version)
			}
			return 0, fmt.Errorf("%w: %s version %d is not in the table's history", ErrVersionNotFound, what, v)
		}
		t, _ := b.Time()
		at := -1
		for i, c := range hist {
			if !c.Time.After(t) {
				at = i
			}
		}
		return at, nil
	}
	to := len(hist) - 1
	if !w.To.IsZero() {
		if to, err = index(w.To, "to"); err != nil {
			return cw, false, err
		}
		if to < 0 {
			return cw, true, nil // before the first commit
		}
	}
	from := -1
	if !w.From.IsZero() {
		if from, err = index(w.From, "from"); err != nil {
			return cw, false, err
		}
	}
	if from > to {
		return cw, false, fmt.Errorf("%w: the window's start (%s) is after its end (%s)", ErrInvalidRequest, w.From, w.To)
	}
	if from == to {
		return cw, true, nil
	}
	cw.to, cw.first = hist[to].Version, hist[0].Version
	if from >= 0 {
		cw.from, cw.hasFrom = hist[from].Version, true
	}
	return cw, false, nil
}

// columns returns the table's data columns, in order (AnalyzePlan's
// schema of SELECT *).
func (s *Session) columns(ctx context.Context, t Table) ([]string, error) {
	st, err := s.schema(ctx, t.Name)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(st.GetFields()))
	for i, f := range st.GetFields() {
		names[i] = f.GetName()
	}
	return names, nil
}
