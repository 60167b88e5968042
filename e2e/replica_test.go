package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/grpc/codes"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/testkit/pgtest"
)

// replicaConsumer is a durable consumer that mirrors followTable: it
// applies each snapshot once complete, acknowledges every ackEvery, and
// when its stream breaks subscribes again, resuming from its progress in
// the shared PostgreSQL store, through a client that lists every replica
// (its own first): a survivor takes over.
type replicaConsumer struct {
	id       string
	addrs    string // the replicas, comma-separated, in this consumer's order
	ackEvery int

	mirror     map[string]mirrorRow
	appliedSeq int64
	ackedSeq   int64 // the last acknowledgement confirmed
	ackingSeq  int64 // the last one sent (it may have landed unconfirmed)

	sessions    int // streams opened
	unavailable int // streams ended by an unreachable replica
	batches     int
	redelivered int // batches of snapshots already applied, sent again after a resume
	problems    []string

	// roll, when closed, makes the consumer end its session and dial
	// again (a consumer restarted by its operator).
	mu   sync.Mutex
	roll chan struct{}
}

func (c *replicaConsumer) rollCh() chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.roll
}

// restart asks the consumer to end its session and dial again.
func (c *replicaConsumer) restart() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.roll)
	c.roll = make(chan struct{})
}

