package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluicefeed/sluice/catalog"
	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/lib/longhist"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// Config configures a benchmark run.
type Config struct {
	Work    string // working directory: warehouse, ready files
	Flightd string // the flightd binary
	Python  string // a Python with pyarrow and pyiceberg
	Runs    int    // measurements per arm
	Rows    int    // rows of the reference window
	// ScaleRows are the sizes of the scale tables (none: skip the curve);
	// FullDiffMaxRows the largest the full re-read diff runs on (0: all).
	ScaleRows       []int
	FullDiffMaxRows int
	// PeerRows is the scale table the copy-on-write peers read (0 or not
	// one of ScaleRows: they do not run).
	PeerRows int
	// Spark configures the Spark peers (Spark.Python empty: they do not
	// run).
	Spark SparkConfig
	// Self is this benchmark's binary, run as "Self fulldiff" to measure
	// the full re-read diff in a process of its own (empty: in this one).
	Self string
	// SVG is the file the scale curve's plot is written to (empty: none).
	SVG string
	// MemRows is the rows of the bounded-memory workload, in files of
	// MemFileRows (0: skip it).
	MemRows, MemFileRows int
	// DeltaRows is the rows of the Delta workload (0: Rows; negative: skip
	// it). Its arms run when Python is set; that Python needs deltalake
	// and numpy too.
	DeltaRows int
	// PaimonPython is a Python with pypaimon, numpy and pyarrow, which
	// writes the Paimon workload and reads it (empty: the Paimon arm does
	// not run; it needs Python too, for the Sluice reads). PaimonRows is
	// the rows of each of its tables (0: Rows).
	PaimonPython string
	PaimonRows   int
	// PlanHistories are the long Iceberg histories whose one-commit
	// windows are planned (none: skip them).
	PlanHistories []longhist.IcebergParams
	// PlanDeltaHistories are the long Delta histories planned the same
	// way.
	PlanDeltaHistories []longhist.DeltaParams
	// Followers is the followers arm's workload (Followers 0: skip it).
	Followers FollowersParams
	Log       io.Writer `json:"-"`
}

// Arm is one measured way of reading.
type Arm struct {
	Name    string
	Rows    int64
	Seconds []float64
	Note    string
	Ref     string // the arm it is compared with
	Target  float64
	// Value, when set, replaces the rate (for memory arms: MiB).
	Value string
	// MaxMiB, for a memory arm, is the peak RSS it must stay within.
	MaxMiB, PeakMiB float64
	// CPU is the CPU time (user and system) each run took in the benchmark
	// process (the decoding, or the Go client); ServerCPU that of flightd,
	// for the arms read through it.
	CPU, ServerCPU []float64
}

func (a Arm) median() float64 {
	s := slices.Clone(a.Seconds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// Rate is rows per second at the median time.
func (a Arm) Rate() float64 {
	m := a.median()
	if m == 0 {
		return 0
	}
	return float64(a.Rows) / m
}

// Report is the result of a run.
type Report struct {
	Arms    []Arm
	Started time.Time
	Refs    map[string]string
	// LoadStart and LoadEnd are the machine's load averages (1, 5 and 15
	// minutes) when the run started and when it ended.
	LoadStart, LoadEnd string
	// Delta is what the Delta arms found (nil when they did not run).
	Delta *DeltaReport
	// Paimon is what the Paimon arm found (nil when it did not run).
	Paimon *PaimonReport
	// Peers are the side-by-side readers of the same windows.
	Peers []PeerArm
	// Scale is the scale curve, one point per table size.
	Scale []ScalePoint
	// Planning is the planning of the long histories.
	Planning []PlanHistory
	// Followers is what the followers arm found (nil when it did not run).
	Followers *FollowersReport
}

func (c Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, time.Now().UTC().Format("15:04:05 ")+format+"\n", args...)
	}
}

