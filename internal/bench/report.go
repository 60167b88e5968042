package bench

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
)

// Markdown renders the report as docs/BENCHMARKS.md.
func (r *Report) Markdown(command string, cfg Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmarks\n\n")
	fmt.Fprintf(&b, "Measured by `%s` on %s. Every arm ran %d times in this one run, on the same\n", command,
		r.Started.UTC().Format("2006-01-02 15:04 UTC"), cfg.Runs)
	fmt.Fprintf(&b, "machine; the table gives the median and the range. Rates are rows per second at the median.\n\n")
	fmt.Fprintf(&b, "**Machine:** %s\n\n", machine())
	fmt.Fprintf(&b, "**Workloads**, written by iceberg-go's own writers into a temporary warehouse:\n\n")
	fmt.Fprintf(&b, "- reference window: %d rows of 11 columns (ids, `country` with about 25%% `SE`, strings, doubles,\n", cfg.Rows)
	fmt.Fprintf(&b, "  timestamps, booleans) appended in 4 data files (sorted by country, 65,536-row row groups), then a\n")
	fmt.Fprintf(&b, "  snapshot of 3 equality deletes;\n")
	if cfg.BigRows > 0 {
		fmt.Fprintf(&b, "- incremental window: a %d-row table in 250,000-row files, then about 1%% changes: a copy-on-write\n", cfg.BigRows)
		fmt.Fprintf(&b, "  delete rewriting one file, position deletes in another, and an append.\n")
	}
	fmt.Fprintf(&b, "\nThe feed arms read through a real `flightd` over loopback (Go client: `clients/go`; pyarrow: a\n")
	fmt.Fprintf(&b, "plain `pyarrow.flight` client); the limits run in the benchmark process on the same files.\n\n")
	fmt.Fprintf(&b, "| arm | rows | median | min | max | rate | vs | ratio | target |\n|---|---:|---:|---:|---:|---:|---|---:|---:|\n")
	byName := map[string]Arm{}
	for _, a := range r.Arms {
		byName[a.Name] = a
	}
	for _, a := range r.Arms {
		if a.Value != "" {
			fmt.Fprintf(&b, "| %s | %d | %s | | | | | | |\n", a.Name, a.Rows, a.Value)
			continue
		}
		s := slices.Clone(a.Seconds)
		slices.Sort(s)
		ratio, vs, target := "", "", ""
		if ref, ok := byName[a.Ref]; ok && ref.Rate() > 0 {
			vs = ref.Name
			ratio = fmt.Sprintf("%.2f", a.Rate()/ref.Rate())
			if a.Target > 0 {
				target = fmt.Sprintf("≥ %.2f", a.Target)
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", a.Name, a.Rows, secs(a.median()),
			secs(s[0]), secs(s[len(s)-1]), rate(a.Rate()), vs, ratio, target)
	}
	if feedArm, ok := byName["1% window: feed (Go client)"]; ok {
		if full, ok := byName["1% window: full re-read of both snapshots and diff"]; ok && feedArm.median() > 0 {
			fmt.Fprintf(&b, "\nThe 1%% window: the feed took %s, the full re-read and diff %s: **%.0f× faster** (target ≥ 50×).\n",
				secs(feedArm.median()), secs(full.median()), full.median()/feedArm.median())
		}
	}
	if peer, ok := byName["append window, pyiceberg incremental_append_scan().to_arrow()"]; ok {
		if s, ok := byName["append window, sluice via pyarrow"]; ok && s.median() > 0 {
			fmt.Fprintf(&b, "\nThe append window from Python: Sluice via pyarrow %s, pyiceberg %s: **%.2f×** pyiceberg's speed (target ≥ 1).\n",
				secs(s.median()), secs(peer.median()), peer.median()/s.median())
		}
	}
	for _, k := range []string{"filter plan"} {
		if v, ok := r.Refs[k]; ok {
			fmt.Fprintf(&b, "\nThe filter arm's plan (`explain`): %s.\n", v)
		}
	}
	return b.String()
}

func secs(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.0f ms", s*1000)
	}
	return fmt.Sprintf("%.2f s", s)
}

func rate(r float64) string { return fmt.Sprintf("%.2fM/s", r/1e6) }

func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				model = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
				break
			}
		}
	}
	memTotal := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		memTotal = strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "MemTotal:"))
	}
	kernel, _ := exec.Command("uname", "-sr").Output()
	return fmt.Sprintf("%s, %d cores (GOMAXPROCS %d), %s memory, %s, %s", model, runtime.NumCPU(),
		runtime.GOMAXPROCS(0), memTotal, strings.TrimSpace(string(kernel)), runtime.Version())
}
