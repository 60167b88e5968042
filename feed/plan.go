package feed

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluicefeed/sluice/filter"
	"github.com/sluicefeed/sluice/lake"
)

// Strategies a snapshot's plan can take (see the constants of package
// lake for what each reads).
const (
	StrategyAppend         = lake.StrategyAppend
	StrategyRewrite        = lake.StrategyRewrite
	StrategyPositionDelete = lake.StrategyPositionDelete
	StrategyDeletionVector = lake.StrategyDeletionVector
	StrategyEqualityDelete = lake.StrategyEqualityDelete
	StrategyReplaceSkipped = lake.StrategyReplaceSkipped
	StrategyDeltaCDCFiles  = lake.StrategyDeltaCDCFiles
	StrategyDeltaAdd       = lake.StrategyDeltaAdd
	StrategyDeltaDVDiff    = lake.StrategyDeltaDVDiff
	StrategyDeltaAddRemove = lake.StrategyDeltaAddRemove
	StrategyNoDataChange   = lake.StrategyNoDataChange
)

// File contents and roles shown in a plan.
const (
	ContentData            = lake.ContentData
	ContentPositionDeletes = lake.ContentPositionDeletes
	ContentEqualityDeletes = lake.ContentEqualityDeletes
	ContentDeletionVector  = lake.ContentDeletionVector
	ContentChangeData      = lake.ContentChangeData
	// RoleAdded: a data file the snapshot added.
	RoleAdded = lake.RoleAdded
	// RoleRemoved: a data file the snapshot removed.
	RoleRemoved = lake.RoleRemoved
	// RoleDeletes: a data file the snapshot's delete files hit, or a delete
	// file the snapshot added.
	RoleDeletes = lake.RoleDeletes
)

// Plan is a resolved, pinned change window and how each of its snapshots is
// read. It is safe to read concurrently; Engine.Read may run it any number of
// times and always yields the same changes.
type Plan struct {
	Table string `json:"table"`
	// Format is the table's format (FormatIceberg, FormatDelta).
	Format string `json:"format"`
	// Ref is the branch or tag whose lineage the window runs on; nil for
	// the main branch of a request that named no ref.
	Ref *Ref `json:"ref,omitempty"`
	// From is the exclusive start snapshot; nil for the start of history.
	From *int64 `json:"from_snapshot"`
	// To is the inclusive end snapshot; nil for a table without snapshots.
	To *int64 `json:"to_snapshot"`
	// Columns are the data columns of the images, in order.
	Columns []string `json:"columns"`
	// Identity are the columns that identify a row (may be empty).
	Identity []string `json:"identity"`
	// Filter is the row filter, as written ("" for none).
	Filter string `json:"filter,omitempty"`
	// NetChanges is true when the window is collapsed to its net changes.
	NetChanges bool `json:"net_changes,omitempty"`
	// Layout is the shape of the change rows (LayoutRenderable: "").
	Layout string `json:"layout,omitempty"`
	// Pairing says how the window's deleted and inserted rows pair into
	// updates: PairingRowLineage, PairingIdentity or PairingNone (see
	// setPairing; each snapshot's own is in its plan).
	Pairing string `json:"pairing"`
	// Lineage is set when the images carry each row's id (RowIDColumn)
	// after the projected columns.
	Lineage bool `json:"lineage,omitempty"`
	// Snapshots has one entry per snapshot of the window, in lineage order.
	Snapshots []SnapshotPlan `json:"snapshots"`
	// Backend is the verdict of a table a WindowBackend may serve (nil
	// for others): who answers this window, and why (see routeWindow).
	Backend *Verdict `json:"backend,omitempty"`
	routed  bool     // the window goes to the table's WindowBackend
	routing routedRead

	FilesRead    int64 `json:"files_read"`
	FilesSkipped int64 `json:"files_skipped"`
	// RowGroupsRead and RowGroupsSkipped count the row groups of appended
	// files that a filter's pushdown kept and skipped.
	RowGroupsRead    int64 `json:"row_groups_read,omitempty"`
	RowGroupsSkipped int64 `json:"row_groups_skipped,omitempty"`
	BytesRead        int64 `json:"bytes_read"`
	RecordsRead      int64 `json:"records_read"`

	tbl         Table
	to          *Snapshot     // the window's end; nil for a table without snapshots
	end         *lake.Schema  // the schema of the window's end
	schema      *arrow.Schema // the renderable change row of the output
	flat        *arrow.Schema // the flat layout of schema; nil for the renderable row
	scanFields  []string      // the columns the scan decodes
	filter      *Filter
	foldUpdates bool
	// wide is the schema the window's changes are computed in: the output
	// schema, plus (for net changes) identity columns not projected, listed
	// in wideColumns.
	wide        *arrow.Schema
	wideColumns []string
	// part is true for the plan of a window's Part (see ReadKey).
	part bool
}

