package feed

import (
	"context"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/util"

	"github.com/sluicefeed/sluice/filter"
	"github.com/sluicefeed/sluice/internal/lib/kernelctx"
)

// Backends that answer a table's windows (Request.Backend, Verdict.Backend).
const (
	// BackendNative is the engine reading the table's files.
	BackendNative = "native"
	// BackendSpark is a Spark Connect session (package spark).
	BackendSpark = "spark"
)

// WindowBackend answers a whole window of a table's changes elsewhere than
// in this engine (a Spark Connect session): the window in, change batches
// out. It is the seam at the level of a window; the engine keeps the
// table's lineage (commit_seq, snapshots, follow streams, consumers) and
// routes the windows of a routed table (see Routed) to it.
type WindowBackend interface {
	// ReadWindow streams the changes of w, in w.Schema (the renderable
	// change row), ordered by commit, each row's snapshot column naming
	// its commit. The caller releases each batch. An error ends the
	// sequence; what came before it is then not the whole window.
	ReadWindow(ctx context.Context, w Window) iter.Seq2[arrow.RecordBatch, error]
}

// Window is a resolved, pinned window as a WindowBackend reads it.
type Window struct {
	// Table is the table's name in Sluice ("namespace.table").
	Table string
	// From is the exclusive start (nil: the start of history); To the
	// inclusive end. Both are commits of the table's lineage (Snapshot.ID).
	From *int64
	To   int64
	// Columns are the image's data columns, in order; Identity the columns
	// that identify a row (may be empty).
	Columns  []string
	Identity []string
	// Filter, when set, is the request's filter (bound to the window's end
	// schema) for a backend that evaluates filters (FilterPusher): it
	// sends the changes the filter keeps (SPEC §3: an insert whose image
	// matches, a delete whose image does not fail to, an update pair whole
	// when either image matches), or more where its PushFilter said it
	// evaluates only a part of it.
	Filter filter.Expr
	// Schema is the renderable change row the batches must have.
	Schema *arrow.Schema
}

// FilterPusher is a WindowBackend that evaluates filters itself.
// PushFilter reports whether it evaluates any of e (bound to the window's
// end schema), and whether all of it: the engine then keeps what the
// backend sends. Where it evaluates a part, what it sends must be a
// superset of what e keeps, and the engine evaluates e on it; where it
// evaluates none, the engine filters alone. A backend that is no
// FilterPusher is given no filter.
type FilterPusher interface {
	PushFilter(e filter.Expr) (pushed, exact bool)
}

// Verdict is how a routed table's windows are answered, as explain and
// list_tables report it: which backend, which of its engines, and why.
type Verdict struct {
	// Backend is who answers the table's windows by default: BackendSpark
	// or BackendNative.
	Backend string `json:"backend"`
	// Remote is the Spark Connect server, without credentials.
	Remote string `json:"remote,omitempty"`
	// Chosen is the engine (spark_native, iceberg_changelog_view, native).
	Chosen string `json:"chosen"`
	// ServerVersion is the Spark server's version ("" when it was not
	// asked: backend native by configuration, or the server unreachable).
	ServerVersion string `json:"server_version"`
	// NativeExpected says that the server's version has CHANGES.
	NativeExpected bool `json:"native_expected"`
	// NativeUsable says that CHANGES resolved on the table.
	NativeUsable bool `json:"native_usable"`
	// FellBack says that a better engine was refused, or could not be
	// asked.
	FellBack bool `json:"fell_back"`
	// Reason says why, with Spark's own error text.
	Reason string `json:"reason"`
}

// Route is how a table that a WindowBackend may serve is served.
type Route struct {
	// Backend answers the windows sent to Spark; nil when no Spark engine
	// can (Verdict says why): then only native reads are possible.
	Backend WindowBackend
	// Verdict is reported in explain and list_tables; Verdict.Backend is
	// the default for requests that do not name one.
	Verdict Verdict
	// Native is false when the engine cannot read the table's files: the
	// table is then the backend's alone.
	Native bool
}

// Routed returns tbl (its lineage, schema and files) with its windows
// routed by r: a request's Backend, or else r.Verdict.Backend, decides
// which backend answers a window. Routed tables come from a Tables'
// Load.
func Routed(tbl Table, r Route) Table { return &routedTable{Table: tbl, route: r} }

// routedTable is a table with a Route.
type routedTable struct {
	Table
	route Route
}

// routeOf returns the route of tbl (nil: not routed).
func routeOf(tbl Table) *Route {
	if rt, ok := tbl.(*routedTable); ok {
		return &rt.route
	}
	return nil
}

