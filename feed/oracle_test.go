package feed_test

import (
	"context"
	goflag "flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/feed"
)

var oracleSeeds = goflag.Int("oracle.seeds", 0, "random histories per configuration (default 2, or SLUICE_ORACLE_SEEDS)")

func seedsPerConfig() int {
	if *oracleSeeds > 0 {
		return *oracleSeeds
	}
	if n, err := strconv.Atoi(os.Getenv("SLUICE_ORACLE_SEEDS")); err == nil && n > 0 {
		return n
	}
	return 2
}

// state is a table state as a multiset of canonical rows.
type state map[string]int

// canonical encodes a row of the window's end schema: one value per end
// field, in order, null where the row's schema lacks the field.
func canonical(cols []arrow.Array, i int) string {
	var b strings.Builder
	for _, c := range cols {
		if c == nil || c.IsNull(i) {
			b.WriteString("∅|")
			continue
		}
		v := c.ValueStr(i)
		if _, ok := c.(*array.Int32); ok {
			v = "i" + v // ints of promoted columns compare as numbers
		} else if _, ok := c.(*array.Int64); ok {
			v = "i" + v
		}
		b.WriteString(v)
		b.WriteByte('|')
	}
	return b.String()
}

// scanState reads the full state of the table at a snapshot with a plain
// iceberg-go scan, projected by field id onto the end schema.
func scanState(t *testing.T, tbl *table.Table, snapshot *int64, end *iceberg.Schema) state {
	t.Helper()
	out := state{}
	if snapshot == nil {
		return out
	}
	ctx := context.Background()
	scan := tbl.Scan(table.WithSnapshotID(*snapshot))
	sc, err := scan.Projection()
	if err != nil {
		t.Fatal(err)
	}
	arrTbl, err := scan.ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan of snapshot %d: %v", *snapshot, err)
	}
	defer arrTbl.Release()
	rdr := array.NewTableReader(arrTbl, 1<<16)
	defer rdr.Release()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		cols := make([]arrow.Array, len(end.Fields()))
		for i, f := range end.Fields() {
			if old, ok := sc.FindFieldByID(f.ID); ok {
				if idx := rec.Schema().FieldIndices(old.Name); len(idx) == 1 {
					cols[i] = rec.Column(idx[0])
				}
			}
		}
		for r := range int(rec.NumRows()) {
			out[canonical(cols, r)]++
		}
	}
	return out
}

// imageRow is the canonical form of row i of an image struct.
func imageRow(img *array.Struct, i int) string {
	cols := make([]arrow.Array, img.NumField())
	for f := range cols {
		cols[f] = img.Field(f)
	}
	return canonical(cols, i)
}

// applyFeed applies a window's feed to a copy of st, failing on a delete of
// a row that is not there; it checks the order within each snapshot.
func applyFeed(t *testing.T, eng *feed.Engine, req feed.Request, st state) (state, []string) {
	t.Helper()
	ctx := context.Background()
	out := state{}
	for k, v := range st {
		out[k] = v
	}
	p, err := eng.Plan(ctx, req)
	if err != nil {
		t.Fatalf("plan %+v: %v", req, err)
	}
	var ops []string
	var lastSnap int64
	phase := 0 // within a snapshot: 0 deletes, 1 updates, 2 inserts
	pendingAfter := false
	strategy := map[int64]string{}
	for _, sp := range p.Snapshots {
		strategy[sp.ID] = sp.Strategy
	}
	// A rewrite must not report a row it re-wrote unchanged (carry-over):
	// no full image is both deleted and inserted by one rewrite snapshot.
	deleted, inserted := state{}, state{}
	checkCarryOver := func() {
		if strategy[lastSnap] != feed.StrategyRewrite {
			return
		}
		for k := range deleted {
			if inserted[k] > 0 {
				t.Fatalf("rewrite snapshot %d deletes and re-inserts the unchanged row %s (carry-over not removed)",
					lastSnap, k)
			}
		}
	}
	for b, err := range eng.Read(ctx, p) {
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		rec := b.Record
		if b.Snapshot.ID != lastSnap {
			if pendingAfter {
				t.Fatalf("snapshot %d ends between an update_before and its update_after", lastSnap)
			}
			checkCarryOver()
			lastSnap, phase = b.Snapshot.ID, 0
			deleted, inserted = state{}, state{}
		}
		opCol := rec.Column(0).(*array.String)
		before, after := rec.Column(1).(*array.Struct), rec.Column(2).(*array.Struct)
		for i := range int(rec.NumRows()) {
			op := opCol.Value(i)
			ops = append(ops, op)
			if pendingAfter != (op == feed.OpUpdateAfter) {
				t.Fatalf("snapshot %d: %s where an update_after must follow its update_before", b.Snapshot.ID, op)
			}
			pendingAfter = op == feed.OpUpdateBefore
			rank := map[string]int{feed.OpDelete: 0, feed.OpUpdateBefore: 1, feed.OpUpdateAfter: 1, feed.OpUpdate: 1,
				feed.OpInsert: 2}[op]
			if rank < phase {
				t.Fatalf("snapshot %d: %s after a later kind of change", b.Snapshot.ID, op)
			}
			phase = rank
			if op == feed.OpDelete || op == feed.OpUpdateBefore || op == feed.OpUpdate {
				if before.IsNull(i) {
					t.Fatalf("%s without a before-image", op)
				}
				k := imageRow(before, i)
				if out[k] == 0 {
					t.Fatalf("snapshot %d: %s of a row that is not there: %s", b.Snapshot.ID, op, k)
				}
				out[k]--
				if out[k] == 0 {
					delete(out, k)
				}
				deleted[k]++
			}
			if op == feed.OpInsert || op == feed.OpUpdateAfter || op == feed.OpUpdate {
				if after.IsNull(i) {
					t.Fatalf("%s without an after-image", op)
				}
				out[imageRow(after, i)]++
				inserted[imageRow(after, i)]++
			}
		}
		rec.Release()
	}
	if pendingAfter {
		t.Fatal("the feed ends between an update_before and its update_after")
	}
	checkCarryOver()
	return out, ops
}

