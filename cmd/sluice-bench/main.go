// Command sluice-bench runs the benchmarks of docs/BENCHMARKS.md: it builds
// the workloads, measures every arm in one run and writes the report.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicefeed/sluice/internal/bench"
)

func main() {
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
	flag.IntVar(&cfg.BigRows, "big-rows", 10_000_000, "rows of the incremental workload (0: skip)")
	flag.IntVar(&cfg.MemRows, "mem-rows", 2_000_000, "rows of the bounded-memory workload (0: skip)")
	flag.IntVar(&cfg.MemFileRows, "mem-file-rows", 1_000_000, "rows per file of the bounded-memory workload")
	flag.Parse()
	if err := os.MkdirAll(cfg.Work, 0o755); err != nil {
		return err
	}
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	md := rep.Markdown("make bench ("+strings.Join(relativeArgs(os.Args), " ")+")", cfg)
	fmt.Print(md)
	if err := os.WriteFile(*out, []byte(md), 0o644); err != nil {
		return err
	}
	// Memory is a promise, not a speed: a missed bound fails the run.
	for _, a := range rep.Arms {
		if a.MaxMiB > 0 && a.PeakMiB > a.MaxMiB {
			return fmt.Errorf("%s: flightd peaked at %.0f MiB, above its bound of %.0f MiB", a.Name, a.PeakMiB, a.MaxMiB)
		}
	}
	return nil
}
