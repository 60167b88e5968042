// Command sluice-bench runs the benchmarks of docs/BENCHMARKS.md: it builds
// the workloads, measures every arm in one run and writes the report.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/sluicefeed/sluice/internal/app/bench"
)

func main() {
	// "sluice-bench fulldiff <json>": the full re-read diff, measured in a
	// process of its own for its CPU time and peak RSS.
	if len(os.Args) > 1 && os.Args[1] == "fulldiff" {
		if err := bench.FullDiffMain(context.Background(), os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "sluice-bench fulldiff:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "sluice-bench:", err)
		os.Exit(1)
	}
}

// relativeArgs are the command's arguments with paths under the working
// directory made relative to it: the report names no machine's paths.
func relativeArgs(args []string) []string {
	wd, err := os.Getwd()
	if err != nil {
		return args
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if rel, err := filepath.Rel(wd, a); err == nil && filepath.IsAbs(a) && !strings.HasPrefix(rel, "..") {
			out[i] = rel
		}
	}
	return out
}

func run(ctx context.Context) error {
	cfg := bench.Config{Log: os.Stderr}
	out := flag.String("out", "docs/BENCHMARKS.md", "report file")
	flag.StringVar(&cfg.Work, "work", ".tmp/bench", "working directory")
	flag.StringVar(&cfg.Flightd, "flightd", ".tmp/bin/flightd", "the flightd binary")
	flag.StringVar(&cfg.Python, "python", ".tmp/venv/bin/python", "a Python with pyarrow and pyiceberg (empty: skip)")
	flag.IntVar(&cfg.Runs, "runs", 5, "measurements per arm")
	flag.IntVar(&cfg.Rows, "rows", 1_000_000, "rows of the reference window")
	scale := flag.String("scale-rows", "1000000 10000000 100000000",
		"sizes of the scale tables, separated by spaces or commas (empty: skip the scale curve)")
	flag.IntVar(&cfg.FullDiffMaxRows, "fulldiff-max-rows", 10_000_000,
		"the largest scale table the full re-read diff runs on (0: every one)")
	flag.IntVar(&cfg.PeerRows, "peer-rows", 1_000_000,
		"the scale table whose copy-on-write window the peers read (one of -scale-rows)")
	flag.StringVar(&cfg.SVG, "svg", "docs/bench-scale.svg", "the scale curve's plot (empty: none)")
	flag.IntVar(&cfg.MemRows, "mem-rows", 10_000_000, "rows of the bounded-memory workload (0: skip)")
	flag.IntVar(&cfg.MemFileRows, "mem-file-rows", 10_000_000, "rows per file of the bounded-memory workload")
	flag.StringVar(&cfg.Spark.Python, "spark-python", "", "a Python with pyspark for the Spark peers (empty: skip them)")
	flag.StringVar(&cfg.Spark.Package, "spark-package", bench.DefaultIcebergSparkPackage,
		"the Iceberg Spark runtime's Maven coordinates")
	flag.StringVar(&cfg.Spark.Ivy, "spark-ivy", ".tmp/bench-ivy", "the folder Spark resolves the runtime into")
	flag.IntVar(&cfg.Spark.Cores, "spark-cores", runtime.NumCPU(), "Spark local mode's threads")
	flag.StringVar(&cfg.Spark.DriverMemory, "spark-driver-memory", "2g", "the Spark driver's heap")
	flag.StringVar(&cfg.PaimonPython, "paimon-python", "", "a Python with pypaimon, numpy and pyarrow for the Paimon "+
		"arm (empty: skip it)")
	flag.IntVar(&cfg.PaimonRows, "paimon-rows", 0, "rows of each Paimon table (0: -rows)")
	paimonOnly := flag.Bool("paimon-only", false, "run the Paimon arm alone and write its section to -out")
	histories := flag.String("plan-histories", "1000:10000 1000:100000 10000:10000 10000:100000",
		"the long Iceberg histories whose one-commit windows are planned, as snapshots:files (empty: skip)")
	deltaHistories := flag.String("plan-delta-histories",
		"1000:10000:10 1000:10000:100 1000:100000:100 10000:10000:100 10000:100000:100",
		"the long Delta histories planned the same way, as versions:files:checkpoint-interval (empty: skip)")
	ab := flag.String("ab", "", "compare flightd configurations on the reference window: flag sets split by |, "+
		`e.g. "--buffer-pool-mib 0|--buffer-pool-mib 16" (empty: no comparison)`)
	abRounds := flag.Int("ab-rounds", 8, "rounds of the -ab comparison (its configurations read in turn)")
	abReads := flag.Int("ab-reads", 3, "reads of each request per configuration and round of -ab")
	memoryOnly := flag.Bool("memory-only", false, "measure the memory arms alone and print them")
	planningOnly := flag.Bool("planning-only", false, "plan the long histories alone and print their section")
	followers := flag.String("followers", "50:20:40000", "the followers arm, as followers:commits:rows (empty: skip)")
	followersOnly := flag.Bool("followers-only", false, "run the followers arm alone and print its section")
	prepare := flag.Bool("prepare", false, "write (or find written) the cached workloads, measure nothing")
	render := flag.String("render", "", "render the report of an earlier run from its JSON (the run writes "+
		"report.json in -work), measure nothing")
	flag.Parse()
	if *render != "" {
		b, err := os.ReadFile(*render)
		if err != nil {
			return err
		}
		var saved savedRun
		if err := json.Unmarshal(b, &saved); err != nil {
			return fmt.Errorf("%s: %w", *render, err)
		}
		return write(saved, *out)
	}
	for _, f := range strings.FieldsFunc(*scale, func(r rune) bool { return r == ' ' || r == ',' }) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 400 {
			return fmt.Errorf("-scale-rows: %q is not a row count of at least 400", f)
		}
		cfg.ScaleRows = append(cfg.ScaleRows, n)
	}
	var err error
	if cfg.PlanHistories, err = bench.ParsePlanHistories(*histories); err != nil {
		return fmt.Errorf("-plan-histories: %w", err)
	}
	if cfg.PlanDeltaHistories, err = bench.ParseDeltaHistories(*deltaHistories); err != nil {
		return fmt.Errorf("-plan-delta-histories: %w", err)
	}
	if cfg.Followers, err = bench.ParseFollowers(*followers); err != nil {
		return fmt.Errorf("-followers: %w", err)
	}
	if cfg.PeerRows != 0 && len(cfg.ScaleRows) > 0 && !slices.Contains(cfg.ScaleRows, cfg.PeerRows) {
		return fmt.Errorf("-peer-rows %d is not one of -scale-rows %v", cfg.PeerRows, cfg.ScaleRows)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cfg.Self = self
	// Spark resolves the Ivy folder from its own working directory.
	if cfg.Spark.Ivy, err = filepath.Abs(cfg.Spark.Ivy); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.Work, 0o755); err != nil {
		return err
	}
	// One run at a time per working directory: a second would rewrite the
	// cached tables under the first.
	lock, err := os.OpenFile(filepath.Join(cfg.Work, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fmt.Errorf("another sluice-bench is running in %s: %w", cfg.Work, err)
	}
	if *prepare {
		return bench.Prepare(ctx, cfg)
	}
	if *paimonOnly {
		rep, err := bench.RunPaimonAlone(ctx, cfg)
		if err != nil {
			return err
		}
		md := rep.PaimonMarkdown("sluice-bench "+strings.Join(relativeArgs(os.Args[1:]), " "), cfg)
		fmt.Print(md)
		return os.WriteFile(*out, []byte(md), 0o644)
	}
	if *followersOnly {
		rep, err := bench.RunFollowers(ctx, cfg)
		if err != nil {
			return err
		}
		fmt.Printf("load average %s at the start, %s at the end\n%s", rep.LoadStart, rep.LoadEnd, rep.FollowersSection())
		return nil
	}
	if *ab != "" {
		var sets [][]string
		for _, set := range strings.Split(*ab, "|") {
			sets = append(sets, strings.Fields(set))
		}
		rep, err := bench.RunAB(ctx, cfg, sets, *abRounds, *abReads)
		if err != nil {
			return err
		}
		fmt.Printf("sluice-bench %s\n%s", strings.Join(relativeArgs(os.Args[1:]), " "), rep.Markdown())
		return nil
	}
	if *memoryOnly {
		rep, err := bench.RunMemory(ctx, cfg)
		if err != nil {
			return err
		}
		fmt.Printf("load average %s at the start, %s at the end\n", rep.LoadStart, rep.LoadEnd)
		return checkMemory(rep, true)
	}
	if *planningOnly {
		rep, err := bench.RunPlanning(ctx, cfg)
		if err != nil {
			return err
		}
		fmt.Printf("load average %s at the start, %s at the end\n%s", rep.LoadStart, rep.LoadEnd, rep.PlanningSection())
		return nil
	}
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	saved := savedRun{Report: rep, Config: cfg, Command: "make bench (" + strings.Join(relativeArgs(os.Args), " ") + ")"}
	// The measurements are kept, so that the report's prose can be
	// rendered again (-render) without measuring again.
	b, err := json.MarshalIndent(saved, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.Work, "report.json"), b, 0o644); err != nil {
		return err
	}
	return write(saved, *out)
}

