package sluice

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
)

// Start modes of a SubscribeRequest.
const (
	// StartLatestFull streams the full state of the current snapshot as
	// inserts, then the changes of every later commit (the default).
	StartLatestFull = "latest-full"
	// StartLatest streams only the changes after the snapshot current when
	// the stream starts.
	StartLatest = "latest"
	// StartFromSnapshot streams the changes after FromSnapshot.
	StartFromSnapshot = "from-snapshot"
	// StartFromSnapshotFull streams the full state at FromSnapshot, then
	// the changes after it.
	StartFromSnapshotFull = "from-snapshot-full"
	// StartFromTimestamp streams the changes from the first snapshot
	// committed at or after FromTimestampMs.
	StartFromTimestamp = "from-timestamp"
)

// SubscribeRequest asks to follow a table: where to start, as whom, and
// the shape of the changes.
type SubscribeRequest struct {
	// Table is the table, as "namespace.table". Required.
	Table string
	// Consumer is a durable consumer id. When it has acknowledged progress
	// on the table's Ref (Subscription.Ack, Client.Ack), the stream resumes
	// right after it, unless FromSnapshot or FromTimestampMs is set. The
	// same id on the main branch and on a branch are two consumers.
	Consumer string
	// Start is the start mode (StartLatestFull by default) for a consumer
	// without progress.
	Start string
	// FromSnapshot is an explicit start (StartFromSnapshot or
	// StartFromSnapshotFull).
	FromSnapshot *int64
	// FromTimestampMs is an explicit start (StartFromTimestamp).
	FromTimestampMs *int64
	// Ref is the branch whose lineage the stream follows; "" (the
	// default) is the main branch. A Consumer's progress is kept on it. Not
	// a tag (a tag does not move) unless NoFollow.
	Ref string
	// Columns, Filter, Identity, FoldUpdates, Compression, Layout and
	// Lineage are those of ChangeRequest.
	Columns     []string
	Filter      string
	Identity    []string
	FoldUpdates bool
	Compression string
	Layout      string
	Lineage     bool
	// OnGap says what the stream does when the snapshot it would go on from
	// (the consumer's acknowledged one, FromSnapshot, or where it stood)
	// has expired: it always starts with a Resync batch; then OnGapResync
	// streams the full state at the current snapshot and goes on, and ""
	// ends the stream with codes.FailedPrecondition.
	OnGap string
	// Protect makes Subscription.Ack ask the server to keep the
	// acknowledged snapshot from the table's expiry (see WithProtect).
	Protect bool
	// NoFollow ends the stream once it has caught up with the snapshot
	// current when it started.
	NoFollow bool
	// Heartbeats makes Next also return the 0-row heartbeat batches an
	// idle stream sends (Meta.Heartbeat is true).
	Heartbeats bool
	// Reconnect opens the stream again when it ends with
	// codes.Unavailable (the server restarted or shut down; after a backoff
	// from 200ms doubling up to MaxBackoff) or because the table's schema
	// changed (codes.FailedPrecondition "schema changed"; at once, the new
	// stream carrying the new schema: see Schema). The new stream resumes
	// exactly where the old one stood: after the last snapshot it delivered
	// completely (or the last one a heartbeat reported), with the whole
	// full state again when it broke off inside it, or as first asked when
	// nothing had come yet. The batches of a snapshot that broke off come
	// again from its first; Redelivered reports them. With WithBasicAuth,
	// a restarted server that refuses the old token gets a new Handshake
	// first. Ack, too, waits out an outage (see Subscription.Ack).
	Reconnect bool
	// MaxBackoff bounds the wait between reconnects. Default
	// DefaultMaxBackoff.
	MaxBackoff time.Duration
}

// DefaultMaxBackoff is the longest wait between the reconnects of a
// Subscription whose request leaves MaxBackoff zero: the wait starts at
// 200ms and doubles up to it, so a server back within a few seconds is
// found within a few seconds, and only a long outage meets the cap. It is
// also the default of the Python client's max_backoff and of the server's
// --max-backoff (its own retries of a failing catalog).
const DefaultMaxBackoff = 30 * time.Second

