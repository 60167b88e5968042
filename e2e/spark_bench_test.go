package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/testkit/testsvc"
)

// TestSparkBench is `make bench-spark`: the same windows computed by Spark's
// own change engines (CHANGES on Spark 4.2 with Delta; Iceberg's
// create_changelog_view on Spark 4.1) and by Sluice natively, through one
// flightd, with the wall time, flightd's CPU and the Spark server's CPU of
// each read. The arms alternate, run by run; every run's row count must
// equal the other backend's, and one read of each window is compared line
// by line. It writes SLUICE_SPARK_BENCH_OUT (docs/BENCHMARKS-SPARK.md) and
// runs only when SLUICE_SPARK_BENCH is set, with both Spark installs.
func TestSparkBench(t *testing.T) {
	if os.Getenv("SLUICE_SPARK_BENCH") == "" {
		t.Skip("SLUICE_SPARK_BENCH is not set: make bench-spark")
	}
	in42 := testsvc.LookupSpark(t, testsvc.EnvSpark42)
	in41 := testsvc.LookupSpark(t, testsvc.EnvSpark41)
	rows := 1_000_000
	if s := os.Getenv("SLUICE_SPARK_BENCH_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 10_000 {
			t.Fatalf("SLUICE_SPARK_BENCH_ROWS=%q: want an integer of at least 10000", s)
		}
		rows = n
	}
	runs := 3
	rep := sparkBenchReport{rows: rows, runs: runs, loadStart: loadAvg(), started: time.Now()}

	// The writes: four appends of rows/4, an update of 1% of the rows, a
	// delete of 0.1%. The same statements on both formats.
	writes := func(table string) []string {
		q := rows / 4
		var st []string
		for i := range 4 {
			st = append(st, fmt.Sprintf("INSERT INTO %s SELECT id, concat('name-', CAST(id AS STRING)), "+
				"CAST(id AS DOUBLE) * 1.5, id %% 97 FROM range(%d, %d)", table, i*q, (i+1)*q))
		}
		return append(st,
			"UPDATE "+table+" SET amount = amount + 1 WHERE id % 100 = 0",
			"DELETE FROM "+table+" WHERE id % 1000 = 1")
	}
	const columns = "(id BIGINT, name STRING, amount DOUBLE, grp BIGINT)"

	t.Run("delta on Spark 4.2", func(t *testing.T) {
		dir := t.TempDir()
		srv := testsvc.StartSpark(t, in42, testsvc.SparkOptions{Conf: testsvc.SparkDeltaConf(), Dir: dir, Heap: "4g"})
		s := sparkSession(t, srv)
		began := time.Now()
		sparkExec(t, s, "CREATE TABLE bench "+columns+" USING delta TBLPROPERTIES ('delta.enableRowTracking' = 'true')")
		sparkExec(t, s, writes("bench")...)
		t.Logf("Spark wrote delta bench in %s", time.Since(began).Round(time.Millisecond))
		f := sparkFlightd(t, dir, fmt.Sprintf("spark:\n  remote: %s\n  tables:\n    delta.bench: spark_catalog.default.bench\n",
			srv.Remote), "--delta-root", filepath.Join(dir, "spark-warehouse"), "--decode-cache-bytes", "0")
		rep.arms = append(rep.arms, sparkBenchWindows(t, f, srv, "delta.bench", "Delta (CHANGES, Spark 4.2.0, delta-spark 4.4.0)", runs)...)
	})
	t.Run("iceberg on Spark 4.1", func(t *testing.T) {
		dir := t.TempDir()
		wh := filepath.Join(dir, "iceberg")
		srv := testsvc.StartSpark(t, in41, testsvc.SparkOptions{Conf: testsvc.SparkIcebergConf("ice", wh), Dir: dir, Heap: "4g"})
		s := sparkSession(t, srv)
		began := time.Now()
		sparkExec(t, s, "CREATE TABLE ice.db.bench "+columns+" USING iceberg TBLPROPERTIES ('format-version' = '2', "+
			"'write.delete.mode' = 'copy-on-write', 'write.update.mode' = 'copy-on-write')")
		sparkExec(t, s, writes("ice.db.bench")...)
		t.Logf("Spark wrote ice.db.bench in %s", time.Since(began).Round(time.Millisecond))
		cfg := filepath.Join(dir, "flightd.yaml")
		if err := os.WriteFile(cfg, fmt.Appendf(nil, "spark:\n  remote: %s\n  namespaces:\n    db: ice.db\n", srv.Remote), 0o644); err != nil {
			t.Fatal(err)
		}
		f := startFlightd(t, "--catalog-type", "hadoop", "--warehouse", wh, "--config", cfg, "--decode-cache-bytes", "0")
		rep.arms = append(rep.arms, sparkBenchWindows(t, f, srv,
			"db.bench", "Iceberg copy-on-write (create_changelog_view, Spark 4.1.4, iceberg-spark-runtime 1.11.0)", runs)...)
	})
	rep.loadEnd = loadAvg()
	out := os.Getenv("SLUICE_SPARK_BENCH_OUT")
	if out == "" || t.Failed() {
		t.Log(rep.markdown())
		return
	}
	if err := os.WriteFile(out, []byte(rep.markdown()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", out)
}

// sparkBenchArm is one window read through one backend, run by run.
type sparkBenchArm struct {
	table, window, backend        string
	rows                          int
	seconds, flightdCPU, sparkCPU []float64
}

// sparkBenchWindows measures the table's whole history and its update
// commit alone, through Spark and natively, alternating.
func sparkBenchWindows(t *testing.T, f *flightd, srv *testsvc.SparkServer, table, label string, runs int) []sparkBenchArm {
	t.Helper()
	ctx := t.Context()
	c := dialGo(t, ctx, f.URI())
	snaps, err := c.Snapshots(ctx, table)
	if err != nil || len(snaps) != 6 && len(snaps) != 7 {
		t.Fatalf("%s: snapshots %+v, %v; want the create (Delta), 4 appends, an update, a delete", table, snaps, err)
	}
	upd := len(snaps) - 2 // the update commit
	windows := []struct {
		name string
		req  sluice.ChangeRequest
	}{
		{"the whole history", sluice.ChangeRequest{Table: table, Identity: []string{"id"}}},
		{"the update commit (1% of rows)", sluice.ChangeRequest{Table: table, Identity: []string{"id"},
			FromSnapshot: &snaps[upd-1].ID, ToSnapshot: &snaps[upd].ID}},
	}
	var arms []sparkBenchArm
	for _, w := range windows {
		// One unmeasured read each way, compared line by line on the small
		// window (the verdict must be the Spark engine's, not a fallback).
		var verdict string
		for _, backend := range []string{"spark", "native"} {
			r := w.req
			r.Backend = backend
			p, err := c.Explain(ctx, r)
			if err != nil {
				t.Fatalf("%s, %s, %s: %v", table, w.name, backend, err)
			}
			if backend == "spark" {
				if p.Backend == nil || p.Backend.Backend != "spark" {
					t.Fatalf("%s: the verdict %+v is not Spark's", table, p.Backend)
				}
				verdict = p.Backend.Chosen
			}
		}
		if w.req.FromSnapshot != nil {
			sameChangeSet(t, c, w.req)
		}
		pair := []sparkBenchArm{
			{table: label, window: w.name, backend: "spark (" + verdict + ")"},
			{table: label, window: w.name, backend: "native"},
		}
		for run := range runs {
			for i, backend := range []string{"spark", "native"} {
				if run%2 == 1 {
					i = 1 - i
					backend = []string{"spark", "native"}[i]
				}
				r := w.req
				r.Backend = backend
				fc, sc := cpuSeconds(t, f.pid()), cpuSeconds(t, srv.PID())
				start := time.Now()
				n, err := countChanges(ctx, c, r)
				if err != nil {
					t.Fatalf("%s, %s, %s: %v", table, w.name, backend, err)
				}
				pair[i].seconds = append(pair[i].seconds, time.Since(start).Seconds())
				pair[i].flightdCPU = append(pair[i].flightdCPU, cpuSeconds(t, f.pid())-fc)
				pair[i].sparkCPU = append(pair[i].sparkCPU, cpuSeconds(t, srv.PID())-sc)
				if pair[i].rows != 0 && pair[i].rows != n {
					t.Fatalf("%s, %s, %s: %d rows, then %d", table, w.name, backend, pair[i].rows, n)
				}
				pair[i].rows = n
			}
		}
		if pair[0].rows != pair[1].rows {
			t.Fatalf("%s, %s: %d rows through Spark, %d natively", table, w.name, pair[0].rows, pair[1].rows)
		}
		t.Logf("%s, %s: %d rows; spark %.3fs, native %.3fs", table, w.name, pair[0].rows,
			median(pair[0].seconds), median(pair[1].seconds))
		arms = append(arms, pair...)
	}
	return arms
}

// sameChangeSet reads a window through Spark and natively and checks that
// they hold the same change rows and commit markers. The order of the
// changes within a commit is each engine's own, so the lines are compared
// sorted.
func sameChangeSet(t *testing.T, c *sluice.Client, req sluice.ChangeRequest) {
	t.Helper()
	read := func(backend string) []string {
		r := req
		r.Backend = backend
		rdr, err := c.Changes(t.Context(), r)
		if err != nil {
			t.Fatalf("%s: %v", backend, err)
		}
		defer rdr.Release()
		lines, err := readRows(rdr)
		if err != nil {
			t.Fatalf("%s: %v", backend, err)
		}
		slices.Sort(lines)
		return lines
	}
	viaSpark, native := read("spark"), read("native")
	if !slices.Equal(viaSpark, native) {
		i := 0
		for i < min(len(viaSpark), len(native)) && viaSpark[i] == native[i] {
			i++
		}
		t.Fatalf("%s: %d lines through Spark, %d natively; the first difference (sorted) at line %d:\n  spark:  %q\n  native: %q",
			req.Table, len(viaSpark), len(native), i, viaSpark[i:min(i+2, len(viaSpark))], native[i:min(i+2, len(native))])
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// loadAvg is the machine's load averages (1, 5, 15 minutes).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// machine describes the CPU, cores and memory from /proc.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if kb, err := strconv.ParseFloat(f[1], 64); err == nil {
				mem = fmt.Sprintf(", %.0f GiB", kb/(1<<20))
			}
		}
	}
	return fmt.Sprintf("%s, %d cores%s, %s/%s", model, runtime.NumCPU(), mem, runtime.GOOS, runtime.GOARCH)
}

