package feed_test

// The Paimon oracle: tables written by Paimon's own writers (pypaimon 2.1
// and the Java paimon-bundle 1.3.0) under testdata/paimon, with the full
// state each writer's own read returned at every snapshot. For every
// window of one snapshot, a few longer ones, and a stream's full state
// followed by its changes, the feed applied to the state at the window's
// start must give exactly the writer's state at its end.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/format/paimon"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/internal/testkit/paimonfx"
	"github.com/sluicefeed/sluice/lake"
)

const paimonFixtureRoot = "../testdata/paimon"

// paimonTables serves Paimon sources by name.
type paimonTables map[string]*paimon.Source

func (t paimonTables) Load(ctx context.Context, name string) (feed.Table, error) {
	src, ok := t[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", feed.ErrSnapshotNotFound, name)
	}
	return src.Load(ctx)
}

func (t paimonTables) ListTables(context.Context) ([]string, error) {
	var out []string
	for n := range t {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// paimonEngine serves fixture f through its own Paimon source and an
// engine on mem (batches of at most maxRows rows; 0: the default), and
// returns the engine, the source and the table's name. The caller closes
// the engine before it checks mem.
func paimonEngine(t *testing.T, f paimonfx.Fixture, mem memory.Allocator, maxRows int) (*feed.Engine, *paimon.Source, string) {
	t.Helper()
	name := "paimon." + f.DB + "." + f.Name
	src, err := paimon.NewSource(t.Context(), os.DirFS(f.Dir), name, paimon.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	eng := feed.New(paimonTables{name: src}, feed.Options{Allocator: mem, MaxBatchRows: maxRows, SpillDir: t.TempDir()})
	return eng, src, name
}

// paimonLoadState reads the writer's state at snapshot id, projected onto
// cols (nil: as it is).
func paimonLoadState(t *testing.T, f paimonfx.Fixture, id int64, cols []string) paimonfx.State {
	t.Helper()
	st, err := f.LoadState(id, cols)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// paimonColumns are the columns of the table's schema at snapshot id.
func paimonColumns(t *testing.T, src *paimon.Source, id int64) []string {
	t.Helper()
	ctx := context.Background()
	sn, err := src.Table().Snapshot(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	s, err := src.Table().SnapshotSchema(ctx, sn)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range s.Fields {
		out = append(out, f.Name)
	}
	return out
}

// paimonApply plans and reads req and applies its changes to s.
func paimonApply(ctx context.Context, eng *feed.Engine, req feed.Request, s paimonfx.State) error {
	p, err := eng.Plan(ctx, req)
	if err != nil {
		return err
	}
	for b, err := range eng.Read(ctx, p) {
		if err != nil {
			return err
		}
		err = s.Apply(b.Record)
		b.Record.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func TestPaimonOracle(t *testing.T) {
	fxs, err := paimonfx.Fixtures(paimonFixtureRoot)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, f := range fxs {
		t.Run(f.DB+"."+f.Name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(arrowpool.Shared())
			defer mem.AssertSize(t, 0)
			eng, src, name := paimonEngine(t, f, mem, 5)
			defer eng.Close()
			var present []int64
			for _, s := range f.Meta.Snapshots {
				if !s.Expired {
					present = append(present, s.ID)
				}
			}
			windows := 0
			check := func(from, to int64) {
				st := paimonLoadState(t, f, from, paimonColumns(t, src, to))
				req := feed.Request{Table: name, FromSnapshot: &from, ToSnapshot: &to}
				if err := paimonApply(ctx, eng, req, st); err != nil {
					t.Errorf("window (%d, %d]: %v", from, to, err)
					return
				}
				if d := st.Diff(paimonLoadState(t, f, to, nil)); d != "" {
					t.Errorf("window (%d, %d]: the feed applied to the state at %d is not %s's state at %d:\n%s",
						from, to, from, f.Meta.Writer, to, d)
				}
				windows++
			}
			for i := 1; i < len(present); i++ {
				check(present[i-1], present[i])
			}
			if n := len(present); n > 2 {
				check(present[0], present[n-1])
				check(present[0], present[n/2])
				check(present[n/2], present[n-1])
			}
			// From the start of the history: the first snapshot's changes
			// are its whole state.
			if present[0] == 1 {
				st, last := paimonfx.State{}, present[len(present)-1]
				if err := paimonApply(ctx, eng, feed.Request{Table: name, ToSnapshot: &last}, st); err != nil {
					t.Errorf("window (start, %d]: %v", last, err)
				} else if d := st.Diff(paimonLoadState(t, f, last, nil)); d != "" {
					t.Errorf("window (start, %d]:\n%s", last, d)
				}
			} else {
				last := present[len(present)-1]
				err := paimonApply(ctx, eng, feed.Request{Table: name, ToSnapshot: &last}, paimonfx.State{})
				if !errors.Is(err, feed.ErrResyncRequired) {
					t.Errorf("the whole history of a table whose first snapshots expired: got %v, want ErrResyncRequired", err)
				}
			}
			t.Logf("%d windows over %d snapshots", windows, len(present))
		})
	}
}

// TestPaimonStreamOracle streams every fixture table from its earliest
// snapshot with its full state first, and checks the state the stream
// built at each snapshot it completes against the writer's.
func TestPaimonStreamOracle(t *testing.T) {
	fxs, err := paimonfx.Fixtures(paimonFixtureRoot)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, f := range fxs {
		t.Run(f.DB+"."+f.Name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(arrowpool.Shared())
			defer mem.AssertSize(t, 0)
			eng, src, name := paimonEngine(t, f, mem, 7)
			defer eng.Close()
			var first int64
			for _, s := range f.Meta.Snapshots {
				if !s.Expired {
					first = s.ID
					break
				}
			}
			// One stream has one schema: when a column is added, the stream
			// ends (ErrSchemaChanged) and a new one resumes from the last
			// snapshot it completed, on the state the consumer holds.
			req := feed.StreamRequest{Request: feed.Request{Table: name, FromSnapshot: &first},
				Start: feed.StartFromSnapshotFull}
			st := paimonfx.State{}
			checked, streams := 0, 0
			for {
				streams++
				var cursor int64
				var streamErr error
				for ev, err := range eng.Stream(ctx, req) {
					if err != nil {
						streamErr = err
						break
					}
					if ev.Kind != feed.StreamState && ev.Kind != feed.StreamChanges {
						continue
					}
					err := st.Apply(ev.Batch.Record)
					ev.Batch.Record.Release()
					if err != nil {
						t.Fatalf("snapshot %d: %v", ev.Batch.Snapshot.ID, err)
					}
					if ev.Batch.SnapshotComplete {
						cols := paimonfx.ImageColumns(ev.Batch.Record.Schema())
						if d := st.Diff(paimonLoadState(t, f, ev.Batch.Snapshot.ID, cols)); d != "" {
							t.Errorf("stream at snapshot %d:\n%s", ev.Batch.Snapshot.ID, d)
						}
						cursor = ev.Batch.Snapshot.ID
						checked++
					}
				}
				if streamErr == nil {
					break
				}
				if !errors.Is(streamErr, feed.ErrSchemaChanged) || cursor == 0 || streams > 10 {
					t.Fatal(streamErr)
				}
				req = feed.StreamRequest{Request: feed.Request{Table: name, FromSnapshot: &cursor},
					Start: feed.StartFromSnapshot}
				st = paimonLoadState(t, f, cursor, paimonColumns(t, src, f.Meta.Snapshots[len(f.Meta.Snapshots)-1].ID))
			}
			if checked == 0 {
				t.Fatal("the stream completed no snapshot")
			}
			t.Logf("%d snapshots checked", checked)
		})
	}
}

// TestPaimonExplain checks the strategy each snapshot of the fixture
// tables is planned with: an append table's appends read their added
// files, its overwrites diff the files removed and added, compactions read
// nothing; a primary-key table's snapshots merge the buckets they touched,
// except the compactions of a table without deletion vectors (nothing
// changes) and, with deletion vectors, the snapshots that only add
// level-0 files (not read until compacted).
func TestPaimonExplain(t *testing.T) {
	fxs, err := paimonfx.Fixtures(paimonFixtureRoot)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want := map[string]map[string]string{
		"py.append_log": {"APPEND": lake.StrategyPaimonAppend, "OVERWRITE": lake.StrategyPaimonRewrite},
		"java.append_compact": {"APPEND": lake.StrategyPaimonAppend, "OVERWRITE": lake.StrategyPaimonRewrite,
			"COMPACT": lake.StrategyReplaceSkipped},
		"py.pk_dedup": {"APPEND": lake.StrategyPaimonMergeDiff, "OVERWRITE": lake.StrategyPaimonMergeDiff},
		"java.pk_compact": {"APPEND": lake.StrategyPaimonMergeDiff, "OVERWRITE": lake.StrategyPaimonMergeDiff,
			"COMPACT": lake.StrategyReplaceSkipped},
		"java.pk_dv": {"APPEND": lake.StrategyNoDataChange, "COMPACT": lake.StrategyPaimonMergeDiff},
	}
	seen := map[string]bool{}
	for _, f := range fxs {
		table := f.DB + "." + f.Name
		kinds, ok := want[table]
		if !ok {
			continue
		}
		eng, _, name := paimonEngine(t, f, memory.NewGoAllocator(), 0)
		p, err := eng.Plan(ctx, feed.Request{Table: name})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, sp := range p.Snapshots {
			if w, ok := kinds[sp.Operation]; ok {
				seen[table+" "+sp.Operation] = true
				if sp.Strategy != w {
					t.Errorf("%s snapshot %d (%s): strategy %s (%s), want %s", name, sp.ID, sp.Operation, sp.Strategy,
						sp.Reason, w)
				}
			}
		}
		eng.Close()
	}
	for table, kinds := range want {
		for kind := range kinds {
			if !seen[table+" "+kind] {
				t.Errorf("no %s snapshot of %s planned", kind, table)
			}
		}
	}
}

// TestPaimonFilterPushdown reads the append table's history with a
// filter on its partition column: files of other partitions are skipped
// by their statistics, and the filtered feed applied to the filtered
// state at each window's start gives the filtered state at its end.
func TestPaimonFilterPushdown(t *testing.T) {
	fxs, err := paimonfx.Fixtures(paimonFixtureRoot)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, f := range fxs {
		if f.DB+"."+f.Name != "py.append_log" {
			continue
		}
		mem := memory.NewCheckedAllocator(arrowpool.Shared())
		defer mem.AssertSize(t, 0)
		eng, src, name := paimonEngine(t, f, mem, 0)
		defer eng.Close()
		const filter = "dt = '2026-01-02'"
		keep := func(st paimonfx.State) paimonfx.State {
			out := paimonfx.State{}
			for l, n := range st {
				if strings.Contains(l, `"dt":"2026-01-02"`) {
					out[l] = n
				}
			}
			return out
		}
		skipped := int64(0)
		snaps := f.Meta.Snapshots
		for i := 1; i < len(snaps); i++ {
			from, to := snaps[i-1].ID, snaps[i].ID
			req := feed.Request{Table: name, FromSnapshot: &from, ToSnapshot: &to, Filter: filter}
			p, err := eng.Plan(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			for _, sp := range p.Snapshots {
				skipped += sp.FilesSkipped
			}
			st := keep(paimonLoadState(t, f, from, paimonColumns(t, src, to)))
			if err := paimonApply(ctx, eng, req, st); err != nil {
				t.Errorf("window (%d, %d]: %v", from, to, err)
				continue
			}
			if d := st.Diff(keep(paimonLoadState(t, f, to, nil))); d != "" {
				t.Errorf("window (%d, %d] with %s:\n%s", from, to, filter, d)
			}
		}
		if skipped == 0 {
			t.Errorf("no file skipped by %s", filter)
		}
		t.Logf("%d files skipped", skipped)
	}
}

// TestPaimonTimestampWindow plans a window by commit times: a Paimon
// snapshot's time is its timeMillis, so the window from snapshot a's time
// to snapshot b's is the snapshots after a up to b.
func TestPaimonTimestampWindow(t *testing.T) {
	ctx := context.Background()
	dir := paimonFixtureRoot + "/warehouse/py.db/append_log"
	src, err := paimon.NewSource(ctx, os.DirFS(dir), "paimon.py.append_log")
	if err != nil {
		t.Fatal(err)
	}
	eng := feed.New(paimonTables{"paimon.py.append_log": src}, feed.Options{})
	defer eng.Close()
	ms := func(id int64) int64 {
		s, err := src.Table().Snapshot(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return s.TimeMillis
	}
	from, to := ms(3), ms(7)
	p, err := eng.Plan(ctx, feed.Request{Table: "paimon.py.append_log", FromTimestampMs: &from, ToTimestampMs: &to})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, sp := range p.Snapshots {
		ids = append(ids, sp.ID)
		if sp.TimestampMs != ms(sp.ID) {
			t.Errorf("snapshot %d at %d ms, want its timeMillis %d", sp.ID, sp.TimestampMs, ms(sp.ID))
		}
	}
	if fmt.Sprint(ids) != "[4 5 6 7]" {
		t.Errorf("window (%d ms, %d ms] plans snapshots %v, want [4 5 6 7]", from, to, ids)
	}
}