// Subscription follows a table: batch after batch, it never ends by itself
// unless the request says NoFollow. The server ends it with an error
// (codes.Unavailable when it shuts down): resume with a new Subscribe (a
// consumer then gets every change after its last acknowledged checkpoint
// again: at-least-once), or ask for Reconnect. A Subscription is not safe
// for concurrent use, except Release. Release it when done.
type Subscription struct {
	c      *Client
	req    SubscribeRequest
	ctx    context.Context // the stream's, across reconnects; Release cancels it
	cancel context.CancelFunc

	mu       sync.Mutex // guards r, released and err against Release
	r        *ChangeReader
	released bool
	err      error // a reconnect's failure

	// Where a reconnect resumes (resume.mode "" for the request as first
	// made), the highest commit_seq delivered, and what it was at the
	// last reconnect.
	resume struct {
		mode     string
		snapshot int64
	}
	deliveredSeq  int64
	redeliverUpto int64
	redelivered   bool // the current batch's
	reconnects    int
	backoff       time.Duration
}

const firstBackoff = 200 * time.Millisecond

// Subscribe opens a stream that follows the table. Errors in the request
// (an unknown table or column, a bad start) are returned here or by the
// first Next; ctx governs the whole stream, reconnects included. Every
// error of the subscription, from here or from Err and All, is an *Error
// whose Op is "Subscribe".
func (c *Client) Subscribe(ctx context.Context, req SubscribeRequest) (*Subscription, error) {
	if req.MaxBackoff <= 0 {
		req.MaxBackoff = DefaultMaxBackoff
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &Subscription{c: c, req: req, ctx: sctx, cancel: cancel, deliveredSeq: -1, redeliverUpto: -1,
		backoff: firstBackoff}
	r, err := s.open()
	if err != nil {
		cancel()
		return nil, err
	}
	s.r = r
	return s, nil
}

// open opens a stream of the request, from the resume point when there is
// one.
func (s *Subscription) open() (*ChangeReader, error) {
	const op = "Subscribe"
	req := s.request()
	pr, err := req.window().proto(op)
	if err != nil {
		return nil, err
	}
	pr.Follow, pr.Start, pr.Consumer, pr.OnGap = !req.NoFollow, req.Start, req.Consumer, req.OnGap
	if req.NoFollow && req.Start == "" && req.Consumer == "" {
		pr.Start = StartLatestFull
	}
	ticket, err := proto.MarshalOptions{Deterministic: true}.Marshal(pr)
	if err != nil {
		return nil, invalidArgument(op, fmt.Sprintf("encode request: %v", err))
	}
	rctx, cancel := context.WithCancel(s.ctx)
	r := &ChangeReader{op: op, ctx: rctx, cancel: cancel, flight: s.c.flight, mem: s.c.mem, tickets: [][]byte{ticket}}
	if err := r.open(); err != nil {
		r.Release()
		return nil, err
	}
	return r, nil
}

// window is the part of the request a ChangeRequest holds too: a field
// the two share is added here, and nowhere else.
func (r SubscribeRequest) window() ChangeRequest {
	return ChangeRequest{
		Table:           r.Table,
		FromSnapshot:    r.FromSnapshot,
		FromTimestampMs: r.FromTimestampMs,
		Ref:             r.Ref,
		Columns:         r.Columns,
		Filter:          r.Filter,
		Identity:        r.Identity,
		FoldUpdates:     r.FoldUpdates,
		Compression:     r.Compression,
		Layout:          r.Layout,
		Lineage:         r.Lineage,
	}
}

// request is the request of the next stream: the first as asked, a
// reconnect's from where the last one stood.
func (s *Subscription) request() SubscribeRequest {
	req := s.req
	if s.resume.mode != "" {
		// An explicit start wins over the consumer's progress, which may
		// lag behind what this subscription delivered.
		snap := s.resume.snapshot
		req.Start, req.FromSnapshot, req.FromTimestampMs = s.resume.mode, &snap, nil
	}
	return req
}

// Next advances to the next batch and reports whether there is one; it
// blocks until the server sends one. It skips heartbeats unless the request
// asked for them. It returns false on an error (see Err), after Release,
// and at the end of a NoFollow stream. With Reconnect, it opens the stream
// again when it fails for a reason a new stream cures, and reads on.
func (s *Subscription) Next() bool {
	for {
		s.mu.Lock()
		r, released := s.r, s.released
		s.mu.Unlock()
		if released {
			return false
		}
		for r.Next() {
			b := r.Batch()
			s.redelivered = s.reconnects > 0 && !b.Meta.Heartbeat && b.Meta.CommitSeq <= s.redeliverUpto
			s.track(b.Meta)
			s.backoff = firstBackoff
			if b.Meta.Heartbeat && !s.req.Heartbeats {
				continue
			}
			return true
		}
		err := r.Err()
		if err == nil || !s.req.Reconnect || s.ctx.Err() != nil || !curable(err) {
			return false
		}
		if !s.reconnect(isSchemaChange(err)) {
			return false
		}
	}
}

// track moves the resume point past a delivered batch.
func (s *Subscription) track(m BatchMeta) {
	if m.Heartbeat {
		// Heartbeats come between snapshots and name the last one
		// streamed completely (-1: none yet).
		if m.Snapshot >= 0 {
			s.resume.mode, s.resume.snapshot = StartFromSnapshot, m.Snapshot
		}
		return
	}
	s.deliveredSeq = max(s.deliveredSeq, m.CommitSeq)
	switch {
	case m.SnapshotComplete:
		s.resume.mode, s.resume.snapshot = StartFromSnapshot, m.Snapshot
	case m.FullState && s.resume.mode == "":
		s.resume.mode, s.resume.snapshot = StartFromSnapshotFull, m.Snapshot
	}
}

// curable reports whether a new stream may succeed where err ended one.
func curable(err error) bool { return Code(err) == codes.Unavailable || isSchemaChange(err) }

func isSchemaChange(err error) bool {
	var e *Error
	return Code(err) == codes.FailedPrecondition && errors.As(err, &e) && strings.Contains(e.Message, "schema changed")
}

// reconnect opens the stream again (at once, or after the backoff), until
// it opens, fails for good, or the subscription ends.
func (s *Subscription) reconnect(now bool) bool {
	s.redeliverUpto = s.deliveredSeq
	for {
		if !now {
			t := time.NewTimer(s.backoff)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return false
			}
			s.backoff = min(2*s.backoff, s.req.MaxBackoff)
		}
		now = false
		s.reconnects++
		r, err := s.open()
		if err != nil {
			if Code(err) == codes.Unavailable && s.ctx.Err() == nil {
				continue
			}
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
			return false
		}
		s.mu.Lock()
		if s.released {
			s.mu.Unlock()
			r.Release()
			return false
		}
		old := s.r
		s.r = r
		s.mu.Unlock()
		old.Release()
		return true
	}
}

