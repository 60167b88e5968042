package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/testkit/paimonfx"
)

// paimonFixtureRoot holds the writer-made Paimon fixtures
// (testdata/paimon/README.md).
const paimonFixtureRoot = "../testdata/paimon"

// TestPaimon serves a copy of the Paimon fixtures' warehouse with
// --paimon-warehouse and reads it with the Go client: every table listed
// as paimon.<db>.<table>, each table's longest window applied to the
// writer's state at its start gives the writer's state at its end, a
// window over expired snapshots is FailedPrecondition, and a follow
// stream's full state and changes equal the writer's states, with
// commit_seq the snapshot id, including a snapshot committed while it
// follows.
func TestPaimon(t *testing.T) {
	fxs, err := paimonfx.Fixtures(paimonFixtureRoot)
	if err != nil {
		t.Fatal(err)
	}
	wh := filepath.Join(t.TempDir(), "warehouse")
	copyTree(t, filepath.Join(paimonFixtureRoot, "warehouse"), wh)
	// The followed table's last snapshot is held back, to be committed
	// while the stream follows.
	const followed = "py.pk_dedup"
	var follow paimonfx.Fixture
	for _, f := range fxs {
		if f.DB+"."+f.Name == followed {
			follow = f
		}
	}
	last := follow.Meta.Snapshots[len(follow.Meta.Snapshots)-1].ID
	heldFile := filepath.Join(wh, "py.db", "pk_dedup", "snapshot", "snapshot-"+strconv.FormatInt(last, 10))
	held, err := os.ReadFile(heldFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(heldFile); err != nil {
		t.Fatal(err)
	}

	srv := startFlightd(t, "--warehouse", t.TempDir(), "--create-catalog", "--paimon-warehouse", wh,
		"--poll-interval", "50ms", "--heartbeat-interval", "200ms")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := dialGo(t, ctx, srv.URI())

	present := func(f paimonfx.Fixture) []int64 {
		var out []int64
		for _, s := range f.Meta.Snapshots {
			if !s.Expired && (f.DB+"."+f.Name != followed || s.ID != last) {
				out = append(out, s.ID)
			}
		}
		return out
	}

	t.Run("list_tables", func(t *testing.T) {
		tables, err := c.ListTables(ctx)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]sluice.TableInfo{}
		for _, tbl := range tables {
			byName[tbl.Name] = tbl
		}
		for _, f := range fxs {
			name := "paimon." + f.DB + "." + f.Name
			tbl, ok := byName[name]
			ids := present(f)
			want := ids[len(ids)-1]
			if !ok || tbl.Format != "paimon" || tbl.CurrentSnapshot == nil || *tbl.CurrentSnapshot != want ||
				tbl.CommitSeq != want {
				t.Errorf("%s: %+v (listed: %v), want format paimon at snapshot %d", name, tbl, ok, want)
			}
		}
	})

	t.Run("windows", func(t *testing.T) {
		for _, f := range fxs {
			name := "paimon." + f.DB + "." + f.Name
			ids := present(f)
			if len(ids) < 2 {
				continue
			}
			from, to := ids[0], ids[len(ids)-1]
			rdr, err := c.Changes(ctx, sluice.ChangeRequest{Table: name, FromSnapshot: &from, ToSnapshot: &to})
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			var st paimonfx.State
			for b, err := range rdr.All() {
				if err != nil {
					t.Errorf("%s (%d, %d]: %v", name, from, to, err)
					break
				}
				if st == nil {
					if st, err = f.LoadState(from, paimonfx.ImageColumns(b.Record.Schema())); err != nil {
						t.Fatal(err)
					}
				}
				if err := st.Apply(b.Record); err != nil {
					t.Errorf("%s (%d, %d]: %v", name, from, to, err)
					break
				}
			}
			rdr.Release()
			want, err := f.LoadState(to, nil)
			if err != nil {
				t.Fatal(err)
			}
			if st == nil {
				st = paimonfx.State{}
				if st, err = f.LoadState(from, nil); err != nil {
					t.Fatal(err)
				}
			}
			if d := st.Diff(want); d != "" {
				t.Errorf("%s (%d, %d]: the changes applied to the state at %d are not %s's state at %d:\n%s",
					name, from, to, from, f.Meta.Writer, to, d)
			}
		}
	})

	t.Run("pyarrow", func(t *testing.T) {
		// pyarrow reads the same window of each kind of table as the Go
		// client, as a Flight ticket holding the JSON request.
		for _, table := range []string{"py.append_log", "java.pk_dv", "java.pk_aggregation"} {
			name := "paimon." + table
			var f paimonfx.Fixture
			for _, fx := range fxs {
				if fx.DB+"."+fx.Name == table {
					f = fx
				}
			}
			ids := present(f)
			from, to := ids[0], ids[len(ids)-1]
			want, err := countChanges(ctx, c, sluice.ChangeRequest{Table: name, FromSnapshot: &from, ToSnapshot: &to})
			if err != nil {
				t.Fatal(err)
			}
			script := `import json, sys, pyarrow.flight as flight
req = {"table": sys.argv[2], "from_snapshot": sys.argv[3], "to_snapshot": sys.argv[4]}
t = flight.connect(sys.argv[1]).do_get(flight.Ticket(json.dumps(req).encode())).read_all()
print(t.num_rows)`
			out, err := exec.CommandContext(ctx, python(t), "-c", script, srv.URI(), name,
				strconv.FormatInt(from, 10), strconv.FormatInt(to, 10)).CombinedOutput()
			if err != nil {
				t.Fatalf("%s: pyarrow: %v\n%s", name, err, out)
			}
			if got, err := strconv.Atoi(strings.TrimSpace(string(out))); err != nil || got != want {
				t.Errorf("%s (%d, %d]: pyarrow read %q rows, the Go client %d", name, from, to, out, want)
			}
		}
	})

	t.Run("expired", func(t *testing.T) {
		// pk_expire keeps its last snapshots only: a window from its
		// first is gone.
		n, err := countChanges(ctx, c, sluice.ChangeRequest{Table: "paimon.java.pk_expire", FromSnapshot: ptr(1)})
		if sluice.Code(err) != codes.FailedPrecondition {
			t.Errorf("window from expired snapshot 1: %d rows, %v; want FailedPrecondition", n, err)
		}
		n, err = countChanges(ctx, c, sluice.ChangeRequest{Table: "paimon.java.pk_expire"})
		if sluice.Code(err) != codes.FailedPrecondition {
			t.Errorf("the whole history of a table whose first snapshots expired: %d rows, %v; want FailedPrecondition",
				n, err)
		}
	})

	t.Run("follow", func(t *testing.T) {
		name := "paimon." + followed
		ids := present(follow)
		// One stream has one schema: start at the first snapshot of the
		// table's current schema (a column was added halfway).
		schema := follow.Meta.Snapshots[len(follow.Meta.Snapshots)-1].SchemaID
		var first int64
		for _, s := range follow.Meta.Snapshots {
			if s.SchemaID == schema {
				first = s.ID
				break
			}
		}
		sctx, stop := context.WithCancel(ctx)
		defer stop()
		sub, err := c.Subscribe(sctx, sluice.SubscribeRequest{Table: name, Start: sluice.StartFromSnapshotFull,
			FromSnapshot: &first})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Release()
		var st paimonfx.State
		committed := false
		for sub.Next() {
			b := sub.Batch()
			if st == nil {
				st = paimonfx.State{}
			}
			if err := st.Apply(b.Record); err != nil {
				t.Fatalf("snapshot %d: %v", b.Meta.Snapshot, err)
			}
			if !b.Meta.SnapshotComplete {
				continue
			}
			if b.Meta.CommitSeq != b.Meta.Snapshot {
				t.Errorf("snapshot %d has commit_seq %d, want the snapshot id", b.Meta.Snapshot, b.Meta.CommitSeq)
			}
			want, err := follow.LoadState(b.Meta.Snapshot, paimonfx.ImageColumns(b.Record.Schema()))
			if err != nil {
				t.Fatal(err)
			}
			if d := st.Diff(want); d != "" {
				t.Errorf("stream at snapshot %d:\n%s", b.Meta.Snapshot, d)
			}
			switch b.Meta.Snapshot {
			case ids[len(ids)-1]:
				if !committed {
					// Caught up: commit the held-back snapshot.
					if err := os.WriteFile(heldFile, held, 0o644); err != nil {
						t.Fatal(err)
					}
					committed = true
				}
			case last:
				stop()
			}
		}
		if err := sub.Err(); err != nil && sctx.Err() == nil {
			t.Fatal(err)
		}
		if !committed || sctx.Err() == nil {
			t.Fatalf("the stream ended before the snapshot %d committed while it followed", last)
		}
	})
}