func (c *replicaConsumer) problem(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// run consumes until the mirror has applied target (once it is set), ctx
// ends, or a problem that is not a replica going away.
func (c *replicaConsumer) run(ctx context.Context, table string, target *atomic.Int64) {
	for ctx.Err() == nil && len(c.problems) == 0 {
		roll := c.rollCh()
		client, err := sluice.Dial(ctx, c.addrs)
		if err != nil {
			c.problem("dial %s: %v", c.addrs, err)
			return
		}
		done := c.session(ctx, client, table, target, roll)
		client.Close()
		if done {
			return
		}
	}
}

// session subscribes until the stream ends, for good (it returns true when
// the mirror reached the target) or to be resumed.
func (c *replicaConsumer) session(ctx context.Context, client *sluice.Client, table string, target *atomic.Int64,
	roll chan struct{}) bool {
	for {
		sctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-roll:
				cancel()
			case <-sctx.Done():
			}
		}()
		sub, err := client.Subscribe(sctx, sluice.SubscribeRequest{Table: table, Consumer: c.id,
			Start: sluice.StartLatestFull, Heartbeats: true})
		if err != nil {
			cancel()
			switch {
			case ctx.Err() != nil || isClosed(roll):
				return false
			case sluice.Code(err) == codes.Unavailable:
				c.unavailable++
				time.Sleep(100 * time.Millisecond)
				continue
			}
			c.problem("subscribe: %v", err)
			return false
		}
		c.sessions++
		done := c.consume(sctx, sub, target)
		err = sub.Err()
		sub.Release()
		cancel()
		switch {
		case done:
			return true
		case ctx.Err() != nil || isClosed(roll):
			return false
		case sluice.Code(err) == codes.Unavailable:
			c.unavailable++ // the replica went away: subscribe again, on a survivor
			continue
		}
		c.problem("stream ended: %v", err)
		return false
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// consume reads one stream; it returns true when the mirror has applied
// the target.
func (c *replicaConsumer) consume(ctx context.Context, sub *sluice.Subscription, target *atomic.Int64) bool {
	first := true
	var pending map[string]*mirrorRow // the current snapshot's changes: nil value deletes
	fullState := false
	completes := 0
	for sub.Next() {
		b := sub.Batch()
		m := b.Meta
		if m.Heartbeat {
			if t := target.Load(); t > 0 && c.appliedSeq >= t {
				return true
			}
			continue
		}
		c.batches++
		if first {
			first = false
			// The stream resumes right after the acknowledged snapshot, on
			// whichever replica: the progress is in the shared store.
			switch {
			case m.FullState:
				if c.ackedSeq > 0 {
					c.problem("session %d started with the full state, but commit_seq %d was acknowledged",
						c.sessions, c.ackedSeq)
				}
			case c.ackingSeq == 0:
				c.problem("session %d started at commit_seq %d without the full state, and nothing was acknowledged",
					c.sessions, m.CommitSeq)
			case m.CommitSeq < c.ackedSeq+1 || m.CommitSeq > c.ackingSeq+1:
				c.problem("session %d resumed at commit_seq %d, want right after the acknowledged %d (or %d)",
					c.sessions, m.CommitSeq, c.ackedSeq, c.ackingSeq)
			}
		}
		if !m.FullState && m.CommitSeq <= c.appliedSeq {
			c.redelivered++
			continue
		}
		if pending == nil {
			pending = map[string]*mirrorRow{}
			fullState = m.FullState
		}
		if err := applyBatch(pending, b.Record); err != nil {
			c.problem("batch of commit_seq %d: %v", m.CommitSeq, err)
			return false
		}
		if !m.SnapshotComplete {
			continue
		}
		if fullState {
			c.mirror = map[string]mirrorRow{}
		}
		for id, row := range pending {
			if row == nil {
				delete(c.mirror, id)
			} else {
				c.mirror[id] = *row
			}
		}
		pending = nil
		c.appliedSeq = m.CommitSeq
		completes++
		if completes%c.ackEvery == 0 {
			c.ackingSeq = m.CommitSeq
			if _, err := sub.Ack(ctx); err == nil {
				c.ackedSeq = m.CommitSeq
			}
		}
		if t := target.Load(); t > 0 && c.appliedSeq >= t {
			return true
		}
	}
	return false
}

// applyBatch applies change rows to a snapshot's pending changes, by id.
func applyBatch(pending map[string]*mirrorRow, rec arrow.RecordBatch) error {
	ops := rec.Column(0).(*array.String)
	before, after := rec.Column(1).(*array.Struct), rec.Column(2).(*array.Struct)
	field := func(img *array.Struct, name string) arrow.Array {
		idx, _ := img.DataType().(*arrow.StructType).FieldIdx(name)
		return img.Field(idx)
	}
	for i := range int(rec.NumRows()) {
		switch op := ops.Value(i); op {
		case "delete", "update_before":
			pending[strconv.FormatInt(field(before, "id").(*array.Int64).Value(i), 10)] = nil
		case "insert", "update_after":
			id := strconv.FormatInt(field(after, "id").(*array.Int64).Value(i), 10)
			pending[id] = &mirrorRow{Grp: field(after, "grp").(*array.String).Value(i),
				Val: field(after, "val").(*array.Int64).Value(i)}
		default:
			return fmt.Errorf("op %q", op)
		}
	}
	return nil
}

// TestReplicas: three flightd replicas over one warehouse share consumer
// progress in PostgreSQL. Twenty durable consumers spread over them
// mirror a table while a writer commits; one replica is killed (SIGKILL)
// and restarted twice, and between the kills the consumers that listed it
// first are restarted onto it. Every consumer whose replica died resumes
// on a survivor right after its acknowledged snapshot; at the end every
// mirror equals the table, and a window read through a multi-endpoint
// FlightInfo in parallel equals its single-stream read.
func TestReplicas(t *testing.T) {
	dsn, err := pgtest.Start(t)
	if err != nil {
		t.Fatalf("the replica test needs PostgreSQL (make test-e2e installs Debian's postgresql): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	w := newLiveWriter(t, dir, seed)
	for i := range 3 {
		if err := w.step(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	addrs := freeAddrs(t, 3)
	flags := func(i int) []string {
		return append([]string{"--warehouse", dir, "--progress-dsn", dsn, "--poll-interval", "50ms",
			"--heartbeat-interval", "300ms", "--max-backoff", "500ms"}, replicaFlags(addrs, i)...)
	}
	servers := make([]*flightd, 3)
	for i := range servers {
		servers[i] = startFlightd(t, flags(i)...) // one after the other: the first creates the store's tables
	}

	const consumers = 20
	var target atomic.Int64
	cons := make([]*replicaConsumer, consumers)
	var wg sync.WaitGroup
	for i := range cons {
		order := make([]string, 3)
		for k := range order {
			order[k] = "grpc://" + addrs[(i+k)%3]
		}
		cons[i] = &replicaConsumer{id: fmt.Sprintf("mirror-%02d", i), addrs: strings.Join(order, ","),
			ackEvery: 1 + (i/3)%3, mirror: map[string]mirrorRow{}, roll: make(chan struct{})}
		wg.Go(func() { cons[i].run(ctx, followTable, &target) })
	}

	const commits = 45
	r := rand.New(rand.NewPCG(seed, 5))
	kill := func(at int) {
		_ = killFlightd(servers[0])
		t.Logf("commit %d: replica 0 (%s) killed", at, addrs[0])
		time.Sleep(300 * time.Millisecond)
		servers[0] = startFlightd(t, flags(0)...)
	}
	for i := 3; i < commits; i++ {
		if err := w.step(ctx, i); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(40+r.IntN(100)) * time.Millisecond)
		switch i {
		case 14, 34:
			kill(i)
		case 24:
			// The consumers that list replica 0 first (now on a survivor)
			// are restarted: they dial again and land on replica 0.
			for k := 0; k < consumers; k += 3 {
				cons[k].restart()
			}
			t.Logf("commit %d: consumers listing replica 0 first restarted", i)
		}
	}
	want, seq := w.state(t)
	target.Store(seq)
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(2 * time.Minute):
		cancel()
		<-finished
		t.Fatalf("the consumers did not all reach commit_seq %d within 2 minutes", seq)
	}

	redelivered, sessions := 0, 0
	for i, c := range cons {
		for _, p := range c.problems {
			t.Errorf("%s: %s", c.id, p)
		}
		if d := diffMirror(c.mirror, want); d != "" {
			t.Errorf("%s: mirror != table state after %d commits (%s)\nhistory %v", c.id, commits, d, w.log)
		}
		if i%3 == 0 && c.unavailable < 2 {
			t.Errorf("%s listed replica 0 first, was on it at both kills, and failed over %d times, want 2 or more",
				c.id, c.unavailable)
		}
		redelivered += c.redelivered
		sessions += c.sessions
		t.Logf("%s (%s, acks every %d): %d sessions, %d ended by a dead replica, %d batches, %d redelivered",
			c.id, c.addrs, c.ackEvery, c.sessions, c.unavailable, c.batches, c.redelivered)
	}
	t.Logf("%d commits, %d rows at the end; %d consumers, %d sessions, %d batches redelivered (at-least-once)",
		commits, len(want), consumers, sessions, redelivered)

	// The progress of every consumer is in the shared store, seen alike
	// by every replica.
	for i, a := range addrs {
		c := dialGo(t, ctx, "grpc://"+a)
		list, err := c.ListConsumers(ctx, followTable)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != consumers {
			t.Fatalf("replica %d lists %d consumers, want %d", i, len(list), consumers)
		}
	}

	// A window read through a multi-endpoint FlightInfo in parallel, from
	// the replicas its endpoints name, equals the single-stream read.
	c := dialGo(t, ctx, "grpc://"+addrs[1])
	snaps, err := c.Snapshots(ctx, followTable)
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []sluice.ChangeRequest{
		{Table: followTable},
		{Table: followTable, FromSnapshot: &snaps[len(snaps)/3].ID, Identity: []string{"id"}, FoldUpdates: true},
	} {
		got, eps, firsts, err := readSplit(ctx, c, req, 6)
		if err != nil {
			t.Fatal(err)
		}
		single, err := readSingle(ctx, c, req)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, single) || len(single) == 0 {
			t.Fatalf("the window (%s, current] in %d endpoints read %d rows, the single read %d; they differ",
				from(req), len(eps), len(got), len(single))
		}
		if len(eps) < 2 || firsts < 2 {
			t.Fatalf("the window (%s, current] of %d snapshots came in %d endpoints over %d replicas",
				from(req), len(snaps), len(eps), firsts)
		}
		t.Logf("window (%s, current]: %d rows in %d endpoints over %d replicas, equal to the single read",
			from(req), len(got), len(eps), firsts)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("the test ran out of time")
	}
}

// from names a request's window start.
func from(req sluice.ChangeRequest) string {
	if req.FromSnapshot == nil {
		return "start"
	}
	return strconv.FormatInt(*req.FromSnapshot, 10)
}
