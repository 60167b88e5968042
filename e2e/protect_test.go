package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/testkit/testsvc"
)

// expiry is what expire_snapshots.py reports.
type expiry struct {
	Expired  []int64          `json:"expired"`
	Retained []int64          `json:"retained"`
	Refs     map[string]int64 `json:"refs"`
	Removed  []string         `json:"removed"`
}

// expire runs expire_snapshots.py: pyiceberg expires the snapshots of table
// committed before snapshot before (not those a tag holds), then the files
// no retained snapshot references are deleted from S3.
func (c s3Catalog) expire(t *testing.T, ctx context.Context, table string, before int64) expiry {
	t.Helper()
	out := filepath.Join(t.TempDir(), "expiry.json")
	cmd := exec.CommandContext(ctx, python(t), "python/expire_snapshots.py", "--table", table, "--before",
		fmt.Sprint(before), "--out", out)
	cmd.Env = append(os.Environ(), c.key.Env()...)
	cmd.Env = append(cmd.Env, "SLUICE_REST_URI="+c.uri, "SLUICE_WAREHOUSE="+c.warehouse,
		"SLUICE_S3_ENDPOINT="+c.moto.Endpoint)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("expire_snapshots.py: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var e expiry
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// protectedTable writes an Iceberg table (its name made unique from name)
// on the shared REST catalog in 5 snapshots (0 and 1 from the small
// workload, 2 to 4 from the larger one) and starts a flightd with
// --protect-consumers on that catalog. It returns the catalog, the table,
// the oracle of its last write and a Go client of the flightd.
func protectedTable(t *testing.T, ctx context.Context, name string) (s3Catalog, string, *s3Oracle, *sluice.Client) {
	t.Helper()
	rest := testsvc.SharedRESTCatalog(t)
	m := rest.Moto
	cat := s3Catalog{uri: rest.URI, warehouse: rest.Warehouse, moto: m, key: m.Admin}
	table := "protect." + strings.ReplaceAll(testsvc.UniqueName(name), "-", "_")
	cat.write(t, ctx, "small", table, 0) // snapshots 0 and 1
	var o *s3Oracle
	for seq := 1; seq <= 3; seq++ { // snapshots 2, 3 and 4
		o = cat.write(t, ctx, "more", table, seq)
	}
	noAmbientAWS(t)
	srv := startFlightd(t, "--config", s3Config{uri: rest.URI, warehouse: rest.Warehouse,
		properties: s3Props(m, m.Admin), extra: "protect:\n  consumers: true\n  max_ref_age: 24h\n"}.file(t))
	c := dialGo(t, ctx, srv.URI())
	return cat, table, o, c
}

// TestProtectConsumers: a real flightd with --protect-consumers on a REST
// catalog. A protected consumer acks a snapshot (the tag
// sluice-consumer-<id> appears through the catalog), lags while pyiceberg
// expires every older snapshot and the orphan files are deleted, and then
// resumes exactly. An unprotected consumer that lagged further gets the
// explicit resync batch (with the earliest snapshot), then
// FAILED_PRECONDITION; with on_gap resync it gets the full state at the
// current snapshot, equal to pyiceberg's scan, and then the next commit's
// changes. Resetting the protected consumer drops its tag.
func TestProtectConsumers(t *testing.T) {
	python(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cat, table, o, c := protectedTable(t, ctx, "items")
	snap := func(i int) int64 { return o.Snapshots[i].ID }

	// The protected consumer has processed up to snapshot 2; the other
	// one up to snapshot 0.
	protected, plain := testsvc.UniqueName("kept"), testsvc.UniqueName("plain")
	p, err := c.Ack(ctx, protected, table, snap(2), sluice.WithProtect())
	if err != nil || !p.Protected {
		t.Fatalf("ack with protect: %+v %v", p, err)
	}
	if p, err := c.Ack(ctx, plain, table, snap(0)); err != nil || p.Protected {
		t.Fatalf("ack: %+v %v", p, err)
	}

	// Expiry of everything before snapshot 3, and of the orphan files.
	e := cat.expire(t, ctx, table, snap(3))
	tag := "sluice-consumer-" + protected
	if e.Refs[tag] != snap(2) {
		t.Fatalf("refs after expiry %v: want the tag %s at %d", e.Refs, tag, snap(2))
	}
	if !slices.Contains(e.Expired, snap(0)) || !slices.Contains(e.Expired, snap(1)) ||
		!slices.Contains(e.Retained, snap(2)) || len(e.Removed) == 0 {
		t.Fatalf("expiry %+v: want snapshots 0 and 1 expired, 2 kept by its tag, orphan files removed", e)
	}
	t.Logf("expired %d snapshots, removed %d orphan files", len(e.Expired), len(e.Removed))

	t.Run("the protected consumer resumes exactly", func(t *testing.T) {
		s := followS3(t, ctx, c, sluice.SubscribeRequest{Table: table, Consumer: protected, NoFollow: true}, o.Columns)
		last := len(o.Snapshots) - 1
		if d := sameChanges(s.until(t, snap(last), time.Minute), o.expected(2, last)); d != "" {
			t.Fatalf("after expiry: %s", d)
		}
		if err := <-s.done; err != nil {
			t.Fatalf("the stream ended with %v", err)
		}
	})

	t.Run("the unprotected consumer gets the resync event", func(t *testing.T) {
		s := followS3(t, ctx, c, sluice.SubscribeRequest{Table: table, Consumer: plain, NoFollow: true}, o.Columns)
		b := <-s.batches
		if !b.meta.Resync || b.meta.Rows != 0 || b.meta.Snapshot != snap(0) || b.meta.EarliestSnapshot != snap(1) ||
			b.meta.CurrentSnapshot != snap(len(o.Snapshots)-1) {
			t.Fatalf("first batch %+v: want a 0-row resync of snapshot %d, earliest start %d", b.meta, snap(0), snap(1))
		}
		err := <-s.done
		if sluice.Code(err) != codes.FailedPrecondition || len(s.batches) != 0 {
			t.Fatalf("after the resync event: %v (%d batches more), want FAILED_PRECONDITION", err, len(s.batches))
		}
	})

	t.Run("on_gap resync: the full state, then the changes", func(t *testing.T) {
		s := followS3(t, ctx, c, sluice.SubscribeRequest{Table: table, Consumer: plain, OnGap: sluice.OnGapResync,
			Heartbeats: true}, o.Columns)
		b := <-s.batches
		if !b.meta.Resync {
			t.Fatalf("first batch %+v: want the resync event", b.meta)
		}
		last := len(o.Snapshots) - 1
		var state []s3Change
		for {
			b := <-s.batches
			if !b.meta.FullState {
				t.Fatalf("batch %+v before the full state completed", b.meta)
			}
			state = append(state, b.changes...)
			if b.meta.SnapshotComplete {
				break
			}
		}
		var want []s3Change // the rows pyiceberg scans at the current snapshot, as its inserts
		for _, r := range o.Snapshots[last].Rows {
			want = append(want, s3Change{snapshot: snap(last), op: "insert", image: oracleRow(o.Columns, r)})
		}
		if d := sameChanges(state, want); d != "" {
			t.Fatalf("the full state after the resync: %s", d)
		}
		o2 := cat.write(t, ctx, "more", table, 4)
		n := len(o2.Snapshots) - 1
		if d := sameChanges(s.until(t, o2.Snapshots[n].ID, time.Minute), o2.expected(n-1, n)); d != "" {
			t.Fatalf("the commit after the resync: %s", d)
		}
	})

	t.Run("a reset drops the tag", func(t *testing.T) {
		if _, err := c.ResetConsumer(ctx, protected, table); err != nil {
			t.Fatal(err)
		}
		last := len(o.Snapshots) - 1
		e := cat.expire(t, ctx, table, snap(last))
		if _, ok := e.Refs[tag]; ok || slices.Contains(e.Retained, snap(2)) {
			t.Fatalf("after the reset, expiry %+v: want the tag gone and snapshot %d expired", e, snap(2))
		}
	})

	t.Run("a bad on_gap", func(t *testing.T) {
		sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: table, OnGap: "skip", NoFollow: true})
		if err == nil {
			for sub.Next() {
			}
			err = sub.Err()
			sub.Release()
		}
		if sluice.Code(err) != codes.InvalidArgument {
			t.Fatalf("on_gap skip: %v, want INVALID_ARGUMENT", err)
		}
	})
}
