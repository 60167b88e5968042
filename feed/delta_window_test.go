package feed_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicefeed/sluice/feed"
)

// TestDeltaWindowPastLatest: a window that names a version past a Delta
// table's latest is NotFound naming the latest version, which is what
// the caller needs to ask again (it named only the first one).
func TestDeltaWindowPastLatest(t *testing.T) {
	const name = "delta.cdf-table-simple"
	src := openDelta(t, filepath.Join(deltaFixtureDir, "cdf-table-simple"), name)
	eng := feed.New(deltaTables{name: src}, feed.Options{})
	i64 := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		what string
		req  feed.Request
		want string
	}{
		{"to", feed.Request{ToSnapshot: i64(40)}, "to_snapshot 40 is not a snapshot of table " + name + ": it is past the latest version, 2"},
		{"from", feed.Request{FromSnapshot: i64(40)}, "its latest snapshot is 2"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			tc.req.Table = name
			_, err := eng.Plan(context.Background(), tc.req)
			if !errors.Is(err, feed.ErrSnapshotNotFound) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Plan: %v; want ErrSnapshotNotFound saying %q", err, tc.want)
			}
		})
	}
}