// checkBackend checks a request's Backend field: empty, native or spark.
func checkBackend(b string) error {
	switch b {
	case "", BackendNative, BackendSpark:
		return nil
	}
	return fmt.Errorf("%w: backend %q: want \"native\" or \"spark\" (or leave it out: the table's configured choice)",
		ErrInvalidRequest, b)
}

// routeWindow decides which backend answers req's window on tbl, at the
// entry of a plan: it returns the verdict to report (nil for a table that
// is not routed) and whether the window goes to the backend. A request
// that names a backend the table does not have is ErrInvalidRequest; one
// that forces Spark where no Spark engine serves the table, or with a part
// of a split window (the backend reads whole windows), is ErrUnsupported,
// with the reason. A filter, fold_updates and net_changes go to the
// backend with the window (see routedPlan for who computes them).
func routeWindow(tbl Table, req Request) (*Verdict, bool, error) {
	if err := checkBackend(req.Backend); err != nil {
		return nil, false, err
	}
	r := routeOf(tbl)
	if r == nil {
		if req.Backend == BackendSpark {
			return nil, false, fmt.Errorf("%w: backend \"spark\": table %s is not configured for a Spark Connect "+
				"server (spark.tables or spark.namespaces)", ErrInvalidRequest, req.Table)
		}
		return nil, false, nil
	}
	v := r.Verdict
	want := req.Backend
	if want == "" {
		want = v.Backend
	}
	if want == BackendNative {
		if !r.Native {
			return nil, false, fmt.Errorf("%w: backend \"native\": Sluice cannot read the files of %s, which "+
				"only Spark serves", ErrInvalidRequest, req.Table)
		}
		v.Backend = BackendNative
		return &v, false, nil
	}
	if r.Backend == nil {
		return nil, false, fmt.Errorf("%w: backend \"spark\" for %s: no Spark engine serves it: %s",
			ErrUnsupported, req.Table, v.Reason)
	}
	var why string
	switch {
	case req.Part != nil:
		why = "a part of a split window"
	case req.Ref != "" || req.FromRef != "" || req.ToRef != "":
		why = "a branch or tag"
	}
	if why == "" {
		v.Backend = BackendSpark
		return &v, true, nil
	}
	if req.Backend == BackendSpark || !r.Native {
		return nil, false, fmt.Errorf("%w: %s with backend \"spark\" (table %s): the Spark backend reads whole "+
			"windows of the main branch; read it with backend \"native\"", ErrUnsupported, why, req.Table)
	}
	// auto: the native engine reads the part.
	v.Backend = BackendNative
	v.Reason += "; this request reads " + why + ", which Sluice reads natively"
	return &v, false, nil
}

// window returns the plan's window as a backend reads it.
func (p *Plan) window() (Window, error) {
	if p.To == nil {
		return Window{}, fmt.Errorf("%w: table %s has no commits", ErrInternal, p.Table)
	}
	return Window{Table: p.Table, From: p.From, To: *p.To, Columns: p.routing.columns, Identity: p.Identity,
		Filter: p.routing.filter, Schema: p.routing.schema}, nil
}

// readRouted streams the plan's window from its backend, as Read streams
// a native one: batches cast to the plan's schema, sliced to MaxBatchRows,
// each snapshot of the plan ended by a batch whose SnapshotComplete is
// true. A row of a snapshot outside the window, or out of lineage order,
// is ErrInternal: never a feed that looks complete.
func (e *Engine) readRouted(ctx context.Context, p *Plan) iter.Seq2[Batch, error] {
	return func(yield func(Batch, error) bool) {
		if len(p.Snapshots) == 0 {
			return
		}
		w, err := p.window()
		if err != nil {
			yield(Batch{}, err)
			return
		}
		ctx, cancel := context.WithCancel(compute.WithAllocator(ctx, e.opts.Allocator))
		defer cancel()
		i := 0 // the snapshot of p.Snapshots being read
		var pending *Batch
		defer func() {
			if pending != nil {
				pending.Record.Release()
			}
		}()
		// send yields the pending batch (complete when done), then holds b.
		send := func(b *Batch, done bool) bool {
			if pending != nil {
				out := *pending
				pending = nil
				out.SnapshotComplete = done
				if !yield(out, nil) {
					return false
				}
			}
			pending = b
			return true
		}
		// finish ends snapshot i: its last batch, or an empty one.
		finish := func() bool {
			if pending == nil {
				return yield(Batch{Record: emptyRecord(e.opts.Allocator, p.routing.schema), Snapshot: p.Snapshots[i].Snapshot,
					SnapshotComplete: true}, nil)
			}
			return send(nil, true)
		}
		for rec, err := range routeBackend(p).ReadWindow(ctx, w) {
			if err != nil {
				yield(Batch{}, err)
				return
			}
			runs, err := e.routedRuns(ctx, p, rec)
			rec.Release()
			if err != nil {
				yield(Batch{}, err)
				return
			}
			for k, run := range runs {
				for i < len(p.Snapshots) && p.Snapshots[i].ID != run.id {
					if !finish() {
						releaseRuns(runs[k:])
						return
					}
					i++
				}
				if i == len(p.Snapshots) {
					releaseRuns(runs[k:])
					yield(Batch{}, fmt.Errorf("%w: the %s backend sent a change of commit %d, which is not in the "+
						"window of %s or comes out of commit order", ErrInternal, p.Backend.Backend, run.id, p.Table))
					return
				}
				if !send(&Batch{Record: run.rec, Snapshot: p.Snapshots[i].Snapshot}, false) {
					releaseRuns(runs[k+1:])
					return
				}
			}
		}
		if err := ctx.Err(); err != nil {
			yield(Batch{}, err)
			return
		}
		for ; i < len(p.Snapshots); i++ {
			if !finish() {
				return
			}
		}
	}
}

