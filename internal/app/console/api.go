package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

// The JSON API of the page. Each handler makes the service calls a Flight
// client would (list_tables, list_snapshots, explain, DoGet) on behalf of
// the request's caller; their errors reach the page with their gRPC code
// name: {"error": {"code": "NotFound", "message": "..."}}.

// apiError is the body of a failed API request.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// fail answers a failed call with its gRPC code's name and the HTTP status
// closest to it.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error) {
	e := describe(err)
	code := sluice.Code(err)
	if code == codes.Internal || code == codes.Unknown {
		c.opts.Logger.ErrorContext(r.Context(), "console request failed", "path", r.URL.Path, "code", e.Code,
			"principal", callerOf(r.Context()).principal.Name, "error", e.Message)
	}
	writeJSON(w, httpStatus(code), map[string]apiError{"error": e})
}

// describe returns an error's gRPC code name and message.
func describe(err error) apiError {
	var se *sluice.Error
	if errors.As(err, &se) {
		return apiError{Code: se.Code.String(), Message: se.Message}
	}
	return apiError{Code: sluice.Code(err).String(), Message: err.Error()}
}

// badRequest answers a malformed API request (a parameter the page sent
// wrong) as InvalidArgument.
func (c *Console) badRequest(w http.ResponseWriter, format string, args ...any) {
	writeJSON(w, http.StatusBadRequest, map[string]apiError{"error": {Code: codes.InvalidArgument.String(),
		Message: fmt.Sprintf(format, args...)}})
}

