package bench

import (
	"context"
	"fmt"
	"strings"
)

// The decode line (issue 24): how close a read through flightd comes to the
// readers that only decode. Its arms are Arrow C++'s own decode of the
// reference files (pyarrow.parquet.read_table, full width and projected),
// whose CPU per row flightd's is compared with, and the append window read
// through Flight in both layouts with the decode cache off, which pyiceberg's
// in-process scan is compared with.

// Decode-line arm names.
const (
	armArrowCPP11    = "pyarrow.parquet.read_table (Arrow C++), 11 columns"
	armArrowCPP2     = "pyarrow.parquet.read_table (Arrow C++), 2 columns"
	armFeedAppend11  = "feed, append window, 11 columns (Go client)"
	armFeedAppend2   = "feed, append window, 2 columns (Go client)"
	readerSluiceFlat = "Sluice via pyarrow, flat, cache off"
	readerSluiceRend = "Sluice via pyarrow, renderable, cache off"
)

// decodeLineTargets are the targets of issue 24's decode line: the append
// window at 1.5× pyiceberg's speed flat and 1.2× renderable; flightd's CPU
// per row at most 1.2× Arrow C++'s decode at full width and 1.5× projected;
// the Delta window (flat) at 1.0× delta-rs's load_cdf, and without the
// change data feed in at most 1/0.8 of the time with it.
var decodeLineTargets = struct {
	flat, renderable, cpuFull, cpuProjected, delta, deltaNoCDF float64
}{flat: 1.5, renderable: 1.2, cpuFull: 1.2, cpuProjected: 1.5, delta: 1.0, deltaNoCDF: 0.8}

// arrowDecodeScript measures Arrow C++'s decode of Parquet files:
// pyarrow.parquet.read_table of each file (the columns named, or all), a
// first read unmeasured, then the measured runs, each with the process's
// CPU time (all of Arrow's threads).
const arrowDecodeScript = `
import json, os, sys, time
import pyarrow.parquet as pq

a = json.loads(sys.argv[1])
cols = a["columns"] or None
def read():
    return sum(pq.read_table(p, columns=cols).num_rows for p in a["paths"])
out = {"seconds": [], "cpu": [], "server_cpu": [], "note": "pyarrow %s" % __import__("pyarrow").__version__}
t = time.perf_counter()
read()
out["first_seconds"] = time.perf_counter() - t
for _ in range(a["runs"]):
    c, t = time.process_time(), time.perf_counter()
    out["rows"] = read()
    out["seconds"].append(time.perf_counter() - t)
    out["cpu"].append(time.process_time() - c)
print(json.dumps(out))
sys.stdout.flush()
os._exit(0)
`

// runArrowDecode adds the arms of Arrow C++'s decode of the reference
// files, full width and projected, each in a Python process of its own.
func runArrowDecode(ctx context.Context, cfg Config, ref *Reference, rep *Report) error {
	paths := make([]string, len(ref.DataFiles))
	for i, p := range ref.DataFiles {
		paths[i] = strings.TrimPrefix(p, "file://")
	}
	for _, a := range []struct {
		name string
		cols []string
	}{{armArrowCPP11, nil}, {armArrowCPP2, []string{"id", "amount"}}} {
		cfg.logf("measuring %s", a.name)
		var out PeerRead
		args := map[string]any{"paths": paths, "columns": a.cols, "runs": cfg.Runs}
		if err := runScript(ctx, cfg.Python, arrowDecodeScript, args, &out); err != nil {
			return fmt.Errorf("%s: %w", a.name, err)
		}
		rep.Arms = append(rep.Arms, Arm{Name: a.name, Rows: out.Rows, Seconds: out.Seconds, CPU: out.CPU,
			Note: out.Note})
	}
	return nil
}

// runAppendLayouts measures the append window through a fresh flightd with
// its decode cache off, read by pyarrow into one table, in the flat and the
// renderable layout: the arms pyiceberg's scan is held against.
func runAppendLayouts(ctx context.Context, cfg Config, wh string, ref *Reference, rep *Report) error {
	to := fmt.Sprint(ref.Appends[len(ref.Appends)-1])
	for _, l := range []struct{ reader, layout string }{{readerSluiceFlat, "flat"}, {readerSluiceRend, ""}} {
		cfg.logf("measuring the append window: %s", l.reader)
		req := map[string]any{"table": ref.Table, "to_snapshot": to}
		how := "the default layout"
		if l.layout != "" {
			req["layout"] = l.layout
			how = fmt.Sprintf("`layout: %q`", l.layout)
		}
		r, err := sluicePeer(ctx, cfg, wh, req, true, false)
		if err != nil {
			return fmt.Errorf("append window, %s: %w", l.reader, err)
		}
		if r.Rows == 0 || r.Ops["insert"] != r.Rows {
			return fmt.Errorf("append window, %s: read %d rows (%v), want inserts only", l.reader, r.Rows, r.Ops)
		}
		r.Note = fmt.Sprintf("pyarrow.flight, `read_all()`, %s; the runs after a first read of the same `flightd`, "+
			"its decode cache off (each run reads the files)", how)
		rep.Peers = append(rep.Peers, PeerArm{Window: peerAppend, Reader: l.reader, Sluice: true, PeerRead: *r})
	}
	return nil
}

