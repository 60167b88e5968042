package feed

import (
	"fmt"
	"slices"

	"github.com/sluicefeed/sluice/lake"
)

// MaxParts bounds the parts Plan.Split makes.
const MaxParts = 1024

// Part is one share of a split window (Plan.Split): the snapshots
// FirstSnapshot..LastSnapshot of the window's lineage (inclusive both), or,
// when FileCount is set, the appended data files [FirstFile, EndFile) of
// the FileCount that the one snapshot FirstSnapshot = LastSnapshot reads.
//
// A part's read yields exactly the batches' rows that the read of the whole
// window yields for those snapshots (or files), in the same order and in
// the window's schema: its images are those of the window's end, its
// filter and identity bound there. The parts of a split, read in their
// order and concatenated, are the window's read.
type Part struct {
	FirstSnapshot int64
	LastSnapshot  int64
	FirstFile     int
	EndFile       int
	FileCount     int
}

// validate checks a part's shape; whether its snapshots and files are the
// window's is checked by Engine.Plan.
func (pt *Part) validate(net bool) error {
	if pt == nil {
		return nil
	}
	if net {
		return fmt.Errorf("%w: net_changes collapse the whole window, which cannot be read in parts: "+
			"leave out part (and max_endpoints)", ErrInvalidRequest)
	}
	if pt.FileCount == 0 {
		if pt.FirstFile != 0 || pt.EndFile != 0 {
			return fmt.Errorf("%w: part: first_file and end_file need file_count", ErrInvalidRequest)
		}
		return nil
	}
	if pt.FirstSnapshot != pt.LastSnapshot {
		return fmt.Errorf("%w: part: a file range (file_count %d) is of one snapshot, but first_snapshot %d "+
			"and last_snapshot %d differ", ErrInvalidRequest, pt.FileCount, pt.FirstSnapshot, pt.LastSnapshot)
	}
	if pt.FileCount < 0 || pt.FirstFile < 0 || pt.FirstFile >= pt.EndFile || pt.EndFile > pt.FileCount {
		return fmt.Errorf("%w: part: files [%d, %d) of %d is not a range of files: want 0 <= first_file < "+
			"end_file <= file_count", ErrInvalidRequest, pt.FirstFile, pt.EndFile, pt.FileCount)
	}
	return nil
}

// partSnapshots returns the snapshots of window w that part pt holds.
func (pt *Part) snapshots(name string, w window) ([]Snapshot, error) {
	first := slices.IndexFunc(w.snapshots, func(s Snapshot) bool { return s.ID == pt.FirstSnapshot })
	last := slices.IndexFunc(w.snapshots, func(s Snapshot) bool { return s.ID == pt.LastSnapshot })
	switch {
	case first < 0:
		return nil, fmt.Errorf("%w: part: first_snapshot %d is not a snapshot of the window of table %s",
			ErrInvalidRequest, pt.FirstSnapshot, name)
	case last < 0:
		return nil, fmt.Errorf("%w: part: last_snapshot %d is not a snapshot of the window of table %s",
			ErrInvalidRequest, pt.LastSnapshot, name)
	case last < first:
		return nil, fmt.Errorf("%w: part: last_snapshot %d comes before first_snapshot %d in the lineage of "+
			"table %s", ErrInvalidRequest, pt.LastSnapshot, pt.FirstSnapshot, name)
	}
	return w.snapshots[first : last+1], nil
}

// restrict narrows the plan of the part's one snapshot to its file range.
func (pt *Part) restrict(name string, sp *SnapshotPlan) error {
	if pt.FileCount == 0 {
		return nil
	}
	n := splitUnits(*sp)
	if n == 0 {
		return fmt.Errorf("%w: part: snapshot %d of table %s (strategy %s) cannot be read by file range: "+
			"its rows may pair or cancel across files", ErrInvalidRequest, sp.ID, name, sp.Strategy)
	}
	if n != pt.FileCount {
		return fmt.Errorf("%w: part: snapshot %d of table %s reads %d files, not the part's file_count %d: "+
			"split the window again (GetFlightInfo)", ErrInvalidRequest, sp.ID, name, n, pt.FileCount)
	}
	sp.appended = sp.appended.Slice(pt.FirstFile, pt.EndFile)
	// The plan shows the files the range reads.
	var keep []FilePlan
	sp.BytesRead, sp.RecordsRead = 0, 0
	for _, f := range sp.Files {
		if slices.Contains(unitPaths(sp.appended), f.Path) {
			keep = append(keep, f)
			sp.BytesRead += f.FileSizeBytes
			sp.RecordsRead += max(f.RecordCount, 0)
		}
	}
	sp.Files = keep
	return nil
}

