package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/sluicefeed/sluice/auth"
	"github.com/sluicefeed/sluice/feed"
	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
	"github.com/sluicefeed/sluice/progress"
)

// consumerInfo is a consumer's acknowledged progress on a table with its
// lag: the result of ack and consumer_progress, and the entries of
// list_consumers.
type consumerInfo struct {
	Consumer    string `json:"consumer"`
	Table       string `json:"table"`
	Snapshot    int64  `json:"snapshot"`
	CommitSeq   int64  `json:"commit_seq"`
	TimestampMs int64  `json:"timestamp_ms"`
	AckedAtMs   int64  `json:"acked_at_ms"`
	// LagCommits is the number of commits on the lineage after the
	// acknowledged snapshot.
	LagCommits int64 `json:"lag_commits"`
	// LagMs is the commit time of the current snapshot minus that of the
	// acknowledged one.
	LagMs int64 `json:"lag_ms"`
	// Expired is true when the acknowledged snapshot has left the retained
	// history: resuming needs a resync.
	Expired bool `json:"expired"`
	// Owner is the principal that owns the progress: only it may ack or
	// reset the consumer ("" for progress recorded before owners were
	// kept).
	Owner string `json:"owner"`
}

func (c consumerInfo) proto() *sluicev1.ConsumerProgress {
	return &sluicev1.ConsumerProgress{Consumer: c.Consumer, Table: c.Table, Snapshot: c.Snapshot, CommitSeq: c.CommitSeq,
		TimestampMs: c.TimestampMs, AckedAtMs: c.AckedAtMs, LagCommits: c.LagCommits, LagMs: c.LagMs, Expired: c.Expired,
		Owner: c.Owner}
}

// withLag describes a checkpoint against the table's current lineage.
func withLag(cp progress.Checkpoint, hist feed.History) consumerInfo {
	lineage := hist.Snapshots
	out := consumerInfo{Consumer: cp.Consumer, Table: cp.Table, Snapshot: cp.Snapshot, CommitSeq: cp.CommitSeq,
		TimestampMs: cp.TimestampMs, AckedAtMs: cp.AckedAt.UnixMilli(), Owner: cp.Owner}
	if len(lineage) == 0 {
		out.Expired = true
		return out
	}
	cur := lineage[len(lineage)-1]
	out.LagMs = max(0, cur.TimestampMs-cp.TimestampMs)
	if i := slices.IndexFunc(lineage, func(x feed.Snapshot) bool { return x.ID == cp.Snapshot }); i >= 0 {
		out.LagCommits = int64(len(lineage) - 1 - i)
		return out
	}
	// Off the retained lineage: the commit sequence still tells how far
	// behind the consumer is.
	out.LagCommits = max(0, cur.CommitSeq-cp.CommitSeq)
	out.Expired = !hist.Startable(cp.Snapshot)
	return out
}

// ack records a consumer's checkpoint at a snapshot of the table's
// lineage.
func (s *Server) ack(ctx context.Context, consumer, table string, snapshot *int64) (consumerInfo, error) {
	store, err := s.requireProgress()
	if err != nil {
		return consumerInfo{}, err
	}
	if err := checkConsumer(consumer); err != nil {
		return consumerInfo{}, err
	}
	if err := requireTable(table); err != nil {
		return consumerInfo{}, err
	}
	if snapshot == nil {
		return consumerInfo{}, badRequestf("ack: snapshot is required")
	}
	hist, err := s.engine.History(ctx, table)
	if err != nil {
		return consumerInfo{}, err
	}
	lineage := hist.Snapshots
	i := slices.IndexFunc(lineage, func(x feed.Snapshot) bool { return x.ID == *snapshot })
	if i < 0 {
		return consumerInfo{}, badRequestf("ack: snapshot %d is not on the lineage of table %s%s", *snapshot, table,
			earliestStart(hist))
	}
	cp := progress.Checkpoint{Table: table, Consumer: consumer, Snapshot: *snapshot, CommitSeq: lineage[i].CommitSeq,
		TimestampMs: lineage[i].TimestampMs, AckedAt: time.Now(), Owner: principalName(ctx)}
	if err := store.Put(ctx, cp); err != nil {
		return consumerInfo{}, err
	}
	return withLag(cp, hist), nil
}

// consumerProgress returns a consumer's checkpoint on the table with its
// lag.
func (s *Server) consumerProgress(ctx context.Context, consumer, table string) (consumerInfo, error) {
	store, err := s.requireProgress()
	if err != nil {
		return consumerInfo{}, err
	}
	if err := checkConsumer(consumer); err != nil {
		return consumerInfo{}, err
	}
	if err := requireTable(table); err != nil {
		return consumerInfo{}, err
	}
	hist, err := s.engine.History(ctx, table)
	if err != nil {
		return consumerInfo{}, err
	}
	cp, err := store.Get(ctx, table, consumer)
	if err != nil {
		return consumerInfo{}, err
	}
	return withLag(cp, hist), nil
}

// listConsumers returns every consumer of the table with its lag.
func (s *Server) listConsumers(ctx context.Context, table string) ([]consumerInfo, error) {
	store, err := s.requireProgress()
	if err != nil {
		return nil, err
	}
	if err := requireTable(table); err != nil {
		return nil, err
	}
	hist, err := s.engine.History(ctx, table)
	if err != nil {
		return nil, err
	}
	cps, err := store.List(ctx, table)
	if err != nil {
		return nil, err
	}
	out := make([]consumerInfo, 0, len(cps))
	for _, cp := range cps {
		out = append(out, withLag(cp, hist))
	}
	return out, nil
}

// resetConsumer forgets a consumer's progress on the table.
func (s *Server) resetConsumer(ctx context.Context, consumer, table string) (bool, error) {
	store, err := s.requireProgress()
	if err != nil {
		return false, err
	}
	if err := checkConsumer(consumer); err != nil {
		return false, err
	}
	if err := requireTable(table); err != nil {
		return false, err
	}
	// The other consumer calls read the table's lineage, which checks the
	// caller's grant; this one reads nothing, so it checks it itself.
	if err := s.engine.table(ctx, table); err != nil {
		return false, err
	}
	return store.Delete(ctx, table, consumer, principalName(ctx))
}

// principalName is the name of the call's principal, which owns the
// consumer progress it records ("anonymous" with authentication off).
func principalName(ctx context.Context) string {
	if p, ok := auth.FromContext(ctx); ok {
		return p.Name
	}
	return ""
}

// jsonInt64 is an int64 in a JSON body, written as a number or a string
// (JavaScript numbers cannot hold every snapshot id).
type jsonInt64 int64

// UnmarshalJSON accepts 123 and "123".
func (n *jsonInt64) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 1 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		b = []byte(s)
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("want a 64-bit integer (a number or a string), got %s", b)
	}
	*n = jsonInt64(v)
	return nil
}

// consumerBody is the body of consumer_progress and reset_consumer.
type consumerBody struct {
	Consumer string `json:"consumer"`
	Table    string `json:"table"`
}

// ackBody is the body of ack.
type ackBody struct {
	Consumer string     `json:"consumer"`
	Table    string     `json:"table"`
	Snapshot *jsonInt64 `json:"snapshot"`
}

func (b ackBody) snapshot() *int64 {
	if b.Snapshot == nil {
		return nil
	}
	v := int64(*b.Snapshot)
	return &v
}
