package feed

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluicefeed/sluice/lake"
)

// Ref is a branch or tag of a table (package lake's Ref): a request's Ref
// runs its window, commit_seq, snapshots and stream on the ref's lineage.
type Ref = lake.Ref

// Kinds of refs, and the main branch's name.
const (
	RefBranch  = lake.RefBranch
	RefTag     = lake.RefTag
	MainBranch = lake.MainBranch
)

// Errors of refs (package lake's, under the same names).
var (
	// ErrRefNotFound reports a branch or tag the table does not have.
	ErrRefNotFound = lake.ErrRefNotFound
	// ErrNoRefs reports a ref asked of a table whose format has no
	// branches or tags (Delta).
	ErrNoRefs = lake.ErrNoRefs
)

// maxRefBytes bounds a ref's name.
const maxRefBytes = 255

// validateRefs checks the shape of the request's ref fields: names
// without surrounding spaces or control characters, and at most one way of
// naming each end of the window.
func (r Request) validateRefs() error {
	for _, f := range []struct{ what, name string }{{"ref", r.Ref}, {"from_ref", r.FromRef}, {"to_ref", r.ToRef}} {
		if err := CheckRefName(f.what, f.name); err != nil {
			return err
		}
	}
	if r.FromRef != "" && (r.FromSnapshot != nil || r.FromTimestampMs != nil) {
		return fmt.Errorf("%w: give one of from_ref, from_snapshot and from_timestamp_ms", ErrInvalidRequest)
	}
	if r.ToRef != "" && (r.ToSnapshot != nil || r.ToTimestampMs != nil) {
		return fmt.Errorf("%w: give one of to_ref, to_snapshot and to_timestamp_ms", ErrInvalidRequest)
	}
	return nil
}

// CheckRefName checks the shape of a branch or tag name given as what (a
// request field's name, for the message): at most 255 bytes, without
// surrounding spaces or control characters; "" (no ref) is valid. A bad
// one is ErrInvalidRequest.
func CheckRefName(what, name string) error {
	if name == "" {
		return nil
	}
	if len(name) > maxRefBytes {
		return fmt.Errorf("%w: %s of %d bytes is longer than %d", ErrInvalidRequest, what, len(name), maxRefBytes)
	}
	if strings.TrimSpace(name) != name || strings.ContainsFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Errorf("%w: %s %s: a branch or tag name has no surrounding spaces or control characters",
			ErrInvalidRequest, what, quoteName(name))
	}
	return nil
}

// onRef returns tbl as seen on ref (tbl itself, and a nil Ref, when ref
// is empty): a table whose history is the ref's lineage.
func onRef(ctx context.Context, table string, tbl Table, ref string) (Table, *Ref, error) {
	if ref == "" {
		return tbl, nil, nil
	}
	r, view, err := tbl.Ref(ctx, ref)
	if err != nil {
		return nil, nil, fmt.Errorf("ref %s of table %s: %w", quoteName(ref), table, err)
	}
	return view, &r, nil
}

// refHead returns the commit a window's end names by a ref (what is
// from_ref or to_ref): a tag's commit, a branch's head; NoSnapshot for a
// branch without commits.
func refHead(ctx context.Context, table string, tbl Table, what, name string) (int64, error) {
	r, _, err := tbl.Ref(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("%s %s of table %s: %w", what, quoteName(name), table, err)
	}
	if r.Head == nil {
		return NoSnapshot, nil
	}
	return *r.Head, nil
}

// resolveRefs applies the request's Ref to tbl and turns its FromRef and
// ToRef into FromSnapshot and ToSnapshot: the table as the window sees it,
// the ref (nil without one), and the request with snapshot ids.
func resolveRefs(ctx context.Context, tbl Table, req Request) (Table, *Ref, Request, error) {
	view, ref, err := onRef(ctx, req.Table, tbl, req.Ref)
	if err != nil {
		return nil, nil, req, err
	}
	if req.FromRef != "" {
		id, err := refHead(ctx, req.Table, view, "from_ref", req.FromRef)
		if err != nil {
			return nil, nil, req, err
		}
		if id == NoSnapshot {
			return nil, nil, req, fmt.Errorf("%w: from_ref %s of table %s is a branch without commits: leave "+
				"from_ref out to start at the beginning of history", ErrInvalidRequest, quoteName(req.FromRef), req.Table)
		}
		req.FromSnapshot, req.FromRef = &id, ""
	}
	if req.ToRef != "" {
		id, err := refHead(ctx, req.Table, view, "to_ref", req.ToRef)
		if err != nil {
			return nil, nil, req, err
		}
		req.ToSnapshot, req.ToRef = &id, ""
	}
	return view, ref, req, nil
}

// refLabel names the table and its ref in messages: "ns.t", or
// `ns.t (branch "audit")`.
func refLabel(table string, ref *Ref) string {
	if ref == nil {
		return table
	}
	return fmt.Sprintf("%s (%s %s)", table, ref.Kind, quoteName(ref.Name))
}