// httpStatus maps a gRPC code to an HTTP status, as gRPC gateways do.
func httpStatus(code codes.Code) int {
	switch code {
	case codes.OK:
		return http.StatusOK
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
		return http.StatusBadRequest
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.NotFound:
		return http.StatusNotFound
	case codes.AlreadyExists, codes.Aborted:
		return http.StatusConflict
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Unimplemented:
		return http.StatusNotImplemented
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.Canceled:
		return 499 // the client closed the request
	default:
		return http.StatusInternalServerError
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// session describes the caller: GET /api/session.
func (c *Console) session(w http.ResponseWriter, r *http.Request) {
	cl := callerOf(r.Context())
	writeJSON(w, http.StatusOK, map[string]any{"principal": cl.principal.Name, "method": cl.principal.Method,
		"auth": c.opts.Authenticator != nil})
}

// tables lists the tables the caller may read: GET /api/tables.
func (c *Console) tables(w http.ResponseWriter, r *http.Request) {
	tables, err := c.opts.Client.ListTables(outgoing(r.Context()))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	type table struct {
		Name            string `json:"name"`
		Format          string `json:"format"`
		FormatVersion   int    `json:"format_version"`
		CurrentSnapshot *id    `json:"current_snapshot"`
		CommitSeq       int64  `json:"commit_seq"`
	}
	out := make([]table, 0, len(tables))
	for _, t := range tables {
		out = append(out, table{Name: t.Name, Format: t.Format, FormatVersion: t.FormatVersion,
			CurrentSnapshot: idPtr(t.CurrentSnapshot), CommitSeq: t.CommitSeq})
	}
	writeJSON(w, http.StatusOK, map[string]any{"tables": out})
}

// commit is one snapshot of a timeline: the lineage's entry and, from the
// plan of the timeline's window, how its changes are read.
type commit struct {
	Snapshot    id     `json:"snapshot"`
	Parent      *id    `json:"parent"`
	CommitSeq   int64  `json:"commit_seq"`
	TimestampMs int64  `json:"timestamp_ms"`
	Operation   string `json:"operation"`
	// AddedRecords and DeletedRecords are the rows the snapshot's summary
	// says it added and deleted (nil when it says none, and for a replace,
	// which changes no row): added-records; deleted-records plus
	// added-position-deletes. Equality deletes name keys, not rows: their
	// rows are known once read.
	AddedRecords   *int64 `json:"added_records"`
	DeletedRecords *int64 `json:"deleted_records"`
	// Strategy, Files and RecordsRead come from the plan (explain).
	Strategy    string `json:"strategy"`
	Files       int    `json:"files"`
	RecordsRead int64  `json:"records_read"`
}

// snapshots returns a table's timeline, oldest first: GET
// /api/snapshots?table=T. It shows the newest TimelineSnapshots; truncated
// says when there are more.
func (c *Console) snapshots(w http.ResponseWriter, r *http.Request) {
	table := r.URL.Query().Get("table")
	if table == "" {
		c.badRequest(w, "table is required")
		return
	}
	ctx := outgoing(r.Context())
	snaps, err := c.opts.Client.Snapshots(ctx, table)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	truncated := false
	var from *int64
	if n := len(snaps); n > c.opts.TimelineSnapshots {
		truncated = true
		from = &snaps[n-c.opts.TimelineSnapshots-1].ID
		snaps = snaps[n-c.opts.TimelineSnapshots:]
	}
	out := make([]commit, 0, len(snaps))
	for _, s := range snaps {
		out = append(out, commit{Snapshot: id(s.ID), Parent: idPtr(s.Parent), CommitSeq: s.CommitSeq, TimestampMs: s.TimestampMs,
			Operation: s.Operation})
		if s.Operation != "replace" {
			c := &out[len(out)-1]
			c.AddedRecords = summaryCount(s.Summary, "added-records")
			c.DeletedRecords = summaryCount(s.Summary, "deleted-records", "added-position-deletes")
		}
	}
	resp := map[string]any{"table": table, "snapshots": out, "truncated": truncated}
	if len(snaps) > 0 {
		to := snaps[len(snaps)-1].ID
		plan, err := c.opts.Client.Explain(ctx, sluice.ChangeRequest{Table: table, FromSnapshot: from, ToSnapshot: &to})
		if err != nil {
			// The lineage still shows; the page says why the plan does not.
			resp["plan_error"] = describe(err)
		} else {
			byID := map[int64]sluice.SnapshotPlan{}
			for _, sp := range plan.Snapshots {
				byID[sp.Snapshot] = sp
			}
			for i := range out {
				if sp, ok := byID[int64(out[i].Snapshot)]; ok {
					out[i].Strategy, out[i].Files, out[i].RecordsRead = sp.Strategy, len(sp.Files), sp.RecordsRead
				}
			}
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

// summaryCount returns the sum of the summary's counts under keys (nil
// when it has none of them).
func summaryCount(summary map[string]string, keys ...string) *int64 {
	var sum *int64
	for _, k := range keys {
		n, err := strconv.ParseInt(summary[k], 10, 64)
		if err != nil {
			continue
		}
		if sum == nil {
			sum = new(int64)
		}
		*sum += n
	}
	return sum
}

// changes returns the changes of a window, updates folded into one row
// with both images: GET /api/changes?table=T[&from=ID][&to=ID][&filter=F]
// [&columns=a,b][&limit=N]. At most limit rows (MaxRows by default, at
// most HardMaxRows); truncated says when the window holds more.
func (c *Console) changes(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := sluice.ChangeRequest{Table: q.Get("table"), Filter: q.Get("filter"), FoldUpdates: true}
	if req.Table == "" {
		c.badRequest(w, "table is required")
		return
	}
	var err error
	if req.FromSnapshot, err = snapshotParam(q.Get("from")); err != nil {
		c.badRequest(w, "from: %v", err)
		return
	}
	if req.ToSnapshot, err = snapshotParam(q.Get("to")); err != nil {
		c.badRequest(w, "to: %v", err)
		return
	}
	if cols := strings.TrimSpace(q.Get("columns")); cols != "" {
		for col := range strings.SplitSeq(cols, ",") {
			req.Columns = append(req.Columns, strings.TrimSpace(col))
		}
	}
	limit := c.opts.MaxRows
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > HardMaxRows {
			c.badRequest(w, "limit %q: want a number from 1 to %d", v, HardMaxRows)
			return
		}
		limit = n
	}
	reader, err := c.opts.Client.Changes(outgoing(r.Context()), req)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	defer reader.Release()
	columns, err := imageColumns(reader.Schema())
	if err != nil {
		c.fail(w, r, err)
		return
	}
	rows := []row{}
	truncated := false
	for batch, err := range reader.All() {
		if err != nil {
			c.fail(w, r, err)
			return
		}
		if len(rows)+int(batch.Record.NumRows()) > limit {
			truncated = true
		}
		rows, err = appendRows(rows, batch.Record, limit-len(rows))
		if err != nil {
			c.fail(w, r, err)
			return
		}
		if truncated {
			break // Release ends the stream
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"table": req.Table, "from": idPtr(req.FromSnapshot),
		"to":     idPtr(req.ToSnapshot),
		"filter": req.Filter, "columns": columns, "rows": rows, "truncated": truncated, "limit": limit})
}

func snapshotParam(v string) (*int64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%q is not a snapshot id", v)
	}
	return &n, nil
}
