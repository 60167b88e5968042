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
// warehouse folder wh (on its branch, when one is given): at most one
// snapshot retained, older than a millisecond, unless a consumer holds it.
func paimonExpire(t *testing.T, ctx context.Context, wh, db, name string, branch ...string) paimonExpiry {
	t.Helper()
	cp := os.Getenv("SLUICE_PAIMON_JAVA_CLASSPATH")
	if cp == "" {
		t.Fatal("SLUICE_PAIMON_JAVA_CLASSPATH is not set: run the e2e tests with `make test-e2e`, which builds " +
			"Paimon's Java classpath (make paimon-java)")
	}
	args := append([]string{"-cp", cp, "sluice.PaimonExpire", "file://" + wh, db, name}, branch...)
	cmd := exec.CommandContext(ctx, "java", args...)
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
	ctx, wh, c := protectingPaimon(t)
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
		resumesExactly(t, ctx, c, sluice.SubscribeRequest{Table: table, Consumer: protected, NoFollow: true}, f,
			acked, head)
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

// TestProtectPaimonBranchConsumer: a protected consumer of a Paimon branch
// (pypaimon's refs.branched, branch b1: snapshots 2, 3 and 4). Its ack
// writes the consumer file into the branch's own consumer folder, where
// Paimon's Java expiry run on the branch reads it: the expiry keeps the
// acknowledged snapshot and the later one where it would keep only the
// head, and the consumer resumes on the branch exactly.
func TestProtectPaimonBranchConsumer(t *testing.T) {
	fxs, err := paimonfx.Fixtures(paimonFixtureRoot)
	if err != nil {
		t.Fatal(err)
	}
	const db, name, branch = "refs", "branched", "b1"
	i := slices.IndexFunc(fxs, func(f paimonfx.Fixture) bool { return f.DB == db && f.Name == name })
	if i < 0 {
		t.Fatalf("no fixture %s.%s", db, name)
	}
	f := fxs[i]
	f.Expected = filepath.Join(f.Expected, "branch-"+branch)
	const acked, head = int64(3), int64(4)
	ctx, wh, c := protectingPaimon(t)
	table := "paimon." + db + "." + name
	id := testsvc.UniqueName("kept")
	if p, err := c.Ack(ctx, id, table, acked, sluice.WithProtect(), sluice.OnRef(branch)); err != nil || !p.Protected {
		t.Fatalf("ack with protect on %s: %+v %v", branch, p, err)
	}
	e := paimonExpire(t, ctx, wh, db, name, branch)
	t.Logf("Paimon's expiry of branch %s: %+v", branch, e)
	if got := e.Consumers["sluice-"+id]; got != acked {
		t.Fatalf("Paimon reads the branch's consumers %v: want sluice-%s at snapshot %d", e.Consumers, id, acked)
	}
	if !slices.Equal(e.Before, []int64{2, 3, 4}) || e.Expired != 1 || !slices.Equal(e.After, []int64{acked, head}) {
		t.Fatalf("Paimon's expiry of the branch: %+v; want snapshots [2 3 4] before, [3 4] after (1 expired): "+
			"the consumer file keeps the acknowledged snapshot", e)
	}
	resumesExactly(t, ctx, c, sluice.SubscribeRequest{Table: table, Ref: branch, Consumer: id, NoFollow: true}, f,
		acked, head)
}

// protectingPaimon starts a flightd with --protect-consumers on a copy of
// the Paimon fixtures' warehouse, wh, and returns a client of it and a
// context that ends with the test (or after 4 minutes).
func protectingPaimon(t *testing.T) (context.Context, string, *sluice.Client) {
	t.Helper()
	wh := filepath.Join(t.TempDir(), "warehouse")
	copyTree(t, filepath.Join(paimonFixtureRoot, "warehouse"), wh)
	srv := startFlightd(t, "--warehouse", t.TempDir(), "--create-catalog", "--paimon-warehouse", wh,
		"--protect-consumers")
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	t.Cleanup(cancel)
	return ctx, wh, dialGo(t, ctx, srv.URI())
}

// resumesExactly subscribes with req, a consumer that acknowledged snapshot
// acked of fixture f, and checks that its changes (neither a resync nor a
// coalesced window), applied to the writer's state at acked, give the
// writer's state at head.
func resumesExactly(t *testing.T, ctx context.Context, c *sluice.Client, req sluice.SubscribeRequest,
	f paimonfx.Fixture, acked, head int64) {
	t.Helper()
	sub, err := c.Subscribe(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Release()
	var st paimonfx.State
	for sub.Next() {
		b := sub.Batch()
		if b.Meta.Resync || b.Meta.Coalesced {
			t.Fatalf("batch %+v: want the changes after snapshot %d", b.Meta, acked)
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
	if st == nil {
		t.Fatal("the stream sent no batch")
	}
	want, err := f.LoadState(head, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := st.Diff(want); d != "" {
		t.Fatalf("the changes applied to the writer's state at %d are not its state at %d:\n%s", acked, head, d)
	}
}
