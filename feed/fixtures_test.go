package feed_test

// Fixture tests: real Iceberg tables written by other engines (Spark with
// Iceberg's Spark runtime, pyiceberg, Iceberg's Java library), committed under testdata/fixtures
// with the table state at every snapshot as the writing engine itself reads
// it (EXPECTED.json), and for the copy-on-write Spark table also Spark's own
// changelog view. The generators and how to rerun them are in
// testdata/fixtures/gen; this test only reads the committed files.
//
// Two fixtures have had their oldest snapshots expired by the writer
// (pyiceberg_expired, spark_expired_v2): their EXPECTED.json holds the
// retained lineage and what the expiry left, and their windows start at the
// oldest retained snapshot.
//
// The tables were written under the fixed root /sluice-fixtures: every path
// inside their metadata, manifest lists and manifests starts with the
// fixture's root_prefix, which fxIO maps onto the fixture's directory here.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
)

// fxNames are the fixtures under testdata/fixtures.
var fxNames = []string{
	"spark_mor_v2", "spark_dv_v3", "spark_cow_v2", "pyiceberg_v2", "pyiceberg_v011",
	"pyiceberg_expired", "spark_expired_v2", "spark_mor_noop_v2", "spark_mor_noop_v3",
	"spark_lineage_v3", "spark_lineage_upgrade", "java_eqdelete_v3", "java_eqdelete_noid_v3", "java_eqdelete_upgrade",
}

// TestFixtures checks the feed of every fixture against the writing
// engine's own reads: for every consecutive snapshot pair (the first from
// the start of history) and for the whole history, the feed applied to the
// state at `from` must give exactly the state at `to`. For an expired
// fixture, "the start of history" is its oldest retained snapshot.
func TestFixtures(t *testing.T) {
	for _, name := range fxNames {
		t.Run(name, func(t *testing.T) {
			fx := fxLoad(t, name)
			mem := memory.NewCheckedAllocator(arrowpool.Shared())
			defer mem.AssertSize(t, 0)
			eng := feed.New(fxTables{fx.name: fx.tbl}, feed.Options{Allocator: mem, MaxBatchRows: 5})
			snaps := fx.exp.Snapshots

			t.Run("io", func(t *testing.T) {
				fsys, err := fx.tbl.FS(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if f, err := fsys.Open(fx.exp.RootPrefix + "/" + fx.exp.MetadataLocation); err != nil {
					t.Fatalf("open the metadata through the fixture IO: %v", err)
				} else {
					f.Close()
				}
				for _, p := range []string{"/etc/hostname", fx.exp.RootPrefix + "x/metadata", "s3://b" + fx.exp.RootPrefix} {
					if _, err := fsys.Open(p); !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("open %s outside the fixture root: err %v, want not-exist", p, err)
					}
				}
			})
			if fx.exp.Expiry != nil {
				t.Run("expiry", fx.checkExpiry)
			}
			t.Run("lineage", func(t *testing.T) {
				lin, err := eng.Snapshots(context.Background(), fx.name)
				if err != nil {
					t.Fatal(err)
				}
				var got, want []string
				for _, s := range lin {
					got = append(got, fmt.Sprintf("%d:%s", s.ID, s.Operation))
				}
				for _, s := range snaps {
					want = append(want, fmt.Sprintf("%d:%s", s.SnapshotID, s.Operation))
				}
				if !slices.Equal(got, want) {
					t.Fatalf("lineage %v, the writer's %v", got, want)
				}
			})

			check := func(t *testing.T, from, to int, req feed.Request) []fxChange {
				t.Helper()
				end := fx.schema(t, snaps[to])
				if from >= 0 {
					req.FromSnapshot = &snaps[from].SnapshotID
				}
				req.ToSnapshot = &snaps[to].SnapshotID
				p, changes := fx.readFeed(t, eng, req, end)
				for _, sp := range p.Snapshots {
					t.Logf("snapshot %d (%s): strategy %s, %d files read", sp.ID, sp.Operation, sp.Strategy, len(sp.Files))
				}
				t.Logf("feed (%d changes):%s", len(changes), fxOps(changes))
				got := fxApply(t, fx.state(t, from, end), changes)
				if d := fxDiff(got, fx.state(t, to, end)); d != "" {
					t.Errorf("the feed applied to the state at %s is not the state at %d (missing: in the "+
						"writer's read, not in the feed's result; extra: the other way):\n%s",
						fx.label(from), snaps[to].SnapshotID, d)
				}
				return changes
			}

			start := fx.start()
			for i := start + 1; i < len(snaps); i++ {
				s := snaps[i]
				t.Run(fmt.Sprintf("%02d_%s", i+1, s.Operation), func(t *testing.T) {
					changes := check(t, i-1, i, feed.Request{})
					if s.Operation == "replace" && len(changes) > 0 {
						t.Errorf("replace snapshot %d (%s) emits %d changes, want none:%s",
							s.SnapshotID, s.Statement, len(changes), fxOps(changes))
					}
					// A full image both deleted and inserted by one
					// snapshot is no change (docs/PROTOCOL.md): a
					// carry-over row of a rewritten file that leaked, or
					// a row that a merge-on-read statement rewrote
					// unchanged.
					dels, ins := fxState{}, fxState{}
					for _, c := range changes {
						if c.before != "" {
							dels[c.before]++
						}
						if c.after != "" {
							ins[c.after]++
						}
					}
					for k := range dels {
						if ins[k] > 0 {
							t.Errorf("snapshot %d (%s) deletes and re-inserts the unchanged row %s (carry-over)",
								s.SnapshotID, s.Statement, k)
						}
					}
				})
			}
			last := len(snaps) - 1
			t.Run("whole_history", func(t *testing.T) { check(t, start, last, feed.Request{}) })
			t.Run("from_first", func(t *testing.T) { check(t, 0, last, feed.Request{}) })
			t.Run("net_whole_history", func(t *testing.T) { check(t, start, last, feed.Request{NetChanges: true}) })
			t.Run("folded_whole_history", func(t *testing.T) { check(t, start, last, feed.Request{FoldUpdates: true}) })

			if slices.ContainsFunc(snaps, func(s fxSnapshot) bool { return s.SparkChangelogIdentity != nil }) {
				t.Run("spark_changelog", func(t *testing.T) { fx.checkSparkChangelog(t, eng) })
			}
		})
	}
}