// routeBackend returns the backend of a routed plan.
func routeBackend(p *Plan) WindowBackend { return routeOf(p.tbl).Backend }

// commitRun is the rows of one commit in a backend's batch.
type commitRun struct {
	id  int64
	rec arrow.RecordBatch
}

func releaseRuns(runs []commitRun) {
	for _, r := range runs {
		r.rec.Release()
	}
}

// routedRuns casts a backend's batch to the schema the plan reads it in
// (routedRead.schema) and cuts it into runs of one commit each, of at most
// MaxBatchRows rows and about MaxBatchBytes bytes.
func (e *Engine) routedRuns(ctx context.Context, p *Plan, rec arrow.RecordBatch) (runs []commitRun, err error) {
	schema := p.routing.schema
	if rec.NumCols() != int64(schema.NumFields()) {
		return nil, fmt.Errorf("%w: the backend's batch has %d columns, the change row %d", ErrInternal,
			rec.NumCols(), schema.NumFields())
	}
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for j, f := range schema.Fields() {
		col := rec.Column(j)
		if arrow.TypeEqual(col.DataType(), f.Type) {
			col.Retain()
			cols[j] = col
			continue
		}
		if cols[j], err = compute.CastArray(kernelctx.For(ctx, e.opts.Allocator), col, compute.SafeCastOptions(f.Type)); err != nil {
			return nil, fmt.Errorf("%w: the backend's column %s (%s) is not %s: %w", ErrInternal, f.Name,
				col.DataType(), f.Type, err)
		}
	}
	whole := array.NewRecordBatch(schema, cols, rec.NumRows())
	defer whole.Release()
	snaps, ok := whole.Column(whole.Schema().FieldIndices("snapshot")[0]).(*array.Int64)
	if !ok {
		return nil, fmt.Errorf("%w: the change row has no int64 snapshot column", ErrInternal)
	}
	n := int(whole.NumRows())
	// Rows per batch: MaxBatchRows, fewer when the backend's rows are
	// wide (its batches may be far larger than a message may be).
	limit := e.opts.MaxBatchRows
	if size := util.TotalRecordSize(whole); n > 0 && size > 0 {
		limit = max(1, min(limit, int(e.opts.MaxBatchBytes*int64(n)/size)))
	}
	for start := 0; start < n; {
		if snaps.IsNull(start) {
			releaseRuns(runs)
			return nil, fmt.Errorf("%w: the backend sent a change without its commit", ErrInternal)
		}
		id := snaps.Value(start)
		end := start + 1
		for end < n && end-start < limit && snaps.IsValid(end) && snaps.Value(end) == id {
			end++
		}
		runs = append(runs, commitRun{id: id, rec: whole.NewSlice(int64(start), int64(end))})
		start = end
	}
	return runs, nil
}

// verdictOf returns the verdict of a routed table (nil for others).
func verdictOf(tbl Table) *Verdict {
	if r := routeOf(tbl); r != nil {
		v := r.Verdict
		return &v
	}
	return nil
}

// StrategyBackend is the strategy of a snapshot whose changes the table's
// WindowBackend computes.
const StrategyBackend = "backend"

// routedPlan plans a routed window: its snapshots, for the read's commit
// boundaries, and no file (the backend reads them); and how the request's
// filter, fold_updates and net_changes are computed (planRouting), which
// the verdict's reason tells.
func routedPlan(p *Plan, snapshots []Snapshot) error {
	for _, s := range snapshots {
		p.Snapshots = append(p.Snapshots, SnapshotPlan{Snapshot: s, Strategy: StrategyBackend,
			Reason: "computed by the " + p.Backend.Backend + " backend (" + p.Backend.Chosen + ")"})
	}
	return p.planRouting()
}
