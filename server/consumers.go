package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
	// Protected is set when the last ack asked for protection.
	Protected bool `json:"protected"`
}

func (c consumerInfo) proto() *sluicev1.ConsumerProgress {
	return &sluicev1.ConsumerProgress{Consumer: c.Consumer, Table: c.Table, Snapshot: c.Snapshot, CommitSeq: c.CommitSeq,
		TimestampMs: c.TimestampMs, AckedAtMs: c.AckedAtMs, LagCommits: c.LagCommits, LagMs: c.LagMs, Expired: c.Expired,
		Owner: c.Owner, Protected: c.Protected}
}

// withLag describes a checkpoint against the table's current lineage.
func withLag(cp progress.Checkpoint, hist feed.History) consumerInfo {
	lineage := hist.Snapshots
	out := consumerInfo{Consumer: cp.Consumer, Table: cp.Table, Snapshot: cp.Snapshot, CommitSeq: cp.CommitSeq,
		TimestampMs: cp.TimestampMs, AckedAtMs: cp.AckedAt.UnixMilli(), Owner: cp.Owner,
		Protected: cp.Protected}
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
	out.LagCommits = hist.CommitsSince(cp.CommitSeq)
	out.Expired = !hist.Startable(cp.Snapshot)
	return out
}

// ack records a consumer's checkpoint at a snapshot of the table's
// lineage.
func (s *Server) ack(ctx context.Context, b ackBody) (consumerInfo, error) {
	info, err := s.ackChecked(ctx, b)
	return info, clipNames(err, b.names()...)
}

func (s *Server) ackChecked(ctx context.Context, b ackBody) (consumerInfo, error) {
	store, err := s.consumerCall(ctx, b.Consumer, b.Table)
	if err != nil {
		return consumerInfo{}, err
	}
	if b.Snapshot == nil {
		return consumerInfo{}, badRequestf("ack: snapshot is required")
	}
	snapshot := int64(*b.Snapshot)
	hist, err := s.engine.History(ctx, b.Table)
	if err != nil {
		return consumerInfo{}, err
	}
	lineage := hist.Snapshots
	i := slices.IndexFunc(lineage, func(x feed.Snapshot) bool { return x.ID == snapshot })
	if i < 0 {
		return consumerInfo{}, badRequestf("ack: snapshot %d is not on the lineage of table %s%s", snapshot, b.Table,
			hist.EarliestHint())
	}
	if err := s.assignConfigured(ctx, store, b.Table, b.Consumer); err != nil {
		return consumerInfo{}, err
	}
	cp := progress.Checkpoint{Table: b.Table, Consumer: b.Consumer, Snapshot: snapshot, CommitSeq: lineage[i].CommitSeq,
		TimestampMs: lineage[i].TimestampMs, AckedAt: time.Now(), Owner: principalName(ctx), Protected: b.Protect}
	if err := s.putProtected(ctx, store, cp); err != nil {
		return consumerInfo{}, err
	}
	return withLag(cp, hist), nil
}

// consumerProgress returns a consumer's checkpoint on the table with its
// lag.
func (s *Server) consumerProgress(ctx context.Context, b consumerBody) (consumerInfo, error) {
	info, err := func() (consumerInfo, error) {
		store, err := s.consumerCall(ctx, b.Consumer, b.Table)
		if err != nil {
			return consumerInfo{}, err
		}
		hist, err := s.engine.History(ctx, b.Table)
		if err != nil {
			return consumerInfo{}, err
		}
		cp, err := store.Get(ctx, b.Table, b.Consumer)
		if err != nil {
			return consumerInfo{}, err
		}
		return withLag(cp, hist), nil
	}()
	return info, clipNames(err, b.names()...)
}

// consumerList is the result of list_consumers.
type consumerList struct {
	Table     string         `json:"table"`
	Consumers []consumerInfo `json:"consumers"`
}

func (l consumerList) proto() *sluicev1.ListConsumersResponse {
	out := &sluicev1.ListConsumersResponse{Table: l.Table}
	for _, ci := range l.Consumers {
		out.Consumers = append(out.Consumers, ci.proto())
	}
	return out
}

// listConsumers returns every consumer of the table with its lag.
func (s *Server) listConsumers(ctx context.Context, b tableBody) (consumerList, error) {
	list, err := func() (consumerList, error) {
		store, err := s.requireProgress()
		if err != nil {
			return consumerList{}, err
		}
		if err := s.checkTable(ctx, b.Table); err != nil {
			return consumerList{}, err
		}
		hist, err := s.engine.History(ctx, b.Table)
		if err != nil {
			return consumerList{}, err
		}
		cps, err := store.List(ctx, b.Table)
		if err != nil {
			return consumerList{}, err
		}
		out := consumerList{Table: b.Table, Consumers: make([]consumerInfo, 0, len(cps))}
		for _, cp := range cps {
			out.Consumers = append(out.Consumers, withLag(cp, hist))
		}
		return out, nil
	}()
	return list, clipNames(err, b.names()...)
}

// resetResult is the result of reset_consumer.
type resetResult struct {
	Consumer string `json:"consumer"`
	Table    string `json:"table"`
	Removed  bool   `json:"removed"`
}