// Run builds the workloads and measures every arm.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	rep := &Report{Started: time.Now(), Refs: map[string]string{}, LoadStart: loadAverage()}
	wh, cat, ref, memWL, err := baseWorkloads(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer cat.Close()

	srv, err := startFlightd(ctx, cfg, wh)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	client, err := sluice.Dial(ctx, "grpc://"+srv.addr)
	if err != nil {
		return nil, err
	}
	defer client.Close()

	measure := func(arm Arm, fn func() (int64, error)) (Arm, error) {
		cfg.logf("measuring %s", arm.Name)
		for range cfg.Runs {
			self, server := selfCPU(), procCPU(srv.cmd.Process.Pid)
			start := time.Now()
			n, err := fn()
			if err != nil {
				return arm, fmt.Errorf("%s: %w", arm.Name, err)
			}
			arm.Seconds = append(arm.Seconds, time.Since(start).Seconds())
			arm.CPU = append(arm.CPU, selfCPU()-self)
			arm.ServerCPU = append(arm.ServerCPU, procCPU(srv.cmd.Process.Pid)-server)
			arm.Rows = n
		}
		return arm, nil
	}
	add := func(arm Arm, fn func() (int64, error)) error {
		a, err := measure(arm, fn)
		if err != nil {
			return err
		}
		rep.Arms = append(rep.Arms, a)
		return nil
	}
	two := []string{"id", "amount"}
	lastAppend := ref.Appends[len(ref.Appends)-1]
	feed := func(req sluice.ChangeRequest) func() (int64, error) {
		return func() (int64, error) { return readGo(ctx, client, req) }
	}

	// The limits, in this process.
	if err := add(Arm{Name: "raw pqarrow decode, 11 columns"}, func() (int64, error) {
		return RawDecode(ctx, ref.DataFiles, nil, 2)
	}); err != nil {
		return nil, err
	}
	if err := add(Arm{Name: "raw pqarrow decode, 2 columns"}, func() (int64, error) {
		return RawDecode(ctx, ref.DataFiles, two, 2)
	}); err != nil {
		return nil, err
	}
	loop, err := newLoopback(ctx, ref.DataFiles)
	if err != nil {
		return nil, err
	}
	defer loop.close()
	if err := add(Arm{Name: "Flight loopback of pre-decoded batches, 11 columns"}, loop.read); err != nil {
		return nil, err
	}

	// The reference window through flightd.
	arms := []struct {
		arm Arm
		req sluice.ChangeRequest
	}{
		{Arm{Name: "feed, 11 columns (Go client)", Ref: "raw pqarrow decode, 11 columns", Target: 0.75},
			sluice.ChangeRequest{Table: ref.Table}},
		{Arm{Name: "feed, 2 columns (Go client)", Ref: "raw pqarrow decode, 2 columns", Target: 0.5},
			sluice.ChangeRequest{Table: ref.Table, Columns: two}},
		{Arm{Name: "feed, 2 columns + country = 'SE' (Go client)"},
			sluice.ChangeRequest{Table: ref.Table, Columns: two, Filter: "country = 'SE'"}},
		{Arm{Name: "feed, 11 columns, fold_updates (Go client)"},
			sluice.ChangeRequest{Table: ref.Table, FoldUpdates: true}},
		{Arm{Name: "feed, 11 columns, net_changes (Go client)", Ref: "feed, 11 columns (Go client)", Target: 1.0 / 3},
			sluice.ChangeRequest{Table: ref.Table, NetChanges: true}},
		// The append window alone: the files Arrow C++'s decode arms read.
		{Arm{Name: armFeedAppend11}, sluice.ChangeRequest{Table: ref.Table, ToSnapshot: &lastAppend}},
		{Arm{Name: armFeedAppend2}, sluice.ChangeRequest{Table: ref.Table, ToSnapshot: &lastAppend, Columns: two}},
	}
	for _, a := range arms {
		if err := add(a.arm, feed(a.req)); err != nil {
			return nil, err
		}
	}
	plan, err := client.Explain(ctx, sluice.ChangeRequest{Table: ref.Table, Columns: two, Filter: "country = 'SE'"})
	if err != nil {
		return nil, err
	}
	rep.Refs["filter plan"] = fmt.Sprintf("files read %d, skipped %d", plan.FilesRead, plan.FilesSkipped)
	rep.Refs["delete snapshot"] = fmt.Sprint(ref.Deletes)

	// pyarrow.
	if cfg.Python != "" {
		res, err := runPython(ctx, cfg, "sluice", "grpc://"+srv.addr, filepath.Join(wh, "catalog.db"), wh,
			map[string]any{"table": ref.Table})
		if err != nil {
			return nil, fmt.Errorf("feed, 11 columns (pyarrow client): %w", err)
		}
		rep.Arms = append(rep.Arms, Arm{Name: "feed, 11 columns (pyarrow client)", Rows: res.Rows, Seconds: res.Seconds})
	}

	// The peers a user would pick, on the same files: the append window
	// with pyiceberg, then the scale curve, whose copy-on-write window
	// Spark and the Go full diff read too.
	if cfg.Python != "" {
		if err := runAppendPeers(ctx, cfg, wh, ref, rep); err != nil {
			return nil, err
		}
		if err := runAppendLayouts(ctx, cfg, wh, ref, rep); err != nil {
			return nil, err
		}
		if err := runArrowDecode(ctx, cfg, ref, rep); err != nil {
			return nil, err
		}
	}
	if err := runScale(ctx, cfg, rep); err != nil {
		return nil, err
	}
	if err := runPlanning(ctx, cfg, rep); err != nil {
		return nil, err
	}
	if err := runFollowers(ctx, cfg, rep); err != nil {
		return nil, err
	}

	if err := runMemory(ctx, cfg, rep, wh, ref, memWL); err != nil {
		return nil, err
	}

	// Delta: tables delta-rs wrote, Sluice against delta-rs's own feed.
	if cfg.Python != "" && cfg.DeltaRows >= 0 {
		if err := runDelta(ctx, cfg, wh, rep); err != nil {
			return nil, fmt.Errorf("delta: %w", err)
		}
	}

	// Paimon: tables pypaimon wrote, Sluice against pypaimon's own read.
	if cfg.Python != "" && cfg.PaimonPython != "" {
		if err := RunPaimon(ctx, cfg, wh, rep); err != nil {
			return nil, fmt.Errorf("paimon: %w", err)
		}
	}
	rep.LoadEnd = loadAverage()
	return rep, nil
}