// Redelivered reports whether the current batch's snapshot came, in part
// or whole, before the last reconnect (see SubscribeRequest.Reconnect).
func (s *Subscription) Redelivered() bool { return s.redelivered }

// Reconnects returns how many times the stream was opened again.
func (s *Subscription) Reconnects() int { return s.reconnects }

// Batch returns the current batch. Its record is valid until the next
// call to Next or Release.
func (s *Subscription) Batch() ChangeBatch { return s.r.Batch() }

// Schema returns the schema of the change rows: that of the current
// stream, which a reconnect after a schema change replaces.
func (s *Subscription) Schema() *arrow.Schema { return s.r.Schema() }

// Err returns the error that ended the stream.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	return s.r.Err()
}

// All returns the batches as a sequence for range-over-func; it ends with
// one (ChangeBatch{}, error) pair when the stream fails.
func (s *Subscription) All() iter.Seq2[ChangeBatch, error] {
	return func(yield func(ChangeBatch, error) bool) {
		for s.Next() {
			if !yield(s.r.Batch(), nil) {
				return
			}
		}
		if err := s.Err(); err != nil {
			yield(ChangeBatch{}, err)
		}
	}
}

// ErrNotCheckpoint reports an Ack of a batch that does not complete its
// snapshot, or of a subscription without a consumer.
var ErrNotCheckpoint = errors.New("sluice: not a checkpoint")

