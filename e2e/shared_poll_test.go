package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// TestFollowersShareOnePoll: 200 Go clients follow one table of a local SQL
// catalog while a writer commits to it. flightd loads the table from the
// catalog about once per poll interval between them all (its
// sluice_table_loads_total), not once per stream and interval, and every
// follower receives every commit, in order. With file notifications
// (--watch-files) each commit adds a load or two (the notification's),
// for all the streams together.
func TestFollowersShareOnePoll(t *testing.T) {
	for _, watch := range []bool{false, true} {
		t.Run(fmt.Sprintf("watch_files=%v", watch), func(t *testing.T) { followersShareOnePoll(t, watch) })
	}
}

func followersShareOnePoll(t *testing.T, watch bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	w := newLiveWriter(t, dir, 12)
	commit := func(id int64) {
		tbl, err := tablewrite.Append(ctx, w.tbl, w.rows([]int64{id}))
		if err != nil {
			t.Fatal(err)
		}
		w.tbl = tbl
	}
	commit(1)
	const followers, commits = 200, 12
	interval := 250 * time.Millisecond
	srv := startFlightd(t, "--warehouse", dir, "--poll-interval", interval.String(), "--heartbeat-interval", "1s",
		"--metrics-listen", "127.0.0.1:0", "--log-level", "info", "--max-streams", "0",
		"--max-streams-per-principal", "0", "--calls-per-second", "0", fmt.Sprintf("--watch-files=%v", watch))
	maddr := metricsAddr(t, srv)
	loads := func() float64 {
		return metric(t, maddr, fmt.Sprintf("sluice_table_loads_total{table=%q}", followTable))
	}

	c := dialGo(t, ctx, srv.URI())
	if _, err := c.CommitSeq(ctx, followTable); err != nil {
		t.Fatal(err)
	}
	rss0, _ := rssKiB(t, srv.pid())
	subs := make([]*sluice.Subscription, followers)
	var opened sync.WaitGroup
	for i := range subs {
		opened.Go(func() {
			sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: followTable, Start: sluice.StartLatest,
				Heartbeats: true})
			if err != nil {
				t.Errorf("follower %d: %v", i, err)
				return
			}
			subs[i] = sub
		})
	}
	opened.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// Every stream has its start position (its schema came after it).
	before := loads()
	rss1, _ := rssKiB(t, srv.pid())
	// The memory a follow stream holds while it waits: docs/DEPLOY.md's
	// sizing quotes this line.
	t.Logf("%d follow streams opened with %v catalog loads; flightd RSS %d MiB before them, %d MiB with them "+
		"(%d KiB per follow stream)", followers, before, rss0>>10, rss1>>10, (rss1-rss0)/followers)

	got := make([][]int64, followers)
	errs := make([]error, followers)
	var done sync.WaitGroup
	for i, sub := range subs {
		done.Go(func() {
			defer sub.Release()
			for b, err := range sub.All() {
				if err != nil {
					errs[i] = err
					return
				}
				after := b.Record.Column(2).(*array.Struct).Field(0).(*array.Int64)
				for r := range after.Len() {
					got[i] = append(got[i], after.Value(r))
				}
				if len(got[i]) >= commits {
					return
				}
			}
		})
	}
	start := time.Now()
	want := make([]int64, commits)
	for k := range commits {
		time.Sleep(interval)
		want[k] = int64(100 + k)
		commit(want[k])
	}
	done.Wait()
	elapsed := time.Since(start)
	n := loads() - before
	for i := range followers {
		if errs[i] != nil || !slices.Equal(got[i], want) {
			t.Fatalf("follower %d: ids %v, err %v; want every commit: %v", i, got[i], errs[i], want)
		}
	}
	_, peak := rssKiB(t, srv.pid())
	t.Logf("flightd peak RSS %d MiB, every follower sent every commit", peak>>10)
	polls := float64(elapsed / interval)
	t.Logf("%d followers, %d commits in %v: %v catalog loads (poll interval %v: %v intervals)", followers, commits,
		elapsed.Round(time.Millisecond), n, interval, polls)
	most := 1.5*polls + 3
	if watch {
		most += 2 * commits
	}
	if n > most || n < polls/3 {
		t.Fatalf("%v catalog loads in %v intervals and %d commits of %d follow streams: want about one per "+
			"interval (and up to two per commit with --watch-files)", n, polls, commits, followers)
	}
}