func (r resetResult) proto() *sluicev1.ResetConsumerResponse {
	return &sluicev1.ResetConsumerResponse{Consumer: r.Consumer, Table: r.Table, Removed: r.Removed}
}

// resetConsumer forgets a consumer's progress on the table.
func (s *Server) resetConsumer(ctx context.Context, b consumerBody) (resetResult, error) {
	store, err := s.consumerCall(ctx, b.Consumer, b.Table)
	if err != nil {
		return resetResult{}, clipNames(err, b.names()...)
	}
	if err := s.assignConfigured(ctx, store, b.Table, b.Consumer); err != nil {
		return resetResult{}, clipNames(err, b.names()...)
	}
	removed, err := store.Delete(ctx, b.Table, b.Consumer, principalName(ctx))
	if err == nil {
		err = s.release(ctx, b.Table, b.Consumer)
	}
	return resetResult{Consumer: b.Consumer, Table: b.Table, Removed: removed}, clipNames(err, b.names()...)
}

// consumerCall checks a call about a consumer: the server keeps progress,
// the consumer id is valid, the table named and granted to the caller.
func (s *Server) consumerCall(ctx context.Context, consumer, table string) (ProgressStore, error) {
	store, err := s.requireProgress()
	if err != nil {
		return nil, err
	}
	if err := checkConsumer(consumer); err != nil {
		return nil, err
	}
	if err := s.checkTable(ctx, table); err != nil {
		return nil, err
	}
	return store, nil
}

// requireProgress returns the progress store, or Unimplemented.
func (s *Server) requireProgress() (ProgressStore, error) {
	if s.progress == nil {
		return nil, errNotImplemented("durable consumers need a progress store, and this server has none")
	}
	return s.progress, nil
}

// resume returns where a stream naming a consumer resumes: its
// acknowledged progress, or nil for a consumer without progress. The
// stream claims the consumer: a consumer no principal owns yet becomes the
// caller's, and one another principal owns is refused (ErrNotOwner), so
// that no principal can place a consumer before its service's first
// stream.
func (s *Server) resume(ctx context.Context, table, consumer string) (*feed.Resume, error) {
	store, err := s.requireProgress()
	if err != nil {
		return nil, err
	}
	// Claim a consumer of a table that exists only.
	if _, err := s.engine.Status(ctx, table); err != nil {
		return nil, err
	}
	if err := s.claim(ctx, store, table, consumer); err != nil {
		return nil, err
	}
	cp, err := store.Get(ctx, table, consumer)
	switch {
	case err == nil:
		return &feed.Resume{Consumer: consumer, Snapshot: cp.Snapshot, CommitSeq: cp.CommitSeq}, nil
	case errors.Is(err, progress.ErrNotFound):
		return nil, nil
	default:
		return nil, err
	}
}

// claim makes the caller the owner of a consumer on a table, unless
// another principal owns it: the one the configuration names (auth
// consumers), or the first to claim or acknowledge it.
func (s *Server) claim(ctx context.Context, store ProgressStore, table, consumer string) error {
	if _, ok := s.configuredOwner(consumer); ok {
		return s.assignConfigured(ctx, store, table, consumer)
	}
	return store.Claim(ctx, table, consumer, principalName(ctx))
}

// configuredOwner returns the principal the configuration makes the owner
// of a consumer, if any.
func (s *Server) configuredOwner(consumer string) (string, bool) {
	if s.authz == nil {
		return "", false
	}
	return s.authz.ConsumerOwner(consumer)
}

// assignConfigured refuses a call about a consumer whose owner the
// configuration names, when the caller is another principal; for the owner
// it records the ownership in the store, taking it over from whoever had
// claimed the consumer before the configuration named its owner.
func (s *Server) assignConfigured(ctx context.Context, store ProgressStore, table, consumer string) error {
	owner, ok := s.configuredOwner(consumer)
	if !ok {
		return nil
	}
	if caller := principalName(ctx); caller != owner {
		return fmt.Errorf("%w: consumer %q belongs to principal %q (by the configuration's auth consumers), not %q",
			progress.ErrNotOwner, consumer, owner, caller)
	}
	return store.Assign(ctx, table, consumer, owner)
}

// maxConsumerLen bounds a consumer id.
const maxConsumerLen = 200

// checkConsumer validates a consumer id.
func checkConsumer(id string) error {
	if id == "" {
		return badRequestf("consumer is required")
	}
	if len(id) > maxConsumerLen {
		return badRequestf("consumer id of %d bytes is longer than %d", len(id), maxConsumerLen)
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:@/-", r)
		if !ok {
			return badRequestf("consumer id %q: use letters, digits and . _ : @ / - only", id)
		}
	}
	return nil
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

func (b consumerBody) names() []string { return []string{b.Consumer, b.Table} }

// ackBody is the body of ack.
type ackBody struct {
	Consumer string     `json:"consumer"`
	Table    string     `json:"table"`
	Snapshot *jsonInt64 `json:"snapshot"`
	// Protect asks that the snapshot be kept from the table's expiry.
	Protect bool `json:"protect"`
}

func (b ackBody) names() []string { return []string{b.Consumer, b.Table} }
