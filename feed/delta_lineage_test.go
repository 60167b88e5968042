package feed_test

// Delta row tracking on a Spark-written table (spark4_row_tracking under
// testdata/delta/written, delta-spark 4.4, CDF off), whose EXPECTED.json
// holds each row's row id and row commit version as Spark reads them
// (_metadata.row_id, _metadata.row_commit_version). TestDeltaOracle checks
// its feeds against the full states; this test checks the pairing by row
// id, as TestFixturesRowLineage does for Iceberg: with "lineage": true and
// no identity, each image carries Spark's row id, and each version's
// changes are exactly what the two states say row id by row id. It reads
// each window in memory and spilling (a memory budget of one byte).

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/internal/testkit/deltafx"
)

func TestDeltaRowTracking(t *testing.T) {
	dir := filepath.Join(deltaFixtureDir, "written", "spark4_row_tracking")
	var exp struct {
		Snapshots []struct {
			Version   int64            `json:"version"`
			Operation string           `json:"operation"`
			Columns   [][]string       `json:"columns"`
			Rows      []map[string]any `json:"rows"`
			Lineage   []map[string]any `json:"lineage"`
		} `json:"snapshots"`
	}
	f, err := os.Open(filepath.Join(dir, "EXPECTED.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(f)
	dec.UseNumber()
	err = dec.Decode(&exp)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	name := "delta.spark4_row_tracking"
	// rows are a version's rows by id: the row's key over cols and its row
	// id as Spark reads it.
	type row struct{ key, rowID string }
	rows := func(t *testing.T, i int, cols []string) map[string]row {
		s := exp.Snapshots[i]
		ids := map[string]string{}
		for _, l := range s.Lineage {
			ids[deltafx.JSONValue(l["id"])] = deltafx.JSONValue(l["_row_id"])
		}
		out := map[string]row{}
		for _, r := range s.Rows {
			norm := map[string]string{}
			for _, c := range cols {
				norm[c] = "null"
			}
			for k, v := range r {
				norm[k] = deltafx.JSONValue(v)
			}
			id := norm["id"]
			rid, ok := ids[id]
			if !ok || rid == "null" {
				t.Fatalf("version %d: row %s has no row id in Spark's read", s.Version, id)
			}
			out[id] = row{key: deltafx.Key(norm, cols), rowID: rid}
		}
		return out
	}
	for _, budget := range []int64{0, 1} {
		t.Run(fmt.Sprintf("budget_%d", budget), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(arrowpool.Shared())
			defer mem.AssertSize(t, 0)
			eng := feed.New(deltaTables{name: openDelta(t, dir, name)},
				feed.Options{Allocator: mem, MaxBatchRows: 3, MemoryBudget: budget, SpillDir: t.TempDir()})
			paired := 0
			for i := 1; i < len(exp.Snapshots); i++ {
				from, to := exp.Snapshots[i-1], exp.Snapshots[i]
				t.Run(fmt.Sprintf("v%d_%s", to.Version, to.Operation), func(t *testing.T) {
					cols := deltaColumns(to.Columns)
					before, after := rows(t, i-1, cols), rows(t, i, cols)
					byKey := func(rs map[string]row) map[string]string {
						out := map[string]string{}
						for _, r := range rs {
							out[r.key] = r.rowID
						}
						return out
					}
					beforeIDs, afterIDs := byKey(before), byKey(after)
					want := deltaStateSet{}
					b, a := map[string]string{}, map[string]string{}
					for _, r := range before {
						b[r.rowID] = r.key
					}
					for _, r := range after {
						a[r.rowID] = r.key
					}
					for rid, k := range b {
						switch next, ok := a[rid]; {
						case !ok:
							want[fmt.Sprintf("%s %s %s", feed.OpDelete, rid, k)]++
						case next != k:
							want[fmt.Sprintf("%s %s %s", feed.OpUpdateBefore, rid, k)]++
							want[fmt.Sprintf("%s %s %s", feed.OpUpdateAfter, rid, next)]++
						}
					}
					for rid, k := range a {
						if _, ok := b[rid]; !ok {
							want[fmt.Sprintf("%s %s %s", feed.OpInsert, rid, k)]++
						}
					}
					req := feed.Request{Table: name, FromSnapshot: &from.Version, ToSnapshot: &to.Version, Lineage: true}
					changes, err := deltaChanges(eng, req)
					if err != nil {
						t.Fatal(err)
					}
					got := deltaStateSet{}
					for _, c := range changes {
						for _, img := range []struct {
							row map[string]string
							ids map[string]string
						}{{c.before, beforeIDs}, {c.after, afterIDs}} {
							if img.row == nil {
								continue
							}
							k, rid := deltafx.Key(img.row, cols), img.row[feed.RowIDColumn]
							if img.ids[k] != rid {
								t.Errorf("%s image %s has row id %s, Spark reads %s", c.op, k, rid, img.ids[k])
							}
							got[fmt.Sprintf("%s %s %s", c.op, rid, k)]++
						}
						if c.op == feed.OpUpdateBefore {
							paired++
						}
					}
					if d := deltaStateDiff(got, want); d != "" {
						t.Errorf("version %d (%s): the feed is not the changes by row id of Spark's reads:\n%s",
							to.Version, to.Operation, d)
					}
					p, err := eng.Plan(t.Context(), req)
					if err != nil {
						t.Fatal(err)
					}
					if p.Pairing != feed.PairingRowLineage {
						t.Errorf("plan pairing %q, want %q", p.Pairing, feed.PairingRowLineage)
					}
				})
			}
			if paired == 0 {
				t.Errorf("no version paired an update")
			}
		})
	}
}
