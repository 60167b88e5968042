package bench

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
)

// scaleSizes renders the scale tables' sizes: "1000000, 10000000".
func scaleSizes(pts []ScalePoint) string {
	var s []string
	for _, p := range pts {
		s = append(s, fmt.Sprint(p.Rows))
	}
	return strings.Join(s, ", ")
}

func (p PeerRead) median() float64 { return median(p.Seconds) }

// total is a reader's CPU per run: its own and flightd's.
func (p PeerRead) total() float64 { return median(p.CPU) + median(p.ServerCPU) }

// peak is a reader's peak RSS: its own and flightd's.
func (p PeerRead) peak() float64 { return p.PeakRSSMiB + p.ServerPeakMiB }

func mib(v float64) string {
	if v <= 0 {
		return ""
	}
	return fmt.Sprintf("%.0f MiB", v)
}

func minMax(v []float64) (float64, float64) {
	if len(v) == 0 {
		return 0, 0
	}
	return slices.Min(v), slices.Max(v)
}

// peersSection renders the side-by-side table of the readers of the same
// windows.
func (r *Report) peersSection(cfg Config) string {
	if len(r.Peers) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Peers, side by side\n\n")
	fmt.Fprintf(&b, "Each reader of a window ran in a process of its own, in this run, on the same files: the Sluice\n")
	fmt.Fprintf(&b, "arms through a fresh `flightd` read by a pyarrow client, Spark on a Hadoop catalog whose only\n")
	fmt.Fprintf(&b, "file of its own is a copy of the table's metadata file (it names the same manifest lists, manifests\n")
	fmt.Fprintf(&b, "and data files by their absolute paths), the full re-read diff in Go in a `sluice-bench fulldiff`\n")
	fmt.Fprintf(&b, "process. Each process read the window once unmeasured, then %d times. CPU is per run, of the\n", cfg.Runs)
	fmt.Fprintf(&b, "reader's whole process tree (Spark: the Python driver and its JVM), from `/proc`; peak RSS is the\n")
	fmt.Fprintf(&b, "sum of the tree's processes' `VmHWM`. For Sluice, cost is the client's and `flightd`'s together;\n")
	fmt.Fprintf(&b, "the last three columns divide a peer's median time, CPU and peak RSS by those of the window's\n")
	fmt.Fprintf(&b, "first Sluice arm (above 1: the peer costs more).\n\n")
	fmt.Fprintf(&b, "| window | reader | rows | median | min | max | rate | CPU | CPU flightd | peak RSS | peak RSS flightd | time ÷ Sluice's | CPU ÷ Sluice's | RSS ÷ Sluice's |\n")
	fmt.Fprintf(&b, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	// A window's first Sluice arm is what its peers are compared with.
	sluiceOf := map[string]PeerRead{}
	for _, p := range r.Peers {
		if _, ok := sluiceOf[p.Window]; p.Sluice && !ok {
			sluiceOf[p.Window] = p.PeerRead
		}
	}
	ratio := func(a, b float64) string {
		if a <= 0 || b <= 0 {
			return ""
		}
		return fmt.Sprintf("%.2f", a/b)
	}
	for _, p := range r.Peers {
		lo, hi := minMax(p.Seconds)
		rt := ""
		if m := p.median(); m > 0 {
			rt = rate(float64(p.Rows) / m)
		}
		var rTime, rCPU, rRSS string
		if s, ok := sluiceOf[p.Window]; ok && !p.Sluice {
			rTime, rCPU, rRSS = ratio(p.median(), s.median()), ratio(p.total(), s.total()), ratio(p.peak(), s.peak())
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", p.Window, p.Reader,
			p.Rows, secs(p.median()), secs(lo), secs(hi), rt, cpu(p.CPU), cpu(p.ServerCPU), mib(p.PeakRSSMiB),
			mib(p.ServerPeakMiB), rTime, rCPU, rRSS)
	}
	fmt.Fprintf(&b, "\nHow each reader read:\n\n")
	for _, p := range r.Peers {
		switch {
		case p.Note != "" && p.FirstSeconds > 0:
			fmt.Fprintf(&b, "- %s, %s: %s; its first read took %s.\n", p.Window, p.Reader, p.Note, secs(p.FirstSeconds))
		case p.Note != "":
			fmt.Fprintf(&b, "- %s, %s: %s.\n", p.Window, p.Reader, p.Note)
		}
	}
	// The targets of issue 14.
	find := func(window, prefix string) (PeerRead, bool) {
		for _, p := range r.Peers {
			if strings.HasPrefix(p.Window, window) && strings.HasPrefix(p.Reader, prefix) {
				return p.PeerRead, true
			}
		}
		return PeerRead{}, false
	}
	verdict := func(v, target float64) string {
		if v >= target {
			return "met"
		}
		return fmt.Sprintf("MISSED by %.0f%%", 100*(1-v/target))
	}
	var targets []string
	if p, ok := find(peerAppend, "pyiceberg"); ok {
		for _, t := range []struct {
			reader, what string
			target       float64
		}{{readerSluiceCold, "cold", 0.8}, {readerSluiceWarm, "warm (a window read just before)", 2}} {
			if s, ok := find(peerAppend, t.reader); ok && s.median() > 0 {
				v := p.median() / s.median()
				targets = append(targets, fmt.Sprintf("append window, %s: Sluice via pyarrow at **%.2f×** pyiceberg's "+
					"speed (target ≥ %g: %s)", t.what, v, t.target, verdict(v, t.target)))
			}
		}
	}
	if s, ok := find(peerCoW, "Sluice"); ok {
		if p, ok := find(peerCoW, "Spark `create_changelog_view`"); ok && s.median() > 0 {
			v := p.median() / s.median()
			targets = append(targets, fmt.Sprintf("copy-on-write window, Sluice via pyarrow at **%.1f×** the speed of "+
				"Spark's `create_changelog_view` (target ≥ 10: %s)", v, verdict(v, 10)))
		}
	}
	for _, p := range r.Peers {
		if p.Sluice && p.ServerPeakMiB > 256 && p.Reader != readerSluiceWarm {
			targets = append(targets, fmt.Sprintf("%s: flightd peaked at %.0f MiB (target ≤ 256 MiB: MISSED)", p.Window,
				p.ServerPeakMiB))
		}
	}
	if len(targets) > 0 {
		fmt.Fprintf(&b, "\nTargets:\n\n")
		for _, t := range targets {
			fmt.Fprintf(&b, "- %s.\n", t)
		}
	}
	return b.String()
}

// scaleSection renders the scale curve: a table and the plot's link.
func (r *Report) scaleSection(cfg Config) string {
	if len(r.Scale) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Large windows: the same 1%% change at every size\n\n")
	fmt.Fprintf(&b, "Each scale table's window read with the Go client through a fresh `flightd`, its decode cache off (one\n")
	fmt.Fprintf(&b, "unmeasured read, then %d), against the full re-read of both snapshots and a diff in Go, in a process\n", cfg.Runs)
	fmt.Fprintf(&b, "of its own.\n")
	fmt.Fprintf(&b, "Every read is checked: the feed has the window's change rows, the diff as many changed rows.\n\n")
	if cfg.SVG != "" {
		fmt.Fprintf(&b, "![The 1%% window's time and CPU against the table's size](%s)\n\n", filepath.Base(cfg.SVG))
	}
	fmt.Fprintf(&b, "| table rows | change rows | feed median | min | max | CPU flightd | CPU client | flightd peak RSS | full diff median | min | max | full diff CPU | full diff peak RSS | full ÷ feed |\n")
	fmt.Fprintf(&b, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, p := range r.Scale {
		lo, hi := minMax(p.Feed.Seconds)
		fmt.Fprintf(&b, "| %d | %d | %s | %s | %s | %s | %s | %s |", p.Rows, p.Changes(), secs(p.Feed.median()), secs(lo),
			secs(hi), cpu(p.Feed.ServerCPU), cpu(p.Feed.CPU), mib(p.FeedPeakMiB))
		if p.Full == nil {
			fmt.Fprintf(&b, " %s | | | | | |\n", p.Skipped)
			continue
		}
		flo, fhi := minMax(p.Full.Seconds)
		fmt.Fprintf(&b, " %s | %s | %s | %s | %s | **%.0f×** |\n", secs(p.Full.median()), secs(flo), secs(fhi),
			cpu(p.Full.CPU), mib(p.Full.PeakRSSMiB), p.Full.median()/p.Feed.median())
	}
	var over []string
	for _, p := range r.Scale {
		if p.FeedPeakMiB > 256 {
			over = append(over, fmt.Sprintf("%.0f MiB at %d rows", p.FeedPeakMiB, p.Rows))
		}
	}
	if len(over) > 0 {
		fmt.Fprintf(&b, "\nflightd's peak RSS target (≤ 256 MiB) is MISSED: %s.\n", strings.Join(over, ", "))
	} else {
		fmt.Fprintf(&b, "\nflightd's peak RSS stayed within 256 MiB at every size (target ≤ 256 MiB: met).\n")
	}
	// Proportional to the change: the feed's time per change row across
	// sizes, and the target at 10M rows.
	first, last := r.Scale[0], r.Scale[len(r.Scale)-1]
	if len(r.Scale) > 1 && first.Feed.median() > 0 {
		fmt.Fprintf(&b, "\nFrom %d to %d rows the table grew %.0f×, and so did the change; the feed's time grew %.1f× and\n",
			first.Rows, last.Rows, float64(last.Rows)/float64(first.Rows), last.Feed.median()/first.Feed.median())
		fmt.Fprintf(&b, "flightd's CPU %.1f× (%.2f µs of flightd CPU per change row at %d rows, %.2f µs at %d).\n",
			median(last.Feed.ServerCPU)/math.Max(median(first.Feed.ServerCPU), 1e-9),
			1e6*median(first.Feed.ServerCPU)/float64(first.Changes()), first.Rows,
			1e6*median(last.Feed.ServerCPU)/float64(last.Changes()), last.Rows)
	}
	for _, p := range r.Scale {
		if p.Rows == 10_000_000 && p.Full != nil && p.Feed.median() > 0 {
			v := p.Full.median() / p.Feed.median()
			verdict := "met"
			if v < 50 {
				verdict = fmt.Sprintf("MISSED by %.0f%%", 100*(1-v/50))
			}
			fmt.Fprintf(&b, "\nAt 10M rows the feed is **%.0f×** faster than the full re-read diff (target ≥ 50×: %s).\n", v, verdict)
		}
	}
	return b.String()
}

// ScaleSVG draws the scale curve: the feed's median time and flightd's CPU,
// and the full re-read diff's median time, against the table's rows, both
// axes logarithmic. Hand-written SVG, no plotting library.
func ScaleSVG(pts []ScalePoint) string {
	const w, h, left, right, top, bottom = 800.0, 400.0, 70.0, 330.0, 30.0, 50.0
	type series struct {
		name, color string
		xy          [][2]float64
	}
	feed := series{name: "Sluice feed, wall time", color: "#1f77b4"}
	fcpu := series{name: "flightd CPU", color: "#2ca02c"}
	full := series{name: "full re-read diff, wall time", color: "#d62728"}
	for _, p := range pts {
		if p.Full == nil {
			full.name = fmt.Sprintf("full re-read diff, wall time (not run above %s rows)", rowsLabel(float64(lastFull(pts))))
			break
		}
	}
	var xs, ys []float64
	for _, p := range pts {
		x := float64(p.Rows)
		xs = append(xs, x)
		add := func(s *series, y float64) {
			if y > 0 {
				s.xy = append(s.xy, [2]float64{x, y})
				ys = append(ys, y)
			}
		}
		add(&feed, p.Feed.median())
		add(&fcpu, median(p.Feed.ServerCPU))
		if p.Full != nil {
			add(&full, p.Full.median())
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	if len(xs) == 0 || len(ys) == 0 {
		b.WriteString("</svg>\n")
		return b.String()
	}
	// Decades that hold every point.
	x0, x1 := math.Floor(math.Log10(slices.Min(xs))), math.Ceil(math.Log10(slices.Max(xs)))
	y0, y1 := math.Floor(math.Log10(slices.Min(ys))), math.Ceil(math.Log10(slices.Max(ys)))
	if x1 == x0 {
		x1++
	}
	if y1 == y0 {
		y1++
	}
	px := func(x float64) float64 { return left + (math.Log10(x)-x0)/(x1-x0)*(w-left-right) }
	py := func(y float64) float64 { return h - bottom - (math.Log10(y)-y0)/(y1-y0)*(h-top-bottom) }
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="14">The same 1%% change, by table size (log-log)</text>`+"\n", left)
	for e := x0; e <= x1; e++ {
		x := px(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, top, x, h-bottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, h-bottom+16, rowsLabel(math.Pow(10, e)))
	}
	for e := y0; e <= y1; e++ {
		y := py(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, w-right, y)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, tickSecs(math.Pow(10, e)))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">table rows</text>`+"\n", (left+w-right)/2, h-10)
	fmt.Fprintf(&b, `<text x="16" y="%.1f" text-anchor="middle" transform="rotate(-90 16 %.1f)">seconds</text>`+"\n",
		(top+h-bottom)/2, (top+h-bottom)/2)
	for i, s := range []series{feed, fcpu, full} {
		if len(s.xy) > 0 {
			var pts []string
			for _, p := range s.xy {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p[0]), py(p[1])))
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", s.color,
				strings.Join(pts, " "))
			for _, p := range s.xy {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s: %s at %s rows</title></circle>`+"\n",
					px(p[0]), py(p[1]), s.color, s.name, secs(p[1]), rowsLabel(p[0]))
			}
		}
		ly := top + 20 + float64(i)*20
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n",
			w-right+12, ly, w-right+32, ly, s.color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", w-right+38, ly+4, s.name)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// rowsLabel renders a row count: 100k, 1M, 10M.
func rowsLabel(n float64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%gG", n/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%gM", n/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%gk", n/1e3)
	}
	return fmt.Sprintf("%g", n)
}

// tickSecs renders a power of ten of seconds: 10 ms, 1 s, 100 s.
func tickSecs(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%g ms", math.Round(s*1e6)/1e3)
	}
	return fmt.Sprintf("%g s", s)
}

// lastFull is the largest table the full re-read diff ran on.
func lastFull(pts []ScalePoint) int {
	n := 0
	for _, p := range pts {
		if p.Full != nil {
			n = max(n, p.Rows)
		}
	}
	return n
}