func diffStates(a, b state) string {
	var lines []string
	for k, v := range a {
		if b[k] != v {
			lines = append(lines, fmt.Sprintf("  got %d× %s, want %d", v, k, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			lines = append(lines, fmt.Sprintf("  got 0× %s, want %d", k, v))
		}
	}
	sort.Strings(lines)
	if len(lines) > 20 {
		lines = append(lines[:20], fmt.Sprintf("  ... %d more", len(lines)-20))
	}
	return strings.Join(lines, "\n")
}

// TestOracle checks the engine against the full-state diff on random
// histories: for every consecutive snapshot pair and for random wider
// windows, applying the feed to the state at `from` gives exactly the state
// at `to`.
func TestOracle(t *testing.T) {
	configs := []genConfig{
		{formatVersion: 2, deleteMode: table.WriteModeCopyOnWrite, commits: 14},
		{formatVersion: 2, deleteMode: table.WriteModeMergeOnRead, commits: 14},
		{formatVersion: 2, deleteMode: table.WriteModeMergeOnRead, partitioned: true, commits: 14},
		{formatVersion: 3, deleteMode: table.WriteModeMergeOnRead, commits: 14},
		{formatVersion: 3, deleteMode: table.WriteModeCopyOnWrite, partitioned: true, commits: 14},
		{formatVersion: 2, deleteMode: table.WriteModeMergeOnRead, commits: 12, schemaChanges: true},
	}
	for _, cfg := range configs {
		for seed := range uint64(seedsPerConfig()) {
			t.Run(fmt.Sprintf("%s/seed%d", cfg, seed), func(t *testing.T) {
				t.Parallel()
				checkHistory(t, seed, cfg)
			})
		}
	}
}

func checkHistory(t *testing.T, seed uint64, cfg genConfig) {
	g := generate(t, seed, cfg)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	eng := feed.New(g.cat, feed.Options{Allocator: mem, MaxBatchRows: 7})
	meta := g.tbl.Metadata()
	endSchema := func(to int64) *iceberg.Schema {
		s := g.tbl.SnapshotByID(to)
		for _, sc := range meta.Schemas() {
			if s.SchemaID != nil && sc.ID == *s.SchemaID {
				return sc
			}
		}
		return meta.CurrentSchema()
	}
	check := func(from *int64, to int64, identity []string) {
		t.Helper()
		end := endSchema(to)
		want := scanState(t, g.tbl, &to, end)
		got, ops := applyFeed(t, eng, feed.Request{Table: genTable, FromSnapshot: from, ToSnapshot: &to,
			Identity: identity}, scanState(t, g.tbl, from, end))
		if d := diffStates(got, want); d != "" {
			fromStr := "start"
			if from != nil {
				fromStr = fmt.Sprint(*from)
			}
			t.Fatalf("window (%s, %d] with identity %v: the feed applied to the state at from is not the "+
				"state at to:\n%s\nops: %v\nhistory: %s", fromStr, to, identity, d, ops, strings.Join(g.log, "; "))
		}
	}
	for i, s := range g.snapshots {
		var from *int64
		if i > 0 {
			from = &g.snapshots[i-1]
		}
		check(from, s, nil)
		check(from, s, []string{"id"})
	}
	r := rand.New(rand.NewPCG(seed, 7))
	for range 4 {
		i, j := r.IntN(len(g.snapshots)), r.IntN(len(g.snapshots))
		if i > j {
			i, j = j, i
		}
		from := &g.snapshots[i]
		if i == j {
			from = nil
		}
		check(from, g.snapshots[j], nil)
	}
}