// Ack acknowledges the current batch's snapshot for the subscription's
// consumer: every change up to and including it has been processed. The
// batch must complete its snapshot (Meta.SnapshotComplete); a later
// Subscribe with the same consumer resumes right after it.
//
// With Reconnect, an Ack survives an outage as the stream does: while the
// server cannot be reached (codes.Unavailable) it is sent again after the
// same backoff, until the server records it. It fails only for good
// reasons the server gives, or when ctx ends or the subscription is
// released first; that error says the ack was not delivered, and the
// consumer resumes after its previous ack. Without Reconnect, an
// unreachable server fails the Ack at once.
func (s *Subscription) Ack(ctx context.Context) (ConsumerProgress, error) {
	cur := s.r.Batch()
	m := cur.Meta
	switch {
	case s.req.Consumer == "":
		return ConsumerProgress{}, fmt.Errorf("%w: the subscription has no consumer", ErrNotCheckpoint)
	case cur.Record == nil || !m.SnapshotComplete || m.Heartbeat:
		return ConsumerProgress{}, fmt.Errorf("%w: the current batch does not complete its snapshot", ErrNotCheckpoint)
	}
	return s.ack(ctx, m.Snapshot)
}

// ack delivers an ack of snapshot, through an outage with Reconnect.
func (s *Subscription) ack(ctx context.Context, snapshot int64) (ConsumerProgress, error) {
	backoff := firstBackoff
	for {
		opts := []AckOption{OnRef(s.req.Ref)}
		if s.req.Protect {
			opts = append(opts, WithProtect())
		}
		p, err := s.c.Ack(ctx, s.req.Consumer, s.req.Table, snapshot, opts...)
		if err == nil || !s.req.Reconnect || Code(err) != codes.Unavailable || ctx.Err() != nil {
			return p, err
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ConsumerProgress{}, s.undelivered(ctx.Err(), snapshot, err)
		case <-s.ctx.Done():
			t.Stop()
			return ConsumerProgress{}, s.undelivered(errReleased, snapshot, err)
		}
		backoff = min(2*backoff, s.req.MaxBackoff)
	}
}

// errReleased ends an Ack that waited for the server when the subscription
// was released.
var errReleased = errors.New("the subscription was released")

// undelivered is the error of an ack that gave up waiting for the server
// because of why (a context error or errReleased); last is the failure of
// its last attempt.
func (s *Subscription) undelivered(why error, snapshot int64, last error) error {
	var e *Error
	msg := last.Error()
	if errors.As(last, &e) {
		msg = e.Message
	}
	code := codes.Canceled
	if errors.Is(why, context.DeadlineExceeded) {
		code = codes.DeadlineExceeded
	}
	m := fmt.Sprintf("the ack of snapshot %d for consumer %q on %s was not delivered (%v; the server was unreachable: %s)",
		snapshot, s.req.Consumer, s.req.Table, why, msg)
	return &Error{Op: "Ack", Code: code, Message: m, status: status.New(code, m), cause: why}
}

// Release ends the stream (cancelling it on the server) and releases the
// current batch. It is idempotent.
func (s *Subscription) Release() {
	s.cancel()
	s.mu.Lock()
	s.released = true
	r := s.r
	s.mu.Unlock()
	r.Release()
}