// SnapshotPlan is how one snapshot's changes are computed.
type SnapshotPlan struct {
	Snapshot
	// Strategy names how the changes are computed (StrategyAppend, ...).
	Strategy string `json:"strategy"`
	// Reason says why the strategy was chosen ("" when the strategy says
	// it all).
	Reason string `json:"reason,omitempty"`
	// Files are the files read.
	Files            []FilePlan `json:"files"`
	FilesSkipped     int64      `json:"files_skipped"`
	RowGroupsRead    int64      `json:"row_groups_read,omitempty"`
	RowGroupsSkipped int64      `json:"row_groups_skipped,omitempty"`
	BytesRead        int64      `json:"bytes_read"`
	RecordsRead      int64      `json:"records_read"`
	// Pairing says how the snapshot pairs its deleted and inserted rows
	// into updates, for a snapshot that may both delete and insert rows
	// ("" for others).
	Pairing string `json:"pairing,omitempty"`
	// LineageReason says why a snapshot of a table that keeps row lineage
	// cannot pair by it.
	LineageReason string `json:"lineage_reason,omitempty"`

	// appended are the added data files of an append snapshot, whose rows
	// are all inserts.
	appended lake.LiveFiles
	// diffs are the data files whose live rows the snapshot changed, and
	// changes the change files whose rows are its changes, for the other
	// strategies; rewrites is true when the snapshot may both delete rows
	// and insert rows (copy-on-write carry-over, and a merge-on-read
	// statement that deletes a row and writes it again unchanged), so that
	// rows re-written unchanged must cancel.
	diffs    []lake.FileDiff
	changes  []lake.ChangeFile
	rewrites bool
	// pairKey, when set, is a column the file source adds to the changed
	// rows it reads: the writer's own pairing of update pre- and
	// post-images (equal values pair up; nulls never do). It pairs updates
	// when the request names no identity.
	pairKey string
	// lineage is set when the snapshot's rows pair by row lineage (see
	// pairing.go).
	lineage bool
}

// FilePlan is one file a snapshot's plan reads.
type FilePlan = lake.FilePlan

// Schema returns the output schema of the plan's batches: the renderable
// change row (op, before, after, snapshot, ts), or the flat layout (the
// data columns, _change_type, _commit_version, _commit_timestamp) when
// the request asked for it.
func (p *Plan) Schema() *arrow.Schema {
	if p.flat != nil {
		return p.flat
	}
	return p.schema
}

