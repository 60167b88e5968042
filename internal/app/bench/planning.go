package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluicefeed/sluice/catalog"
	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/lib/longhist"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// planWarmRuns is how many warm plans each window's median and CPU are
// taken over: a plan takes well under flightd's CPU clock tick, so the CPU
// of one is the total over these divided by them.
const planWarmRuns = 50

// PlanHistory is one long history's planning: the one-commit windows of
// its last append and its closing copy-on-write overwrite, each planned
// (GetFlightInfo, which reads manifests but no data file) through a fresh
// flightd.
type PlanHistory struct {
	Format string
	// Snapshots and Files are the history's length and data files;
	// CheckpointEvery a Delta table's checkpoint interval.
	Snapshots, Files, CheckpointEvery int
	WriteSeconds                      float64 `json:"write_seconds"`
	Cached                            bool    `json:"-"`
	Windows                           []PlanWindow
	// PeakMiB is flightd's peak RSS after every plan of the history.
	PeakMiB float64
}

// PlanWindow is one window's plans: the first on a fresh flightd (cold: it
// reads the table's metadata file, manifest lists and manifests; the
// files may be in the page cache), then planWarmRuns more.
type PlanWindow struct {
	Name        string
	ColdSeconds float64
	ColdCPU     float64
	// WarmSeconds are the warm plans' times; WarmCPU is flightd's CPU per
	// warm plan, over all of them.
	WarmSeconds []float64
	WarmCPU     float64
	Files       int64
}

// parsePlanHistories parses "snapshots:files" pairs, space or comma
// separated.
func parsePlanHistories(s string) ([]longhist.IcebergParams, error) {
	var out []longhist.IcebergParams
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' }) {
		a, b, ok := strings.Cut(f, ":")
		snaps, err1 := strconv.Atoi(a)
		files, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%q is not snapshots:files", f)
		}
		p := longhist.IcebergParams{Snapshots: snaps, Files: files, MergeEvery: longhist.DefaultMergeEvery}
		if err := p.Validate(); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// ParsePlanHistories parses the -plan-histories flag: "snapshots:files"
// pairs.
func ParsePlanHistories(s string) ([]longhist.IcebergParams, error) { return parsePlanHistories(s) }

