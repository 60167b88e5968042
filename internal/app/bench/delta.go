package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// DeltaTableCDF and DeltaTableNoCDF are the folders (under the Delta root
// of a run) of the Delta workload's two tables, served as delta.<folder>.
const (
	DeltaTableCDF   = "bench_cdf"
	DeltaTableNoCDF = "bench_nocdf"
)

// deltaFiles is the number of appends (one data file each) of the Delta
// workload.
const deltaFiles = 4

// NewDeltaParams returns the statements of a Delta workload of rows rows
// (UpsertParams).
func NewDeltaParams(rows int) UpsertParams { return newUpsertParams(rows, deltaFiles, 0) }

// Delta is the Delta workload as written: the same statements written
// twice by delta-rs, into a table with the change data feed on and one
// with it off.
type Delta struct {
	UpsertParams
	// Root is the folder holding both tables (flightd's --delta-root).
	Root string
	// End is the window's last version (the MERGE); the window is the
	// whole history, versions 0 to End.
	End int64
	// Deltalake is the version of the deltalake package that wrote the
	// tables.
	Deltalake string
	// Cached is true when the tables of an earlier run were reused.
	Cached bool
	// WriteSeconds is what writing both tables took (in the run that
	// wrote them).
	WriteSeconds float64
}

// deltaMarker is what a written Delta table's marker file records: the
// statements, the script and the writer, so a later run reuses the table
// only when all three are the same.
type deltaMarker struct {
	UpsertParams
	CDF          bool    `json:"cdf"`
	Script       string  `json:"script_sha256"`
	Deltalake    string  `json:"deltalake"`
	End          int64   `json:"end"`
	WriteSeconds float64 `json:"write_seconds"`
}

// WriteDelta writes the Delta workload of p with deltalake (delta-rs) in
// cfg.Python into root, or reuses the tables an earlier run left there
// when their marker files say they were written the same way.
func WriteDelta(ctx context.Context, cfg Config, root string, p UpsertParams) (*Delta, error) {
	version, err := deltalakeVersion(ctx, cfg.Python)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(deltaWriteScript))
	script := hex.EncodeToString(sum[:])
	d := &Delta{UpsertParams: p, Root: root, Deltalake: version, Cached: true}
	for _, cdf := range []bool{true, false} {
		name := DeltaTableNoCDF
		if cdf {
			name = DeltaTableCDF
		}
		dir, markerFile := filepath.Join(root, name), filepath.Join(root, name+".json")
		want := deltaMarker{UpsertParams: p, CDF: cdf, Script: script, Deltalake: version}
		var have deltaMarker
		if b, err := os.ReadFile(markerFile); err == nil && json.Unmarshal(b, &have) == nil {
			same := have
			same.End, same.WriteSeconds = 0, 0
			if _, err := os.Stat(filepath.Join(dir, "_delta_log")); err == nil && same == want {
				cfg.logf("reusing the Delta table %s (written by deltalake %s)", dir, version)
				d.End, d.WriteSeconds = have.End, d.WriteSeconds+have.WriteSeconds
				continue
			}
		}
		cfg.logf("writing the Delta table %s with deltalake %s (%d rows, CDF %v)", dir, version, p.Rows, cdf)
		d.Cached = false
		_ = os.Remove(markerFile)
		var out struct {
			End     int64   `json:"end"`
			Seconds float64 `json:"seconds"`
		}
		args := map[string]any{"dir": dir, "cdf": cdf, "rows": p.Rows, "files": p.Files,
			"update_first": p.UpdateFirst, "updates": p.Updates, "deletes": p.Deletes}
		if err := runScript(ctx, cfg.Python, deltaWriteScript, args, &out); err != nil {
			return nil, fmt.Errorf("writing the Delta table %s: %w", dir, err)
		}
		want.End, want.WriteSeconds = out.End, out.Seconds
		b, err := json.MarshalIndent(want, "", "  ")
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(markerFile, append(b, '\n'), 0o644); err != nil {
			return nil, err
		}
		d.End, d.WriteSeconds = out.End, d.WriteSeconds+out.Seconds
	}
	return d, nil
}