// splitUnits is the number of appended files (or file ranges) of a
// snapshot that a part may hold a range of, 0 when its read cannot be
// split by files: only a snapshot whose every row is an insert streamed as
// its file is read (an Iceberg append, a Delta commit that only adds files
// without deletion vectors). Every other strategy pairs or cancels rows
// across files (carry-over of a rewrite, update pairs, change files).
func splitUnits(sp SnapshotPlan) int {
	if sp.hasDiffs() || (sp.Strategy != StrategyAppend && sp.Strategy != StrategyDeltaAdd) {
		return 0
	}
	return sp.appendedCount()
}

// unitPaths are the paths of the files (or file ranges) ls reads.
func unitPaths(ls lake.LiveFiles) []string {
	out := make([]string, ls.Len())
	for i := range out {
		out[i] = ls.Path(i)
	}
	return out
}

// piece is a part under construction: snapshots first..last (indexes in
// the plan), or files [lo, hi) of n of snapshot first.
type piece struct {
	first, last int
	lo, hi, n   int
	weight      float64
}

// Split splits the plan's window into at most n parts of about equal work
// (by the records each reads), in lineage order: runs of whole snapshots,
// and ranges of the appended files of a large snapshot whose read can be
// split so (see splitUnits). It returns nil when the window stays one part:
// n below 2, net changes, or a window of one part's work.
func (p *Plan) Split(n int) []Part {
	n = min(n, MaxParts)
	if n < 2 || p.NetChanges || len(p.Snapshots) == 0 {
		return nil
	}
	weight := func(sp SnapshotPlan) float64 { return float64(max(sp.RecordsRead, 0) + 1) }
	total := 0.0
	for _, sp := range p.Snapshots {
		total += weight(sp)
	}
	target := total / float64(n)

	var out []piece
	cur := piece{first: -1}
	flush := func() {
		if cur.first >= 0 {
			out = append(out, cur)
			cur = piece{first: -1}
		}
	}
	for i, sp := range p.Snapshots {
		w := weight(sp)
		if units := splitUnits(sp); units >= 2 {
			if k := min(units, int(w/target)); k >= 2 {
				flush()
				for j := range k {
					lo, hi := j*units/k, (j+1)*units/k
					out = append(out, piece{first: i, last: i, lo: lo, hi: hi, n: units,
						weight: w * float64(hi-lo) / float64(units)})
				}
				continue
			}
		}
		if cur.first < 0 {
			cur = piece{first: i}
		}
		cur.last = i
		cur.weight += w
		if cur.weight >= target {
			flush()
		}
	}
	flush()
	out = mergePieces(out, n)
	if len(out) < 2 {
		return nil
	}
	parts := make([]Part, len(out))
	for i, pc := range out {
		parts[i] = Part{FirstSnapshot: p.Snapshots[pc.first].ID, LastSnapshot: p.Snapshots[pc.last].ID}
		if pc.n > 0 {
			parts[i].FirstFile, parts[i].EndFile, parts[i].FileCount = pc.lo, pc.hi, pc.n
		}
	}
	return parts
}

// mergePieces merges adjacent pieces, the lightest pair first, until at
// most n are left: runs of whole snapshots join, and file ranges of one
// snapshot join; when no pair can, the lightest split snapshot is made
// whole again.
func mergePieces(out []piece, n int) []piece {
	for len(out) > n {
		best, bestWeight := -1, 0.0
		for i := 0; i+1 < len(out); i++ {
			a, b := out[i], out[i+1]
			if !mergeable(a, b) {
				continue
			}
			if w := a.weight + b.weight; best < 0 || w < bestWeight {
				best, bestWeight = i, w
			}
		}
		if best >= 0 {
			a, b := out[best], out[best+1]
			m := piece{first: a.first, last: b.last, weight: a.weight + b.weight}
			if a.n > 0 {
				m.lo, m.hi, m.n = a.lo, b.hi, a.n
				if m.lo == 0 && m.hi == m.n {
					m.lo, m.hi, m.n = 0, 0, 0 // the whole snapshot
				}
			}
			out = slices.Replace(out, best, best+2, m)
			continue
		}
		// Only file ranges of different snapshots, or a file range beside
		// whole snapshots: make the lightest split snapshot whole.
		lightest, lw := -1, 0.0
		for i := 0; i < len(out); {
			if out[i].n == 0 {
				i++
				continue
			}
			j, w := i, 0.0
			for j < len(out) && out[j].n > 0 && out[j].first == out[i].first {
				w += out[j].weight
				j++
			}
			if lightest < 0 || w < lw {
				lightest, lw = i, w
			}
			i = j
		}
		j := lightest
		for j < len(out) && out[j].n > 0 && out[j].first == out[lightest].first {
			j++
		}
		whole := piece{first: out[lightest].first, last: out[lightest].first, weight: lw}
		out = slices.Replace(out, lightest, j, whole)
	}
	return out
}

func mergeable(a, b piece) bool {
	if a.n == 0 && b.n == 0 {
		return true
	}
	return a.n > 0 && b.n > 0 && a.first == b.first && a.hi == b.lo
}