// decodeLineSection renders issue 24's decode-line targets from the run's
// arms: each a ratio of two arms of this run.
func (r *Report) decodeLineSection() string {
	byName := map[string]Arm{}
	for _, a := range r.Arms {
		byName[a.Name] = a
	}
	peer := func(window, reader string) (PeerRead, bool) {
		for _, p := range r.Peers {
			if p.Window == window && strings.HasPrefix(p.Reader, reader) {
				return p.PeerRead, true
			}
		}
		return PeerRead{}, false
	}
	verdict := func(met bool) string {
		if met {
			return "met"
		}
		return "MISSED"
	}
	t := decodeLineTargets
	var lines []string
	if d := r.Delta; d != nil {
		flat, okF := byName[armDeltaCDFFlat]
		p, okP := byName[armDeltaPeer]
		if okF && okP && flat.median() > 0 {
			v := p.median() / flat.median()
			lines = append(lines, fmt.Sprintf("Delta window, CDF on, flat: Sluice via pyarrow at **%.2f×** delta-rs "+
				"`load_cdf`'s speed (%s against %s; target ≥ %.1f: %s)", v, secs(flat.median()), secs(p.median()),
				t.delta, verdict(v >= t.delta)))
		}
		cdf, okC := byName[armDeltaCDF]
		no, okN := byName[armDeltaNoCDF]
		if okC && okN && no.median() > 0 {
			v := cdf.median() / no.median()
			lines = append(lines, fmt.Sprintf("Delta window without the feed: at **%.2f×** the speed of the read with "+
				"it (%s against %s; target ≥ %.1f: %s)", v, secs(no.median()), secs(cdf.median()), t.deltaNoCDF,
				verdict(v >= t.deltaNoCDF)))
		}
	}
	if py, ok := peer(peerAppend, "pyiceberg"); ok && py.median() > 0 {
		for _, l := range []struct {
			reader, what string
			target       float64
		}{{readerSluiceFlat, "flat", t.flat}, {readerSluiceRend, "renderable", t.renderable}} {
			if s, ok := peer(peerAppend, l.reader); ok && s.median() > 0 {
				v := py.median() / s.median()
				lines = append(lines, fmt.Sprintf("append window, %s: Sluice via pyarrow at **%.2f×** pyiceberg's "+
					"speed (%s against %s; target ≥ %.1f: %s)", l.what, v, secs(s.median()), secs(py.median()),
					l.target, verdict(v >= l.target)))
			}
		}
	}
	for _, c := range []struct {
		feed, arrow, what string
		target            float64
	}{{armFeedAppend11, armArrowCPP11, "full width", t.cpuFull},
		{armFeedAppend2, armArrowCPP2, "projected (2 columns)", t.cpuProjected}} {
		f, okF := byName[c.feed]
		a, okA := byName[c.arrow]
		if !okF || !okA || f.Rows == 0 || a.Rows == 0 || median(a.CPU) == 0 {
			continue
		}
		perF, perA := median(f.ServerCPU)/float64(f.Rows), median(a.CPU)/float64(a.Rows)
		v := perF / perA
		lines = append(lines, fmt.Sprintf("flightd's CPU per row, %s: **%.2f×** Arrow C++'s decode (%.0f ns "+
			"against %.0f ns a row; target ≤ %.1f: %s)", c.what, v, perF*1e9, perA*1e9, c.target,
			verdict(v <= c.target)))
	}
	if len(lines) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Decode line\n\n")
	fmt.Fprintf(&b, "Issue 24's targets, each the ratio of two arms of this run (medians): the Delta arms of the\n")
	fmt.Fprintf(&b, "table above against delta-rs, the append window's cache-off arms of the side-by-side table\n")
	fmt.Fprintf(&b, "against pyiceberg, and flightd's CPU serving the append window to the Go client against\n")
	fmt.Fprintf(&b, "`pyarrow.parquet.read_table` of the same files (the CPU of its Python process, all its threads).\n\n")
	for _, l := range lines {
		fmt.Fprintf(&b, "- %s.\n", l)
	}
	return b.String()
}
