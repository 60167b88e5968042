package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicefeed/sluice/feed"
	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
	"github.com/sluicefeed/sluice/server"
)

// fakeGuard records what the server asks of consumer protection; its
// tables keep their log and deleted files for the given retentions.
type fakeGuard struct {
	mu       sync.Mutex // guards pins and released
	pins     map[string]int64
	released []string
	log      time.Duration
	files    time.Duration
}

func (g *fakeGuard) Protect(_ context.Context, table, consumer string, ref feed.Ref, snapshot int64) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pins[guardKey(table, consumer, ref)] = snapshot
	return "fake", nil
}

func (g *fakeGuard) Release(_ context.Context, table, consumer string, ref feed.Ref) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.pins, guardKey(table, consumer, ref))
	g.released = append(g.released, guardKey(table, consumer, ref))
	return nil
}

// guardKey is the fake's key of a pin: "table/consumer", and "@ref" for a
// consumer of a ref (its kind after a colon when known).
func guardKey(table, consumer string, ref feed.Ref) string {
	k := table + "/" + consumer
	if ref.Name != "" {
		k += "@" + ref.Name
	}
	if ref.Kind != "" {
		k += ":" + ref.Kind
	}
	return k
}

func (g *fakeGuard) Retention(context.Context, string) (time.Duration, time.Duration, bool, error) {
	return g.log, g.files, true, nil
}

// lockedBuffer is a log destination safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAckProtect: an ack with protect pins the snapshot through the guard
// and moves the pin; an ack without it and a reset release it; protect on
// a server without a guard is FAILED_PRECONDITION.
func TestAckProtect(t *testing.T) {
	ctx := context.Background()
	plain := start(t, 2, 3, 0)
	_, err := plain.control.Ack(ctx, &sluicev1.AckRequest{Consumer: "c", Table: tableName,
		Snapshot: plain.snapshots[0], Protect: true})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "--protect-consumers") {
		t.Fatalf("protect without a guard: %v, want FAILED_PRECONDITION naming --protect-consumers", err)
	}

	g := &fakeGuard{pins: map[string]int64{}}
	f := startWith(t, 3, 3, 0, nil, func(o *server.Options) { o.Guard = g })
	key := tableName + "/c"
	for _, s := range f.snapshots[:2] {
		p, err := f.control.Ack(ctx, &sluicev1.AckRequest{Consumer: "c", Table: tableName, Snapshot: s, Protect: true})
		if err != nil || !p.GetProtected() || g.pins[key] != s {
			t.Fatalf("ack with protect at %d: %v %v, pins %v", s, p, err, g.pins)
		}
	}
	p, err := f.control.Ack(ctx, &sluicev1.AckRequest{Consumer: "c", Table: tableName, Snapshot: f.snapshots[2]})
	if err != nil || p.GetProtected() || len(g.pins) != 0 || len(g.released) != 1 {
		t.Fatalf("ack without protect: %v %v, pins %v, released %v", p, err, g.pins, g.released)
	}
	if _, err := f.control.Ack(ctx, &sluicev1.AckRequest{Consumer: "c", Table: tableName, Snapshot: f.snapshots[1],
		Protect: true}); err != nil {
		t.Fatal(err)
	}
	if got, err := f.control.GetConsumerProgress(ctx, &sluicev1.ConsumerProgressRequest{Consumer: "c",
		Table: tableName}); err != nil || !got.GetProtected() {
		t.Fatalf("progress: %v %v, want protected", got, err)
	}
	if _, err := f.control.ResetConsumer(ctx, &sluicev1.ResetConsumerRequest{Consumer: "c", Table: tableName}); err != nil {
		t.Fatal(err)
	}
	if len(g.pins) != 0 || len(g.released) != 2 {
		t.Fatalf("after the reset: pins %v, released %v", g.pins, g.released)
	}
}