// loadAverage returns the machine's load averages over 1, 5 and 15
// minutes ("" when unknown).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], ", ")
}

// selfCPU returns the CPU time this process has used, in seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// procCPU returns the CPU time a process has used, in seconds, from
// /proc/<pid>/stat (utime and stime, in clock ticks of 1/100 s, which is
// what Linux reports to user space on every architecture Go supports).
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from after it.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	var ticks float64
	for _, f := range fields[11:13] { // utime, stime: fields 14 and 15 of stat
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return 0
		}
		ticks += v
	}
	return ticks / 100
}

// readGo reads a window with the Go client and returns its rows.
func readGo(ctx context.Context, c *sluice.Client, req sluice.ChangeRequest) (int64, error) {
	rdr, err := c.Changes(ctx, req)
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	var n int64
	for b, err := range rdr.All() {
		if err != nil {
			return 0, err
		}
		n += b.Record.NumRows()
	}
	return n, nil
}

type flightdProc struct {
	cmd  *exec.Cmd
	addr string
}

// noDecodeCache turns flightd's decode cache off: the arms measure what a
// read costs, not a read of encoded batches another read of the same
// window left (the warm append arm measures that, with the cache on).
var noDecodeCache = []string{"--decode-cache-bytes", "0"}

// startFlightd starts flightd on the warehouse wh with its decode cache
// off, with extra flags.
func startFlightd(ctx context.Context, cfg Config, wh string, extra ...string) (*flightdProc, error) {
	return startFlightdWith(ctx, cfg, wh, append(slices.Clone(noDecodeCache), extra...)...)
}

