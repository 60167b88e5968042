package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// The Paimon workload's tables, in the database PaimonDatabase of its
// warehouse, served as paimon.<database>.<table>.
const (
	PaimonDatabase    = "bench"
	PaimonTableAppend = "append_log"
	PaimonTablePK     = "pk_orders"
)

// paimonFiles is the number of appends of each Paimon table.
const paimonFiles = 4

// NewPaimonParams returns the statements of a Paimon workload of rows
// rows (UpsertParams), its primary-key table in 4 buckets.
func NewPaimonParams(rows int) UpsertParams { return newUpsertParams(rows, paimonFiles, 4) }

// Paimon is the Paimon workload as written.
type Paimon struct {
	UpsertParams
	// Warehouse is the Paimon filesystem catalog's warehouse (flightd's
	// --paimon-warehouse).
	Warehouse string
	// AppendEnd is the append table's last snapshot; PKBase the
	// primary-key table's last append, PKEnd its upsert.
	AppendEnd, PKBase, PKEnd int64
	// Pypaimon is the version of pypaimon that wrote the tables.
	Pypaimon string
	// Cached is true when the tables of an earlier run were reused.
	Cached bool
	// WriteSeconds is what writing both tables took (in the run that
	// wrote them).
	WriteSeconds float64
}

// paimonMarker is what a written Paimon warehouse's marker file records:
// the statements, the script and the writer, so a later run reuses the
// tables only when all three are the same.
type paimonMarker struct {
	UpsertParams
	Script       string  `json:"script_sha256"`
	Pypaimon     string  `json:"pypaimon"`
	AppendEnd    int64   `json:"append_end"`
	PKBase       int64   `json:"pk_base"`
	PKEnd        int64   `json:"pk_end"`
	WriteSeconds float64 `json:"write_seconds"`
}

// WritePaimon writes the Paimon workload of p with pypaimon in
// cfg.PaimonPython into root/warehouse, or reuses the tables an earlier
// run left there when its marker file says they were written the same
// way.
func WritePaimon(ctx context.Context, cfg Config, root string, p UpsertParams) (*Paimon, error) {
	version, err := pypaimonVersion(ctx, cfg.PaimonPython)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(paimonWriteScript))
	want := paimonMarker{UpsertParams: p, Script: hex.EncodeToString(sum[:]), Pypaimon: version}
	wh, markerFile := filepath.Join(root, "warehouse"), filepath.Join(root, "paimon.json")
	var have paimonMarker
	if b, err := os.ReadFile(markerFile); err == nil && json.Unmarshal(b, &have) == nil {
		same := have
		same.AppendEnd, same.PKBase, same.PKEnd, same.WriteSeconds = 0, 0, 0, 0
		if _, err := os.Stat(filepath.Join(wh, PaimonDatabase+".db")); err == nil && same == want {
			cfg.logf("reusing the Paimon tables in %s (written by pypaimon %s)", wh, version)
			return &Paimon{UpsertParams: p, Warehouse: wh, AppendEnd: have.AppendEnd, PKBase: have.PKBase,
				PKEnd: have.PKEnd, Pypaimon: version, Cached: true, WriteSeconds: have.WriteSeconds}, nil
		}
	}
	cfg.logf("writing the Paimon tables in %s with pypaimon %s (%d rows each)", wh, version, p.Rows)
	_ = os.Remove(markerFile)
	if err := os.RemoveAll(wh); err != nil {
		return nil, err
	}
	var out struct {
		AppendEnd int64   `json:"append_end"`
		PKBase    int64   `json:"pk_base"`
		PKEnd     int64   `json:"pk_end"`
		Seconds   float64 `json:"seconds"`
	}
	args := map[string]any{"warehouse": wh, "db": PaimonDatabase, "append": PaimonTableAppend, "pk": PaimonTablePK,
		"rows": p.Rows, "files": p.Files, "buckets": p.Buckets, "update_first": p.UpdateFirst, "updates": p.Updates,
		"deletes": p.Deletes}
	if err := runScript(ctx, cfg.PaimonPython, paimonWriteScript, args, &out); err != nil {
		return nil, fmt.Errorf("writing the Paimon tables: %w", err)
	}
	want.AppendEnd, want.PKBase, want.PKEnd, want.WriteSeconds = out.AppendEnd, out.PKBase, out.PKEnd, out.Seconds
	b, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(markerFile, append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	return &Paimon{UpsertParams: p, Warehouse: wh, AppendEnd: out.AppendEnd, PKBase: out.PKBase, PKEnd: out.PKEnd,
		Pypaimon: version, WriteSeconds: out.Seconds}, nil
}

