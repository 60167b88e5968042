package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/catalog"
	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// The followers arm (issue 24, target 4): many clients follow one table
// while a writer commits to it. flightd reads and encodes each commit once
// for all of them (its decode cache), so what a follower adds is its own
// stream. Runs of one follower and of many alternate, each on a fresh
// flightd with the default settings and a fresh table, and each commit is
// read to its end by every follower before the next lands.

// followersTarget is the target: flightd's CPU per commit with the many
// followers at most this many times its CPU with one.
const followersTarget = 3.0

// FollowersParams is the followers arm's workload.
type FollowersParams struct {
	// Followers is how many follow the table in the many arm (0: the arm
	// does not run).
	Followers int
	// Commits is how many commits each run follows, each an append of
	// Rows rows of a 3-column table (id, grp, val).
	Commits, Rows int
}

// ParseFollowers parses "followers:commits:rows" ("": the arm does not
// run).
func ParseFollowers(s string) (FollowersParams, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return FollowersParams{}, nil
	}
	f := strings.Split(s, ":")
	if len(f) != 3 {
		return FollowersParams{}, fmt.Errorf("%q is not followers:commits:rows", s)
	}
	var v [3]int
	for i := range v {
		n, err := strconv.Atoi(f[i])
		if err != nil || n < 1 {
			return FollowersParams{}, fmt.Errorf("%q is not followers:commits:rows, each at least 1", s)
		}
		v[i] = n
	}
	return FollowersParams{Followers: v[0], Commits: v[1], Rows: v[2]}, nil
}

// FollowersReport is what the followers arm measured.
type FollowersReport struct {
	FollowersParams
	// One and Many are the runs with one follower and with Followers.
	One, Many []FollowRun
	// Batches is how many batches each follower received per run.
	Batches int
	// Floor is, after each pair of runs, the CPU time in seconds that the
	// kernel alone takes to send one follower's bytes of a commit (the
	// bytes flightd wrote per commit in that pair's run of one follower),
	// over Followers loopback connections (see socketFloor).
	Floor []float64
}

// FollowRun is one run of the followers arm, measured in flightd from the
// first commit until every follower had every row.
type FollowRun struct {
	// CPU is flightd's CPU time per commit, in seconds.
	CPU float64
	// PeakMiB is flightd's peak RSS.
	PeakMiB float64
	// Writes and Written are flightd's write system calls and the bytes
	// they wrote (/proc/<pid>/io).
	Writes, Written int64
}

// cpus returns the runs' CPU times per commit.
func cpus(runs []FollowRun) []float64 {
	out := make([]float64, len(runs))
	for i, r := range runs {
		out[i] = r.CPU
	}
	return out
}

// Ratio is the many followers' median CPU per commit over one follower's.
func (f *FollowersReport) Ratio() float64 {
	one := median(cpus(f.One))
	if one == 0 {
		return 0
	}
	return median(cpus(f.Many)) / one
}

// runFollowers measures the followers arm (when cfg.Followers asks for it)
// into rep.
func runFollowers(ctx context.Context, cfg Config, rep *Report) error {
	p := cfg.Followers
	if p.Followers <= 0 {
		return nil
	}
	dir := filepath.Join(cfg.Work, "followers")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	cat, err := tablewrite.OpenWarehouse(ctx, dir)
	if err != nil {
		return err
	}
	defer cat.Close()
	fr := &FollowersReport{FollowersParams: p}
	for run := range max(cfg.Runs, 1) {
		for _, n := range []int{1, p.Followers} {
			cfg.logf("measuring the followers arm: %d follower(s), run %d", n, run+1)
			res, batches, err := followRun(ctx, cfg, cat, dir, fmt.Sprintf("bench.follow_%d_%d", run, n), n)
			if err != nil {
				return fmt.Errorf("followers arm, %d follower(s): %w", n, err)
			}
			if n == 1 {
				fr.One = append(fr.One, res)
			} else {
				fr.Many = append(fr.Many, res)
			}
			fr.Batches = batches
		}
		cfg.logf("measuring the followers arm: the socket floor, run %d", run+1)
		perCommit := fr.One[len(fr.One)-1].Written / int64(p.Commits)
		floor, err := socketFloor(ctx, p.Followers, perCommit, p.Commits)
		if err != nil {
			return fmt.Errorf("followers arm: %w", err)
		}
		fr.Floor = append(fr.Floor, floor)
	}
	rep.Followers = fr
	return nil
}