// Plan resolves and validates the request's window against the table's
// current metadata, pins its end, and plans the files each snapshot needs.
// It reads manifests but no data files. A request with a Part plans only
// the part's snapshots (and files), in the window's schema.
func (e *Engine) Plan(ctx context.Context, req Request) (*Plan, error) {
	p, w, err := e.resolve(ctx, req)
	if err != nil {
		return nil, err
	}
	snapshots := w.snapshots
	p.part = req.Part != nil
	if req.Part != nil {
		// A part plans its own snapshots only, in the window's schema.
		if snapshots, err = req.Part.snapshots(req.Table, w); err != nil {
			return nil, err
		}
	}
	if len(snapshots) == 0 {
		p.setPairing(!p.routed && keepsLineage(p.tbl))
		return p, nil
	}
	if p.routed {
		if err := routedPlan(p, snapshots); err != nil {
			return nil, err
		}
		p.setPairing(false)
		return p, nil
	}
	opts := lake.PlanOptions{Table: p.Table, Stats: &e.stats}
	if p.filter != nil && !p.NetChanges {
		// Net changes are filtered after netting, so every change is read.
		opts.Prune = filter.NewPruner(p.filter.Expr)
	}
	planner, err := p.tbl.Planner(ctx, opts)
	if err != nil {
		return nil, err
	}
	for _, s := range snapshots {
		ch, err := planner.Plan(ctx, s)
		if err != nil {
			return nil, err
		}
		sp := snapshotPlan(s, ch)
		if req.Part != nil {
			if err := req.Part.restrict(req.Table, &sp); err != nil {
				return nil, err
			}
		}
		p.Snapshots = append(p.Snapshots, sp)
		p.FilesRead += int64(len(sp.Files))
		p.FilesSkipped += sp.FilesSkipped
		p.RowGroupsRead += sp.RowGroupsRead
		p.RowGroupsSkipped += sp.RowGroupsSkipped
		p.BytesRead += sp.BytesRead
		p.RecordsRead += sp.RecordsRead
	}
	p.setPairing(keepsLineage(p.tbl))
	return p, nil
}

// Schema resolves the request's window and columns and returns the output
// schema, without reading manifests or data.
func (e *Engine) Schema(ctx context.Context, req Request) (*arrow.Schema, error) {
	p, _, err := e.resolve(ctx, req)
	if err != nil {
		return nil, err
	}
	return p.Schema(), nil
}

// resolve loads the table, resolves the window and checks the columns: a
// plan without its snapshots' files.
func (e *Engine) resolve(ctx context.Context, req Request) (*Plan, window, error) {
	req, err := req.Parse()
	if err != nil {
		return nil, window{}, err
	}
	tbl, err := e.load(ctx, req.Table)
	if err != nil {
		return nil, window{}, err
	}
	base := tbl
	tbl, ref, req, err := resolveRefs(ctx, tbl, req)
	if err != nil {
		return nil, window{}, err
	}
	w, err := resolveWindow(refLabel(req.Table, ref), tbl, req, ref != nil)
	if err != nil {
		return nil, window{}, err
	}
	p := &Plan{Table: req.Table, Format: tbl.Format(), Ref: ref, From: w.from, Snapshots: []SnapshotPlan{}, tbl: tbl,
		to: w.to}
	if p.Backend, p.routed, err = routeWindow(base, req); err != nil {
		return nil, window{}, err
	}
	if w.to != nil {
		to := w.to.ID
		p.To = &to
	}
	end, err := tbl.Schema(ctx, w.to)
	if err != nil {
		return nil, window{}, fmt.Errorf("table %s: %w", req.Table, err)
	}
	p.end = end
	if err := p.resolveColumns(end, req); err != nil {
		return nil, window{}, err
	}
	if p.schema, err = changeSchema(end, p.Columns); err != nil {
		return nil, window{}, err
	}
	if p.Lineage, err = lineageImages(req, tbl, end, p.routed); err != nil {
		return nil, window{}, err
	}
	if p.Lineage {
		p.schema = withRowID(p.schema)
	}
	if p.Layout = req.Layout; p.Layout == LayoutFlat {
		if p.flat, err = flatSchema(req.Table, p.schema); err != nil {
			return nil, window{}, err
		}
	}
	p.wide = p.schema
	if p.NetChanges {
		// Net changes group rows by identity: the images the window is read
		// with carry the identity columns even when they are not projected.
		// (and the filter's, which applies to the net changes).
		p.wideColumns = append([]string(nil), p.Columns...)
		extra := slices.Clone(p.Identity)
		if p.filter != nil {
			for _, c := range p.filter.Columns {
				extra = append(extra, strings.SplitN(c, ".", 2)[0])
			}
		}
		for _, c := range extra {
			if !slices.Contains(p.wideColumns, c) {
				p.wideColumns = append(p.wideColumns, c)
			}
			if !slices.Contains(p.scanFields, c) {
				p.scanFields = append(p.scanFields, c)
			}
		}
		if p.wide, err = changeSchema(end, p.wideColumns); err != nil {
			return nil, window{}, err
		}
		if p.Lineage {
			p.wide = withRowID(p.wide)
		}
	}
	return p, w, nil
}

