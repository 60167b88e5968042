package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/sluicefeed/sluice/feed"
)

// Action names of the Flight DoAction RPC.
const (
	ActionCommitSeq     = "commit_seq"
	ActionListTables    = "list_tables"
	ActionListSnapshots = "list_snapshots"
	ActionExplain       = "explain"
	// ActionAck records a consumer's checkpoint.
	ActionAck = "ack"
	// ActionConsumerProgress returns a consumer's checkpoint and lag.
	ActionConsumerProgress = "consumer_progress"
	// ActionListConsumers lists a table's consumers with their lag.
	ActionListConsumers = "list_consumers"
	// ActionResetConsumer forgets a consumer's progress.
	ActionResetConsumer = "reset_consumer"
	// ActionWatchCommits streams a table's commit position: one result per
	// new commit, until the client cancels.
	ActionWatchCommits = "watch_commits"
)

// action is a Flight action: an adapter that decodes its JSON body into
// the typed request of its handler and renders the handler's result as
// JSON.
type action struct {
	typ *flight.ActionType
	// run runs a unary action on its body; nil for watch_commits, which
	// streams.
	run func(s *Server, ctx context.Context, body []byte) (any, error)
}

// jsonAction adapts a typed handler to a JSON action.
func jsonAction[B interface{ names() []string }, R any](name string,
	handler func(*Server, context.Context, B) (R, error)) func(*Server, context.Context, []byte) (any, error) {
	return func(s *Server, ctx context.Context, body []byte) (any, error) {
		var b B
		if err := decodeBody(name, body, &b); err != nil {
			return nil, err
		}
		return handler(s, ctx, b)
	}
}

// explainAction adapts explain: its body is a ChangeRequest in either form.
func explainAction(s *Server, ctx context.Context, body []byte) (any, error) {
	r, err := parseRequest(body)
	if err != nil {
		return nil, err
	}
	return s.explain(ctx, r)
}

// actions are the Flight actions, in the order ListActions lists them.
var actions = []action{
	{&flight.ActionType{Type: ActionCommitSeq, Description: `{"table", "ref"?} -> {"table", "commit_seq", "snapshot", ` +
		`"timestamp_ms", "ref"?}: the table's commit sequence, which grows with every commit to its main branch (or ` +
		`the head of the branch or tag ref); cheap to poll`},
		jsonAction(ActionCommitSeq, (*Server).commitSeq)},
	{&flight.ActionType{Type: ActionListTables, Description: `{} -> {"tables": [{"name", "format", "format_version", ` +
		`"current_snapshot", "commit_seq"}]}: the tables the caller may read`},
		jsonAction(ActionListTables, (*Server).listTables)},
	{&flight.ActionType{Type: ActionListSnapshots, Description: `{"table", "ref"?} -> {"table", "snapshots": [...], ` +
		`"ref"?}: the main branch's lineage (or the branch or tag ref's), oldest first, with operation and summary`},
		jsonAction(ActionListSnapshots, (*Server).listSnapshots)},
	{&flight.ActionType{Type: ActionExplain, Description: "a ChangeRequest -> the plan: snapshots, files read and " +
		"skipped, bytes, per-snapshot strategy"}, explainAction},
	{&flight.ActionType{Type: ActionAck, Description: `{"consumer", "table", "snapshot", "ref"?, "protect"?} -> the ` +
		"consumer's progress: records, durably, that the consumer processed every change up to the snapshot (one on " +
		"the lineage of the table's main branch, or of the branch or tag ref)"},
		jsonAction(ActionAck, (*Server).ack)},
	{&flight.ActionType{Type: ActionConsumerProgress, Description: `{"consumer", "table", "ref"?} -> {"consumer", ` +
		`"table", "ref"?, "snapshot", "commit_seq", "timestamp_ms", "acked_at_ms", "lag_commits", "lag_ms", "expired"}`},
		jsonAction(ActionConsumerProgress, (*Server).consumerProgress)},
	{&flight.ActionType{Type: ActionListConsumers, Description: `{"table"} -> {"table", "consumers": [...]}: every ` +
		"consumer with progress on the table, on any ref (its \"ref\"), with its lag in commits and time on that ref"},
		jsonAction(ActionListConsumers, (*Server).listConsumers)},
	{&flight.ActionType{Type: ActionResetConsumer, Description: `{"consumer", "table", "ref"?} -> {"consumer", ` +
		`"table", "ref"?, "removed"}: forgets the consumer's progress on the ref`},
		jsonAction(ActionResetConsumer, (*Server).resetConsumer)},
	{&flight.ActionType{Type: ActionWatchCommits, Description: `{"table", "ref"?} -> a stream of {"table", ` +
		`"commit_seq", "snapshot", "timestamp_ms", "ref"?}: the current position (of the main branch, or the head ` +
		`of the branch or tag ref), then one result per new commit, until cancelled`}, nil},
}

