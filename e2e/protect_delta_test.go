package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/testkit/testsvc"
)

// deltaRetention runs delta_retention.py (delta-rs) and decodes what it
// prints.
func deltaRetention(t *testing.T, ctx context.Context, args ...string) map[string]any {
	t.Helper()
	out, err := exec.CommandContext(ctx, python(t), append([]string{"python/delta_retention.py"}, args...)...).Output()
	if err != nil {
		t.Fatalf("delta_retention.py %v: %v\n%s", args, err, out)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("delta_retention.py printed %q: %v", out, err)
	}
	return m
}

// retentionLeft returns the value of sluice_consumer_retention_left_seconds
// for a consumer and retention ("log", "deleted_files"); ok is false when
// the server exports none.
func retentionLeft(t *testing.T, addr, consumer, retention string) (float64, bool) {
	t.Helper()
	return metricWhere(t, addr, func(line string) bool {
		return strings.HasPrefix(line, "sluice_consumer_retention_left_seconds{") &&
			strings.Contains(line, `consumer="`+consumer+`"`) && strings.Contains(line, `retention="`+retention+`"`)
	})
}

// TestDeltaRetentionWatch: a real flightd with --protect-consumers over a
// delta-rs table whose delta.logRetentionDuration and
// delta.deletedFileRetentionDuration are seconds. A protected consumer
// acknowledges the first version and lags: the metric
// sluice_consumer_retention_left_seconds appears for both retentions and
// falls, and the warning is logged once the lag passes 75% of the
// retention, while the consumer's version is still readable. Then delta-rs
// checkpoints, cleans the log up and vacuums (removing the data file the
// delete rewrote); the consumer's next stream is the resync event, then
// FAILED_PRECONDITION.
func TestDeltaRetentionWatch(t *testing.T) {
	python(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const retention = 6 * time.Second
	root := t.TempDir()
	dir := filepath.Join(root, "events")
	deltaRetention(t, ctx, "write", dir, "--retention", strconv.Itoa(int(retention.Seconds())))
	cfg := filepath.Join(t.TempDir(), "flightd.yaml")
	if err := os.WriteFile(cfg, []byte("protect:\n  consumers: true\n  retention_check: 200ms\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startFlightd(t, "--config", cfg, "--warehouse", t.TempDir(), "--create-catalog", "--delta-root", root,
		"--metrics-listen", "127.0.0.1:0", "--log-level", "info")
	addr := metricsAddr(t, srv)
	c := dialGo(t, ctx, srv.URI())
	const table = "delta.events"
	consumer := testsvc.UniqueName("lagging")
	if p, err := c.Ack(ctx, consumer, table, 0, sluice.WithProtect()); err != nil || !p.Protected {
		t.Fatalf("ack with protect: %+v %v", p, err)
	}

	// The metric, then the warning, while version 0 is still readable.
	const warning = "a protected consumer of a Delta table nears the table's retention"
	var first, last float64
	seen := false
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(srv.logs(), warning) {
		if time.Now().After(deadline) {
			t.Fatalf("no warning within a minute (metric seen %v, last %v):\n%s", seen, last, srv.logs())
		}
		if v, ok := retentionLeft(t, addr, consumer, "log"); ok {
			if !seen {
				first, seen = v, true
			}
			last = v
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, ok := retentionLeft(t, addr, consumer, "deleted_files"); !ok || !seen || last >= first ||
		first > retention.Seconds() {
		t.Fatalf("retention left for the log: first %v, last %v (seen %v), want it to fall from at most %v",
			first, last, seen, retention.Seconds())
	}
	t.Logf("retention left fell from %.1f s to %.1f s before the warning", first, last)
	from, to := int64(0), int64(3)
	if _, err := countChanges(ctx, c, sluice.ChangeRequest{Table: table, FromSnapshot: &from, ToSnapshot: &to}); err != nil {
		t.Fatalf("the consumer's versions before the cleanup: %v", err)
	}

	// delta-rs's own maintenance, once the retention has passed.
	time.Sleep(retention / 2)
	cleaned := deltaRetention(t, ctx, "clean", dir)
	t.Logf("delta-rs cleanup: %v", cleaned)
	if log, _ := cleaned["log"].([]any); len(log) == 0 || log[0] == "00000000000000000000.json" {
		t.Fatalf("cleanup_metadata left the log %v: want version 0's entry gone", cleaned["log"])
	}
	if files, _ := cleaned["vacuumed"].([]any); len(files) == 0 {
		t.Fatalf("vacuum removed no file: %v", cleaned)
	}

	sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: table, Consumer: consumer, NoFollow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Release()
	if !sub.Next() {
		t.Fatalf("no batch: %v", sub.Err())
	}
	if m := sub.Batch().Meta; !m.Resync || m.Rows != 0 || m.Snapshot != 0 {
		t.Fatalf("first batch %+v: want a 0-row resync of version 0", m)
	}
	for sub.Next() {
	}
	if sluice.Code(sub.Err()) != codes.FailedPrecondition {
		t.Fatalf("after the resync event: %v, want FAILED_PRECONDITION", sub.Err())
	}
}