// ConsumerProgress is a consumer's acknowledged position on a table's
// branch or tag. Its JSON names are the protocol's (the consumer_progress
// action's result, docs/PROTOCOL.md).
type ConsumerProgress struct {
	Consumer string `json:"consumer"`
	Table    string `json:"table"`
	// Ref is the branch or tag the consumer follows, on whose lineage
	// LagCommits and LagMs are measured; "" for the main branch.
	Ref string `json:"ref,omitempty"`
	// Snapshot is the acknowledged snapshot, with its commit sequence and
	// commit time.
	Snapshot    int64 `json:"snapshot"`
	CommitSeq   int64 `json:"commit_seq"`
	TimestampMs int64 `json:"timestamp_ms"`
	// AckedAtMs is when the acknowledgement was recorded.
	AckedAtMs int64 `json:"acked_at_ms"`
	// LagCommits is the number of commits on the ref's lineage after
	// Snapshot; LagMs the commit time of the ref's head minus Snapshot's.
	LagCommits int64 `json:"lag_commits"`
	LagMs      int64 `json:"lag_ms"`
	// Expired is true when Snapshot has left the retained history: resuming
	// fails with codes.FailedPrecondition; ResetConsumer.
	Expired bool `json:"expired"`
	// Owner is the principal that owns the progress (the first to ack the
	// consumer on the table): another's Ack or ResetConsumer fails with
	// codes.PermissionDenied.
	Owner string `json:"owner"`
	// Protected is true when the last ack asked that the snapshot be kept
	// from the table's expiry (WithProtect).
	Protected bool `json:"protected"`
}

func progressOf(p *sluicev1.ConsumerProgress) ConsumerProgress {
	return ConsumerProgress{Consumer: p.GetConsumer(), Table: p.GetTable(), Snapshot: p.GetSnapshot(),
		CommitSeq: p.GetCommitSeq(), TimestampMs: p.GetTimestampMs(), AckedAtMs: p.GetAckedAtMs(),
		LagCommits: p.GetLagCommits(), LagMs: p.GetLagMs(), Expired: p.GetExpired(), Owner: p.GetOwner(),
		Protected: p.GetProtected(), Ref: p.GetRef()}
}

// Ack records, durably, that consumer has processed every change of table
// up to and including snapshot, which must be on the table's lineage
// (codes.InvalidArgument otherwise): the main branch's, or with OnRef that
// branch's or tag's.
func (c *Client) Ack(ctx context.Context, consumer, table string, snapshot int64, opts ...AckOption) (ConsumerProgress,
	error) {
	req := &sluicev1.AckRequest{Consumer: consumer, Table: table, Snapshot: snapshot}
	for _, o := range opts {
		o.applyAck(req)
	}
	resp, err := c.control.Ack(ctx, req)
	if err != nil {
		return ConsumerProgress{}, callError(ctx, "Ack", err)
	}
	return progressOf(resp), nil
}

// ConsumerProgress returns a consumer's progress on a table (with OnRef:
// on that branch or tag), codes.NotFound when it has none.
func (c *Client) ConsumerProgress(ctx context.Context, consumer, table string, opts ...ConsumerOption) (
	ConsumerProgress, error) {
	req := &sluicev1.ConsumerProgressRequest{Consumer: consumer, Table: table, Ref: consumerRef(opts)}
	resp, err := c.control.GetConsumerProgress(ctx, req)
	if err != nil {
		return ConsumerProgress{}, callError(ctx, "ConsumerProgress", err)
	}
	return progressOf(resp), nil
}

// ListConsumers returns the progress of every consumer of a table, on
// every ref (ConsumerProgress.Ref).
func (c *Client) ListConsumers(ctx context.Context, table string) ([]ConsumerProgress, error) {
	resp, err := c.control.ListConsumers(ctx, &sluicev1.ListConsumersRequest{Table: table})
	if err != nil {
		return nil, callError(ctx, "ListConsumers", err)
	}
	out := make([]ConsumerProgress, 0, len(resp.GetConsumers()))
	for _, p := range resp.GetConsumers() {
		out = append(out, progressOf(p))
	}
	return out, nil
}