// RunFollowers measures the followers arm alone (the rest of a run is
// skipped): for `sluice-bench -followers-only`.
func RunFollowers(ctx context.Context, cfg Config) (*Report, error) {
	rep := &Report{Started: time.Now(), Refs: map[string]string{}, LoadStart: loadAverage()}
	if err := runFollowers(ctx, cfg, rep); err != nil {
		return nil, err
	}
	rep.LoadEnd = loadAverage()
	return rep, nil
}

// FollowersSection renders the followers section of rep alone.
func (r *Report) FollowersSection() string { return r.followersSection() }

// procWrites returns a process's write system calls and the bytes they
// wrote, from /proc/<pid>/io (zeros when unknown).
func procWrites(pid int) (calls, bytes int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if !ok || err != nil {
			continue
		}
		switch k {
		case "syscw":
			calls = n
		case "wchar":
			bytes = n
		}
	}
	return calls, bytes
}

// followSchema is the followed table's schema.
var followSchema = iceberg.NewSchemaWithIdentifiers(0, []int{1},
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "grp", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "val", Type: iceberg.PrimitiveTypes.Int64},
)

// followRun creates the table name, starts a flightd on the warehouse dir,
// has n clients follow the table (each on a connection of its own, from
// the latest snapshot) and commits the workload's appends, each once every
// follower has read the one before; it checks that every follower received
// every row once. It returns the run and the batches a follower received.
func followRun(ctx context.Context, cfg Config, cat *catalog.Catalog, dir, name string, n int) (FollowRun, int, error) {
	p := cfg.Followers
	tbl, err := tablewrite.CreateTable(ctx, cat, name, followSchema, icecatalog.WithProperties(iceberg.Properties{
		"format-version": "2"}))
	if err != nil {
		return FollowRun{}, 0, err
	}
	srv, err := startFlightdWith(ctx, cfg, dir)
	if err != nil {
		return FollowRun{}, 0, err
	}
	defer srv.stop()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	subs := make([]*sluice.Subscription, 0, n)
	clients := make([]*sluice.Client, 0, n)
	defer func() {
		for _, s := range subs {
			s.Release()
		}
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	for range n {
		c, err := sluice.Dial(rctx, "grpc://"+srv.addr)
		if err != nil {
			return FollowRun{}, 0, err
		}
		clients = append(clients, c)
		s, err := c.Subscribe(rctx, sluice.SubscribeRequest{Table: name, Start: sluice.StartLatest})
		if err != nil {
			return FollowRun{}, 0, err
		}
		subs = append(subs, s)
	}
	want := int64(p.Commits * p.Rows)
	var received atomic.Int64
	errs := make([]error, n)
	idSums := make([]int64, n)
	batches := make([]int, n)
	// failed is set once a follower has failed (its error in errs, read
	// after wg.Wait).
	var failed atomic.Bool
	var wg sync.WaitGroup
	for i, s := range subs {
		wg.Go(func() {
			idSums[i], batches[i], errs[i] = follow(s, want, &received)
			if errs[i] != nil {
				failed.Store(true)
			}
		})
	}
	cpu0 := procCPU(srv.cmd.Process.Pid)
	writes0, written0 := procWrites(srv.cmd.Process.Pid)
	var wantSum int64
	for k := range p.Commits {
		first := int64(k*p.Rows + 1)
		if tbl, err = appendFollowRows(rctx, tbl, first, p.Rows); err != nil {
			cancel()
			wg.Wait()
			return FollowRun{}, 0, err
		}
		wantSum += int64(p.Rows) * (2*first + int64(p.Rows) - 1) / 2
		for received.Load() < int64(n)*int64(k+1)*int64(p.Rows) {
			if failed.Load() || rctx.Err() != nil {
				cancel()
				wg.Wait()
				return FollowRun{}, 0, fmt.Errorf("commit %d: the followers received %d rows of %d (%w)", k+1,
					received.Load(), int64(n)*int64(k+1)*int64(p.Rows), errors.Join(errors.Join(errs...), rctx.Err()))
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	wg.Wait()
	used := procCPU(srv.cmd.Process.Pid) - cpu0
	writes, written := procWrites(srv.cmd.Process.Pid)
	for i := range n {
		if errs[i] != nil || idSums[i] != wantSum {
			return FollowRun{}, 0, fmt.Errorf("follower %d: ids summing to %d (%v), want the %d rows of every commit, "+
				"summing to %d", i, idSums[i], errs[i], want, wantSum)
		}
	}
	peak, err := peakRSS(srv.cmd.Process.Pid)
	if err != nil {
		return FollowRun{}, 0, err
	}
	return FollowRun{CPU: used / float64(p.Commits), PeakMiB: peak, Writes: writes - writes0,
		Written: written - written0}, batches[0], nil
}

// follow reads a subscription until it has want rows, adding each batch's
// rows to received; it returns the sum of the inserted rows' ids and the
// number of batches.
func follow(s *sluice.Subscription, want int64, received *atomic.Int64) (idSum int64, batches int, err error) {
	var rows int64
	for b, err := range s.All() {
		if err != nil {
			return idSum, batches, err
		}
		ids, err := afterIDs(b.Record)
		if err != nil {
			return idSum, batches, err
		}
		for r := range ids.Len() {
			idSum += ids.Value(r)
		}
		batches++
		rows += b.Record.NumRows()
		received.Add(b.Record.NumRows())
		if rows >= want {
			return idSum, batches, nil
		}
	}
	return idSum, batches, fmt.Errorf("the stream ended after %d rows of %d", rows, want)
}

// afterIDs returns the id column of a batch's after images.
func afterIDs(rec arrow.RecordBatch) (*array.Int64, error) {
	idx := rec.Schema().FieldIndices("after")
	if len(idx) != 1 {
		return nil, fmt.Errorf("a batch of schema %s has no after column", rec.Schema())
	}
	after, ok := rec.Column(idx[0]).(*array.Struct)
	if !ok || after.NumField() == 0 {
		return nil, fmt.Errorf("the after column is a %s, not a struct of the row", rec.Column(idx[0]).DataType())
	}
	ids, ok := after.Field(0).(*array.Int64)
	if !ok {
		return nil, fmt.Errorf("after.id is a %s, not an int64", after.Field(0).DataType())
	}
	return ids, nil
}

// appendFollowRows commits rows rows with ids from first on as one append.
func appendFollowRows(ctx context.Context, tbl *table.Table, first int64, rows int) (*table.Table, error) {
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return nil, err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	ids, grps, vals := b.Field(0).(*array.Int64Builder), b.Field(1).(*array.StringBuilder), b.Field(2).(*array.Int64Builder)
	for i := range int64(rows) {
		ids.Append(first + i)
		grps.Append([]string{"a", "b", "c"}[(first+i)%3])
		vals.Append((first + i) * 7919 % 1000)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	arrTbl := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer arrTbl.Release()
	return tbl.AppendTable(ctx, arrTbl, int64(rows)+1, nil)
}

// followersSection renders the followers arm.
func (r *Report) followersSection() string {
	f := r.Followers
	if f == nil || len(f.One) == 0 || len(f.Many) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Followers\n\n")
	fmt.Fprintf(&b, "%d Go clients, each on a connection of its own, follow one table (`start: latest`) while the\n", f.Followers)
	fmt.Fprintf(&b, "benchmark commits %d appends of %d rows of 3 columns (`id`, `grp`, `val`) to it; each commit is read\n", f.Commits, f.Rows)
	fmt.Fprintf(&b, "to its end by every follower (%d batches each per run) before the next lands. The same commits\n", f.Batches)
	fmt.Fprintf(&b, "are followed by one client. Each run has a fresh table and a fresh `flightd` with its default settings\n")
	fmt.Fprintf(&b, "(decode cache on: each commit is read and encoded once for all followers); runs of one follower and of\n")
	fmt.Fprintf(&b, "%d alternate. Measured in flightd from the first commit until every follower had every row: its CPU\n", f.Followers)
	fmt.Fprintf(&b, "(`/proc/<pid>/stat`) per commit, and its write system calls per follower and commit and the bytes\n")
	fmt.Fprintf(&b, "each wrote (`/proc/<pid>/io`); peak RSS is its `VmHWM`.\n\n")
	fmt.Fprintf(&b, "| followers | flightd CPU per commit | min | max | per follower | writes per follower and commit | bytes per write | peak RSS (max) |\n")
	fmt.Fprintf(&b, "|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, a := range []struct {
		n    int
		runs []FollowRun
	}{{1, f.One}, {f.Followers, f.Many}} {
		c := cpus(a.runs)
		lo, hi := minMax(c)
		var writes, written, peak float64
		for _, r := range a.runs {
			writes, written, peak = writes+float64(r.Writes), written+float64(r.Written), max(peak, r.PeakMiB)
		}
		perWrite := ""
		if writes > 0 {
			perWrite = fmt.Sprintf("%.0f KiB", written/writes/1024)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %.0f | %s | %s |\n", a.n, msecs(median(c)), msecs(lo), msecs(hi),
			msecs(median(c)/float64(a.n)), writes/float64(len(a.runs)*a.n*f.Commits), perWrite, mib(peak))
	}
	verdict := "met"
	if f.Ratio() > followersTarget {
		verdict = "MISSED"
	}
	extra := (median(cpus(f.Many)) - median(cpus(f.One))) / float64(max(f.Followers-1, 1))
	fmt.Fprintf(&b, "\n%d followers cost flightd **%.2f×** one follower's CPU per commit (target ≤ %.0f×: %s); each\n",
		f.Followers, f.Ratio(), followersTarget, verdict)
	fmt.Fprintf(&b, "follower past the first adds %s of CPU per commit (medians).\n", msecs(extra))
	// One follower's CPU can be below the clock's tick in a tiny run: the
	// floor is still reported, without the ratio.
	if floor, one := median(f.Floor), median(cpus(f.One)); floor > 0 {
		bytes := f.One[0].Written / int64(f.Commits)
		fmt.Fprintf(&b, "\nThe kernel's part of that (the socket floor): one thread of the benchmark writing a follower's\n")
		fmt.Fprintf(&b, "%.1f MB of a commit (what flightd wrote per commit for one follower) to each of %d loopback TCP\n",
			float64(bytes)/1e6, f.Followers)
		fmt.Fprintf(&b, "connections in %d KiB writes, read by other threads, used %s of CPU per connection (median of\n",
			socketChunk>>10, msecs(floor))
		fmt.Fprintf(&b, "the runs; over loopback the sender's thread also delivers each segment to the receiving socket).\n")
		if one > 0 {
			fmt.Fprintf(&b, "A server that spent nothing on a follower but those writes would cost %.2f× one follower "+
				"here.\n", (one+float64(f.Followers-1)*floor)/one)
		}
		if extra > 0 && floor > extra {
			fmt.Fprintf(&b, "In this run that floor (%s a connection) is above what a follower added to flightd (%s), so\n",
				msecs(floor), msecs(extra))
			fmt.Fprintf(&b, "it bounds nothing (most likely the kernel charged more of the loopback delivery, which runs\n")
			fmt.Fprintf(&b, "on whichever thread is on the CPU, to the benchmark's writing thread than to flightd's). It\n")
			fmt.Fprintf(&b, "says only that the socket, not the engine, is most of what a follower costs.\n")
		}
	}
	return b.String()
}
