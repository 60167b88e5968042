package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

var actionTypes = []*flight.ActionType{
	{Type: ActionCommitSeq, Description: `{"table"} -> {"table", "commit_seq", "snapshot", "timestamp_ms"}: ` +
		"the table's commit sequence, which grows with every commit to its main branch; cheap to poll"},
	{Type: ActionListTables, Description: `{} -> {"tables": [{"name", "format", "format_version", ` +
		`"current_snapshot", "commit_seq"}]}: the tables the caller may read`},
	{Type: ActionListSnapshots, Description: `{"table"} -> {"table", "snapshots": [...]}: the main branch's ` +
		"lineage, oldest first, with operation and summary"},
	{Type: ActionExplain, Description: "a ChangeRequest -> the plan: snapshots, files read and skipped, bytes, " +
		"per-snapshot strategy"},
	{Type: ActionAck, Description: `{"consumer", "table", "snapshot"} -> the consumer's progress: records, ` +
		"durably, that the consumer processed every change up to the snapshot (one on the table's lineage)"},
	{Type: ActionConsumerProgress, Description: `{"consumer", "table"} -> {"consumer", "table", "snapshot", ` +
		`"commit_seq", "timestamp_ms", "acked_at_ms", "lag_commits", "lag_ms", "expired"}`},
	{Type: ActionListConsumers, Description: `{"table"} -> {"table", "consumers": [...]}: every consumer ` +
		"with progress on the table, with its lag in commits and time"},
	{Type: ActionResetConsumer, Description: `{"consumer", "table"} -> {"consumer", "table", "removed"}: ` +
		"forgets the consumer's progress"},
	{Type: ActionWatchCommits, Description: `{"table"} -> a stream of {"table", "commit_seq", "snapshot", ` +
		`"timestamp_ms"}: the current position, then one result per new commit, until cancelled`},
}

// ListActions lists the control actions.
func (f *flightService) ListActions(_ *flight.Empty, stream flight.FlightService_ListActionsServer) error {
	for _, a := range actionTypes {
		if err := stream.Send(a); err != nil {
			return sendError(stream.Context(), err)
		}
	}
	return nil
}

// DoAction runs a control action: its body and its one result are JSON.
func (f *flightService) DoAction(action *flight.Action, stream flight.FlightService_DoActionServer) error {
	ctx := stream.Context()
	call := "DoAction " + action.GetType()
	if action.GetType() == ActionWatchCommits {
		var b tableBody
		if err := decodeBody(ActionWatchCommits, action.GetBody(), &b); err != nil {
			return f.s.fail(ctx, call, err)
		}
		err := f.s.watchCommits(ctx, b.Table, func(st feed.TableStatus) error {
			body, err := json.Marshal(st)
			if err != nil {
				return err
			}
			return stream.Send(&flight.Result{Body: body})
		})
		return f.s.fail(ctx, call, err)
	}
	result, err := f.s.action(ctx, action.GetType(), action.GetBody())
	if err != nil {
		return f.s.fail(ctx, call, err)
	}
	body, err := json.Marshal(result)
	if err != nil {
		return f.s.fail(ctx, call, err)
	}
	if err := stream.Send(&flight.Result{Body: body}); err != nil {
		return f.s.fail(ctx, call, sendError(ctx, err))
	}
	return nil
}

// action runs the named action on a JSON body and returns a value to render
// as its JSON result.
func (s *Server) action(ctx context.Context, name string, body []byte) (any, error) {
	switch name {
	case ActionCommitSeq:
		var b tableBody
		if err := decodeBody(name, body, &b); err != nil {
			return nil, err
		}
		return s.commitSeq(ctx, b.Table)
	case ActionListTables:
		var b struct{}
		if err := decodeBody(name, body, &b); err != nil {
			return nil, err
		}
		tables, err := s.listTables(ctx)
		if err != nil {
			return nil, err
		}
		return struct {
			Tables []feed.TableInfo `json:"tables"`
		}{tables}, nil
	case ActionListSnapshots:
		var b tableBody
		if err := decodeBody(name, body, &b); err != nil {
			return nil, err
		}
		snaps, err := s.listSnapshots(ctx, b.Table)
		if err != nil {
			return nil, err
		}
		return struct {
			Table     string          `json:"table"`
			Snapshots []feed.Snapshot `json:"snapshots"`
		}{b.Table, snaps}, nil
	case ActionExplain:
		req, err := DecodeRequest(body)
		if err != nil {
			return nil, err
		}
		fr, err := feedRequest(req)
		if err != nil {
			return nil, err
		}
		return s.engine.Plan(ctx, fr)
	case ActionAck:
		var b ackBody
		if err := decodeBody(name, body, &b); err != nil {
			return nil, err
		}
		return s.ack(ctx, b.Consumer, b.Table, b.snapshot())
	case ActionConsumerProgress:
		var b consumerBody
		if err := decodeBody(name, body, &b); err != nil {
			return nil, err
		}
		return s.consumerProgress(ctx, b.Consumer, b.Table)
	case ActionListConsumers:
		var b tableBody
		if err := decodeBody(name, body, &b); err != nil {
			return nil, err
		}
		list, err := s.listConsumers(ctx, b.Table)
		if err != nil {
			return nil, err
		}
		return struct {
			Table     string         `json:"table"`
			Consumers []consumerInfo `json:"consumers"`
		}{b.Table, list}, nil
	case ActionResetConsumer:
		var b consumerBody
		if err := decodeBody(name, body, &b); err != nil {
			return nil, err
		}
		removed, err := s.resetConsumer(ctx, b.Consumer, b.Table)
		if err != nil {
			return nil, err
		}
		return struct {
			Consumer string `json:"consumer"`
			Table    string `json:"table"`
			Removed  bool   `json:"removed"`
		}{b.Consumer, b.Table, removed}, nil
	default:
		names := make([]string, len(actionTypes))
		for i, a := range actionTypes {
			names[i] = a.Type
		}
		slices.Sort(names)
		return nil, badRequestf("unknown action %q (actions: %s)", name, strings.Join(names, ", "))
	}
}

type tableBody struct {
	Table string `json:"table"`
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
		return badRequestf("%s: malformed JSON body: %v", action, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequestf("%s: malformed JSON body: data after the object", action)
	}
	return nil
}

func (s *Server) commitSeq(ctx context.Context, table string) (feed.TableStatus, error) {
	if err := requireTable(table); err != nil {
		return feed.TableStatus{}, err
	}
	return s.engine.Status(ctx, table)
}

func (s *Server) listTables(ctx context.Context) ([]feed.TableInfo, error) {
	return s.engine.ListTables(ctx, nil)
}

func (s *Server) listSnapshots(ctx context.Context, table string) ([]feed.Snapshot, error) {
	if err := requireTable(table); err != nil {
		return nil, err
	}
	return s.engine.Snapshots(ctx, table)
}

func requireTable(table string) error {
	if strings.TrimSpace(table) == "" {
		return fmt.Errorf("%w: table is required", feed.ErrInvalidRequest)
	}
	return nil
}
