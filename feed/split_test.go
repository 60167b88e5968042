package feed_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/internal/testkit/histgen"
)

// splitStats counts what the split checks covered.
type splitStats struct{ windows, parts, fileParts, multiSnapshot int }

// checkSplit checks that the parts of req's window, read one after the
// other, yield exactly the rows (in order, with their snapshots) of the
// window's single read, and that no part holds more than n.
func checkSplit(t *testing.T, eng *feed.Engine, req feed.Request, n int, st *splitStats) {
	t.Helper()
	ctx := context.Background()
	p, err := eng.Plan(ctx, req)
	if err != nil {
		t.Fatalf("plan %+v: %v", req, err)
	}
	parts := p.Split(n)
	if len(parts) > n {
		t.Fatalf("Split(%d) made %d parts", n, len(parts))
	}
	whole, err := readRows(eng, req)
	if errors.Is(err, feed.ErrResyncRequired) {
		return // a vacuumed history: the window cannot be read at all
	}
	if err != nil {
		t.Fatalf("read %+v: %v", req, err)
	}
	if parts == nil {
		return
	}
	// Pin the window as a ticket does.
	req.FromSnapshot, req.ToSnapshot, req.FromTimestampMs, req.ToTimestampMs = p.From, p.To, nil, nil
	var union []string
	seen := map[int64]bool{}
	for _, pt := range parts {
		part := req
		part.Part = &pt
		rows, err := readRows(eng, part)
		if err != nil {
			t.Fatalf("read part %+v of %+v: %v", pt, req, err)
		}
		union = append(union, rows...)
		st.parts++
		if pt.FileCount > 0 {
			st.fileParts++
		}
		if pt.FirstSnapshot != pt.LastSnapshot {
			st.multiSnapshot++
		}
		if pt.FileCount == 0 || pt.FirstFile == 0 {
			if seen[pt.FirstSnapshot] {
				t.Fatalf("snapshot %d starts two parts: %+v", pt.FirstSnapshot, parts)
			}
			seen[pt.FirstSnapshot] = true
		}
	}
	st.windows++
	if len(union) != len(whole) {
		t.Fatalf("window %+v in %d parts %+v: %d rows, the single read %d", req, len(parts), parts, len(union), len(whole))
	}
	for i := range whole {
		if union[i] != whole[i] {
			t.Fatalf("window %+v in %d parts %+v: row %d is %s, the single read's %s", req, len(parts), parts, i,
				union[i], whole[i])
		}
	}
}

// readRows reads the window of req, each row as op, images and snapshot.
func readRows(eng *feed.Engine, req feed.Request) ([]string, error) {
	ctx := context.Background()
	p, err := eng.Plan(ctx, req)
	if err != nil {
		return nil, err
	}
	var out []string
	for b, err := range eng.Read(ctx, p) {
		if err != nil {
			return nil, err
		}
		ops := b.Record.Column(0).(*array.String)
		before, after := b.Record.Column(1).(*array.Struct), b.Record.Column(2).(*array.Struct)
		for i := range int(b.Record.NumRows()) {
			row := fmt.Sprintf("%s @%d", ops.Value(i), b.Snapshot.ID)
			if !before.IsNull(i) {
				row += " before " + imageRow(before, i)
			}
			if !after.IsNull(i) {
				row += " after " + imageRow(after, i)
			}
			out = append(out, row)
		}
		b.Record.Release()
	}
	return out, nil
}

// TestSplitOracle reads random windows of random histories (appends of
// several files, copy-on-write and merge-on-read deletes and updates,
// schema changes) in parts and checks that their union in part order is
// exactly the window's read.
func TestSplitOracle(t *testing.T) {
	configs := []histgen.Config{
		{FormatVersion: 2, DeleteMode: table.WriteModeMergeOnRead, Partitioned: true, Commits: 14},
		{FormatVersion: 3, DeleteMode: table.WriteModeCopyOnWrite, Partitioned: true, Commits: 14},
		{FormatVersion: 2, DeleteMode: table.WriteModeMergeOnRead, Commits: 12, SchemaChanges: true},
	}
	var total splitStats
	for _, cfg := range configs {
		for seed := range uint64(seedsPerConfig()) {
			t.Run(fmt.Sprintf("%s/seed%d", cfg, seed), func(t *testing.T) {
				g := generate(t, seed, cfg)
				mem := memory.NewCheckedAllocator(arrowpool.Shared())
				defer mem.AssertSize(t, 0)
				eng := feed.New(g.Catalog, feed.Options{Allocator: mem, MaxBatchRows: 7})
				defer eng.Close()
				r := rand.New(rand.NewPCG(seed, 11))
				var st splitStats
				for k := range 12 {
					i, j := r.IntN(len(g.Snapshots)), r.IntN(len(g.Snapshots))
					if i > j {
						i, j = j, i
					}
					req := feed.Request{Table: histgen.Table, ToSnapshot: &g.Snapshots[j]}
					if i < j && k%3 != 0 {
						req.FromSnapshot = &g.Snapshots[i]
					}
					switch k % 4 {
					case 1:
						req.Identity = []string{"id"}
					case 2:
						req.Identity, req.FoldUpdates = []string{"id"}, true
					case 3:
						req.Filter = oracleFilters[r.IntN(len(oracleFilters))].text
					}
					checkSplit(t, eng, req, 2+r.IntN(40), &st)
				}
				t.Logf("%d windows in %d parts, %d of them file ranges, %d of several snapshots", st.windows,
					st.parts, st.fileParts, st.multiSnapshot)
				total.windows += st.windows
				total.parts += st.parts
				total.fileParts += st.fileParts
				total.multiSnapshot += st.multiSnapshot
			})
		}
	}
	if total.fileParts == 0 || total.multiSnapshot == 0 || total.windows < 10 {
		t.Fatalf("the split windows never covered file ranges and runs of snapshots: %+v", total)
	}
}