// actionTypes are the actions as ListActions lists them.
var actionTypes = func() []*flight.ActionType {
	out := make([]*flight.ActionType, len(actions))
	for i := range actions {
		out[i] = actions[i].typ
	}
	return out
}()

// ListActions lists the control actions.
func (f *flightService) ListActions(_ *flight.Empty, stream flight.FlightService_ListActionsServer) error {
	for _, a := range actionTypes {
		if err := stream.Send(a); err != nil {
			return sendError(stream.Context(), err)
		}
	}
	return nil
}

// DoAction runs a control action: its body and its results are JSON; every
// action but watch_commits has one result.
func (f *flightService) DoAction(act *flight.Action, stream flight.FlightService_DoActionServer) error {
	ctx := stream.Context()
	name := act.GetType()
	call := "DoAction " + clipName(name)
	if sqlActions[name] {
		if err := f.sql.DoAction(act, stream); err != nil {
			return f.s.fail(ctx, call, err)
		}
		return nil
	}
	if sessionActions[name] {
		res, err := sessionAction(act)
		if err == nil {
			if err = stream.Send(res); err != nil {
				err = sendError(ctx, err)
			}
		}
		if err != nil {
			return f.s.fail(ctx, call, err)
		}
		return nil
	}
	i := slices.IndexFunc(actionTypes, func(a *flight.ActionType) bool { return a.Type == name })
	if i < 0 {
		names := make([]string, len(actionTypes))
		for i, a := range actionTypes {
			names[i] = a.Type
		}
		slices.Sort(names)
		return f.s.fail(ctx, call, badRequestf("unknown action %s (actions: %s)", quoteName(name),
			strings.Join(names, ", ")))
	}
	send := func(v any) error {
		body, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return stream.Send(&flight.Result{Body: body})
	}
	if actions[i].run == nil {
		var b refBody
		if err := decodeBody(name, act.GetBody(), &b); err != nil {
			return f.s.fail(ctx, call, err)
		}
		err := f.s.watchCommits(ctx, b, func(st feed.TableStatus) error { return send(st) })
		return f.s.fail(ctx, call, err)
	}
	result, err := actions[i].run(f.s, ctx, act.GetBody())
	if err != nil {
		return f.s.fail(ctx, call, err)
	}
	if err := send(result); err != nil {
		return f.s.fail(ctx, call, sendError(ctx, err))
	}
	return nil
}

// decodeBody decodes an action's JSON body strictly: unknown fields and
// trailing data are errors. An empty body decodes as {}.
func decodeBody(action string, body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if len(body) > maxRequestBytes {
		return badRequestf("%s: body of %d bytes is larger than the limit of %d", action, len(body), maxRequestBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequestf("%s: malformed JSON body: %s", action, clipText(clipQuoted(err.Error())))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequestf("%s: malformed JSON body: data after the object", action)
	}
	return nil
}