// ParseDeltaHistories parses the -plan-delta-histories flag:
// "versions:files:checkpoint-interval" triples.
func ParseDeltaHistories(s string) ([]longhist.DeltaParams, error) {
	var out []longhist.DeltaParams
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' }) {
		parts := strings.Split(f, ":")
		var n [3]int
		if len(parts) != 3 {
			return nil, fmt.Errorf("%q is not versions:files:checkpoint-interval", f)
		}
		for i, part := range parts {
			v, err := strconv.Atoi(part)
			if err != nil {
				return nil, fmt.Errorf("%q is not versions:files:checkpoint-interval", f)
			}
			n[i] = v
		}
		p := longhist.DeltaParams{Versions: n[0], Files: n[1], CheckpointEvery: n[2]}
		if err := p.Validate(); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// writePlanHistory writes (or reuses) the long history of p under root.
func writePlanHistory(ctx context.Context, root string, p longhist.IcebergParams) (*longhist.Iceberg, bool, error) {
	dir := filepath.Join(canonical(root), fmt.Sprintf("%d-%d", p.Snapshots, p.Files))
	type written struct {
		longhist.Iceberg
		WriteSeconds float64 `json:"write_seconds"`
	}
	w, hit, err := cached(ctx, dir, p, func(cat *catalog.Catalog) (*written, error) {
		start := time.Now()
		h, err := longhist.WriteIceberg(ctx, cat, p)
		if err != nil {
			return nil, err
		}
		return &written{Iceberg: *h, WriteSeconds: time.Since(start).Seconds()}, nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("history of %d snapshots, %d files: %w", p.Snapshots, p.Files, err)
	}
	return &w.Iceberg, hit, nil
}

// planWindow is a one-commit window to plan.
type planWindow struct {
	name     string
	from, to int64
}

// runPlanning writes (or reuses) each long history and plans its windows.
func runPlanning(ctx context.Context, cfg Config, rep *Report) error {
	root := filepath.Join(cfg.Work, "planning")
	for _, p := range cfg.PlanHistories {
		cfg.logf("writing (or reusing) the Iceberg history of %d snapshots and %d files", p.Snapshots, p.Files)
		start := time.Now()
		h, hit, err := writePlanHistory(ctx, root, p)
		if err != nil {
			return err
		}
		ph := PlanHistory{Format: "Iceberg", Snapshots: p.Snapshots, Files: p.Files, Cached: hit}
		if !hit {
			ph.WriteSeconds = time.Since(start).Seconds()
			cfg.logf("wrote it in %.0f s", ph.WriteSeconds)
		}
		app, over := func() planWindow { f, t := h.LastAppend(); return planWindow{"last append", f, t} }(),
			func() planWindow { f, t := h.LastOverwrite(); return planWindow{"copy-on-write overwrite", f, t} }()
		wh := filepath.Join(canonical(root), fmt.Sprintf("%d-%d", p.Snapshots, p.Files))
		if err := planHistory(ctx, cfg, wh, nil, longhist.IcebergTable, []planWindow{app, over}, &ph); err != nil {
			return fmt.Errorf("planning %d snapshots, %d files: %w", p.Snapshots, p.Files, err)
		}
		rep.Planning = append(rep.Planning, ph)
	}
	for _, p := range cfg.PlanDeltaHistories {
		cfg.logf("writing (or reusing) the Delta history of %d versions and %d files, checkpoints every %d",
			p.Versions, p.Files, p.CheckpointEvery)
		start := time.Now()
		d, dir, hit, err := writeDeltaHistory(ctx, filepath.Join(root, "delta"), p)
		if err != nil {
			return err
		}
		ph := PlanHistory{Format: "Delta", Snapshots: p.Versions, Files: p.Files, CheckpointEvery: p.CheckpointEvery,
			Cached: hit}
		if !hit {
			ph.WriteSeconds = time.Since(start).Seconds()
			cfg.logf("wrote it in %.0f s", ph.WriteSeconds)
		}
		app, rw := func() planWindow { f, t := d.LastAppend(); return planWindow{"last append", f, t} }(),
			func() planWindow { f, t := d.LastRewrite(); return planWindow{"copy-on-write rewrite", f, t} }()
		// flightd serves the Delta root beside an empty warehouse.
		wh := filepath.Join(canonical(root), "empty-warehouse")
		cat, err := tablewrite.OpenWarehouse(ctx, wh)
		if err != nil {
			return err
		}
		cat.Close()
		// One table per root: the others' logs are not listed.
		if err := planHistory(ctx, cfg, wh, []string{"--delta-root", filepath.Dir(dir)}, "delta."+filepath.Base(dir),
			[]planWindow{app, rw}, &ph); err != nil {
			return fmt.Errorf("planning %d versions, %d files: %w", p.Versions, p.Files, err)
		}
		rep.Planning = append(rep.Planning, ph)
	}
	return nil
}

// writeDeltaHistory writes (or reuses) the long Delta history of p under
// root, in a root folder of its own (root/<versions>-<files>-<every>/t),
// and returns it with its folder.
func writeDeltaHistory(ctx context.Context, root string, p longhist.DeltaParams) (*longhist.Delta, string, bool,
	error) {
	dir := filepath.Join(canonical(root), fmt.Sprintf("%d-%d-%d", p.Versions, p.Files, p.CheckpointEvery))
	table := filepath.Join(dir, "t")
	d, hit, err := cachedDir(ctx, dir, p, "t/_delta_log", func() (*longhist.Delta, error) {
		return longhist.WriteDelta(table, p, time.Now().UnixMilli()-int64(p.Versions))
	})
	if err != nil {
		return nil, "", false, fmt.Errorf("Delta history of %d versions, %d files: %w", p.Versions, p.Files, err)
	}
	return d, table, hit, nil
}

// planHistory plans the windows of table through a fresh flightd on wh
// with flags.
func planHistory(ctx context.Context, cfg Config, wh string, flags []string, table string, windows []planWindow,
	ph *PlanHistory) error {
	srv, err := startFlightd(ctx, cfg, wh, flags...)
	if err != nil {
		return err
	}
	defer srv.stop()
	client, err := sluice.Dial(ctx, "grpc://"+srv.addr)
	if err != nil {
		return err
	}
	defer client.Close()
	pid := srv.cmd.Process.Pid
	for _, w := range windows {
		from, to := w.from, w.to
		req := sluice.ChangeRequest{Table: table, FromSnapshot: &from, ToSnapshot: &to}
		pw := PlanWindow{Name: w.name}
		plan := func() (float64, float64, error) {
			c0, t0 := procCPU(pid), time.Now()
			p, err := client.Explain(ctx, req)
			if err != nil {
				return 0, 0, err
			}
			pw.Files = p.FilesRead
			return time.Since(t0).Seconds(), procCPU(pid) - c0, nil
		}
		cfg.logf("planning the %s of %s", w.name, table)
		if pw.ColdSeconds, pw.ColdCPU, err = plan(); err != nil {
			return err
		}
		c0 := procCPU(pid)
		for range planWarmRuns {
			s, _, err := plan()
			if err != nil {
				return err
			}
			pw.WarmSeconds = append(pw.WarmSeconds, s)
		}
		pw.WarmCPU = (procCPU(pid) - c0) / planWarmRuns
		ph.Windows = append(ph.Windows, pw)
	}
	ph.PeakMiB, err = peakRSS(pid)
	return err
}

// planningSection renders the planning of the long histories.
func (r *Report) planningSection() string {
	if len(r.Planning) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Planning a long history\n\n")
	fmt.Fprintf(&b, "Iceberg tables written by `internal/lib/longhist`: appends of data files spread evenly over the\n")
	fmt.Fprintf(&b, "snapshots, manifests merged every %d snapshots (as Java's manifest merge keeps manifest lists short),\n",
		longhist.DefaultMergeEvery)
	fmt.Fprintf(&b, "and a closing copy-on-write overwrite that replaces a file of the first snapshot. Manifests and\n")
	fmt.Fprintf(&b, "manifest lists are real Avro files; the data files they name are not written (planning reads none).\n")
	fmt.Fprintf(&b, "Each one-commit window is planned (`GetFlightInfo`) through a fresh `flightd` from local disk: once\n")
	fmt.Fprintf(&b, "cold (metadata file, manifest lists and manifests read and parsed; the files may be in the page\n")
	fmt.Fprintf(&b, "cache), then %d times warm. CPU is flightd's, from `/proc`; a warm plan's is the total over the\n", planWarmRuns)
	fmt.Fprintf(&b, "warm runs divided by them (one plan is below the clock tick).\n\n")
	fmt.Fprintf(&b, "Delta tables, written by the same package: version 0 creates the table, appends spread the data\n")
	fmt.Fprintf(&b, "files over the versions, a classic checkpoint every N versions, and a closing copy-on-write rewrite\n")
	fmt.Fprintf(&b, "(a remove and an add with dataChange=true), served by `--delta-root`, planned the same way.\n\n")
	fmt.Fprintf(&b, "| format | snapshots | data files | checkpoints every | window | files read | cold | cold CPU | warm median | warm max | warm CPU | flightd peak RSS |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	var missed []string
	for _, h := range r.Planning {
		for _, w := range h.Windows {
			_, hi := minMax(w.WarmSeconds)
			every := ""
			if h.CheckpointEvery > 0 {
				every = fmt.Sprint(h.CheckpointEvery)
			}
			fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %d | %s | %s | %s | %s | %.2f ms | %s |\n", h.Format, h.Snapshots,
				h.Files, every, w.Name, w.Files, secs(w.ColdSeconds), secs(w.ColdCPU), msecs(median(w.WarmSeconds)),
				msecs(hi), w.WarmCPU*1000, mib(h.PeakMiB))
			if h.Snapshots >= 10_000 && h.Files >= 100_000 {
				if m := median(w.WarmSeconds); m > 0.1 {
					missed = append(missed, fmt.Sprintf("%s %s warm %s (target ≤ 100 ms)", h.Format, w.Name, msecs(m)))
				}
				if w.ColdSeconds > 2 {
					missed = append(missed, fmt.Sprintf("%s %s cold %s (target ≤ 2 s)", h.Format, w.Name, secs(w.ColdSeconds)))
				}
			}
		}
		if h.PeakMiB > 256 {
			missed = append(missed, fmt.Sprintf("flightd peaked at %.0f MiB at %d %s snapshots, %d files (target ≤ 256 MiB)",
				h.PeakMiB, h.Snapshots, h.Format, h.Files))
		}
	}
	if len(missed) > 0 {
		fmt.Fprintf(&b, "\nTargets MISSED: %s.\n", strings.Join(missed, "; "))
	} else {
		fmt.Fprintf(&b, "\nAt every size: warm ≤ 100 ms, cold ≤ 2 s at 10k snapshots and 100k files, flightd ≤ 256 MiB (targets met).\n")
	}
	return b.String()
}

// msecs renders a short time in milliseconds with a fraction.
func msecs(s float64) string { return fmt.Sprintf("%.2f ms", s*1000) }
