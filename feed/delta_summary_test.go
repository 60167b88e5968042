package feed_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicefeed/sluice/feed"
)

// TestDeltaSnapshotSummary: a Delta version's lineage entry has a summary
// in the Iceberg snapshot summary's words, from its add and remove
// actions: files and rows added and removed (rows only where every action
// has statistics), and rows that deletion vectors newly delete.
func TestDeltaSnapshotSummary(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		want    []string // per version, its summary as sorted key=value pairs
	}{
		// An append of 10 rows, then deletion vectors that grow (deletes)
		// and shrink (rows live again).
		{"cdf-table-with-dv", []string{"added-data-files=1 added-records=10", "added-position-deletes=2",
			"added-records=2", "added-position-deletes=4", "added-records=2", "added-records=1", "added-records=1"}},
		// The table's creation, an append, and an update whose remove has no
		// statistics: its file, not its rows.
		{"simple_table_with_cdc", []string{"", "added-data-files=1 added-records=1",
			"added-data-files=1 added-records=1 deleted-data-files=1"}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			const name = "delta.t"
			eng := feed.New(deltaTables{name: openDelta(t, filepath.Join(deltaFixtureDir, tc.fixture), name)}, feed.Options{})
			snaps, err := eng.Snapshots(context.Background(), name)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range snaps {
				got = append(got, summaryText(s.Summary))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("summaries\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func summaryText(s map[string]string) string {
	var parts []string
	for _, k := range []string{"added-data-files", "added-records", "deleted-data-files", "deleted-records",
		"added-position-deletes"} {
		if v, ok := s[k]; ok {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ")
}
