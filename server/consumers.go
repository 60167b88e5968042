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
	Consumer string `json:"consumer"`
	Table    string `json:"table"`
	// Ref is the branch or tag the consumer follows, on whose lineage its
	// lag is measured (absent for the main branch).
	Ref         string `json:"ref,omitempty"`
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
		Owner: c.Owner, Protected: c.Protected, Ref: c.Ref}
}

// withLag describes a checkpoint against the current lineage of its ref
// (the main branch's for ref ""); an empty history (a ref dropped since)
// makes it expired.
func withLag(cp progress.Checkpoint, hist feed.History) consumerInfo {
	lineage := hist.Snapshots
	out := consumerInfo{Consumer: cp.Consumer, Table: cp.Table, Ref: cp.Ref, Snapshot: cp.Snapshot, CommitSeq: cp.CommitSeq,
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

// ack records a consumer's checkpoint at a snapshot of the lineage of the
// table's ref.
func (s *Server) ack(ctx context.Context, b ackBody) (consumerInfo, error) {
	info, err := s.ackChecked(ctx, b)
	return info, clipNames(err, b.names()...)
}

func (s *Server) ackChecked(ctx context.Context, b ackBody) (consumerInfo, error) {
	k := consumerKey(b.Table, b.Ref, b.Consumer)
	store, err := s.consumerCall(ctx, k)
	if err != nil {
		return consumerInfo{}, err
	}
	if b.Snapshot == nil {
		return consumerInfo{}, badRequestf("ack: snapshot is required")
	}
	snapshot := int64(*b.Snapshot)
	hist, ref, err := s.engine.HistoryOn(ctx, k.Table, k.Ref)
	if err != nil {
		return consumerInfo{}, err
	}
	lineage := hist.Snapshots
	i := slices.IndexFunc(lineage, func(x feed.Snapshot) bool { return x.ID == snapshot })
	if i < 0 {
		on := "table " + k.Table
		if k.Ref != "" {
			on = fmt.Sprintf("ref %s of table %s", quoteName(k.Ref), k.Table)
		}
		return consumerInfo{}, badRequestf("ack: snapshot %d is not on the lineage of %s%s", snapshot, on,
			hist.EarliestHint())
	}
	if err := s.assignConfigured(ctx, store, k); err != nil {
		return consumerInfo{}, err
	}
	cp := progress.Checkpoint{Table: k.Table, Ref: k.Ref, Consumer: k.Consumer, Snapshot: snapshot,
		CommitSeq: lineage[i].CommitSeq, TimestampMs: lineage[i].TimestampMs, AckedAt: time.Now(),
		Owner: principalName(ctx), Protected: b.Protect}
	if err := s.putProtected(ctx, store, cp, refValue(ref)); err != nil {
		return consumerInfo{}, err
	}
	return withLag(cp, hist), nil
}

// consumerKey is the progress key of a consumer of the table's ref: the
// main branch, named "main" or not named, is "".
func consumerKey(table, ref, consumer string) progress.Key {
	if ref == feed.MainBranch {
		ref = ""
	}
	return progress.Key{Table: table, Ref: ref, Consumer: consumer}
}

// refValue is a resolved ref (the zero Ref for the main branch).
func refValue(r *feed.Ref) feed.Ref {
	if r == nil {
		return feed.Ref{}
	}
	return *r
}

// refHistory returns the history of the table's ref, an empty one when
// the ref no longer exists (its consumers are then expired, and can still
// be listed and reset).
func (s *Server) refHistory(ctx context.Context, table, ref string) (feed.History, error) {
	hist, _, err := s.engine.HistoryOn(ctx, table, ref)
	if errors.Is(err, feed.ErrRefNotFound) {
		return feed.History{}, nil
	}
	return hist, err
}

// consumerProgress returns a consumer's checkpoint on the table's ref with
// its lag.
func (s *Server) consumerProgress(ctx context.Context, b consumerBody) (consumerInfo, error) {
	info, err := func() (consumerInfo, error) {
		k := consumerKey(b.Table, b.Ref, b.Consumer)
		store, err := s.consumerCall(ctx, k)
		if err != nil {
			return consumerInfo{}, err
		}
		cp, err := store.Get(ctx, k)
		if err != nil {
			return consumerInfo{}, err
		}
		hist, err := s.refHistory(ctx, k.Table, k.Ref)
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

// listConsumers returns every consumer of the table, on every ref, each
// with its lag on its ref.
func (s *Server) listConsumers(ctx context.Context, b tableBody) (consumerList, error) {
	list, err := func() (consumerList, error) {
		store, err := s.requireProgress()
		if err != nil {
			return consumerList{}, err
		}
		if err := s.checkTable(ctx, b.Table); err != nil {
			return consumerList{}, err
		}
		cps, err := store.List(ctx, b.Table)
		if err != nil {
			return consumerList{}, err
		}
		hists := map[string]feed.History{}
		out := consumerList{Table: b.Table, Consumers: make([]consumerInfo, 0, len(cps))}
		for _, cp := range cps {
			hist, ok := hists[cp.Ref]
			if !ok {
				if hist, err = s.refHistory(ctx, b.Table, cp.Ref); err != nil {
					return consumerList{}, err
				}
				hists[cp.Ref] = hist
			}
			out.Consumers = append(out.Consumers, withLag(cp, hist))
		}
		if len(cps) == 0 {
			// The table must exist even without consumers.
			if _, err := s.engine.History(ctx, b.Table); err != nil {
				return consumerList{}, err
			}
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

// resetConsumer forgets a consumer's progress on the table's ref.
func (s *Server) resetConsumer(ctx context.Context, b consumerBody) (resetResult, error) {
	res, err := func() (resetResult, error) {
		k := consumerKey(b.Table, b.Ref, b.Consumer)
		out := resetResult{Consumer: k.Consumer, Table: k.Table}
		store, err := s.consumerCall(ctx, k)
		if err != nil {
			return out, err
		}
		if err := s.assignConfigured(ctx, store, k); err != nil {
			return out, err
		}
		if out.Removed, err = store.Delete(ctx, k, principalName(ctx)); err != nil {
			return out, err
		}
		return out, s.release(ctx, k, s.guardedRef(ctx, k))
	}()
	return res, clipNames(err, b.names()...)
}

// guardedRef is the ref of the consumer k as its protection needs it: its
// kind when the ref still exists, the name alone when not (or when the
// server protects nothing, which needs no kind).
func (s *Server) guardedRef(ctx context.Context, k progress.Key) feed.Ref {
	if k.Ref == "" || s.guard == nil {
		return feed.Ref{Name: k.Ref}
	}
	if _, ref, err := s.engine.HistoryOn(ctx, k.Table, k.Ref); err == nil && ref != nil {
		return *ref
	}
	return feed.Ref{Name: k.Ref}
}

// consumerCall checks a call about a consumer: the server keeps progress,
// the consumer id and ref name are valid, the table named and granted to
// the caller.
func (s *Server) consumerCall(ctx context.Context, k progress.Key) (ProgressStore, error) {
	store, err := s.requireProgress()
	if err != nil {
		return nil, err
	}
	if err := checkConsumer(k.Consumer); err != nil {
		return nil, err
	}
	if err := feed.CheckRefName("ref", k.Ref); err != nil {
		return nil, err
	}
	if err := s.checkTable(ctx, k.Table); err != nil {
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

// resume returns where a stream naming a consumer of the table's ref
// resumes: its acknowledged progress on the ref, or nil for a consumer
// without progress. The stream claims the consumer: a consumer no
// principal owns yet becomes the caller's, and one another principal owns
// is refused (ErrNotOwner), so that no principal can place a consumer
// before its service's first stream.
func (s *Server) resume(ctx context.Context, table, ref, consumer string) (*feed.Resume, error) {
	store, err := s.requireProgress()
	if err != nil {
		return nil, err
	}
	// Claim a consumer of a table and ref that exist only.
	if _, err := s.engine.StatusOn(ctx, table, ref); err != nil {
		return nil, err
	}
	k := consumerKey(table, ref, consumer)
	if err := s.claim(ctx, store, k); err != nil {
		return nil, err
	}
	cp, err := store.Get(ctx, k)
	switch {
	case err == nil:
		return &feed.Resume{Consumer: consumer, Snapshot: cp.Snapshot, CommitSeq: cp.CommitSeq}, nil
	case errors.Is(err, progress.ErrNotFound):
		return nil, nil
	default:
		return nil, err
	}
}

// claim makes the caller the owner of the consumer k, unless another
// principal owns it: the one the configuration names (auth consumers), or
// the first to claim or acknowledge it.
func (s *Server) claim(ctx context.Context, store ProgressStore, k progress.Key) error {
	if _, ok := s.configuredOwner(k.Consumer); ok {
		return s.assignConfigured(ctx, store, k)
	}
	return store.Claim(ctx, k, principalName(ctx))
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
func (s *Server) assignConfigured(ctx context.Context, store ProgressStore, k progress.Key) error {
	owner, ok := s.configuredOwner(k.Consumer)
	if !ok {
		return nil
	}
	if caller := principalName(ctx); caller != owner {
		return fmt.Errorf("%w: consumer %q belongs to principal %q (by the configuration's auth consumers), not %q",
			progress.ErrNotOwner, k.Consumer, owner, caller)
	}
	return store.Assign(ctx, k, owner)
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
	// Ref is the branch or tag the consumer follows ("": the main branch).
	Ref string `json:"ref"`
}

func (b consumerBody) names() []string { return []string{b.Consumer, b.Table, b.Ref} }

// ackBody is the body of ack.
type ackBody struct {
	Consumer string     `json:"consumer"`
	Table    string     `json:"table"`
	Snapshot *jsonInt64 `json:"snapshot"`
	// Protect asks that the snapshot be kept from the table's expiry.
	Protect bool `json:"protect"`
	// Ref is the branch or tag the consumer follows ("": the main branch).
	Ref string `json:"ref"`
}

func (b ackBody) names() []string { return []string{b.Consumer, b.Table, b.Ref} }
