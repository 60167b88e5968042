package delta

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/sluicefeed/sluice/lake"
)

// describeWorkers is how many commit files are read at once for the
// lineage entries of versions not read before (a table's first load).
const describeWorkers = 8

// describeKeep is the most new versions a load reads whole, and keeps in
// the log's commit cache, for their lineage entries: a follower's load
// after a few commits, whose plans read the same commits next. A longer
// run (a table's first load) is read only for what the entries say.
const describeKeep = 16

// lineageStart is where a table's lineage starts: its oldest version
// served, and whether that version's commit file is there (false: log
// cleanup left only a checkpoint of it, so a window cannot start right
// before it).
type lineageStart struct {
	first      int64
	withCommit bool
}

// lineageStartOf returns where the lineage of the versions vs starts: at
// the oldest version whose commit is there, with every later one (its
// changes can be read without the state before it); when log cleanup left
// only a checkpoint of the oldest readable version, there, with no parent
// to start after.
func lineageStartOf(vs Versions) lineageStart {
	if vs.EarliestStart < 0 {
		return lineageStart{first: 0, withCommit: true}
	}
	if vs.FirstCommit <= vs.EarliestStart {
		return lineageStart{first: vs.FirstCommit, withCommit: true}
	}
	return lineageStart{first: vs.EarliestStart}
}

// load reads the table's current state, whose log listing is vs.
func (g *deltaGen) load(ctx context.Context, vs Versions) (lake.Table, error) {
	start := lineageStartOf(vs)
	lineage, err := g.lineageTo(ctx, start, vs.Latest)
	if err != nil {
		return nil, err
	}
	t := &deltaTable{src: g, versions: vs, first: start.first, lineage: lineage}
	p, m, err := g.log.Metadata(ctx, vs.Latest)
	if err != nil {
		return nil, deltaError(g.name, err)
	}
	t.readerVersion = p.MinReaderVersion
	t.keepsLineage = rowTrackingOf(p, m).enabled
	return t, nil
}

// lineageTo returns the lineage entries of the versions from start to
// latest. The entries read by earlier loads are kept: only the versions
// after them are read, so a load costs what the table grew by since the
// last one, not the length of its history.
func (g *deltaGen) lineageTo(ctx context.Context, start lineageStart, latest int64) ([]lake.Commit, error) {
	want := int(latest - start.first + 1)
	g.mu.Lock()
	have := g.lineage
	if g.lineageFirst != start {
		have = nil
	}
	g.mu.Unlock()
	if len(have) >= want {
		return have[:want:want], nil
	}
	fresh, err := g.describe(ctx, start, start.first+int64(len(have)), latest)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lineageFirst != start || len(g.lineage) < len(have) {
		// Another load started the lineage elsewhere meanwhile (a table
		// whose history was cut): start it afresh.
		g.lineage, g.lineageFirst = append(have[:len(have):len(have)], fresh...), start
	} else if n := len(g.lineage); n < want {
		// Entries never change once added, so those another load added
		// meanwhile are the same: add the rest. Loaded tables hold
		// prefixes of lineage with no room after them, so appending in
		// place never shows through one.
		g.lineage = append(g.lineage, fresh[n-len(have):]...)
	}
	return g.lineage[:want:want], nil
}

// describe returns the lineage entries of the versions from..to of the
// lineage that starts at start, reading their commit files a few at a
// time.
func (g *deltaGen) describe(ctx context.Context, start lineageStart, from, to int64) ([]lake.Commit, error) {
	out := make([]lake.Commit, to-from+1)
	errs := make([]error, len(out))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(describeWorkers, len(out)) {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(out)) || ctx.Err() != nil {
					return
				}
				out[i], errs[i] = g.entry(ctx, start, from+i, len(out) <= describeKeep)
				if errs[i] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	// The oldest version's error, as one reading them in order would
	// report.
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// entry returns the lineage entry of version v of the lineage that starts
// at start; keep reads v's commit whole and keeps it (see Table.describe).
func (g *deltaGen) entry(ctx context.Context, start lineageStart, v int64, keep bool) (lake.Commit, error) {
	info := lake.Commit{ID: v, SequenceNumber: v, CommitSeq: v}
	if v == start.first && !start.withCommit {
		// Only a checkpoint is left of the oldest version: it has no
		// parent a window can start after.
		snap, err := g.log.Snapshot(ctx, v)
		if err != nil {
			return lake.Commit{}, deltaError(g.name, err)
		}
		info.TimestampMs = snap.TimestampMs
		return info, nil
	}
	if v > 0 {
		parent := v - 1
		info.ParentID = &parent
	}
	d, err := g.log.describe(ctx, v, keep)
	if err != nil {
		return lake.Commit{}, deltaError(g.name, err)
	}
	info.TimestampMs, info.Operation, info.Summary = d.timestampMs, d.operation, d.summary
	return info, nil
}
