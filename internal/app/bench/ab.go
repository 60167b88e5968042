package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

// ABResult is what one flightd configuration of an A/B comparison used:
// its CPU per read of each request, and its memory at the end.
type ABResult struct {
	// Flags are the configuration's flightd flags (beyond the decode
	// cache's, which is off).
	Flags []string
	// CPU is, by request name, the flightd CPU time per read of each round
	// (a round's reads averaged), in seconds.
	CPU map[string][]float64
	// PeakMiB is flightd's peak resident size (VmHWM); FileMiB its
	// file-backed resident memory at the end (RssFile: the binary's code
	// that has run), in MiB.
	PeakMiB, FileMiB float64
}

// ABReport is an A/B comparison: each configuration's result, and the
// machine's load average when it started and ended.
type ABReport struct {
	Results            []ABResult
	LoadStart, LoadEnd string
}

// abRequests are the reads an A/B comparison measures: the reference
// window in the flat layout, and its net changes (which hold rows).
func abRequests(table string) []struct {
	name string
	req  sluice.ChangeRequest
} {
	return []struct {
		name string
		req  sluice.ChangeRequest
	}{
		{"reference window, flat", sluice.ChangeRequest{Table: table, Layout: sluice.LayoutFlat}},
		{"reference window, net_changes", sluice.ChangeRequest{Table: table, NetChanges: true}},
	}
}

// RunAB compares flightd configurations (each a set of flags) on the
// reference window: one flightd per configuration, all running at once,
// read in turn (rounds rounds of reads reads of each request, after one
// unmeasured read each), so that the machine's load falls on them alike.
func RunAB(ctx context.Context, cfg Config, flagSets [][]string, rounds, reads int) (*ABReport, error) {
	if len(flagSets) == 0 || rounds < 1 || reads < 1 {
		return nil, fmt.Errorf("an A/B comparison needs configurations, rounds and reads: %d, %d, %d",
			len(flagSets), rounds, reads)
	}
	rep := &ABReport{LoadStart: loadAverage()}
	wh, cat, ref, _, err := baseWorkloads(ctx, Config{Work: cfg.Work, Rows: cfg.Rows, Log: cfg.Log})
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	type arm struct {
		srv *flightdProc
		c   *sluice.Client
		res ABResult
	}
	arms := make([]*arm, 0, len(flagSets))
	defer func() {
		for _, a := range arms {
			a.c.Close()
			a.srv.stop()
		}
	}()
	reqs := abRequests(ref.Table)
	for _, flags := range flagSets {
		srv, err := startFlightd(ctx, cfg, wh, flags...)
		if err != nil {
			return nil, err
		}
		c, err := sluice.Dial(ctx, "grpc://"+srv.addr)
		if err != nil {
			srv.stop()
			return nil, err
		}
		a := &arm{srv: srv, c: c, res: ABResult{Flags: flags, CPU: map[string][]float64{}}}
		arms = append(arms, a)
		for _, r := range reqs {
			if _, err := readGo(ctx, c, r.req); err != nil {
				return nil, fmt.Errorf("%v: %s: %w", flags, r.name, err)
			}
		}
	}
	for round := range rounds {
		cfg.logf("A/B round %d of %d", round+1, rounds)
		for _, a := range arms {
			pid := a.srv.cmd.Process.Pid
			for _, r := range reqs {
				before := procCPU(pid)
				for range reads {
					if _, err := readGo(ctx, a.c, r.req); err != nil {
						return nil, fmt.Errorf("%v: %s: %w", a.res.Flags, r.name, err)
					}
				}
				a.res.CPU[r.name] = append(a.res.CPU[r.name], (procCPU(pid)-before)/float64(reads))
			}
		}
	}
	for _, a := range arms {
		pid := a.srv.cmd.Process.Pid
		if a.res.PeakMiB, err = peakRSS(pid); err != nil {
			return nil, err
		}
		a.res.FileMiB = statusMiB(pid, "RssFile:")
		rep.Results = append(rep.Results, a.res)
	}
	rep.LoadEnd = loadAverage()
	return rep, nil
}

// Markdown renders an A/B comparison as a table: per configuration and
// request, the median flightd CPU per read with its range, and the memory.
func (r *ABReport) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "load average %s at the start, %s at the end\n\n", r.LoadStart, r.LoadEnd)
	b.WriteString("| flightd flags | read | CPU per read, median | min | max | peak RSS | file-backed RSS |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|\n")
	for _, res := range r.Results {
		flags := strings.Join(res.Flags, " ")
		if flags == "" {
			flags = "(defaults)"
		}
		for _, q := range abRequests("") {
			v := slices.Sorted(slices.Values(res.CPU[q.name]))
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %.0f MiB | %.0f MiB |\n", flags, q.name, msecs(median(v)),
				msecs(v[0]), msecs(v[len(v)-1]), res.PeakMiB, res.FileMiB)
		}
	}
	return b.String()
}

// statusMiB reads a size field (in kB) of /proc/<pid>/status, in MiB (0
// when absent).
func statusMiB(pid int, field string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			var kb float64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%f kB", &kb); err == nil {
				return kb / 1024
			}
		}
	}
	return 0
}
