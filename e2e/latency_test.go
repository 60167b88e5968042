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
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
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

// pyicebergWriterScript appends one row to the table live.events of the
// SQL catalog in the folder argv[1] per line of its input, with pyiceberg.
const pyicebergWriterScript = `
import sys
import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
wh = sys.argv[1]
tbl = SqlCatalog("sluice", uri=f"sqlite:///{wh}/catalog.db", warehouse=f"file://{wh}").load_table("live.events")
schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("grp", pa.string()),
                    pa.field("val", pa.int64())])
for line in sys.stdin:
    i = int(line)
    tbl.append(pa.table({"id": [i], "grp": ["a"], "val": [i]}, schema=schema))
    print("ok", flush=True)
`

// TestCommitLatencySQL: commits to a table of a local SQL catalog, by
// iceberg-go (in the test process) and by pyiceberg, reach a follower
// within milliseconds when flightd watches the catalog's SQLite file, and
// most of a poll interval later when it only polls (--watch-files=false).
func TestCommitLatencySQL(t *testing.T) {
	for _, tc := range []struct {
		writer  string
		watch   bool
		commits int
	}{{"iceberg-go", true, 30}, {"iceberg-go", false, 10}, {"pyiceberg", true, 30}, {"pyiceberg", false, 10}} {
		t.Run(fmt.Sprintf("%s/watch_files=%v", tc.writer, tc.watch), func(t *testing.T) {
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
			if tc.writer == "pyiceberg" {
				py := startLineWriter(t, pyicebergWriterScript, dir)
				commit = func(id int64) { py.commit(t, id) }
			}
			srv := startFlightd(t, "--warehouse", dir, "--poll-interval", latencyPoll.String(),
				fmt.Sprintf("--watch-files=%v", tc.watch), "--metrics-listen", "127.0.0.1:0", "--log-level", "info")
			got := followArrivals(t, ctx, srv.URI(), followTable)
			checkLatency(t, "SQL catalog ("+tc.writer+" appends)", tc.watch, measureLatency(t, tc.commits, commit, got))
			// Without commits the table is loaded once per poll interval:
			// flightd's own reads of the catalog file notify nothing.
			maddr := metricsAddr(t, srv)
			loads := func() float64 {
				return metric(t, maddr, fmt.Sprintf("sluice_table_loads_total{table=%q}", followTable))
			}
			before := loads()
			time.Sleep(4 * latencyPoll)
			if n := loads() - before; n > 6 {
				t.Fatalf("%v loads of the table in %v without a commit, want about 4", n, 4*latencyPoll)
			}
		})
	}
}

// lineWriter is a Python process that commits once per line of its
// input (the id of the row to write), and answers each with "ok".
type lineWriter struct {
	in  io.WriteCloser
	out *bufio.Scanner
}

// deltaWriterScript appends one row to the Delta table in the folder
// argv[1] per line of its input, with deltalake.
const deltaWriterScript = `
import sys
import pyarrow as pa
from deltalake import write_deltalake
path = sys.argv[1]
for line in sys.stdin:
    write_deltalake(path, pa.table({"id": pa.array([int(line)], pa.int64())}), mode="append")
    print("ok", flush=True)
`

func startLineWriter(t *testing.T, script string, args ...string) *lineWriter {
	t.Helper()
	cmd := exec.Command(python(t), append([]string{"-c", script}, args...)...)
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
	return &lineWriter{in: in, out: bufio.NewScanner(out)}
}

func (d *lineWriter) commit(t *testing.T, id int64) {
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
			w := startLineWriter(t, deltaWriterScript, filepath.Join(root, "events"))
			w.commit(t, 1)
			srv := startFlightd(t, "--warehouse", t.TempDir(), "--delta-root", root, "--poll-interval",
				latencyPoll.String(), fmt.Sprintf("--watch-files=%v", tc.watch))
			got := followArrivals(t, ctx, srv.URI(), "delta.events")
			lat := measureLatency(t, tc.commits, func(id int64) { w.commit(t, id) }, got)
			checkLatency(t, "local Delta table (deltalake appends)", tc.watch, lat)
		})
	}
}
