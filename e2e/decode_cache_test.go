package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// TestFollowersShareDecodes: 20 Go clients follow one table of a local SQL
// catalog while a writer commits appends to it. flightd reads and encodes
// each commit once for all of them (its sluice_decode_cache_misses_total
// grows by one per commit, the hits by one per other follower), and every
// follower receives every row of every commit in the same batches, with
// the same app_metadata. The same commits are also followed by one client,
// and by 20 with the cache off (--decode-cache-bytes 0), and flightd's CPU
// time in each arm is logged (docs/OPERATIONS.md quotes these lines).
func TestFollowersShareDecodes(t *testing.T) {
	const commits, rows = 5, 40000
	type arm struct {
		followers int
		cache     string
	}
	cpu := map[arm]float64{}
	for _, a := range []arm{{20, "33554432"}, {1, "33554432"}, {20, "0"}} {
		t.Run(fmt.Sprintf("followers=%d,decode-cache-bytes=%s", a.followers, a.cache), func(t *testing.T) {
			cpu[a] = followCommits(t, a.followers, a.cache, commits, rows)
		})
	}
	if len(cpu) == 3 {
		one, shared, own := cpu[arm{1, "33554432"}], cpu[arm{20, "33554432"}], cpu[arm{20, "0"}]
		t.Logf("flightd CPU for %d commits of %d rows: 1 follower %.2fs; 20 followers %.2fs with the decode cache "+
			"(%.1f× one), %.2fs without it (%.1f× one)", commits, rows, one, shared, shared/one, own, own/one)
	}
}

// followCommits follows the table with n clients while commits appends of
// rows rows land, checks what they received, and returns flightd's CPU
// seconds from the first commit until every follower has every row.
func followCommits(t *testing.T, n int, cacheBytes string, commits, rows int) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	w := newLiveWriter(t, dir, 14)
	commit := func(first int64) {
		ids := make([]int64, rows)
		for i := range ids {
			ids[i] = first + int64(i)
		}
		tbl, err := tablewrite.Append(ctx, w.tbl, w.rows(ids))
		if err != nil {
			t.Fatal(err)
		}
		w.tbl = tbl
	}
	commit(1)
	srv := startFlightd(t, "--warehouse", dir, "--poll-interval", "100ms", "--heartbeat-interval", "1s",
		"--metrics-listen", "127.0.0.1:0", "--log-level", "info", "--decode-cache-bytes", cacheBytes)
	maddr := metricsAddr(t, srv)
	c := dialGo(t, ctx, srv.URI())
	subs := make([]*sluice.Subscription, n)
	for i := range subs {
		sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: followTable, Start: sluice.StartLatest})
		if err != nil {
			t.Fatal(err)
		}
		subs[i] = sub
	}
	// Each follower's ids, and its batches' app_metadata and row counts.
	got := make([][]int64, n)
	metas := make([][]sluice.BatchMeta, n)
	errs := make([]error, n)
	var received atomic.Int64
	var done sync.WaitGroup
	for i, sub := range subs {
		done.Go(func() {
			defer sub.Release()
			for b, err := range sub.All() {
				if err != nil {
					errs[i] = err
					return
				}
				if b.Meta.Heartbeat {
					continue
				}
				after := b.Record.Column(2).(*array.Struct).Field(0).(*array.Int64)
				for r := range after.Len() {
					got[i] = append(got[i], after.Value(r))
				}
				metas[i] = append(metas[i], b.Meta)
				received.Add(int64(after.Len()))
				if len(got[i]) >= commits*rows {
					return
				}
			}
		})
	}
	misses0 := metric(t, maddr, "sluice_decode_cache_misses_total")
	hits0 := metric(t, maddr, "sluice_decode_cache_hits_total")
	cpu0 := cpuSeconds(t, srv.pid())
	var want []int64
	for k := range commits {
		first := int64(1000000 * (k + 1))
		commit(first)
		for i := range rows {
			want = append(want, first+int64(i))
		}
		// The next commit lands once every follower has this one: each
		// reads the window of one commit.
		for received.Load() < int64(n*(k+1)*rows) {
			if ctx.Err() != nil {
				t.Fatalf("followers received %d rows of %d", received.Load(), n*(k+1)*rows)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	done.Wait()
	used := cpuSeconds(t, srv.pid()) - cpu0
	for i := range n {
		if errs[i] != nil || !slices.Equal(got[i], want) {
			t.Fatalf("follower %d: %d ids, err %v; want the %d rows of every commit", i, len(got[i]), errs[i], len(want))
		}
		if !slices.Equal(metas[i], metas[0]) {
			t.Fatalf("follower %d's batches differ from follower 0's:\n%+v\n%+v", i, metas[i], metas[0])
		}
	}
	misses := metric(t, maddr, "sluice_decode_cache_misses_total") - misses0
	hits := metric(t, maddr, "sluice_decode_cache_hits_total") - hits0
	if cacheBytes != "0" && (misses != float64(commits) || hits != float64(commits*(n-1))) {
		t.Fatalf("%d followers, %d commits: %v fills and %v hits of the decode cache, want %d and %d", n, commits,
			misses, hits, commits, commits*(n-1))
	}
	if cacheBytes == "0" && misses+hits != 0 {
		t.Fatalf("the decode cache is off, yet %v misses and %v hits", misses, hits)
	}
	_, peak := rssKiB(t, srv.pid())
	sent := metric(t, maddr, fmt.Sprintf("sluice_bytes_streamed_total{table=%q}", followTable))
	t.Logf("%d followers, %d commits of %d rows (%d batches each, %.1f MB per follower), decode cache %s bytes: "+
		"%v fills, %v hits; flightd CPU %.2fs, peak RSS %d MiB", n, commits, rows, len(metas[0]), sent/float64(n)/1e6,
		cacheBytes, misses, hits, used, peak>>10)
	return used
}