func (fx *fxFixture) label(i int) string {
	if i < 0 {
		return "the start"
	}
	return strconv.FormatInt(fx.exp.Snapshots[i].SnapshotID, 10)
}

// checkSparkChangelog compares, per snapshot, the feed with Spark's
// changelog view of the window (parent, snapshot] (create_changelog_view),
// as multisets of (change type, snapshot, image):
//   - with identifier_columns => array('id') Spark computes updates; the
//     feed with identity [id] must give the same INSERT / DELETE /
//     UPDATE_BEFORE / UPDATE_AFTER rows;
//   - without, Spark gives only INSERT and DELETE rows; the feed's update
//     pairs count as a DELETE of the before-image and an INSERT of the
//     after-image there.
//
// Legitimate differences not compared: order (Spark sorts nothing; the
// feed puts deletes first and each update_after right after its
// update_before) and _change_ordinal (Spark's position of the snapshot in
// its window, always 0 for these one-snapshot windows).
func (fx *fxFixture) checkSparkChangelog(t *testing.T, eng *feed.Engine) {
	snaps := fx.exp.Snapshots
	sparkType := map[string]string{feed.OpInsert: "INSERT", feed.OpDelete: "DELETE",
		feed.OpUpdateBefore: "UPDATE_BEFORE", feed.OpUpdateAfter: "UPDATE_AFTER"}
	for i, s := range snaps {
		t.Run(fmt.Sprintf("%02d_%s", i+1, s.Operation), func(t *testing.T) {
			end := fx.schema(t, s)
			req := feed.Request{ToSnapshot: &s.SnapshotID, Identity: []string{"id"}}
			if i > 0 {
				req.FromSnapshot = &snaps[i-1].SnapshotID
			}
			_, changes := fx.readFeed(t, eng, req, end)
			feedRows, plainRows := fxState{}, fxState{}
			for _, c := range changes {
				img := c.after
				if c.op == feed.OpDelete || c.op == feed.OpUpdateBefore {
					img = c.before
				}
				feedRows[fmt.Sprintf("%s @%d %s", sparkType[c.op], c.snapshot, img)]++
				plain := "INSERT"
				if c.op == feed.OpDelete || c.op == feed.OpUpdateBefore {
					plain = "DELETE"
				}
				plainRows[fmt.Sprintf("%s @%d %s", plain, c.snapshot, img)]++
			}
			spark := func(rows []map[string]any) fxState {
				st := fxState{}
				for _, r := range rows {
					typ, _ := r["_change_type"].(string)
					n, _ := r["_commit_snapshot_id"].(json.Number)
					sid, err := n.Int64()
					if err != nil {
						t.Fatalf("changelog row without _commit_snapshot_id: %v", r)
					}
					st[fmt.Sprintf("%s @%d %s", typ, sid, fxRow(t, r, end, end))]++
				}
				return st
			}
			if d := fxDiff(feedRows, spark(s.SparkChangelogIdentity)); d != "" {
				t.Errorf("snapshot %d (%s): the feed with identity [id] is not Spark's changelog with "+
					"identifier_columns [id] (missing: in Spark's, not the feed; extra: in the feed only):\n%s",
					s.SnapshotID, s.Statement, d)
			}
			if d := fxDiff(plainRows, spark(s.SparkChangelog)); d != "" {
				t.Errorf("snapshot %d (%s): the feed, updates split, is not Spark's plain changelog:\n%s",
					s.SnapshotID, s.Statement, d)
			}
		})
	}
}
