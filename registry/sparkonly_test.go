package registry

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicefeed/sluice/lake"
	"github.com/sluicefeed/sluice/spark"
)

// TestSparkHistory: a Delta table's versions are its commits with
// commit_seq the version (expired below the first retained one); an
// Iceberg table's snapshots get commit_seq from their commit times, one
// more than the parent's within a millisecond, and the first retained
// snapshot's parent is known expired.
func TestSparkHistory(t *testing.T) {
	at := func(ms int64) time.Time { return time.UnixMilli(ms) }
	p := func(v int64) *int64 { return &v }
	delta := sparkHistory(spark.Delta, []spark.Commit{
		{Version: 3, Time: at(1000), Operation: "WRITE", Parent: p(2)},
		{Version: 4, Time: at(2000), Operation: "UPDATE", Parent: p(3)},
	})
	if !delta.Expired || delta.ExpiredBelow != 3 || !delta.CountsCommits || !delta.TimeOrdered ||
		len(delta.Commits) != 2 || delta.Commits[1].CommitSeq != 4 || delta.Commits[1].TimestampMs != 2000 ||
		delta.Commits[1].Operation != "UPDATE" || *delta.Commits[1].ParentID != 3 {
		t.Fatalf("delta history %+v", delta)
	}
	ice := sparkHistory(spark.Iceberg, []spark.Commit{
		{Version: 11, Time: at(5000), Operation: "append", Parent: p(10)},
		{Version: 12, Time: at(5000), Operation: "overwrite", Parent: p(11)},
		{Version: 13, Time: at(4000), Operation: "delete", Parent: p(12)},
	})
	if !ice.Expired || !ice.ExpiredIDs[10] || ice.CountsCommits {
		t.Fatalf("iceberg history %+v", ice)
	}
	for i, want := range []int64{5000 * lake.TimeCommitScale, 5000*lake.TimeCommitScale + 1, 5000*lake.TimeCommitScale + 2} {
		if got := ice.Commits[i].CommitSeq; got != want {
			t.Errorf("commit %d: commit_seq %d, want %d", i, got, want)
		}
	}
	if first := sparkHistory(spark.Delta, []spark.Commit{{Version: 0, Time: at(1)}}); first.Expired {
		t.Errorf("a history from version 0 expired: %+v", first)
	}

	tbl := &sparkTable{format: spark.Iceberg, history: ice}
	if h := tbl.History(p(12)); len(h.Commits) != 2 || h.Commits[1].ID != 12 {
		t.Errorf("history up to 12: %+v", h.Commits)
	}
	if h := tbl.History(p(99)); len(h.Commits) != 0 {
		t.Errorf("history up to an unknown head: %+v", h.Commits)
	}
	if !tbl.HasCommit(13) || tbl.HasCommit(10) || tbl.Format() != lake.FormatIceberg {
		t.Error("HasCommit or Format")
	}
	if _, err := tbl.State(t.Context(), lake.StateOptions{Table: "x.y"}, lake.Commit{}); !errors.Is(err, lake.ErrUnsupported) {
		t.Errorf("State: %v", err)
	}
	if _, err := tbl.Planner(t.Context(), lake.PlanOptions{Table: "x.y"}); !errors.Is(err, lake.ErrUnsupported) {
		t.Errorf("Planner: %v", err)
	}
}