// pypaimonVersion returns the version of pypaimon python imports, or an
// error that says how to install it.
func pypaimonVersion(ctx context.Context, python string) (string, error) {
	var v struct {
		Version string `json:"version"`
	}
	err := runScript(ctx, python, `import json, importlib.metadata as m, numpy, pyarrow, pypaimon
print(json.dumps({"version": m.version("pypaimon")}))`, map[string]any{}, &v)
	if err != nil {
		return "", fmt.Errorf("the Paimon arm needs pypaimon, numpy and pyarrow in %s (make paimon-venv): %w",
			python, err)
	}
	return v.Version, nil
}

// PaimonReport is what the Paimon arm found.
type PaimonReport struct {
	Workload *Paimon
	// Append and PK are the reads of a snapshot's whole state: Sluice's
	// window from the start of the history to it, and pypaimon's batch
	// read of it; Upsert is Sluice's window of the primary-key table's
	// upsert snapshot alone.
	AppendSluice, AppendPeer, PKSluice, PKPeer, Upsert *PeerRead
	// UpsertStrategy is Sluice's plan of the upsert snapshot (explain).
	UpsertStrategy string
}

// Paimon window names.
const (
	peerPaimonAppend = "Paimon append table, latest snapshot"
	peerPaimonPK     = "Paimon primary-key table, snapshot before the upsert"
)

// RunPaimon writes (or reuses) the Paimon workload under cfg.Work/paimon
// and measures it into rep: each snapshot's state read by Sluice via
// pyarrow through a fresh flightd (--paimon-warehouse; the window from
// the start of the history to the snapshot, all inserts) and by pypaimon's
// own batch read of the same snapshot in-process, each reader in a Python
// process of its own; then Sluice's window of the primary-key table's
// upsert snapshot. Every read is checked against the workload. icebergWH
// is the Iceberg warehouse flightd also serves (it needs one).
func RunPaimon(ctx context.Context, cfg Config, icebergWH string, rep *Report) error {
	rows := cfg.PaimonRows
	if rows <= 0 {
		rows = cfg.Rows
	}
	start := time.Now()
	wl, err := WritePaimon(ctx, cfg, filepath.Join(cfg.Work, "paimon"), NewPaimonParams(rows))
	if err != nil {
		return err
	}
	if !wl.Cached {
		cfg.logf("wrote the Paimon workload in %.1f s", time.Since(start).Seconds())
	}
	pr := &PaimonReport{Workload: wl}
	flags := []string{"--paimon-warehouse", wl.Warehouse}
	table := func(name string) string { return "paimon." + PaimonDatabase + "." + name }
	inserts := map[string]int64{"insert": int64(wl.Rows)}
	state := func(window, name string, snap int64) (*PeerRead, *PeerRead, error) {
		cfg.logf("measuring the %s: sluice via pyarrow", window)
		s, err := sluicePeer(ctx, cfg, icebergWH, map[string]any{"table": table(name), "to_snapshot": fmt.Sprint(snap)},
			true, false, flags...)
		if err != nil {
			return nil, nil, fmt.Errorf("%s, sluice: %w", window, err)
		}
		s.Note = "pyarrow.flight, `read_all()` of the window from the start of the history to the snapshot (every " +
			"row an insert), after a first read of the same `flightd` (its decode cache off)"
		cfg.logf("measuring the %s: pypaimon", window)
		p, err := readPaimonPeer(ctx, cfg, wl.Warehouse, name, snap)
		if err != nil {
			return nil, nil, fmt.Errorf("%s, pypaimon: %w", window, err)
		}
		p.Note = "`table.copy({\"scan.snapshot-id\": id})`, `new_read_builder()`, `to_arrow(splits)`, in-process, after a " +
			"first read in the same process"
		if !maps.Equal(s.Ops, inserts) || p.Rows != int64(wl.Rows) {
			return nil, nil, fmt.Errorf("%s: Sluice read %v, pypaimon %d rows; the workload has %d", window, s.Ops,
				p.Rows, wl.Rows)
		}
		return s, p, nil
	}
	if pr.AppendSluice, pr.AppendPeer, err = state(peerPaimonAppend, PaimonTableAppend, wl.AppendEnd); err != nil {
		return err
	}
	if pr.PKSluice, pr.PKPeer, err = state(peerPaimonPK, PaimonTablePK, wl.PKBase); err != nil {
		return err
	}
	// The upsert snapshot's changes, which only Sluice computes.
	name := fmt.Sprintf("Paimon primary-key upsert snapshot (%d updates, %d deletes): sluice via pyarrow", wl.Updates,
		wl.Deletes)
	cfg.logf("measuring %s", name)
	srv, err := startFlightd(ctx, cfg, icebergWH, flags...)
	if err != nil {
		return err
	}
	defer srv.stop()
	req := map[string]any{"table": table(PaimonTablePK), "from_snapshot": fmt.Sprint(wl.PKBase),
		"to_snapshot": fmt.Sprint(wl.PKEnd)}
	up, err := readDelta(ctx, cfg, "sluice", "grpc://"+srv.addr, srv.cmd.Process.Pid, req, "", wl.PKEnd)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	want := map[string]int64{"update_before": int64(wl.Updates), "update_after": int64(wl.Updates),
		"delete": int64(wl.Deletes)}
	if !maps.Equal(up.Ops, want) {
		return fmt.Errorf("%s: it has the changes %v, the workload made %v", name, up.Ops, want)
	}
	pr.Upsert = &up.PeerRead
	if len(up.Strategies) == 1 {
		pr.UpsertStrategy = up.Strategies[0]
	}
	if pr.Upsert.ServerPeakMiB, err = peakRSS(srv.cmd.Process.Pid); err != nil {
		return err
	}
	rep.Paimon = pr
	return nil
}

