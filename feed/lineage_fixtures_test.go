package feed_test

// Row lineage on Spark-written Iceberg v3 tables without identifier fields
// (spark_lineage_v3, spark_lineage_upgrade; see testdata/fixtures/gen). Their
// EXPECTED.json holds, per snapshot, each row's _row_id and
// _last_updated_sequence_number as Spark reads them. TestFixtures checks
// their feeds against the full states; this test checks the pairing: with
// "lineage": true and no identity,
//   - every image carries the _row_id Spark reads for that row (before
//     images at the parent, after images at the snapshot);
//   - the changes of a snapshot are exactly what the two states say row id
//     by row id: an id in both with other values is an update pair, an id
//     gone a delete, a new id an insert, and an id whose row kept its values
//     nothing (carry-over, UPDATE SET c = c);
//   - the plan says pairing row-lineage;
//   - on the copy-on-write snapshots, the feed equals Spark's changelog view
//     with compute_updates.
// Rows without an id (written before the upgrade to v3) fall back to their
// values: those windows are checked by the full-state oracle only.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
)

// fxLineageNames are the fixtures with the writer's read of row lineage.
var fxLineageNames = []string{"spark_lineage_v3", "spark_lineage_upgrade"}

// fxLineageRow is one row of a snapshot as the writer reads it: its
// canonical values (in the end schema) and its row id ("" for none).
type fxLineageRow struct{ data, rowID string }

// lineageRows joins a snapshot's rows with their lineage by the id column
// (unique in the fixtures), keyed by id.
func (fx *fxFixture) lineageRows(t *testing.T, i int, end *iceberg.Schema) map[string]fxLineageRow {
	t.Helper()
	s := fx.exp.Snapshots[i]
	if len(s.Lineage) != len(s.Rows) {
		t.Fatalf("snapshot %d: %d rows, %d lineage rows", s.SnapshotID, len(s.Rows), len(s.Lineage))
	}
	ids := map[string]string{}
	for _, l := range s.Lineage {
		ids[fmt.Sprint(l["id"])] = fxNumber(l["_row_id"])
	}
	sc := fx.schema(t, s)
	out := map[string]fxLineageRow{}
	for _, r := range s.Rows {
		id := fmt.Sprint(r["id"])
		rid, ok := ids[id]
		if !ok {
			t.Fatalf("snapshot %d: row id %s has no lineage", s.SnapshotID, id)
		}
		out[id] = fxLineageRow{data: fxRow(t, r, sc, end), rowID: rid}
	}
	return out
}

// fxNumber is a JSON integer as fxArrowValue writes a long, "" for null.
func fxNumber(v any) string {
	if v == nil {
		return ""
	}
	return "i" + v.(json.Number).String()
}

// fxSplitRowID splits a lineage image into its data and its row id (the
// image's last field; "" for null).
func fxSplitRowID(t *testing.T, img string) (data, rowID string) {
	t.Helper()
	trimmed := strings.TrimSuffix(img, "|")
	k := strings.LastIndexByte(trimmed, '|')
	if k < 0 {
		t.Fatalf("image %q has no row id", img)
	}
	data, rowID = trimmed[:k+1], trimmed[k+1:]
	if rowID == "∅" {
		rowID = ""
	}
	return data, rowID
}

func TestFixturesRowLineage(t *testing.T) {
	for _, name := range fxLineageNames {
		t.Run(name, func(t *testing.T) {
			fx := fxLoad(t, name)
			if len(fx.exp.Snapshots[0].Lineage) == 0 {
				t.Fatalf("%s: EXPECTED.json holds no lineage", name)
			}
			for _, budget := range []int64{0, 1} {
				t.Run(fmt.Sprintf("budget_%d", budget), func(t *testing.T) { fx.checkRowLineage(t, budget) })
			}
		})
	}
}