// deltalakeVersion returns the version of the deltalake package python
// imports, or an error that says how to install it.
func deltalakeVersion(ctx context.Context, python string) (string, error) {
	cmd := exec.CommandContext(ctx, python, "-c", "import deltalake, numpy, pyarrow; print(deltalake.__version__)")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("the Delta arms need deltalake (delta-rs), numpy and pyarrow in %s (make venv, "+
			"or pip install deltalake==1.6.6): %v: %s", python, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// runScript runs a Python script with args as JSON in its first argument
// and decodes the JSON it prints into out.
func runScript(ctx context.Context, python, script string, args any, out any) error {
	b, err := json.Marshal(args)
	if err != nil {
		return err
	}
	return runJSON(ctx, python, []string{"-c", script, string(b)}, out)
}

// runJSON runs a command and decodes the JSON it prints into out.
func runJSON(ctx context.Context, name string, args []string, out any) error {
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(lastLines(stderr.String(), 30)))
	}
	// The JSON is the last line: Spark's launcher prints to stdout too.
	last := stdout
	if lines := bytes.Split(bytes.TrimSpace(stdout), []byte("\n")); len(lines) > 0 {
		last = lines[len(lines)-1]
	}
	if err := json.Unmarshal(last, out); err != nil {
		return fmt.Errorf("%s printed %q: %w", filepath.Base(name), stdout, err)
	}
	return nil
}

// lastLines returns the last n lines of s (a JVM's stack traces are long).
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// DeltaRead is what one Python process measured reading a Delta window:
// a first read (a fresh process's), then the measured runs, as a peer's
// read (CPU and peak RSS of the Python process), with what only the Delta
// arms report.
type DeltaRead struct {
	PeerRead
	// Strategies are the strategies of the window's versions (Sluice's
	// explain), in order.
	Strategies []string `json:"strategies"`
	// Error is load_cdf's error, for a table it refuses.
	Error string `json:"error"`
}

