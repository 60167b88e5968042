package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/tablewrite"
)

// latencyPoll is the poll interval of the latency tests: notifications
// must bring commits far sooner.
const latencyPoll = time.Second

// latencyBound is the median commit-to-follower latency the tests accept
// with file notifications: a fifth of the poll interval, which polling
// alone cannot reach (its median is about half the interval), with room
// for a loaded 2-core machine.
const latencyBound = 200 * time.Millisecond

// arrival is an id the follower received, and when.
type arrival struct {
	id int64
	at time.Time
}

// followArrivals follows table from its latest commit and sends each id
// of an inserted row with the time its batch arrived.
func followArrivals(t *testing.T, ctx context.Context, uri, table string) <-chan arrival {
	t.Helper()
	c := dialGo(t, ctx, uri)
	sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: table, Start: sluice.StartLatest})
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan arrival, 1024)
	go func() {
		defer sub.Release()
		for b, err := range sub.All() {
			if err != nil {
				return
			}
			at := time.Now()
			idx := b.Record.Schema().FieldIndices("after")
			if len(idx) == 0 || b.Record.NumRows() == 0 {
				continue
			}
			ids := b.Record.Column(idx[0]).(*array.Struct).Field(0).(*array.Int64)
			for r := range ids.Len() {
				out <- arrival{id: ids.Value(r), at: at}
			}
		}
	}()
	return out
}

// measureLatency commits n times, each after a random pause (so that
// commits fall anywhere in the poll interval), and returns, for each, the
// time from commit's return to the follower's batch of its row.
func measureLatency(t *testing.T, n int, commit func(id int64), got <-chan arrival) []time.Duration {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(n), 3))
	var lat []time.Duration
	for k := range n {
		time.Sleep(time.Duration(50+r.IntN(250)) * time.Millisecond)
		id := int64(1000 + k)
		commit(id)
		committed := time.Now()
		timeout := time.After(10 * latencyPoll)
		for {
			var a arrival
			select {
			case a = <-got:
			case <-timeout:
				t.Fatalf("commit %d (id %d) not streamed %v after it returned", k+1, id, 10*latencyPoll)
			}
			if a.id == id {
				lat = append(lat, max(0, a.at.Sub(committed)))
				break
			}
		}
	}
	return lat
}

// quantiles returns p50, p90 and the maximum of lat.
func quantiles(lat []time.Duration) (p50, p90, top time.Duration) {
	s := slices.Clone(lat)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[int(q*float64(len(s)-1)+0.5)] }
	return at(0.5), at(0.9), s[len(s)-1]
}

// checkLatency logs the latencies' quantiles and checks them: with file
// notifications, the median is under latencyBound; without, the commits
// wait for the poll, and the median is over it (the check fails without
// notifications).
func checkLatency(t *testing.T, what string, watch bool, lat []time.Duration) {
	t.Helper()
	p50, p90, top := quantiles(lat)
	t.Logf("%s, --watch-files=%v, --poll-interval %v: commit return to follower's batch over %d commits: "+
		"p50 %v, p90 %v, max %v", what, watch, latencyPoll, len(lat), p50.Round(time.Millisecond),
		p90.Round(time.Millisecond), top.Round(time.Millisecond))
	if watch && p50 > latencyBound {
		t.Fatalf("median latency %v with file notifications, want at most %v", p50, latencyBound)
	}
	if !watch && p50 <= latencyBound {
		t.Fatalf("median latency %v by polling every %v alone: the notifications are not off, or the test "+
			"cannot tell", p50, latencyPoll)
	}
}

// TestCommitLatencySQL: commits to a table of a local SQL catalog reach a
// follower within milliseconds when flightd watches the catalog's SQLite
// file, and about half a poll interval later on average when it only
// polls (--watch-files=false).
func TestCommitLatencySQL(t *testing.T) {
	for _, tc := range []struct {
		watch   bool
		commits int
	}{{true, 30}, {false, 10}} {
		t.Run(fmt.Sprintf("watch_files=%v", tc.watch), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			dir := t.TempDir()
			w := newLiveWriter(t, dir, 31)
			commit := func(id int64) {
				tbl, err := tablewrite.Append(ctx, w.tbl, w.rows([]int64{id}))
				if err != nil {
					t.Fatal(err)
				}
				w.tbl = tbl
			}
			commit(1)
			srv := startFlightd(t, "--warehouse", dir, "--poll-interval", latencyPoll.String(),
				fmt.Sprintf("--watch-files=%v", tc.watch))
			got := followArrivals(t, ctx, srv.URI(), followTable)
			checkLatency(t, "SQL catalog (iceberg-go appends)", tc.watch, measureLatency(t, tc.commits, commit, got))
		})
	}
}

// deltaWriter is a Python process that appends to a Delta table with
// deltalake, one commit per line of its input.
type deltaWriter struct {
	in  io.WriteCloser
	out *bufio.Scanner
}

const deltaWriterScript = `
import sys
import pyarrow as pa
from deltalake import write_deltalake
path = sys.argv[1]
for line in sys.stdin:
    write_deltalake(path, pa.table({"id": pa.array([int(line)], pa.int64())}), mode="append")
    print("ok", flush=True)
`

func startDeltaWriter(t *testing.T, dir string) *deltaWriter {
	t.Helper()
	cmd := exec.Command(python(t), "-c", deltaWriterScript, dir)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Wait()
	})
	return &deltaWriter{in: in, out: bufio.NewScanner(out)}
}

func (d *deltaWriter) commit(t *testing.T, id int64) {
	if _, err := fmt.Fprintln(d.in, id); err != nil {
		t.Fatal(err)
	}
	if !d.out.Scan() || strings.TrimSpace(d.out.Text()) != "ok" {
		t.Fatalf("the Delta writer failed to commit %d: %q, %v", id, d.out.Text(), d.out.Err())
	}
}

// TestCommitLatencyDelta: commits that deltalake (Python) makes to a
// local Delta table reach a follower within milliseconds when flightd
// watches the table's _delta_log, and a poll later without.
func TestCommitLatencyDelta(t *testing.T) {
	for _, tc := range []struct {
		watch   bool
		commits int
	}{{true, 30}, {false, 10}} {
		t.Run(fmt.Sprintf("watch_files=%v", tc.watch), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			root := t.TempDir()
			w := startDeltaWriter(t, filepath.Join(root, "events"))
			w.commit(t, 1)
			srv := startFlightd(t, "--warehouse", t.TempDir(), "--delta-root", root, "--poll-interval",
				latencyPoll.String(), fmt.Sprintf("--watch-files=%v", tc.watch))
			got := followArrivals(t, ctx, srv.URI(), "delta.events")
			lat := measureLatency(t, tc.commits, func(id int64) { w.commit(t, id) }, got)
			checkLatency(t, "local Delta table (deltalake appends)", tc.watch, lat)
		})
	}
}