// ResetConsumer forgets a consumer's progress on a table (with OnRef: on
// that branch or tag, leaving the consumer of the same id on other refs)
// and reports whether it had any.
func (c *Client) ResetConsumer(ctx context.Context, consumer, table string, opts ...ConsumerOption) (bool, error) {
	req := &sluicev1.ResetConsumerRequest{Consumer: consumer, Table: table, Ref: consumerRef(opts)}
	resp, err := c.control.ResetConsumer(ctx, req)
	if err != nil {
		return false, callError(ctx, "ResetConsumer", err)
	}
	return resp.GetRemoved(), nil
}

// WatchCommits yields the table's commit position: the current one, then
// one per new commit as it lands. The sequence ends only with an error (a
// cancelled ctx among them), or when the loop breaks.
func (c *Client) WatchCommits(ctx context.Context, table string) iter.Seq2[CommitSeq, error] {
	return c.WatchCommitsOn(ctx, table, "")
}

// WatchCommitsOn is WatchCommits on the table's branch or tag ref ("": the
// main branch): it yields the ref's head, then one position per new commit
// on the ref, each with its Ref. An unknown ref, or one dropped while
// watched, ends it with codes.NotFound.
func (c *Client) WatchCommitsOn(ctx context.Context, table, ref string) iter.Seq2[CommitSeq, error] {
	return func(yield func(CommitSeq, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stream, err := c.control.WatchCommits(ctx, &sluicev1.WatchCommitsRequest{Table: table, Ref: ref})
		if err != nil {
			yield(CommitSeq{}, callError(ctx, "WatchCommits", err))
			return
		}
		for {
			resp, err := stream.Recv()
			if err != nil {
				yield(CommitSeq{}, callError(ctx, "WatchCommits", err))
				return
			}
			if !yield(commitSeqOf(resp), nil) {
				return
			}
		}
	}
}

// OnGapResync is SubscribeRequest.OnGap's value that streams the full
// state at the current snapshot after a Resync batch.
const OnGapResync = "resync"

// AckOption tunes an Ack: WithProtect, OnRef.
type AckOption interface {
	applyAck(r *sluicev1.AckRequest)
}

// ConsumerOption tunes ConsumerProgress and ResetConsumer: OnRef.
type ConsumerOption interface {
	applyConsumer(ref *string)
}

// ackFunc is an AckOption.
type ackFunc func(*sluicev1.AckRequest)

func (f ackFunc) applyAck(r *sluicev1.AckRequest) { f(r) }

// WithProtect asks the server to keep the acknowledged snapshot from the
// table's expiry until the consumer's next ack (on a server started with
// --protect-consumers; codes.FailedPrecondition on another): an Iceberg
// table's tag sluice-consumer-<consumer> (sluice-consumer-<consumer>#<ref>
// for a consumer of a ref), a Paimon table's consumer file, a Delta
// table's lag watched against its retention. An Ack without it drops the
// protection, as does ResetConsumer.
func WithProtect() AckOption {
	return ackFunc(func(r *sluicev1.AckRequest) { r.Protect = true })
}

// RefOption names the branch or tag a durable consumer follows: an
// AckOption and a ConsumerOption (OnRef).
type RefOption struct{ ref string }

func (o RefOption) applyAck(r *sluicev1.AckRequest) { r.Ref = o.ref }
func (o RefOption) applyConsumer(ref *string)       { *ref = o.ref }

// OnRef makes a call about a durable consumer name the consumer of the
// table's branch or tag ref ("", the default: the main branch): the one
// that SubscribeRequest{Consumer, Ref} resumes. Each ref of a table has
// its own consumers: the same id on main and on a branch are two.
func OnRef(ref string) RefOption { return RefOption{ref: ref} }

// consumerRef is the ref the options name ("" for none).
func consumerRef(opts []ConsumerOption) string {
	var ref string
	for _, o := range opts {
		o.applyConsumer(&ref)
	}
	return ref
}