// startFlightdWith starts flightd on the warehouse wh with flags: the
// defaults but for those.
func startFlightdWith(ctx context.Context, cfg Config, wh string, flags ...string) (*flightdProc, error) {
	ready := filepath.Join(cfg.Work, fmt.Sprintf("ready-%d", time.Now().UnixNano()))
	args := append([]string{"--warehouse", wh, "--listen", "127.0.0.1:0", "--ready-file", ready, "--log-level", "warn"},
		flags...)
	cmd := exec.CommandContext(ctx, cfg.Flightd, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(ready); err == nil && len(b) > 0 {
			_ = os.Remove(ready)
			return &flightdProc{cmd: cmd, addr: strings.TrimSpace(string(b))}, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	return nil, fmt.Errorf("flightd did not serve within a minute")
}

func (f *flightdProc) stop() {
	_ = f.cmd.Process.Signal(syscall.SIGTERM)
	_ = f.cmd.Wait()
}

// peakRSS reads a process's peak resident set size (VmHWM), in MiB.
func peakRSS(pid int) (float64, error) {
	if v := statusMiB(pid, "VmHWM:"); v > 0 {
		return v, nil
	}
	return 0, fmt.Errorf("no VmHWM for process %d", pid)
}

type pyResult struct {
	Rows    int64     `json:"rows"`
	Seconds []float64 `json:"seconds"`
}

// pyScript measures a read from Python: the Sluice client over pyarrow, or
// pyiceberg's incremental append scan.
const pyScript = `
import json, sys, time
args = json.loads(sys.argv[1])
runs, out = args["runs"], {"seconds": []}
if args["mode"] == "sluice":
    import pyarrow.flight as flight
    client = flight.connect(args["uri"])
    ticket = flight.Ticket(json.dumps(args["request"]).encode())
    for _ in range(runs):
        t = time.perf_counter()
        rows = client.do_get(ticket).read_all().num_rows
        out["seconds"].append(time.perf_counter() - t)
    out["rows"] = rows
else:
    from pyiceberg.catalog.sql import SqlCatalog
    cat = SqlCatalog("sluice", uri="sqlite:///" + args["catalog"], warehouse="file://" + args["warehouse"])
    tbl = cat.load_table(args["request"]["table"])
    for _ in range(runs):
        t = time.perf_counter()
        rows = tbl.incremental_append_scan(to_snapshot_id_inclusive=args["request"]["to"]).to_arrow().num_rows
        out["seconds"].append(time.perf_counter() - t)
    out["rows"] = rows
print(json.dumps(out))
`

func runPython(ctx context.Context, cfg Config, mode, uri, catalogFile, wh string, req map[string]any) (pyResult, error) {
	args, err := json.Marshal(map[string]any{"mode": mode, "uri": uri, "catalog": catalogFile, "warehouse": wh,
		"request": req, "runs": cfg.Runs})
	if err != nil {
		return pyResult{}, err
	}
	cmd := exec.CommandContext(ctx, cfg.Python, "-c", pyScript, string(args))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return pyResult{}, fmt.Errorf("%v: %s", err, stderr.String())
	}
	var res pyResult
	if err := json.Unmarshal(out, &res); err != nil {
		return pyResult{}, fmt.Errorf("python printed %q: %w", out, err)
	}
	return res, nil
}

// Prepare writes the cached workloads a run would use (the scale tables,
// the bounded-memory table and, with Python, the Delta tables), or finds
// them written, and measures nothing: a later run then only measures.
func Prepare(ctx context.Context, cfg Config) error {
	for _, n := range cfg.ScaleRows {
		cfg.logf("writing (or reusing) the %d-row scale table", n)
		s, err := WriteScale(ctx, filepath.Join(cfg.Work, "scale"), NewScaleParams(n))
		if err != nil {
			return err
		}
		if !s.Cached {
			cfg.logf("wrote the %d-row scale table in %.1f s", n, s.WriteSeconds)
		}
	}
	for _, p := range cfg.PlanHistories {
		cfg.logf("writing (or reusing) the history of %d snapshots and %d files", p.Snapshots, p.Files)
		if _, _, err := writePlanHistory(ctx, filepath.Join(cfg.Work, "planning"), p); err != nil {
			return err
		}
	}
	for _, p := range cfg.PlanDeltaHistories {
		cfg.logf("writing (or reusing) the Delta history of %d versions and %d files", p.Versions, p.Files)
		if _, _, _, err := writeDeltaHistory(ctx, filepath.Join(cfg.Work, "planning", "delta"), p); err != nil {
			return err
		}
	}
	if cfg.MemRows > 0 {
		cfg.logf("writing (or reusing) the bounded-memory workload (%d rows)", cfg.MemRows)
		if _, err := WriteMemoryCached(ctx, filepath.Join(cfg.Work, "memory"), cfg.MemRows, cfg.MemFileRows); err != nil {
			return err
		}
	}
	if cfg.Python != "" && cfg.DeltaRows >= 0 {
		rows := cfg.DeltaRows
		if rows == 0 {
			rows = cfg.Rows
		}
		if _, err := WriteDelta(ctx, cfg, filepath.Join(cfg.Work, "delta"), NewDeltaParams(rows)); err != nil {
			return err
		}
	}
	if cfg.PaimonPython != "" {
		rows := cfg.PaimonRows
		if rows <= 0 {
			rows = cfg.Rows
		}
		if _, err := WritePaimon(ctx, cfg, filepath.Join(cfg.Work, "paimon"), NewPaimonParams(rows)); err != nil {
			return err
		}
	}
	cfg.logf("the workloads are ready")
	return nil
}

// RunPlanning measures the planning of the long histories alone (the
// rest of a run is skipped): for `sluice-bench -planning-only`.
func RunPlanning(ctx context.Context, cfg Config) (*Report, error) {
	rep := &Report{Started: time.Now(), Refs: map[string]string{}, LoadStart: loadAverage()}
	if err := runPlanning(ctx, cfg, rep); err != nil {
		return nil, err
	}
	rep.LoadEnd = loadAverage()
	return rep, nil
}

// PlanningSection renders the planning section of rep alone.
func (r *Report) PlanningSection() string { return r.planningSection() }

// runMemory measures the memory arms: a fresh flightd per window, its peak
// RSS after the read.
func runMemory(ctx context.Context, cfg Config, rep *Report, wh string, ref *Reference, memWL *Memory) error {
	// Memory: a fresh flightd per window, its peak RSS after the read.
	mem := func(name, wh string, req sluice.ChangeRequest, maxMiB float64) error {
		cfg.logf("measuring %s", name)
		s, err := startFlightd(ctx, cfg, wh)
		if err != nil {
			return err
		}
		defer s.stop()
		c, err := sluice.Dial(ctx, "grpc://"+s.addr)
		if err != nil {
			return err
		}
		defer c.Close()
		n, err := readGo(ctx, c, req)
		if err != nil {
			return err
		}
		peak, err := peakRSS(s.cmd.Process.Pid)
		if err != nil {
			return err
		}
		rep.Arms = append(rep.Arms, Arm{Name: name, Rows: n, Value: fmt.Sprintf("%.0f MiB", peak), MaxMiB: maxMiB,
			PeakMiB: peak})
		return nil
	}
	if err := mem("flightd peak RSS, reference window", wh, sluice.ChangeRequest{Table: ref.Table}, 0); err != nil {
		return err
	}
	if err := mem("flightd peak RSS, reference window, net_changes", wh, sluice.ChangeRequest{Table: ref.Table,
		NetChanges: true}, 256); err != nil {
		return err
	}
	if memWL != nil {
		base, end := memWL.Base, memWL.End
		for _, m := range []struct {
			name string
			req  sluice.ChangeRequest
		}{
			{fmt.Sprintf("flightd peak RSS, %d-row window, net_changes, identity email (a string)", memWL.Rows),
				sluice.ChangeRequest{Table: memWL.Table, ToSnapshot: &base, NetChanges: true, Identity: []string{"email"}}},
			{fmt.Sprintf("flightd peak RSS, %d-row window + copy-on-write rewrite, net_changes, identity id", memWL.Rows),
				sluice.ChangeRequest{Table: memWL.Table, ToSnapshot: &end, NetChanges: true}},
			{fmt.Sprintf("flightd peak RSS, copy-on-write rewrite of a %d-row file", memWL.FileRows),
				sluice.ChangeRequest{Table: memWL.Table, FromSnapshot: &base, ToSnapshot: &end}},
			{fmt.Sprintf("flightd peak RSS, copy-on-write rewrite of a %d-row file, identity email", memWL.FileRows),
				sluice.ChangeRequest{Table: memWL.Table, FromSnapshot: &base, ToSnapshot: &end, Identity: []string{"email"}}},
		} {
			if err := mem(m.name, memWL.Warehouse, m.req, 256); err != nil {
				return err
			}
		}
	}
	return nil
}

// RunMemory writes the reference workload and finds (or writes) the
// bounded-memory one, and measures the memory arms alone.
func RunMemory(ctx context.Context, cfg Config) (*Report, error) {
	rep := &Report{Started: time.Now(), Refs: map[string]string{}, LoadStart: loadAverage()}
	wh, cat, ref, memWL, err := baseWorkloads(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	if err := runMemory(ctx, cfg, rep, wh, ref, memWL); err != nil {
		return nil, err
	}
	rep.LoadEnd = loadAverage()
	return rep, nil
}

// baseWorkloads writes the reference workload into a fresh warehouse wh
// and finds (or writes) the bounded-memory one (nil when cfg.MemRows is
// 0). The caller closes the warehouse's catalog.
func baseWorkloads(ctx context.Context, cfg Config) (wh string, cat *catalog.Catalog, ref *Reference, memWL *Memory,
	err error) {
	wh = filepath.Join(cfg.Work, "warehouse")
	if err := os.RemoveAll(wh); err != nil {
		return "", nil, nil, nil, err
	}
	if cat, err = tablewrite.OpenWarehouse(ctx, wh); err != nil {
		return "", nil, nil, nil, err
	}
	cfg.logf("writing the reference workload (%d rows)", cfg.Rows)
	if ref, err = WriteReference(ctx, cat, "bench.ref", cfg.Rows); err == nil && cfg.MemRows > 0 {
		cfg.logf("writing (or reusing) the bounded-memory workload (%d rows)", cfg.MemRows)
		memWL, err = WriteMemoryCached(ctx, filepath.Join(cfg.Work, "memory"), cfg.MemRows, cfg.MemFileRows)
	}
	if err != nil {
		cat.Close()
		return "", nil, nil, nil, err
	}
	return wh, cat, ref, memWL, nil
}