// RunPaimonAlone runs the Paimon arm alone (sluice-bench -paimon-only):
// its flightd serves an empty Iceberg warehouse of its own beside the
// Paimon one.
func RunPaimonAlone(ctx context.Context, cfg Config) (*Report, error) {
	rep := &Report{Started: time.Now(), Refs: map[string]string{}, LoadStart: loadAverage()}
	wh := filepath.Join(cfg.Work, "paimon", "iceberg")
	if err := os.RemoveAll(wh); err != nil {
		return nil, err
	}
	cat, err := tablewrite.OpenWarehouse(ctx, wh)
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	if err := RunPaimon(ctx, cfg, wh, rep); err != nil {
		return nil, err
	}
	rep.LoadEnd = loadAverage()
	return rep, nil
}

// PaimonMarkdown renders the Paimon arm's section alone, as a page of
// its own (sluice-bench -paimon-only).
func (r *Report) PaimonMarkdown(command string, cfg Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured by `%s` on %s.\n\n", command, r.Started.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "**Machine:** %s\n\n", machine())
	if r.LoadStart != "" {
		fmt.Fprintf(&b, "**Load average** (1, 5, 15 minutes) when the run started: %s; when it ended: %s.\n",
			r.LoadStart, r.LoadEnd)
	}
	b.WriteString(r.paimonSection(cfg))
	return b.String()
}

