package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// PeerRead is what one reader process measured reading a window: a first
// read (not measured), then the measured runs.
type PeerRead struct {
	Rows int64 `json:"rows"`
	// Seconds and CPU are per measured run: wall time and the CPU time of
	// the reader's process tree (a Spark driver's JVM included); ServerCPU
	// flightd's, for a read through it.
	Seconds   []float64 `json:"seconds"`
	CPU       []float64 `json:"cpu"`
	ServerCPU []float64 `json:"server_cpu"`
	// FirstSeconds is the first read of the process, not measured.
	FirstSeconds float64 `json:"first_seconds"`
	// Ops counts the rows by change type, in Sluice's names (empty for a
	// reader without change types).
	Ops map[string]int64 `json:"ops"`
	// PeakRSSMiB is the reader's peak RSS: the sum of every process of its
	// tree's VmHWM.
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	// ServerPeakMiB is flightd's peak RSS, for a read through it.
	ServerPeakMiB float64 `json:"server_peak_mib,omitempty"`
	// Note says how the reader was set up.
	Note string `json:"note"`
}

// PeerArm is one reader of a window in the side-by-side table.
type PeerArm struct {
	Window, Reader string
	// Sluice marks the arm the window's other readers are compared with.
	Sluice bool
	PeerRead
}

// Window names of the side-by-side table.
const (
	peerAppend = "append window"
	peerCoW    = "copy-on-write window"
	peerDelta  = "Delta window"
)

// icebergPeerScript measures reads of an Iceberg window from Python:
// "sluice" reads the request from flightd with pyarrow.flight (streaming
// the batches, or into one table when materialize is set), "pyiceberg"
// runs incremental_append_scan().to_arrow() on the same catalog.
const icebergPeerScript = `
import json, os, sys, time
import pyarrow as pa, pyarrow.compute as pc

a = json.loads(sys.argv[1])
out = {"seconds": [], "cpu": [], "server_cpu": [], "ops": {}, "note": ""}
tick = os.sysconf("SC_CLK_TCK")

def server_cpu():
    if not a["pid"]:
        return 0.0
    with open("/proc/%d/stat" % a["pid"]) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tick

def count_ops(ops, col):
    for v in pc.value_counts(col.cast(pa.string())).to_pylist():
        ops[v["values"]] = ops.get(v["values"], 0) + v["counts"]

if a["mode"] == "sluice":
    import pyarrow.flight as flight
    client = flight.connect(a["uri"])
    ticket = flight.Ticket(json.dumps(a["request"]).encode())
    # The flat layout names the change type _change_type.
    kind = "_change_type" if a["request"].get("layout") == "flat" else "op"
    def read():
        r = client.do_get(ticket)
        if a["materialize"]:
            t = r.read_all()
            ops = {}
            count_ops(ops, t.column(kind))
            return t.num_rows, ops
        n, ops = 0, {}
        for chunk in r:
            n += chunk.data.num_rows
            count_ops(ops, chunk.data.column(kind))
        return n, ops
else:
    from pyiceberg.catalog.sql import SqlCatalog
    cat = SqlCatalog("sluice", uri="sqlite:///" + a["catalog"], warehouse="file://" + a["warehouse"])
    tbl = cat.load_table(a["request"]["table"])
    to = int(a["request"]["to_snapshot"])
    def read():
        return tbl.incremental_append_scan(to_snapshot_id_inclusive=to).to_arrow().num_rows, {}

if a["warmup"]:
    t = time.perf_counter()
    read()
    out["first_seconds"] = time.perf_counter() - t
for _ in range(a["runs"]):
    s, c, t = server_cpu(), time.process_time(), time.perf_counter()
    out["rows"], out["ops"] = read()
    out["seconds"].append(time.perf_counter() - t)
    out["cpu"].append(time.process_time() - c)
    out["server_cpu"].append(server_cpu() - s)
with open("/proc/self/status") as f:
    for line in f:
        if line.startswith("VmHWM:"):
            out["peak_rss_mib"] = int(line.split()[1]) / 1024
print(json.dumps(out))
sys.stdout.flush()
os._exit(0)
`

