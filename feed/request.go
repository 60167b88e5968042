package feed

import (
	"fmt"
	"strings"

	"github.com/sluicefeed/sluice/filter"
)

// Request asks for the changes of one table over the window (from, to].
type Request struct {
	// Table is "namespace.table".
	Table string
	// FromSnapshot is the exclusive start; nil with FromTimestampMs nil
	// means the start of the table's history.
	FromSnapshot *int64
	// FromTimestampMs is the exclusive start as a commit time: the window
	// holds the snapshots committed after it.
	FromTimestampMs *int64
	// ToSnapshot is the inclusive end; nil with ToTimestampMs nil means the
	// current snapshot at planning time.
	ToSnapshot *int64
	// ToTimestampMs is the inclusive end as a commit time: the last
	// snapshot committed at or before it.
	ToTimestampMs *int64
	// Columns projects the images onto these data columns, in this order.
	// Empty means every column of the end snapshot's schema.
	Columns []string
	// Filter is a SQL boolean expression over data columns (see
	// ParseFilter).
	Filter string
	// Identity names the columns that identify a row. Empty means the
	// table's identifier fields.
	Identity []string
	// FoldUpdates folds each update_before/update_after pair into one
	// update row.
	FoldUpdates bool
	// NetChanges collapses the window to its net changes.
	NetChanges bool
	// Layout is the shape of the change rows: LayoutRenderable (the
	// default) or LayoutFlat. Not LayoutFlat with FoldUpdates.
	Layout string
	// Part, when set, reads only a part of the window (see Plan.Split):
	// the changes its snapshots (or files) emit in the read of the whole
	// window. Not with NetChanges.
	Part *Part
	// Backend forces the backend of a table a WindowBackend may serve:
	// BackendNative or BackendSpark; empty means the table's verdict.
	Backend string
	// Lineage adds each row's id (RowIDColumn, a long) to the images, for
	// a table that keeps row lineage (Iceberg v3, Delta row tracking).
	Lineage bool
	// Ref names the branch or tag whose lineage the window (or stream)
	// runs on; empty means the main branch. See ref.go.
	Ref string
	// FromRef and ToRef name the window's start and end by a tag (or a
	// branch: its head when the window is planned), instead of
	// FromSnapshot and ToSnapshot.
	FromRef, ToRef string

	// parsed is set by Parse: the request is valid and filter holds its
	// parsed filter (nil without one), which planning binds to the
	// window's schema instead of parsing the text again.
	parsed     bool
	filterCols []string
}

// Parse validates the request and parses its filter, once: Engine.Plan,
// PlanState, Schema and Stream neither validate nor parse a parsed request
// again (a request that is not parsed is parsed by each of them). Its
// window fields may be set again (a stream plans one window after the
// other) and its Columns narrowed (to a caller's grant), to values that
// Validate accepts; its Table and Filter are fixed.
func (r Request) Parse() (Request, error) {
	if r.parsed {
		return r, nil
	}
	if err := r.Validate(); err != nil {
		return r, err
	}
	if r.Filter != "" {
		cols, err := filter.ParseColumns(r.Filter)
		if err != nil {
			return r, err
		}
		r.filterCols = cols
	}
	r.parsed = true
	return r, nil
}

// FilterColumns returns the columns the request's filter refers to, by
// their names as written (nested fields dotted), in order of first use;
// nil without a filter. It parses the filter unless Parse did.
func (r Request) FilterColumns() ([]string, error) {
	if r.Filter == "" {
		return nil, nil
	}
	if r.parsed {
		return r.filterCols, nil
	}
	return filter.ParseColumns(r.Filter)
}

// Validate checks the request's shape; whether its table, snapshots and
// columns exist is checked by Engine.Plan.
func (r Request) Validate() error {
	if strings.TrimSpace(r.Table) == "" {
		return fmt.Errorf("%w: table is required", ErrInvalidRequest)
	}
	if r.FromSnapshot != nil && r.FromTimestampMs != nil {
		return fmt.Errorf("%w: give from_snapshot or from_timestamp_ms, not both", ErrInvalidRequest)
	}
	if r.ToSnapshot != nil && r.ToTimestampMs != nil {
		return fmt.Errorf("%w: give to_snapshot or to_timestamp_ms, not both", ErrInvalidRequest)
	}
	if r.FromTimestampMs != nil && r.ToTimestampMs != nil && *r.FromTimestampMs > *r.ToTimestampMs {
		return fmt.Errorf("%w: from_timestamp_ms %d is after to_timestamp_ms %d: swap them",
			ErrInvalidRequest, *r.FromTimestampMs, *r.ToTimestampMs)
	}
	if err := checkNames("columns", r.Columns); err != nil {
		return err
	}
	if err := r.Part.validate(r.NetChanges); err != nil {
		return err
	}
	if err := r.validateLayout(); err != nil {
		return err
	}
	if err := checkBackend(r.Backend); err != nil {
		return err
	}
	if err := r.validateRefs(); err != nil {
		return err
	}
	return checkNames("identity", r.Identity)
}

func checkNames(what string, names []string) error {
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if strings.TrimSpace(n) == "" {
			return fmt.Errorf("%w: empty name in %s", ErrInvalidRequest, what)
		}
		if seen[n] {
			return fmt.Errorf("%w: column %q appears twice in %s", ErrInvalidRequest, n, what)
		}
		seen[n] = true
	}
	return nil
}