// checkRowLineage reads every snapshot of a row-lineage fixture with
// "lineage": true, in memory (budget 0) or spilling (a budget of one
// byte), and checks its pairing by row id against the writer's reads.
func (fx *fxFixture) checkRowLineage(t *testing.T, budget int64) {
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	eng := feed.New(fxTables{fx.name: fx.tbl}, feed.Options{Allocator: mem, MaxBatchRows: 5,
		MemoryBudget: budget, SpillDir: t.TempDir()})
	snaps := fx.exp.Snapshots
	paired := 0
	for i := 1; i < len(snaps); i++ {
		s := snaps[i]
		t.Run(fmt.Sprintf("%02d_%s", i+1, s.Operation), func(t *testing.T) {
			end := fx.schema(t, s)
			req := feed.Request{FromSnapshot: &snaps[i-1].SnapshotID, ToSnapshot: &s.SnapshotID, Lineage: true}
			p, changes := fx.readFeed(t, eng, req, end)
			if len(p.Identity) > 0 {
				t.Fatalf("plan with identity %v on a table without identifier fields", p.Identity)
			}
			before, after := fx.lineageRows(t, i-1, end), fx.lineageRows(t, i, end)
			// The changes the two states say, row id by row id, when
			// every row has one.
			want, complete := fxLineageChanges(before, after)
			wantPairing := feed.PairingRowLineage
			if !complete {
				// Rows without ids fall back; without identity
				// columns, to a delete and an insert.
				wantPairing = feed.PairingNone
			}
			if p.Pairing != wantPairing {
				t.Errorf("plan pairing %q, want %q", p.Pairing, wantPairing)
			}
			// Every image carries the row id Spark reads for it.
			byData := func(rows map[string]fxLineageRow) map[string]string {
				out := map[string]string{}
				for _, r := range rows {
					out[r.data] = r.rowID
				}
				return out
			}
			beforeIDs, afterIDs := byData(before), byData(after)
			got := fxState{}
			for _, c := range changes {
				if c.before != "" {
					data, rid := fxSplitRowID(t, c.before)
					if want, ok := beforeIDs[data]; !ok || want != rid {
						t.Errorf("%s before-image %s has row id %q, Spark reads %q", c.op, data, rid, want)
					}
					if c.op == feed.OpUpdateBefore {
						paired++
					}
					got[fmt.Sprintf("%s %s %s", c.op, rid, data)]++
				}
				if c.after != "" {
					data, rid := fxSplitRowID(t, c.after)
					if want, ok := afterIDs[data]; !ok || want != rid {
						t.Errorf("%s after-image %s has row id %q, Spark reads %q", c.op, data, rid, want)
					}
					got[fmt.Sprintf("%s %s %s", c.op, rid, data)]++
				}
			}
			if !complete {
				dels, ins := fxState{}, fxState{}
				for _, c := range changes {
					if c.op != feed.OpDelete && c.op != feed.OpInsert {
						t.Errorf("a snapshot that changes rows without row ids, on a table without "+
							"identity, emits %s", c.op)
					}
					if c.before != "" {
						data, _ := fxSplitRowID(t, c.before)
						dels[data]++
					}
					if c.after != "" {
						data, _ := fxSplitRowID(t, c.after)
						ins[data]++
					}
				}
				// Carry-overs cancel by value where ids do not meet.
				for data := range dels {
					if ins[data] > 0 {
						t.Errorf("snapshot %d deletes and re-inserts the unchanged row %s (carry-over)",
							s.SnapshotID, data)
					}
				}
				t.Logf("rows without row ids: the rest is checked by the full-state oracle (TestFixtures)")
				return
			}
			if d := fxDiff(got, want); d != "" {
				t.Errorf("snapshot %d (%s): the feed is not the changes by row id of Spark's reads "+
					"(missing: by row id, not in the feed; extra: the other way):\n%s", s.SnapshotID, s.Statement, d)
			}
			for _, sp := range p.Snapshots {
				if sp.Pairing != "" && sp.Pairing != feed.PairingRowLineage {
					t.Errorf("snapshot %d pairs by %q (%s), want row-lineage", sp.ID, sp.Pairing, sp.LineageReason)
				}
			}
			if s.SparkChangelogUpdates != nil {
				fx.checkChangelogUpdates(t, s, changes, end)
			}
		})
	}
	if fx.name == "spark_lineage_v3" && paired == 0 {
		t.Errorf("no snapshot paired an update")
	}
}