// TestSplitDeltaWritten splits every window of the writer-made Delta
// tables.
func TestSplitDeltaWritten(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(deltaFixtureDir, "written", "*", "EXPECTED.json"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no written Delta tables under %s: %v", deltaFixtureDir, err)
	}
	var total splitStats
	for _, path := range dirs {
		dir := filepath.Dir(path)
		name := "delta." + filepath.Base(dir)
		mem := memory.NewCheckedAllocator(arrowpool.Shared())
		eng := feed.New(deltaTables{name: openDelta(t, dir, name)}, feed.Options{Allocator: mem, MaxBatchRows: 3})
		snaps, err := eng.Snapshots(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		for a := range snaps {
			for _, n := range []int{2, 5, 64} {
				req := feed.Request{Table: name, FromSnapshot: &snaps[a].ID}
				if _, err := eng.Plan(context.Background(), req); errors.Is(err, feed.ErrResyncRequired) {
					continue
				}
				checkSplit(t, eng, req, n, &total)
			}
		}
		eng.Close()
		mem.AssertSize(t, 0)
	}
	t.Logf("%d windows in %d parts, %d of them file ranges", total.windows, total.parts, total.fileParts)
	if total.windows == 0 {
		t.Fatal("no Delta window was split")
	}
}

// TestPartErrors: a part that is not the window's, or a file range of a
// snapshot whose read cannot be split, is refused with ErrInvalidRequest.
func TestPartErrors(t *testing.T) {
	g := generate(t, 3, histgen.Config{FormatVersion: 2, DeleteMode: table.WriteModeCopyOnWrite, Commits: 8})
	eng := feed.New(g.Catalog, feed.Options{})
	defer eng.Close()
	ctx := context.Background()
	last := g.Snapshots[len(g.Snapshots)-1]
	p, err := eng.Plan(ctx, feed.Request{Table: histgen.Table})
	if err != nil {
		t.Fatal(err)
	}
	var notAppend int64
	for _, sp := range p.Snapshots {
		if sp.Strategy != feed.StrategyAppend {
			notAppend = sp.ID
		}
	}
	from := g.Snapshots[2]
	cases := []struct {
		name string
		req  feed.Request
		want string
	}{
		{"outside", feed.Request{Table: histgen.Table, FromSnapshot: &from,
			Part: &feed.Part{FirstSnapshot: g.Snapshots[1], LastSnapshot: last}}, "first_snapshot"},
		{"reversed", feed.Request{Table: histgen.Table,
			Part: &feed.Part{FirstSnapshot: last, LastSnapshot: g.Snapshots[0]}}, "comes before"},
		{"net", feed.Request{Table: histgen.Table, NetChanges: true,
			Part: &feed.Part{FirstSnapshot: last, LastSnapshot: last}}, "net_changes"},
		{"range", feed.Request{Table: histgen.Table,
			Part: &feed.Part{FirstSnapshot: last, LastSnapshot: last, FirstFile: 2, EndFile: 2, FileCount: 3}}, "not a range"},
		{"rewrite", feed.Request{Table: histgen.Table,
			Part: &feed.Part{FirstSnapshot: notAppend, LastSnapshot: notAppend, FirstFile: 0, EndFile: 1, FileCount: 2}},
			"cannot be read by file range"},
		{"count", feed.Request{Table: histgen.Table,
			Part: &feed.Part{FirstSnapshot: g.Snapshots[0], LastSnapshot: g.Snapshots[0], FirstFile: 0, EndFile: 1,
				FileCount: 99}}, "file_count 99"},
	}
	for _, c := range cases {
		_, err := eng.Plan(ctx, c.req)
		if !errors.Is(err, feed.ErrInvalidRequest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want ErrInvalidRequest saying %q", c.name, err, c.want)
		}
	}
	if notAppend == 0 {
		t.Fatal("the history has no snapshot that is not an append")
	}
	if parts := p.Split(1); parts != nil {
		t.Errorf("Split(1) = %+v, want nil", parts)
	}
}
