package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/testkit/paimonfx"
	"github.com/sluicefeed/sluice/internal/testkit/testsvc"
)

// paimonExpiry is what PaimonExpire (testdata/paimon/gen/java) prints.
type paimonExpiry struct {
	Consumers map[string]int64 `json:"consumers"`
	Before    []int64          `json:"before"`
	Expired   int              `json:"expired"`
	After     []int64          `json:"after"`
}

// paimonExpire runs Paimon's own Java expiry on table db.name of the
// warehouse folder wh: at most one snapshot retained, older than a
// millisecond, unless a consumer holds it.
func paimonExpire(t *testing.T, ctx context.Context, wh, db, name string) paimonExpiry {
	t.Helper()
	cp := os.Getenv("SLUICE_PAIMON_JAVA_CLASSPATH")
	if cp == "" {
		t.Fatal("SLUICE_PAIMON_JAVA_CLASSPATH is not set: run the e2e tests with `make test-e2e`, which builds " +
			"Paimon's Java classpath (make paimon-java)")
	}
	cmd := exec.CommandContext(ctx, "java", "-cp", cp, "sluice.PaimonExpire", "file://"+wh, db, name)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("PaimonExpire: %v\n%s", err, out)
	}
	var e paimonExpiry
	if err := json.Unmarshal(out, &e); err != nil {
		t.Fatalf("PaimonExpire printed %q: %v", out, err)
	}
	return e
}

// TestProtectPaimonConsumer: a real flightd with --protect-consumers on a
// Paimon warehouse. A protected consumer's ack writes Sluice's consumer
// file; Paimon's own Java expiry (paimon-bundle, retaining one snapshot)
// reads it as a consumer and keeps the acknowledged snapshot and every
// later one, so the consumer resumes exactly: its window applied
// to the writer's state at its snapshot is the writer's state at the head.
// An unprotected consumer whose snapshot the expiry removed gets the
// resync event, then FAILED_PRECONDITION.
func TestProtectPaimonConsumer(t *testing.T) {
	fxs, err := paimonfx.Fixtures(paimonFixtureRoot)
	if err != nil {
		t.Fatal(err)
	}
	const db, name = "java", "pk_compact"
	var f paimonfx.Fixture
	for _, fx := range fxs {
		if fx.DB == db && fx.Name == name {
			f = fx
		}
	}
	if len(f.Meta.Snapshots) < 6 {
		t.Fatalf("fixture %s.%s has %d snapshots, want 6 or more", db, name, len(f.Meta.Snapshots))
	}
	head := f.Meta.Snapshots[len(f.Meta.Snapshots)-1].ID
	wh := filepath.Join(t.TempDir(), "warehouse")
	copyTree(t, filepath.Join(paimonFixtureRoot, "warehouse"), wh)
	srv := startFlightd(t, "--warehouse", t.TempDir(), "--create-catalog", "--paimon-warehouse", wh,
		"--protect-consumers")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := dialGo(t, ctx, srv.URI())
	table := "paimon." + db + "." + name

	const acked, lost = int64(3), int64(2)
	protected, plain := testsvc.UniqueName("kept"), testsvc.UniqueName("plain")
	if p, err := c.Ack(ctx, protected, table, acked, sluice.WithProtect()); err != nil || !p.Protected {
		t.Fatalf("ack with protect: %+v %v", p, err)
	}
	if _, err := c.Ack(ctx, plain, table, lost); err != nil {
		t.Fatal(err)
	}

	e := paimonExpire(t, ctx, wh, db, name)
	t.Logf("Paimon's expiry: %+v", e)
	if got := e.Consumers["sluice-"+protected]; got != acked {
		t.Fatalf("Paimon reads the consumers %v: want sluice-%s at next snapshot %d", e.Consumers, protected, acked)
	}
	var wantAfter []int64
	for id := acked; id <= head; id++ {
		wantAfter = append(wantAfter, id)
	}
	if e.Expired == 0 || !slices.Equal(e.After, wantAfter) {
		t.Fatalf("after Paimon's expiry the snapshots are %v (%d expired), want %v: the consumer file keeps "+
			"the acknowledged snapshot and every later one", e.After, e.Expired, wantAfter)
	}

	t.Run("the protected consumer resumes exactly", func(t *testing.T) {
		sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: table, Consumer: protected, NoFollow: true})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Release()
		var st paimonfx.State
		for sub.Next() {
			b := sub.Batch()
			if b.Meta.Resync {
				t.Fatalf("batch %+v: a resync, want the changes after snapshot %d", b.Meta, acked)
			}
			if st == nil {
				if st, err = f.LoadState(acked, paimonfx.ImageColumns(b.Record.Schema())); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.Apply(b.Record); err != nil {
				t.Fatal(err)
			}
		}
		if err := sub.Err(); err != nil {
			t.Fatalf("the stream ended with %v", err)
		}
		want, err := f.LoadState(head, nil)
		if err != nil {
			t.Fatal(err)
		}
		if st == nil {
			t.Fatalf("the stream sent no batch")
		}
		if d := st.Diff(want); d != "" {
			t.Fatalf("the changes applied to the writer's state at %d are not its state at %d:\n%s", acked, head, d)
		}
	})

	t.Run("the unprotected consumer gets the resync event", func(t *testing.T) {
		sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: table, Consumer: plain, NoFollow: true})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Release()
		if !sub.Next() {
			t.Fatalf("no batch: %v", sub.Err())
		}
		if m := sub.Batch().Meta; !m.Resync || m.Rows != 0 || m.Snapshot != lost || m.EarliestSnapshot != acked {
			t.Fatalf("first batch %+v: want a 0-row resync of snapshot %d with earliest start %d", m, lost, acked)
		}
		for sub.Next() {
		}
		if sluice.Code(sub.Err()) != codes.FailedPrecondition {
			t.Fatalf("after the resync event: %v, want FAILED_PRECONDITION", sub.Err())
		}
	})
}