// fxLineageChanges are the changes from one state to the next by row id:
// complete is false when a row of either has no id.
func fxLineageChanges(before, after map[string]fxLineageRow) (fxState, bool) {
	byID := func(rows map[string]fxLineageRow) (map[string]string, bool) {
		out := map[string]string{}
		for _, r := range rows {
			if r.rowID == "" {
				return nil, false
			}
			out[r.rowID] = r.data
		}
		return out, true
	}
	b, ok1 := byID(before)
	a, ok2 := byID(after)
	if !ok1 || !ok2 {
		return nil, false
	}
	want := fxState{}
	for rid, data := range b {
		switch next, ok := a[rid]; {
		case !ok:
			want[fmt.Sprintf("%s %s %s", feed.OpDelete, rid, data)]++
		case next != data:
			want[fmt.Sprintf("%s %s %s", feed.OpUpdateBefore, rid, data)]++
			want[fmt.Sprintf("%s %s %s", feed.OpUpdateAfter, rid, next)]++
		}
	}
	for rid, data := range a {
		if _, ok := b[rid]; !ok {
			want[fmt.Sprintf("%s %s %s", feed.OpInsert, rid, data)]++
		}
	}
	return want, true
}

// checkChangelogUpdates compares a copy-on-write snapshot's feed, paired
// by row lineage without identity, with Spark's changelog view computing
// updates by id.
func (fx *fxFixture) checkChangelogUpdates(t *testing.T, s fxSnapshot, changes []fxChange, end *iceberg.Schema) {
	t.Helper()
	sparkType := map[string]string{feed.OpInsert: "INSERT", feed.OpDelete: "DELETE",
		feed.OpUpdateBefore: "UPDATE_BEFORE", feed.OpUpdateAfter: "UPDATE_AFTER"}
	got := fxState{}
	for _, c := range changes {
		img := c.after
		if c.op == feed.OpDelete || c.op == feed.OpUpdateBefore {
			img = c.before
		}
		data, _ := fxSplitRowID(t, img)
		got[fmt.Sprintf("%s %s", sparkType[c.op], data)]++
	}
	want := fxState{}
	for _, r := range s.SparkChangelogUpdates {
		typ, _ := r["_change_type"].(string)
		want[fmt.Sprintf("%s %s", typ, fxRow(t, r, end, end))]++
	}
	if d := fxDiff(got, want); d != "" {
		t.Errorf("snapshot %d (%s): the feed paired by row lineage is not Spark's changelog with "+
			"compute_updates (missing: in Spark's, not the feed; extra: in the feed only):\n%s", s.SnapshotID, s.Statement, d)
	}
}

// TestFixturesRowLineageState reads the full state of every snapshot of
// the row-lineage fixtures with "lineage": true: every row carries the
// _row_id Spark reads for it (materialized, or inherited from its file's
// first_row_id and its position; null before the upgrade to v3).
func TestFixturesRowLineageState(t *testing.T) {
	for _, name := range fxLineageNames {
		t.Run(name, func(t *testing.T) {
			fx := fxLoad(t, name)
			mem := memory.NewCheckedAllocator(arrowpool.Shared())
			defer mem.AssertSize(t, 0)
			eng := feed.New(fxTables{fx.name: fx.tbl}, feed.Options{Allocator: mem, MaxBatchRows: 5})
			for i, s := range fx.exp.Snapshots {
				end := fx.schema(t, s)
				want := fxState{}
				for _, r := range fx.lineageRows(t, i, end) {
					want[r.data+r.rowID]++
				}
				sp, err := eng.PlanState(t.Context(), feed.Request{Table: fx.name, ToSnapshot: &s.SnapshotID, Lineage: true})
				if err != nil {
					t.Fatal(err)
				}
				got := fxState{}
				for b, err := range eng.ReadState(t.Context(), sp) {
					if err != nil {
						t.Fatal(err)
					}
					after := b.Record.Column(2).(*array.Struct)
					for r := range int(b.Record.NumRows()) {
						data, rid := fxSplitRowID(t, fxImage(after, r))
						got[data+rid]++
					}
					b.Record.Release()
				}
				if d := fxDiff(got, want); d != "" {
					t.Errorf("snapshot %d: the state with row ids is not Spark's:\n%s", s.SnapshotID, d)
				}
			}
		})
	}
}