// paimonSection renders what the Paimon arm measured ("" when it did not
// run).
func (r *Report) paimonSection(cfg Config) string {
	pr := r.Paimon
	if pr == nil {
		return ""
	}
	w := pr.Workload
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Paimon: Sluice and pypaimon\n\n")
	fmt.Fprintf(&b, "Two tables written by pypaimon %s's batch writer into a Paimon filesystem catalog (Parquet, its\n", w.Pypaimon)
	fmt.Fprintf(&b, "defaults otherwise), each %d rows of the reference schema's 11 columns in %d commits: an append table\n", w.Rows, w.Files)
	fmt.Fprintf(&b, "(bucket -1) and a primary-key table (`id`, %d buckets, `deduplicate`, a twelfth column `op` as its\n", w.Buckets)
	fmt.Fprintf(&b, "`rowkind.field`), which then takes one commit that updates %d rows and deletes %d. Kept in `%s` and\n",
		w.Updates, w.Deletes, workPath(cfg.Work, "paimon"))
	fmt.Fprintf(&b, "reused by later runs (this run: %s). A snapshot's whole state is read by Sluice as the window from the\n", cachedWord(w.Cached))
	fmt.Fprintf(&b, "start of the history to it (every row an insert) through a fresh `flightd --paimon-warehouse`, its decode\n")
	fmt.Fprintf(&b, "cache off, with pyarrow; and by pypaimon's own batch read of the same snapshot, in-process. Each\n")
	fmt.Fprintf(&b, "reader runs in a Python process of its own, reads once unmeasured, then %d times; CPU is per run\n", cfg.Runs)
	fmt.Fprintf(&b, "(the Python process's, and `flightd`'s); the ratio is pypaimon's median time over Sluice's (above\n")
	fmt.Fprintf(&b, "1: Sluice is faster). Every read is checked against the workload.\n\n")
	fmt.Fprintf(&b, "| snapshot | reader | rows | median | min | max | rate | CPU | CPU flightd | peak RSS | peak RSS flightd | pypaimon ÷ Sluice |\n")
	fmt.Fprintf(&b, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	row := func(window, reader string, p *PeerRead, ratio string) {
		lo, hi := minMax(p.Seconds)
		rt := ""
		if m := p.median(); m > 0 {
			rt = rate(float64(p.Rows) / m)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", window, reader, p.Rows,
			secs(p.median()), secs(lo), secs(hi), rt, cpu(p.CPU), cpu(p.ServerCPU), mib(p.PeakRSSMiB),
			mib(p.ServerPeakMiB), ratio)
	}
	for _, s := range []struct {
		window         string
		sluice, pypaim *PeerRead
	}{{fmt.Sprintf("%s (%d)", peerPaimonAppend, w.AppendEnd), pr.AppendSluice, pr.AppendPeer},
		{fmt.Sprintf("%s (%d)", peerPaimonPK, w.PKBase), pr.PKSluice, pr.PKPeer}} {
		ratio := ""
		if m := s.sluice.median(); m > 0 {
			ratio = fmt.Sprintf("**%.2f**", s.pypaim.median()/m)
		}
		row(s.window, "Sluice via pyarrow", s.sluice, "")
		row(s.window, "pypaimon "+w.Pypaimon+" `to_arrow()`", s.pypaim, ratio)
	}
	row(fmt.Sprintf("primary-key upsert snapshot %d alone (`%s`)", w.PKEnd, pr.UpsertStrategy), "Sluice via pyarrow",
		pr.Upsert, "")
	fmt.Fprintf(&b, "\nFirst reads, not measured: Sluice %s and %s, pypaimon %s and %s (append, primary key).\n",
		secs(pr.AppendSluice.FirstSeconds), secs(pr.PKSluice.FirstSeconds), secs(pr.AppendPeer.FirstSeconds),
		secs(pr.PKPeer.FirstSeconds))
	fmt.Fprintf(&b, "pypaimon has no feed of a primary-key snapshot's changes to compare the last row with: Sluice\n")
	fmt.Fprintf(&b, "merges the buckets the snapshot touched before and after it and compares them by key (%s).\n",
		opsLine(pr.Upsert.Ops))
	return b.String()
}

// readPaimonPeer measures pypaimon's batch read of snapshot snap of the
// table name in the warehouse wh, in a Python process of its own.
func readPaimonPeer(ctx context.Context, cfg Config, wh, name string, snap int64) (*PeerRead, error) {
	var out PeerRead
	args := map[string]any{"warehouse": wh, "table": PaimonDatabase + "." + name, "snapshot": snap, "runs": cfg.Runs}
	if err := runScript(ctx, cfg.PaimonPython, paimonReadScript, args, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// paimonWriteScript writes the Paimon workload with pypaimon's batch
// writer: both tables' appends, one commit each, then the primary-key
// table's upsert. Rows are made from seeded numpy generators (the
// reference schema of the Delta workload), so both tables hold the same
// rows.
const paimonWriteScript = `
import json, os, sys, time
import numpy as np, pyarrow as pa
from pypaimon import CatalogFactory, Schema

a = json.loads(sys.argv[1])
countries = np.array(["DE", "DK", "ES", "FI", "FR", "IT", "NL", "NO", "PL", "SE", "SE", "SE"])
base = 1767225600 * 1000000  # 2026-01-01 UTC, in microseconds
year = 365 * 24 * 3600 * 1000000
utc = pa.timestamp("us", tz="UTC")
fields = [pa.field("id", pa.int64(), nullable=False), ("customer_id", pa.int64()), ("country", pa.string()),
          ("name", pa.string()), ("email", pa.string()), ("amount", pa.float64()), ("discount", pa.float64()),
          ("created_at", utc), ("updated_at", utc), ("active", pa.bool_()), ("priority", pa.int32())]

def rows(first, n, seed, op=None):
    r = np.random.default_rng(seed)
    cols = {
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
    }
    if op is None:
        return pa.table(cols, schema=pa.schema(fields))
    cols["op"] = pa.array(op)
    return pa.table(cols, schema=pa.schema(fields + [("op", pa.string())]))

def write(table, data):
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    try:
        w.write_arrow(data)
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()

def latest(table):
    return table.snapshot_manager().get_latest_snapshot().id

t0 = time.perf_counter()
catalog = CatalogFactory.create({"warehouse": a["warehouse"]})
catalog.create_database(a["db"], True)
out = {}
per = a["rows"] // a["files"]
sizes = [per if i < a["files"] - 1 else a["rows"] - per * (a["files"] - 1) for i in range(a["files"])]
for pk in (False, True):
    name = "%s.%s" % (a["db"], a["pk"] if pk else a["append"])
    if pk:
        schema = Schema.from_pyarrow_schema(rows(1, 1, 0, ["+I"]).schema, primary_keys=["id"], options={
            "bucket": str(a["buckets"]), "merge-engine": "deduplicate", "rowkind.field": "op", "file.format": "parquet"})
    else:
        schema = Schema.from_pyarrow_schema(rows(1, 1, 0).schema, options={"bucket": "-1", "file.format": "parquet"})
    catalog.create_table(name, schema, False)
    table = catalog.get_table(name)
    for i, n in enumerate(sizes):
        write(table, rows(1 + i * per, n, 1 + i, ["+I"] * n if pk else None))
    if not pk:
        out["append_end"] = latest(table)
        continue
    out["pk_base"] = latest(table)
    # The upsert: rows of the first append (ids 1 to sizes[0], seed 1),
    # updated or deleted, in one commit.
    lo, nu, nd = a["update_first"], a["updates"], a["deletes"]
    first = rows(1, sizes[0], 1, ["+I"] * sizes[0]).slice(lo - 1, nu + nd)
    amount = first.column("amount").to_numpy()
    priority = first.column("priority").to_numpy()
    ups = np.arange(nu + nd) < nu
    first = first.set_column(first.schema.get_field_index("amount"), "amount",
                             pa.array(np.where(ups, amount + 1, amount)))
    first = first.set_column(first.schema.get_field_index("priority"), "priority",
                             pa.array(np.where(ups, priority + 1, priority).astype(np.int32)))
    first = first.set_column(first.schema.get_field_index("op"), "op", pa.array(["+U"] * nu + ["-D"] * nd))
    write(table, first)
    out["pk_end"] = latest(table)
out["seconds"] = time.perf_counter() - t0
print(json.dumps(out))
`

// paimonReadScript measures pypaimon's batch read of one snapshot of a
// table, in-process: one first read, then runs measured ones, each with
// its wall time and the process's CPU time; then the process's peak RSS.
const paimonReadScript = `
import json, os, sys, time
from pypaimon import CatalogFactory

a = json.loads(sys.argv[1])
out = {"seconds": [], "cpu": [], "server_cpu": [], "ops": {}}
catalog = CatalogFactory.create({"warehouse": a["warehouse"]})
table = catalog.get_table(a["table"]).copy({"scan.snapshot-id": str(a["snapshot"])})

def read():
    rb = table.new_read_builder()
    return rb.new_read().to_arrow(rb.new_scan().plan().splits()).num_rows

t = time.perf_counter()
read()
out["first_seconds"] = time.perf_counter() - t
for _ in range(a["runs"]):
    c, t = time.process_time(), time.perf_counter()
    out["rows"] = read()
    out["seconds"].append(time.perf_counter() - t)
    out["cpu"].append(time.process_time() - c)
with open("/proc/self/status") as f:
    for line in f:
        if line.startswith("VmHWM:"):
            out["peak_rss_mib"] = int(line.split()[1]) / 1024
print(json.dumps(out))
sys.stdout.flush()
os._exit(0)
`
