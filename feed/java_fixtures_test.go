package feed_test

// Equality-delete upserts from a writer that does not keep row lineage
// (java_eqdelete_*, written by Iceberg's own Java library as Flink's upsert
// writer commits: a RowDelta of an equality delete file keyed by id and the
// rows written again; see testdata/fixtures/gen). A row written again gets
// a new _row_id, so lineage cannot pair it: the feed falls back to identity
// columns (the table's identifier fields, or the request's identity), else
// to a delete and an insert, and the plan says which and why. The
// copy-on-write rewrite in the same history keeps each row's id, and pairs
// by row lineage. TestFixtures checks every window of these tables against
// the writer's full states; this test checks the pairing, each image's row
// id against the one Iceberg's generic reader gives, and explain's words.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
)

// fxJavaCase is one fixture, read with or without a request identity.
type fxJavaCase struct {
	name     string
	identity []string
	// keyed: the rows written again pair by identity (the table's
	// identifier fields or the request's).
	keyed bool
}

func TestFixturesEqualityDeletePairing(t *testing.T) {
	cases := []fxJavaCase{
		{name: "java_eqdelete_v3", keyed: true},
		{name: "java_eqdelete_noid_v3"},
		{name: "java_eqdelete_noid_v3", identity: []string{"id"}, keyed: true},
		{name: "java_eqdelete_upgrade", keyed: true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s_identity_%s", c.name, strings.Join(c.identity, "_")), func(t *testing.T) {
			fx := fxLoad(t, c.name)
			for _, budget := range []int64{0, 1} {
				t.Run(fmt.Sprintf("budget_%d", budget), func(t *testing.T) { fx.checkJavaPairing(t, c, budget) })
			}
		})
	}
}

// checkJavaPairing reads every one-snapshot window of the fixture with
// "lineage": true and checks, against the writer's reads of the two
// states: the changes (by id, the fixtures' unique column: a changed row is
// an update pair when the snapshot pairs by identity or lineage, else a
// delete and an insert), each image's row id, and the snapshot's pairing
// and reason.
func (fx *fxFixture) checkJavaPairing(t *testing.T, c fxJavaCase, budget int64) {
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	eng := feed.New(fxTables{fx.name: fx.tbl}, feed.Options{Allocator: mem, MaxBatchRows: 4,
		MemoryBudget: budget, SpillDir: t.TempDir()})
	snaps := fx.exp.Snapshots
	seen := map[string]int{}
	for i := 1; i < len(snaps); i++ {
		s := snaps[i]
		t.Run(fmt.Sprintf("%02d_%s", i+1, s.Operation), func(t *testing.T) {
			end := fx.schema(t, s)
			req := feed.Request{FromSnapshot: &snaps[i-1].SnapshotID, ToSnapshot: &s.SnapshotID,
				Identity: c.identity, Lineage: true}
			p, changes := fx.readFeed(t, eng, req, end)
			if len(p.Snapshots) != 1 {
				t.Fatalf("%d snapshots planned, want 1", len(p.Snapshots))
			}
			sp := p.Snapshots[0]
			eqDeletes := strings.HasPrefix(s.Statement, "upsert") || strings.HasPrefix(s.Statement, "delete")
			rewrite := strings.HasPrefix(s.Statement, "copy-on-write")
			want := feed.PairingNone
			if c.keyed {
				want = feed.PairingIdentity
			}
			switch {
			case eqDeletes && sp.Pairing != "":
				// A delete-only snapshot pairs nothing (""), an upsert
				// falls back, saying why.
				if sp.Pairing != want {
					t.Errorf("snapshot %d (%s) pairs by %q, want %q", s.SnapshotID, s.Statement, sp.Pairing, want)
				}
				if fx.exp.Snapshots[i-1].Lineage[0]["_row_id"] != nil &&
					!strings.Contains(sp.LineageReason, "equality deletes") {
					t.Errorf("snapshot %d (%s): lineage_reason %q does not name the equality deletes",
						s.SnapshotID, s.Statement, sp.LineageReason)
				}
			case rewrite:
				if sp.Pairing != feed.PairingRowLineage || sp.LineageReason != "" {
					t.Errorf("copy-on-write snapshot %d pairs by %q (%s), want row-lineage", s.SnapshotID,
						sp.Pairing, sp.LineageReason)
				}
			}
			seen[sp.Pairing]++
			fx.checkJavaChanges(t, i, end, changes, sp.Pairing != feed.PairingNone)
		})
	}
	// Each fixture shows the fallback it is for, and the v3 ones lineage too.
	wantSeen := []string{feed.PairingNone}
	if c.keyed {
		wantSeen = []string{feed.PairingIdentity}
	}
	if c.name != "java_eqdelete_upgrade" {
		wantSeen = append(wantSeen, feed.PairingRowLineage)
	}
	for _, w := range wantSeen {
		if seen[w] == 0 {
			t.Errorf("no snapshot paired by %q (pairings seen: %v)", w, seen)
		}
	}
}

// checkJavaChanges checks the changes of snapshot i against the writer's
// two states, by id: with pairs, a row of one id in both with other values
// is an update pair; without, a delete and an insert. Every image carries
// the row id the writer reads for that row (the before-image at the
// parent, the after-image at the snapshot).
func (fx *fxFixture) checkJavaChanges(t *testing.T, i int, end *iceberg.Schema, changes []fxChange, pairs bool) {
	t.Helper()
	before, after := fx.lineageRows(t, i-1, end), fx.lineageRows(t, i, end)
	want := fxState{}
	for id, b := range before {
		a, ok := after[id]
		switch {
		case !ok:
			want[fmt.Sprintf("%s %s %s", feed.OpDelete, b.rowID, b.data)]++
		case a.data == b.data:
		case pairs:
			want[fmt.Sprintf("%s %s %s", feed.OpUpdateBefore, b.rowID, b.data)]++
			want[fmt.Sprintf("%s %s %s", feed.OpUpdateAfter, a.rowID, a.data)]++
		default:
			want[fmt.Sprintf("%s %s %s", feed.OpDelete, b.rowID, b.data)]++
			want[fmt.Sprintf("%s %s %s", feed.OpInsert, a.rowID, a.data)]++
		}
	}
	for id, a := range after {
		if _, ok := before[id]; !ok {
			want[fmt.Sprintf("%s %s %s", feed.OpInsert, a.rowID, a.data)]++
		}
	}
	got := fxState{}
	for _, c := range changes {
		for _, img := range []string{c.before, c.after} {
			if img != "" {
				data, rid := fxSplitRowID(t, img)
				got[fmt.Sprintf("%s %s %s", c.op, rid, data)]++
			}
		}
	}
	if d := fxDiff(got, want); d != "" {
		s := fx.exp.Snapshots[i]
		t.Errorf("snapshot %d (%s): the feed is not the changes the writer's reads say (missing: from the "+
			"reads, not in the feed; extra: the other way):\n%s", s.SnapshotID, s.Statement, d)
	}
}