// diffColumns are the columns the snapshots that delete rows read (when no
// whole-row comparison is needed): the images' columns, the identity and
// filter columns, and the equality fields of every equality delete file
// that applies in the window.
func (p *Plan) diffColumns() []string {
	cols := slices.Clone(p.wideColumns)
	if cols == nil {
		cols = slices.Clone(p.Columns)
	}
	add := func(c string) {
		if !slices.Contains(cols, c) {
			cols = append(cols, c)
		}
	}
	for _, c := range p.Identity {
		add(c)
	}
	if p.filter != nil {
		for _, c := range p.filter.Columns {
			add(strings.SplitN(c, ".", 2)[0])
		}
	}
	for _, sp := range p.Snapshots {
		for _, fd := range sp.diffs {
			for _, id := range fd.KeyFields() {
				if name, ok := p.end.ColumnName(id); ok {
					add(strings.SplitN(name, ".", 2)[0])
				}
			}
		}
	}
	return cols
}

// resolveColumns checks the projection, identity and filter against the
// end schema and sets the plan's columns, identity, filter and scan fields.
func (p *Plan) resolveColumns(end *lake.Schema, req Request) error {
	available := end.Names()
	has := make(map[string]bool, len(available))
	for _, n := range available {
		has[n] = true
	}
	check := func(what, name string) error {
		if !has[name] {
			return fmt.Errorf("%w: %s column %q is not a column of table %s (columns: %s)",
				ErrUnknownColumn, what, name, p.Table, strings.Join(available, ", "))
		}
		return nil
	}

	p.Columns = available
	if len(req.Columns) > 0 {
		for _, c := range req.Columns {
			if err := check("projected", c); err != nil {
				return err
			}
		}
		p.Columns = req.Columns
	}

	p.Identity = req.Identity
	if len(p.Identity) == 0 {
		for _, id := range end.IdentifierFieldIDs {
			if name, ok := end.ColumnName(id); ok {
				p.Identity = append(p.Identity, name)
			}
		}
	}
	for _, c := range p.Identity {
		if err := check("identity", c); err != nil {
			return err
		}
	}
	p.foldUpdates = req.FoldUpdates
	p.NetChanges = req.NetChanges

	p.scanFields = append([]string(nil), p.Columns...)
	if req.Filter != "" {
		f, err := filter.Parse(req.Filter, end)
		if err != nil {
			return err
		}
		p.filter, p.Filter = f, f.Text
		for _, c := range f.Columns {
			if !slices.Contains(p.scanFields, c) {
				p.scanFields = append(p.scanFields, c)
			}
		}
	}
	return nil
}

// readError classifies an error reading table files (lake.ReadError): a
// missing file means the history is gone and the consumer must resync.
func readError(name string, snapshot int64, what string, err error) error {
	return lake.ReadError(name, snapshot, what, err)
}

// appendedCount is the number of appended files (or file ranges) the
// snapshot's read decodes.
func (sp SnapshotPlan) appendedCount() int {
	if sp.appended == nil {
		return 0
	}
	return sp.appended.Len()
}

// snapshotPlan is the plan of snapshot s, whose change its format planned.
func snapshotPlan(s Snapshot, ch lake.Change) SnapshotPlan {
	return SnapshotPlan{Snapshot: s, Strategy: ch.Strategy, Reason: ch.Reason, Files: ch.Files,
		FilesSkipped: ch.FilesSkipped, RowGroupsRead: ch.RowGroupsRead, RowGroupsSkipped: ch.RowGroupsSkipped,
		BytesRead: ch.BytesRead, RecordsRead: ch.RecordsRead, appended: ch.Appended, diffs: ch.Diffs,
		changes: ch.ChangeFiles, rewrites: ch.Rewrites, pairKey: ch.PairKey, lineage: ch.Lineage,
		LineageReason: ch.LineageReason}
}

// hasDiffs reports whether the snapshot's changes are computed from
// file diffs or change files (not appended files alone).
func (sp SnapshotPlan) hasDiffs() bool { return sp.diffs != nil || sp.changes != nil }