// savedRun is what a run measured, with what its report names.
type savedRun struct {
	Report  *bench.Report
	Config  bench.Config
	Command string
}

// write renders a run's report (and its scale plot) and checks its memory
// bounds.
func write(saved savedRun, out string) error {
	rep, cfg := saved.Report, saved.Config
	if cfg.SVG != "" && len(rep.Scale) > 0 {
		if err := os.WriteFile(cfg.SVG, []byte(bench.ScaleSVG(rep.Scale)), 0o644); err != nil {
			return err
		}
	}
	md := rep.Markdown(saved.Command, cfg)
	fmt.Print(md)
	if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
		return err
	}
	return checkMemory(rep, false)
}

// checkMemory fails when a memory arm peaked above its bound: memory is a
// promise, not a speed. With print, it prints every memory arm.
func checkMemory(rep *bench.Report, print bool) error {
	var over error
	for _, a := range rep.Arms {
		if print && a.PeakMiB > 0 {
			fmt.Printf("%s: %.0f MiB (bound %.0f)\n", a.Name, a.PeakMiB, a.MaxMiB)
		}
		if a.MaxMiB > 0 && a.PeakMiB > a.MaxMiB && over == nil {
			over = fmt.Errorf("%s: flightd peaked at %.0f MiB, above its bound of %.0f MiB", a.Name, a.PeakMiB, a.MaxMiB)
		}
	}
	return over
}