// readDelta measures a Delta window from Python: "sluice" reads the
// request from flightd at uri with pyarrow, "deltars" reads
// DeltaTable(dir).load_cdf(0, end) into Arrow.
func readDelta(ctx context.Context, cfg Config, mode, uri string, serverPid int, req map[string]any, dir string,
	end int64) (*DeltaRead, error) {
	var out DeltaRead
	args := map[string]any{"mode": mode, "uri": uri, "pid": serverPid, "request": req, "dir": dir, "end": end,
		"runs": cfg.Runs}
	if err := runScript(ctx, cfg.Python, deltaReadScript, args, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeltaReport is what the Delta arms found beyond their times.
type DeltaReport struct {
	Workload *Delta
	// CDF, NoCDF and Peer are the reads of the window: Sluice on the
	// table with the change data feed on, on the one with it off, and
	// delta-rs's load_cdf on the first. Flat is Sluice's read of the first
	// in the flat layout (load_cdf's shape).
	CDF, Flat, NoCDF, Peer *DeltaRead
	// PeerNoCDF is load_cdf's answer on the table with the feed off.
	PeerNoCDF string
	// Identity is the identity the read of the table without the feed
	// names (it has no update pairs of its own).
	Identity []string
}

// Delta arm names.
const (
	armDeltaCDF       = "Delta window, CDF on: sluice via pyarrow"
	armDeltaCDFFlat   = "Delta window, CDF on, layout flat: sluice via pyarrow"
	armDeltaPeer      = "Delta window, CDF on: delta-rs load_cdf() read into Arrow"
	armDeltaNoCDF     = "Delta window, CDF off (add/remove), identity id: sluice via pyarrow"
	armDeltaCDFMem    = "flightd peak RSS, Delta window, CDF on"
	armDeltaNoCDFMem  = "flightd peak RSS, Delta window, CDF off, identity id"
	deltaNoCDFMaxMiB  = 256
	deltaPeerOpsError = "the feeds disagree"
)

// runDelta writes (or reuses) the Delta workload under cfg.Work/delta and
// measures its window: Sluice through a fresh flightd per table, read with
// pyarrow, and delta-rs's load_cdf, each in a Python process of its own.
func runDelta(ctx context.Context, cfg Config, wh string, rep *Report) error {
	rows := cfg.DeltaRows
	if rows <= 0 {
		rows = cfg.Rows
	}
	root := filepath.Join(cfg.Work, "delta")
	start := time.Now()
	wl, err := WriteDelta(ctx, cfg, root, NewDeltaParams(rows))
	if err != nil {
		return err
	}
	if !wl.Cached {
		cfg.logf("wrote the Delta workload in %.1f s", time.Since(start).Seconds())
	}
	dr := &DeltaReport{Workload: wl, Identity: []string{"id"}}
	rep.Delta = dr
	// The memory arms come after the time arms.
	var memArms []Arm
	defer func() { rep.Arms = append(rep.Arms, memArms...) }()

	// sluiceArm measures a read through a fresh flightd; memName "" adds
	// no memory arm.
	sluiceArm := func(name, memName, table, layout string, identity []string, maxMiB float64) (*DeltaRead, error) {
		srv, err := startFlightd(ctx, cfg, wh, "--delta-root", root)
		if err != nil {
			return nil, err
		}
		defer srv.stop()
		req := map[string]any{"table": "delta." + table, "to_snapshot": fmt.Sprint(wl.End)}
		if len(identity) > 0 {
			req["identity"] = identity
		}
		if layout != "" {
			req["layout"] = layout
		}
		cfg.logf("measuring %s", name)
		r, err := readDelta(ctx, cfg, "sluice", "grpc://"+srv.addr, srv.cmd.Process.Pid, req, "", wl.End)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		peak, err := peakRSS(srv.cmd.Process.Pid)
		if err != nil {
			return nil, err
		}
		rep.Arms = append(rep.Arms, Arm{Name: name, Rows: r.Rows, Seconds: r.Seconds, CPU: r.CPU, ServerCPU: r.ServerCPU})
		if memName == "" {
			return r, nil
		}
		memArms = append(memArms, Arm{Name: memName, Rows: r.Rows, Value: fmt.Sprintf("%.0f MiB", peak),
			MaxMiB: maxMiB, PeakMiB: peak})
		return r, nil
	}
	if dr.CDF, err = sluiceArm(armDeltaCDF, armDeltaCDFMem, DeltaTableCDF, "", nil, 0); err != nil {
		return err
	}
	if dr.Flat, err = sluiceArm(armDeltaCDFFlat, "", DeltaTableCDF, "flat", nil, 0); err != nil {
		return err
	}
	cfg.logf("measuring %s", armDeltaPeer)
	if dr.Peer, err = readDelta(ctx, cfg, "deltars", "", 0, nil, filepath.Join(root, DeltaTableCDF), wl.End); err != nil {
		return fmt.Errorf("%s: %w", armDeltaPeer, err)
	}
	rep.Arms = append(rep.Arms, Arm{Name: armDeltaPeer, Rows: dr.Peer.Rows, Seconds: dr.Peer.Seconds, CPU: dr.Peer.CPU,
		Ref: armDeltaCDF})
	window := fmt.Sprintf("%s (%d rows, change data feed on)", peerDelta, wl.Rows)
	asPeer := func(r *DeltaRead, serverPeak float64, note string) PeerRead {
		p := r.PeerRead
		p.ServerPeakMiB, p.Note = serverPeak, note
		return p
	}
	rep.Peers = append(rep.Peers,
		PeerArm{Window: window, Reader: "Sluice via pyarrow", Sluice: true,
			PeerRead: asPeer(dr.CDF, memArms[0].PeakMiB, "pyarrow.flight, `read_all()`")},
		PeerArm{Window: window, Reader: "delta-rs " + wl.Deltalake + " `load_cdf`",
			PeerRead: asPeer(dr.Peer, 0, "`pa.table(DeltaTable(path).load_cdf(0, end))`")})
	if dr.NoCDF, err = sluiceArm(armDeltaNoCDF, armDeltaNoCDFMem, DeltaTableNoCDF, "", dr.Identity,
		deltaNoCDFMaxMiB); err != nil {
		return err
	}
	last := rep.Arms[len(rep.Arms)-1]
	last.Ref = armDeltaCDF
	rep.Arms[len(rep.Arms)-1] = last
	// What delta-rs says of the table without the change data feed.
	noCDF, err := readDelta(ctx, cfg, "deltars", "", 0, nil, filepath.Join(root, DeltaTableNoCDF), wl.End)
	if err != nil {
		return fmt.Errorf("load_cdf on the table without CDF: %w", err)
	}
	dr.PeerNoCDF = noCDF.Error
	if dr.PeerNoCDF == "" {
		dr.PeerNoCDF = fmt.Sprintf("no error: %d rows", noCDF.Rows)
	}
	return dr.check()
}

// check fails when the three reads of the window disagree on its changes:
// every one must have the workload's inserts, update pairs and deletes.
func (dr *DeltaReport) check() error {
	p := dr.Workload.UpsertParams
	want := map[string]int64{"insert": int64(p.Rows), "update_before": int64(p.Updates),
		"update_after": int64(p.Updates), "delete": int64(p.Deletes)}
	for _, r := range []struct {
		name string
		read *DeltaRead
	}{{armDeltaCDF, dr.CDF}, {armDeltaCDFFlat, dr.Flat}, {armDeltaPeer, dr.Peer}, {armDeltaNoCDF, dr.NoCDF}} {
		if r.read.Error != "" {
			return fmt.Errorf("%s: %s", r.name, r.read.Error)
		}
		if !maps.Equal(r.read.Ops, want) {
			return fmt.Errorf("%s: %s: it has the changes %v, the workload made %v", r.name, deltaPeerOpsError,
				r.read.Ops, want)
		}
	}
	return nil
}

// opsLine renders change counts in a fixed order.
func opsLine(ops map[string]int64) string {
	var parts []string
	for _, k := range []string{"insert", "update_before", "update_after", "delete"} {
		parts = append(parts, fmt.Sprintf("%d %s", ops[k], k))
	}
	for _, k := range slices.Sorted(maps.Keys(ops)) {
		if !slices.Contains([]string{"insert", "update_before", "update_after", "delete"}, k) {
			parts = append(parts, fmt.Sprintf("%d %s", ops[k], k))
		}
	}
	return strings.Join(parts, ", ")
}

// strategyRuns renders a window's strategies, consecutive versions with the
// same strategy together: "0-3 delta-add, 4 delta-cdc-files".
func strategyRuns(strategies []string) string {
	var parts []string
	for i := 0; i < len(strategies); {
		j := i
		for j+1 < len(strategies) && strategies[j+1] == strategies[i] {
			j++
		}
		v := fmt.Sprintf("version %d", i)
		if j > i {
			v = fmt.Sprintf("versions %d-%d", i, j)
		}
		parts = append(parts, fmt.Sprintf("%s `%s`", v, strategies[i]))
		i = j + 1
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// deltaWriteScript writes one table of the Delta workload with deltalake
// (delta-rs): the appends, each one data file, then the MERGE. Rows are
// made from seeded numpy generators, so both tables hold the same rows.
// The process ends with os._exit: deltalake's process aborts at a normal
// exit (testdata/delta/gen/README.md).
const deltaWriteScript = `
import json, os, shutil, sys, time
import numpy as np, pyarrow as pa
from deltalake import DeltaTable, write_deltalake

a = json.loads(sys.argv[1])
countries = np.array(["DE", "DK", "ES", "FI", "FR", "IT", "NL", "NO", "PL", "SE", "SE", "SE"])
base = 1767225600 * 1000000  # 2026-01-01 UTC, in microseconds
year = 365 * 24 * 3600 * 1000000
utc = pa.timestamp("us", tz="UTC")

def rows(first, n, seed):
    r = np.random.default_rng(seed)
    return pa.table({
        "id": pa.array(np.arange(first, first + n, dtype=np.int64)),
        "customer_id": pa.array(r.integers(0, 1000000, n, dtype=np.int64)),
        "country": pa.array(countries[r.integers(0, len(countries), n)]),
        "name": pa.array(np.char.add("customer ", r.integers(0, 100000, n).astype(str))),
        "email": pa.array(np.char.add(np.char.add("user", r.integers(0, 1000000, n).astype(str)), "@example.com")),
        "amount": pa.array(r.integers(0, 1000000, n) / 100),
        "discount": pa.array(r.random(n)),
        "created_at": pa.array(base + r.integers(0, year, n, dtype=np.int64), utc),
        "updated_at": pa.array(base + r.integers(0, year, n, dtype=np.int64), utc),
        "active": pa.array(r.integers(0, 2, n) == 0),
        "priority": pa.array(r.integers(0, 10, n, dtype=np.int32)),
    })

t0 = time.perf_counter()
path = a["dir"]
shutil.rmtree(path, ignore_errors=True)
conf = {"delta.enableChangeDataFeed": "true" if a["cdf"] else "false"}
per = a["rows"] // a["files"]
for i in range(a["files"]):
    n = per if i < a["files"] - 1 else a["rows"] - per * (a["files"] - 1)
    write_deltalake(path, rows(1 + i * per, n, 1 + i), mode="append", configuration=conf if i == 0 else None)
lo, nu, nd = a["update_first"], a["updates"], a["deletes"]
hi = lo + nu + nd - 1
src = pa.table({"id": pa.array(np.arange(lo, hi + 1, dtype=np.int64)), "op": pa.array(["U"] * nu + ["D"] * nd)})
(DeltaTable(path).merge(src, predicate="t.id = s.id AND t.id >= %d AND t.id <= %d" % (lo, hi),
                        source_alias="s", target_alias="t")
    .when_matched_update(updates={"amount": "t.amount + 1", "priority": "t.priority + 1"}, predicate="s.op = 'U'")
    .when_matched_delete(predicate="s.op = 'D'")
    .execute())
print(json.dumps({"end": DeltaTable(path).version(), "seconds": time.perf_counter() - t0}))
sys.stdout.flush()
os._exit(0)
`

// deltaReadScript measures reads of a Delta window from Python: one first
// read, then runs measured ones, each with its wall time, the process's CPU
// time and (for sluice) flightd's, read from /proc.
const deltaReadScript = `
import json, os, sys, time
import pyarrow as pa, pyarrow.compute as pc

a = json.loads(sys.argv[1])
out = {"seconds": [], "cpu": [], "server_cpu": [], "ops": {}, "strategies": [], "error": ""}
tick = os.sysconf("SC_CLK_TCK")

def server_cpu():
    if not a["pid"]:
        return 0.0
    with open("/proc/%d/stat" % a["pid"]) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tick

if a["mode"] == "sluice":
    import pyarrow.flight as flight
    client = flight.connect(a["uri"])
    body = json.dumps(a["request"]).encode()
    plan = json.loads(list(client.do_action(flight.Action("explain", body)))[0].body.to_pybytes())
    out["strategies"] = [s["strategy"] for s in plan["snapshots"]]
    ticket = flight.Ticket(body)
    read = lambda: client.do_get(ticket).read_all()
    kinds, names = "op", {}
    if a["request"].get("layout") == "flat":
        kinds = "_change_type"
        names = {"update_preimage": "update_before", "update_postimage": "update_after"}
else:
    from deltalake import DeltaTable
    dt = DeltaTable(a["dir"])
    read = lambda: pa.table(dt.load_cdf(starting_version=0, ending_version=a["end"]))
    kinds = "_change_type"
    names = {"update_preimage": "update_before", "update_postimage": "update_after"}

try:
    t = time.perf_counter()
    tbl = read()
    out["first_seconds"] = time.perf_counter() - t
    del tbl
    for _ in range(a["runs"]):
        s, c, t = server_cpu(), time.process_time(), time.perf_counter()
        tbl = read()
        out["seconds"].append(time.perf_counter() - t)
        out["cpu"].append(time.process_time() - c)
        out["server_cpu"].append(server_cpu() - s)
        out["rows"] = tbl.num_rows
        ops = {}
        for v in pc.value_counts(tbl.column(kinds).cast(pa.string())).to_pylist():
            ops[names.get(v["values"], v["values"])] = v["counts"]
        out["ops"] = ops
        del tbl
except Exception as e:
    if a["mode"] == "sluice":
        raise
    out["error"] = "%s: %s" % (type(e).__name__, e)
# VmHWM, not getrusage's ru_maxrss: Linux carries the parent's peak over
# exec into the latter.
with open("/proc/self/status") as f:
    for line in f:
        if line.startswith("VmHWM:"):
            out["peak_rss_mib"] = int(line.split()[1]) / 1024
print(json.dumps(out))
sys.stdout.flush()
os._exit(0)
`