// sparkScript measures Spark (local mode, Iceberg's Spark runtime) reading
// a window of a table of a Hadoop catalog: "changelog" runs Iceberg's
// create_changelog_view procedure over the window and materializes the
// view; "diff" reads the table at both ends and diffs them with EXCEPT ALL
// both ways. Each run's result is written to Spark's noop sink, which
// computes every row and keeps none. The counts are taken after the runs,
// unmeasured. CPU and peak RSS are of the whole process tree: this Python
// and the driver JVM it starts.
const sparkScript = `
import json, os, sys, time
a = json.loads(sys.argv[1])
os.environ["TZ"] = "UTC"
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
time.tzset()
from pyspark.sql import SparkSession

def tree():
    kids, me = {}, os.getpid()
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        kids.setdefault(int(fields[1]), []).append(int(p))
    out, todo = [], [me]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out

tick = os.sysconf("SC_CLK_TCK")
def tree_cpu():
    total = 0
    for p in tree():
        try:
            with open("/proc/%d/stat" % p) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total / tick

def tree_peak():
    total = 0
    for p in tree():
        try:
            with open("/proc/%d/status" % p) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024

cat = "bench"
os.makedirs(a["scratch"], exist_ok=True)
spark = (SparkSession.builder.master("local[%d]" % a["cores"]).appName("sluice-bench")
         .config("spark.jars.packages", a["package"])
         .config("spark.jars.ivy", a["ivy"])
         .config("spark.driver.memory", a["driver_memory"])
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.local.dir", os.path.join(a["scratch"], "local"))
         .config("spark.sql.warehouse.dir", os.path.join(a["scratch"], "spark-warehouse"))
         .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC -Dderby.system.home=" + a["scratch"])
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.sql.shuffle.partitions", str(a["cores"]))
         .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
         .config("spark.sql.catalog." + cat, "org.apache.iceberg.spark.SparkCatalog")
         .config("spark.sql.catalog.%s.type" % cat, "hadoop")
         .config("spark.sql.catalog.%s.warehouse" % cat, a["warehouse"])
         .config("spark.sql.catalog.%s.cache-enabled" % cat, "false")
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
table = "%s.%s" % (cat, a["table"])
base, end = a["base"], a["end"]
names = {"INSERT": "insert", "DELETE": "delete", "UPDATE_BEFORE": "update_before", "UPDATE_AFTER": "update_after"}

if a["mode"] == "changelog":
    def frame():
        spark.sql("CALL %s.system.create_changelog_view(table => '%s.%s', options => map('start-snapshot-id', '%d', "
                  "'end-snapshot-id', '%d'), identifier_columns => array('id'), compute_updates => true, "
                  "changelog_view => 'bench_changes')" % (cat, cat, a["table"], base, end))
        return spark.table("bench_changes")
    def counts(df):
        return {names.get(r[0], r[0]): r[1] for r in df.groupBy("_change_type").count().collect()}
else:
    def sides():
        old = spark.read.option("snapshot-id", str(base)).table(table)
        new = spark.read.option("snapshot-id", str(end)).table(table)
        return old.exceptAll(new), new.exceptAll(old)
    def frame():
        removed, added = sides()
        return removed.unionAll(added)
    def counts(df):
        removed, added = sides()
        return {"removed": removed.count(), "added": added.count()}

out = {"seconds": [], "cpu": [], "server_cpu": [],
       "note": "Spark %s local[%d], driver memory %s, %s" % (spark.version, a["cores"], a["driver_memory"], a["package"])}
t = time.perf_counter()
frame().write.format("noop").mode("overwrite").save()
out["first_seconds"] = time.perf_counter() - t
for _ in range(a["runs"]):
    c, t = tree_cpu(), time.perf_counter()
    frame().write.format("noop").mode("overwrite").save()
    out["seconds"].append(time.perf_counter() - t)
    out["cpu"].append(tree_cpu() - c)
out["peak_rss_mib"] = tree_peak()
out["ops"] = counts(frame())
out["rows"] = sum(out["ops"].values())
spark.stop()
print(json.dumps(out))
sys.stdout.flush()
os._exit(0)
`