type sparkBenchReport struct {
	rows, runs         int
	loadStart, loadEnd string
	started            time.Time
	arms               []sparkBenchArm
}

func (r sparkBenchReport) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Spark's change engines and Sluice's, side by side\n\n")
	fmt.Fprintf(&b, "Generated by `make bench-spark` (e2e/spark_bench_test.go) on %s.\n\n", r.started.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "- Machine: %s.\n", machine())
	fmt.Fprintf(&b, "- Load averages (1, 5, 15 min): %s at the start, %s at the end.\n", r.loadStart, r.loadEnd)
	fmt.Fprintf(&b, "- Each table: %d rows written by Spark in four appends, then an UPDATE of 1%% of the rows, then a DELETE of 0.1%%; "+
		"columns id BIGINT, name STRING, amount DOUBLE, grp BIGINT. Identity: id.\n", r.rows)
	fmt.Fprintf(&b, "- Both backends are read through the same flightd with the Go client, renderable layout; "+
		"`\"backend\": \"spark\"` and `\"backend\": \"native\"` alternate run by run (%d runs each; medians). "+
		"Every run's row count equals the other backend's, and the update window is compared row by row before it is timed.\n", r.runs)
	fmt.Fprintf(&b, "- The Spark Connect server runs `local[2]` with a 4 GiB driver on the same machine; its CPU is the server process's "+
		"(the driver JVM, where local mode runs the tasks). flightd's CPU is flightd's own; its decode cache is off "+
		"(--decode-cache-bytes 0), so every read computes its window.\n\n")
	fmt.Fprintf(&b, "| table | window | backend | change rows | time | flightd CPU | Spark CPU | native speedup |\n")
	fmt.Fprintf(&b, "|---|---|---|---:|---:|---:|---:|---:|\n")
	for i, a := range r.arms {
		speed := ""
		if a.backend == "native" && i > 0 {
			if m := median(a.seconds); m > 0 {
				speed = fmt.Sprintf("%.1f×", median(r.arms[i-1].seconds)/m)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %.3f s | %.2f s | %.2f s | %s |\n", a.table, a.window, a.backend, a.rows,
			median(a.seconds), median(a.flightdCPU), median(a.sparkCPU), speed)
	}
	fmt.Fprintf(&b, "\n`native speedup` is the Spark arm's median time over the native arm's. "+
		"Spark's time includes planning its query on every read; Sluice's includes planning the window from the table's log or metadata.\n")
	return b.String()
}
