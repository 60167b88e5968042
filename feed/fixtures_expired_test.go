package feed_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicefeed/sluice/feed"
)

// TestFixturesExpiredHistoryIsResyncRequired: on tables whose history the
// writers themselves expired (pyiceberg 0.12 drops the oldest kept
// snapshot's parent link; Spark keeps it, pointing at a gone snapshot),
// every window that starts before the retained history is "resync
// required" naming the earliest start, never NotFound or a silent jump;
// a window from the earliest start is served.
func TestFixturesExpiredHistoryIsResyncRequired(t *testing.T) {
	for _, name := range []string{"pyiceberg_expired", "spark_expired_v2"} {
		t.Run(name, func(t *testing.T) {
			fx := fxLoad(t, name)
			exp := fx.exp.Expiry
			if exp == nil || len(exp.Expired) == 0 {
				t.Fatal("the fixture records no expiry")
			}
			eng := feed.New(fxTables{fx.name: fx.tbl}, feed.Options{})
			ctx := context.Background()
			hist, err := eng.History(ctx, fx.name)
			if err != nil {
				t.Fatal(err)
			}
			earliest, ok := hist.EarliestStart()
			if !hist.Expired || !ok {
				t.Fatalf("history of %s: expired %v, want expired", name, hist.Expired)
			}
			resync := func(t *testing.T, req feed.Request) {
				t.Helper()
				_, err := eng.Plan(ctx, req)
				if !errors.Is(err, feed.ErrResyncRequired) || !strings.Contains(err.Error(), fmt.Sprint(earliest)) {
					t.Fatalf("err = %v, want resync required naming %d", err, earliest)
				}
			}
			t.Run("from the start of history", func(t *testing.T) { resync(t, feed.Request{Table: fx.name}) })
			t.Run("from a time before the retained history", func(t *testing.T) {
				ts := int64(1)
				resync(t, feed.Request{Table: fx.name, FromTimestampMs: &ts})
			})
			for _, e := range exp.Expired {
				if e.SnapshotID == earliest {
					continue // the expired parent Spark's link still names: a valid start
				}
				id := e.SnapshotID
				t.Run(fmt.Sprintf("from expired snapshot %d", id), func(t *testing.T) {
					resync(t, feed.Request{Table: fx.name, FromSnapshot: &id})
				})
			}
			t.Run("from the earliest start", func(t *testing.T) {
				p, err := eng.Plan(ctx, feed.Request{Table: fx.name, FromSnapshot: &earliest})
				if err != nil {
					t.Fatal(err)
				}
				for b, err := range eng.Read(ctx, p) {
					if err != nil {
						t.Fatal(err)
					}
					b.Record.Release()
				}
			})
		})
	}
}