// SparkConfig is how the Spark peers run.
type SparkConfig struct {
	// Python is a Python with pyspark (empty: the Spark arms do not run).
	Python string
	// Package is the Iceberg Spark runtime's Maven coordinates; Ivy is
	// the folder Spark resolves it into.
	Package, Ivy string
	// Cores is local mode's thread count; DriverMemory the driver's heap.
	Cores        int
	DriverMemory string
}

// DefaultIcebergSparkPackage is the Iceberg Spark runtime the Spark peers
// use (the one feed/testdata/fixtures/gen writes the Spark fixtures with).
const DefaultIcebergSparkPackage = "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0"

// stageHadoop lays the scale table out as a Hadoop catalog's table for
// Spark: <root>/bench/scale/metadata/v1.metadata.json, a copy of the
// table's metadata file at the window's end, and version-hint.text. The
// copy names the same manifest lists, manifests and data files by their
// absolute paths: Spark reads the files Sluice reads.
func stageHadoop(s *Scale, root string) error {
	meta := filepath.Join(root, "bench", "scale", "metadata")
	if err := os.RemoveAll(root); err != nil {
		return err
	}
	if err := os.MkdirAll(meta, 0o755); err != nil {
		return err
	}
	b, err := os.ReadFile(strings.TrimPrefix(s.Metadata, "file://"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(meta, "v1.metadata.json"), b, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(meta, "version-hint.text"), []byte("1"), 0o644)
}

// runSpark measures one Spark peer on the scale table s.
func runSpark(ctx context.Context, cfg Config, mode string, s *Scale) (*PeerRead, error) {
	root, err := filepath.Abs(filepath.Join(cfg.Work, "spark", fmt.Sprint(s.Rows)))
	if err != nil {
		return nil, err
	}
	if err := stageHadoop(s, filepath.Join(root, "catalog")); err != nil {
		return nil, err
	}
	sc := cfg.Spark
	var out PeerRead
	args := map[string]any{"mode": mode, "warehouse": filepath.Join(root, "catalog"), "table": "bench.scale",
		"base": s.Base, "end": s.End, "runs": cfg.Runs, "cores": sc.Cores, "driver_memory": sc.DriverMemory,
		"package": sc.Package, "ivy": sc.Ivy, "scratch": filepath.Join(root, "scratch")}
	if err := runScript(ctx, sc.Python, sparkScript, args, &out); err != nil {
		return nil, fmt.Errorf("spark %s: %w", mode, err)
	}
	return &out, nil
}

// readIcebergPeer measures a Python reader of an Iceberg window: "sluice"
// through flightd at uri (its pid for its CPU), or "pyiceberg".
// Without warmup its runs measured reads are its first.
func readIcebergPeer(ctx context.Context, cfg Config, mode, uri string, pid int, wh string, req map[string]any,
	materialize, warmup bool, runs int) (*PeerRead, error) {
	var out PeerRead
	args := map[string]any{"mode": mode, "uri": uri, "pid": pid, "request": req, "runs": runs,
		"catalog": filepath.Join(wh, "catalog.db"), "warehouse": wh, "materialize": materialize, "warmup": warmup}
	if err := runScript(ctx, cfg.Python, icebergPeerScript, args, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", mode, err)
	}
	return &out, nil
}

// warmCacheFlags are the flags of the warm arm's flightd: a decode cache
// that holds the reference window, and a soft memory limit above it.
var warmCacheFlags = []string{"--decode-cache-bytes", fmt.Sprint(384 << 20), "--memory-limit-mib", "640"}

// sluicePeer reads a window from Python through a fresh flightd on wh
// (with the extra flags): a first read, then cfg.Runs measured ones; and
// adds flightd's peak RSS. With cached, flightd's decode cache is on (its
// default), so the measured runs read what the first read left; without,
// each run reads the files.
func sluicePeer(ctx context.Context, cfg Config, wh string, req map[string]any, materialize, cached bool,
	extra ...string) (*PeerRead, error) {
	var flags []string
	if !cached {
		flags = noDecodeCache
	} else {
		// A window read just before is in the cache only when the cache
		// holds it: the reference window encodes to about 150 MB, past
		// the default bound of 32 MiB (a read past it is not kept), so
		// this arm raises the bound, and the soft limit with it.
		flags = warmCacheFlags
	}
	srv, err := startFlightdWith(ctx, cfg, wh, append(slices.Clone(flags), extra...)...)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	r, err := readIcebergPeer(ctx, cfg, "sluice", "grpc://"+srv.addr, srv.cmd.Process.Pid, wh, req, materialize, true,
		cfg.Runs)
	if err != nil {
		return nil, err
	}
	if r.ServerPeakMiB, err = peakRSS(srv.cmd.Process.Pid); err != nil {
		return nil, err
	}
	return r, nil
}

// sluiceCold reads a window from Python cfg.Runs times, each the first
// read of a fresh flightd and a fresh Python process: nothing of the
// window is in either process (the files may be in the OS's page cache,
// as they are for every reader here). Peaks are the largest of the runs.
func sluiceCold(ctx context.Context, cfg Config, wh string, req map[string]any, materialize bool) (*PeerRead, error) {
	out := &PeerRead{}
	for range cfg.Runs {
		srv, err := startFlightd(ctx, cfg, wh)
		if err != nil {
			return nil, err
		}
		r, err := readIcebergPeer(ctx, cfg, "sluice", "grpc://"+srv.addr, srv.cmd.Process.Pid, wh, req, materialize,
			false, 1)
		var peak float64
		if err == nil {
			peak, err = peakRSS(srv.cmd.Process.Pid)
		}
		srv.stop()
		if err != nil {
			return nil, err
		}
		out.Rows, out.Ops = r.Rows, r.Ops
		out.Seconds = append(out.Seconds, r.Seconds...)
		out.CPU = append(out.CPU, r.CPU...)
		out.ServerCPU = append(out.ServerCPU, r.ServerCPU...)
		out.PeakRSSMiB, out.ServerPeakMiB = max(out.PeakRSSMiB, r.PeakRSSMiB), max(out.ServerPeakMiB, peak)
	}
	return out, nil
}

// runAppendPeers measures the append window of the reference table: Sluice
// via pyarrow, cold and warm, and pyiceberg's incremental_append_scan, all
// into one Arrow table.
func runAppendPeers(ctx context.Context, cfg Config, wh string, ref *Reference, rep *Report) error {
	req := map[string]any{"table": ref.Table, "to_snapshot": fmt.Sprint(ref.Appends[len(ref.Appends)-1])}
	cfg.logf("measuring the append window: sluice via pyarrow, cold")
	cold, err := sluiceCold(ctx, cfg, wh, req, true)
	if err != nil {
		return fmt.Errorf("append window, sluice cold: %w", err)
	}
	cold.Note = "pyarrow.flight, `read_all()`; each run the first read of a fresh `flightd` and Python process"
	cfg.logf("measuring the append window: sluice via pyarrow, warm")
	warm, err := sluicePeer(ctx, cfg, wh, req, true, true)
	if err != nil {
		return fmt.Errorf("append window, sluice warm: %w", err)
	}
	warm.Note = "pyarrow.flight, `read_all()`; the runs after a first read of the same `flightd`, its decode cache on " +
		"and large enough to hold the window (`" + strings.Join(warmCacheFlags, " ") + "`; the default 32 MiB keeps " +
		"no read this large): a window another consumer just read, served from memory. Its peak RSS holds the " +
		"window by design and is not held to the 256 MiB bound"
	cfg.logf("measuring the append window: pyiceberg")
	p, err := readIcebergPeer(ctx, cfg, "pyiceberg", "", 0, wh, req, true, true, cfg.Runs)
	if err != nil {
		return fmt.Errorf("append window, pyiceberg: %w", err)
	}
	p.Note = "`incremental_append_scan().to_arrow()`, after a first read in the same process"
	for _, s := range []*PeerRead{cold, warm} {
		if s.Rows != p.Rows || s.Ops["insert"] != s.Rows {
			return fmt.Errorf("append window: Sluice read %d rows (%v), pyiceberg %d", s.Rows, s.Ops, p.Rows)
		}
	}
	rep.Peers = append(rep.Peers,
		PeerArm{Window: peerAppend, Reader: readerSluiceCold, Sluice: true, PeerRead: *cold},
		PeerArm{Window: peerAppend, Reader: readerSluiceWarm, Sluice: true, PeerRead: *warm},
		PeerArm{Window: peerAppend, Reader: "pyiceberg " + pyicebergVersion(ctx, cfg.Python), PeerRead: *p})
	return nil
}

// Reader names of the Sluice arms of the append window.
const (
	readerSluiceCold = "Sluice via pyarrow, cold"
	readerSluiceWarm = "Sluice via pyarrow, warm"
)

// pyicebergVersion is the version of pyiceberg in python ("" when unknown).
func pyicebergVersion(ctx context.Context, python string) string {
	var v struct {
		Version string `json:"version"`
	}
	if err := runScript(ctx, python, `import json, pyiceberg; print(json.dumps({"version": pyiceberg.__version__}))`,
		map[string]any{}, &v); err != nil {
		return ""
	}
	return v.Version
}

// runCoWPeers measures the copy-on-write window of the scale table s:
// Sluice via pyarrow, Spark's create_changelog_view and Spark's full reads
// with EXCEPT ALL, and the full re-read diff in Go, each in a process of its
// own. Every reader must find the window's changes.
func runCoWPeers(ctx context.Context, cfg Config, s *Scale, rep *Report) error {
	window := fmt.Sprintf("%s (%d-row table)", peerCoW, s.Rows)
	cfg.logf("measuring the %s: sluice via pyarrow", window)
	sl, err := sluicePeer(ctx, cfg, s.Warehouse, map[string]any{"table": s.Table,
		"from_snapshot": fmt.Sprint(s.Base), "to_snapshot": fmt.Sprint(s.End)}, false, false)
	if err != nil {
		return fmt.Errorf("%s, sluice: %w", window, err)
	}
	sl.Note = "pyarrow.flight, batches streamed (counted, not kept), after a first read of the same `flightd` " +
		"(its decode cache off: each run reads the files)"
	want := map[string]int64{"insert": int64(s.Inserts), "delete": int64(s.Deletes),
		"update_before": int64(s.Updates), "update_after": int64(s.Updates)}
	if !maps.Equal(sl.Ops, want) {
		return fmt.Errorf("%s: Sluice has the changes %v, the workload made %v", window, sl.Ops, want)
	}
	rep.Peers = append(rep.Peers, PeerArm{Window: window, Reader: "Sluice via pyarrow", Sluice: true, PeerRead: *sl})
	if cfg.Spark.Python != "" {
		cfg.logf("measuring the %s: Spark create_changelog_view", window)
		cl, err := runSpark(ctx, cfg, "changelog", s)
		if err != nil {
			return err
		}
		if !maps.Equal(cl.Ops, want) {
			return fmt.Errorf("%s: Spark's changelog has the changes %v, the workload made %v", window, cl.Ops, want)
		}
		rep.Peers = append(rep.Peers, PeerArm{Window: window, Reader: "Spark `create_changelog_view` (compute_updates)",
			PeerRead: *cl})
		cfg.logf("measuring the %s: Spark full reads and EXCEPT ALL", window)
		d, err := runSpark(ctx, cfg, "diff", s)
		if err != nil {
			return err
		}
		wantDiff := map[string]int64{"removed": int64(s.Updates + s.Deletes), "added": int64(s.Updates + s.Inserts)}
		if !maps.Equal(d.Ops, wantDiff) {
			return fmt.Errorf("%s: Spark's diff has %v rows, the workload made %v", window, d.Ops, wantDiff)
		}
		rep.Peers = append(rep.Peers, PeerArm{Window: window, Reader: "Spark full reads of both snapshots, EXCEPT ALL both ways",
			PeerRead: *d})
	}
	cfg.logf("measuring the %s: full re-read diff in Go", window)
	g, err := fullDiffProcess(ctx, cfg, s)
	if err != nil {
		return err
	}
	if g.Rows != s.Changes() {
		return fmt.Errorf("%s: the full re-read diff found %d changed rows, the workload made %d", window, g.Rows,
			s.Changes())
	}
	rep.Peers = append(rep.Peers, PeerArm{Window: window, Reader: "full re-read of both snapshots and diff, Go (iceberg-go scan)",
		PeerRead: *g})
	return nil
}

// fullDiffProcess measures FullDiff on a scale table's window in a process
// of its own (cfg.Self fulldiff), for its own CPU time and peak RSS; in
// this process when cfg.Self is empty (no peak RSS then).
func fullDiffProcess(ctx context.Context, cfg Config, s *Scale) (*PeerRead, error) {
	args := FullDiffArgs{Warehouse: s.Warehouse, Table: s.Table, From: s.Base, To: s.End, Runs: cfg.Runs}
	if cfg.Self == "" {
		return FullDiffRuns(ctx, args)
	}
	var out PeerRead
	b, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	if err := runJSON(ctx, cfg.Self, []string{"fulldiff", string(b)}, &out); err != nil {
		return nil, fmt.Errorf("full re-read diff: %w", err)
	}
	return &out, nil
}

// FullDiffArgs is what the fulldiff subcommand measures.
type FullDiffArgs struct {
	Warehouse string `json:"warehouse"`
	Table     string `json:"table"`
	From      int64  `json:"from"`
	To        int64  `json:"to"`
	Runs      int    `json:"runs"`
}

// FullDiffRuns measures FullDiff: a first run, then a.Runs measured ones,
// with this process's CPU time and peak RSS.
func FullDiffRuns(ctx context.Context, a FullDiffArgs) (*PeerRead, error) {
	cat, err := tablewrite.OpenWarehouse(ctx, a.Warehouse)
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	tbl, err := cat.LoadTable(ctx, a.Table)
	if err != nil {
		return nil, err
	}
	out := &PeerRead{Note: "iceberg-go scans, rows as multiset keys in a Go map"}
	for i := range a.Runs + 1 {
		c, t := selfCPU(), time.Now()
		n, err := FullDiff(ctx, tbl, a.From, a.To)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			out.FirstSeconds = time.Since(t).Seconds()
			continue
		}
		out.Seconds = append(out.Seconds, time.Since(t).Seconds())
		out.CPU = append(out.CPU, selfCPU()-c)
		out.Rows = n
	}
	if peak, err := peakRSS(os.Getpid()); err == nil {
		out.PeakRSSMiB = peak
	}
	return out, nil
}

// FullDiffMain is the fulldiff subcommand: it measures FullDiffRuns of the
// JSON FullDiffArgs in args[0] and prints the PeerRead as JSON.
func FullDiffMain(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("fulldiff takes one argument, the JSON of its arguments")
	}
	var a FullDiffArgs
	if err := json.Unmarshal([]byte(args[0]), &a); err != nil {
		return fmt.Errorf("fulldiff: %w", err)
	}
	r, err := FullDiffRuns(ctx, a)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(r)
}