// TestWatchRetention: the lag of a protected consumer of a table whose
// versions nothing pins (the guard's Retention says so) is the metric
// sluice_consumer_retention_left_seconds, per retention, and a warning
// once it passes 75% of the shorter retention; a consumer whose
// protection is dropped leaves the metric.
func TestWatchRetention(t *testing.T) {
	ctx := context.Background()
	g := &fakeGuard{pins: map[string]int64{}, log: time.Hour, files: time.Millisecond}
	logs := &lockedBuffer{}
	metrics := server.NewMetrics(nil)
	f := startWith(t, 3, 3, 0, nil, func(o *server.Options) {
		o.Guard, o.Metrics = g, metrics
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	if _, err := f.control.Ack(ctx, &sluicev1.AckRequest{Consumer: "lagging", Table: tableName,
		Snapshot: f.snapshots[0], Protect: true}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.srv.WatchRetention(wctx, 10*time.Millisecond)
	}()
	defer func() {
		cancel()
		<-done
	}()
	value := func(retention string) (float64, bool) {
		rec := httptest.NewRecorder()
		metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		re := regexp.MustCompile(`(?m)^sluice_consumer_retention_left_seconds\{consumer="lagging",retention="` +
			retention + `",table="shop.orders"\} (\S+)$`)
		m := re.FindStringSubmatch(rec.Body.String())
		if m == nil {
			return 0, false
		}
		v, err := strconv.ParseFloat(m[1], 64)
		return v, err == nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		logLeft, ok1 := value("log")
		filesLeft, ok2 := value("deleted_files")
		if ok1 && ok2 {
			// The oldest unacknowledged commit is seconds old at most.
			if logLeft > 3600 || logLeft < 3500 || filesLeft >= 0 {
				t.Fatalf("retention left: log %v s, deleted files %v s", logLeft, filesLeft)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no sluice_consumer_retention_left_seconds for the consumer")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for !strings.Contains(logs.String(), "nears the table's retention") {
		if time.Now().After(deadline) {
			t.Fatalf("no warning in the log:\n%s", logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Caught up: no lag.
	if _, err := f.control.Ack(ctx, &sluicev1.AckRequest{Consumer: "lagging", Table: tableName,
		Snapshot: f.snapshots[2], Protect: true}); err != nil {
		t.Fatal(err)
	}
	for v, _ := value("log"); v != 3600; v, _ = value("log") {
		if time.Now().After(deadline) {
			t.Fatalf("a caught-up consumer has %v s of log retention left, want all 3600", v)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Unprotected: off the metric.
	if _, err := f.control.Ack(ctx, &sluicev1.AckRequest{Consumer: "lagging", Table: tableName,
		Snapshot: f.snapshots[2]}); err != nil {
		t.Fatal(err)
	}
	for _, ok := value("log"); ok; _, ok = value("log") {
		if time.Now().After(deadline) {
			t.Fatal("an unprotected consumer stays in the metric")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAckProtectOwner: another principal's ack with protect neither moves
// the owner's pin nor records anything: PERMISSION_DENIED.
func TestAckProtectOwner(t *testing.T) {
	g := &fakeGuard{pins: map[string]int64{}}
	var store server.ProgressStore
	f := startWith(t, 2, 3, 0, nil, withPrincipals(t, nil, &store, "alice", "mallory"),
		func(o *server.Options) { o.Guard = g })
	key := tableName + "/svc"
	if _, err := f.control.Ack(as("alice"), &sluicev1.AckRequest{Consumer: "svc", Table: tableName,
		Snapshot: f.snapshots[0], Protect: true}); err != nil {
		t.Fatal(err)
	}
	_, err := f.control.Ack(as("mallory"), &sluicev1.AckRequest{Consumer: "svc", Table: tableName,
		Snapshot: f.snapshots[1], Protect: true})
	if status.Code(err) != codes.PermissionDenied || g.pins[key] != f.snapshots[0] {
		t.Fatalf("another principal's protect: %v, pin at %d, want PERMISSION_DENIED and the pin at %d", err,
			g.pins[key], f.snapshots[0])
	}
}
