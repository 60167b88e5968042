package console

import (
	"encoding/json"
	"fmt"
	"net/http"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

// live follows a table and sends each commit's changes as server-sent
// events as they arrive: GET /api/live?table=T. It is a follow stream of
// the service (start mode latest, updates folded), so the service's
// limits on streams apply to it. Events:
//
//   - "start": {"table", "columns"}, once the stream is open;
//   - "changes": {"snapshot", "commit_seq", "timestamp_ms", "complete",
//     "rows"}: a batch of a commit's changes ("complete" on the commit's
//     last one);
//   - "error": {"code", "message"}, and the stream ends (the page opens it
//     again for Unavailable, which a restart of flightd gives).
//
// Heartbeats are comment lines, which tell a browser that has gone away
// from one that is only idle. The stream ends when the page leaves (the
// request's context ends, and with it the follow stream) or the server
// stops.
func (c *Console) live(w http.ResponseWriter, r *http.Request) {
	table := r.URL.Query().Get("table")
	if table == "" {
		c.badRequest(w, "table is required")
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // a proxy in front must not buffer the stream
	w.WriteHeader(http.StatusOK)
	send := func(event string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return err
		}
		return rc.Flush()
	}
	// The page is told at once that the stream is being opened; opening it
	// waits for the service's first message.
	if _, err := fmt.Fprint(w, ": opening\n\n"); err != nil || rc.Flush() != nil {
		return
	}
	sub, err := c.opts.Client.Subscribe(outgoing(r.Context()), sluice.SubscribeRequest{Table: table,
		Start: sluice.StartLatest, FoldUpdates: true, Heartbeats: true})
	if err != nil {
		if r.Context().Err() == nil {
			_ = send("error", describe(err))
		}
		return
	}
	defer sub.Release()
	columns, err := imageColumns(sub.Schema())
	if err != nil {
		_ = send("error", describe(err))
		return
	}
	if err := send("start", map[string]any{"table": table, "columns": columns}); err != nil {
		return
	}
	for batch, err := range sub.All() {
		if err != nil {
			if r.Context().Err() == nil {
				_ = send("error", describe(err))
			}
			return
		}
		m := batch.Meta
		if m.Heartbeat {
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil || rc.Flush() != nil {
				return
			}
			continue
		}
		rows, err := appendRows(nil, batch.Record, int(batch.Record.NumRows()))
		if err != nil {
			_ = send("error", describe(err))
			return
		}
		if len(rows) == 0 && !m.SnapshotComplete {
			continue
		}
		if err := send("changes", map[string]any{"snapshot": id(m.Snapshot), "commit_seq": m.CommitSeq,
			"timestamp_ms": m.TimestampMs, "complete": m.SnapshotComplete, "rows": orEmpty(rows)}); err != nil {
			return
		}
	}
}

func orEmpty(rows []row) []row {
	if rows == nil {
		return []row{}
	}
	return rows
}
