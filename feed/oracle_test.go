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
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/internal/testkit/histgen"
)

var oracleSeeds = goflag.Int("oracle.seeds", 0, "random histories per configuration (default 1, or SLUICE_ORACLE_SEEDS; make test-long runs 25)")

func seedsPerConfig() int {
	if *oracleSeeds > 0 {
		return *oracleSeeds
	}
	if n, err := strconv.Atoi(os.Getenv("SLUICE_ORACLE_SEEDS")); err == nil && n > 0 {
		return n
	}
	return 1
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
	// A snapshot must not report a row it deleted and wrote again
	// unchanged, whatever the write mode (copy-on-write carry-over, an
	// equality-delete upsert of the same values): no full image is both
	// deleted and inserted by one snapshot.
	deleted, inserted := state{}, state{}
	checkCarryOver := func() {
		for k := range deleted {
			if inserted[k] > 0 {
				t.Fatalf("snapshot %d (%s) deletes and re-inserts the unchanged row %s", lastSnap,
					strategy[lastSnap], k)
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
			op := strings.Clone(opCol.Value(i)) // kept past the batch
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
	configs := []histgen.Config{
		{FormatVersion: 2, DeleteMode: table.WriteModeCopyOnWrite, Commits: 14},
		{FormatVersion: 2, DeleteMode: table.WriteModeMergeOnRead, Commits: 14},
		{FormatVersion: 2, DeleteMode: table.WriteModeMergeOnRead, Partitioned: true, Commits: 14},
		{FormatVersion: 3, DeleteMode: table.WriteModeMergeOnRead, Commits: 14},
		{FormatVersion: 3, DeleteMode: table.WriteModeCopyOnWrite, Partitioned: true, Commits: 14},
		{FormatVersion: 2, DeleteMode: table.WriteModeMergeOnRead, Commits: 12, SchemaChanges: true},
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

// generate writes a random history into a temporary warehouse.
func generate(t *testing.T, seed uint64, cfg histgen.Config) *histgen.History {
	t.Helper()
	g, err := histgen.Generate(context.Background(), t.TempDir(), seed, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Catalog.Close() })
	return g
}

func checkHistory(t *testing.T, seed uint64, cfg histgen.Config) {
	g := generate(t, seed, cfg)
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	eng := feed.New(g.Catalog, feed.Options{Allocator: mem, MaxBatchRows: 7})
	// The same engine with a memory budget of one byte: every computation
	// that must see many changes at once spills them and works partition
	// by partition, on every seed.
	spillDir := t.TempDir()
	spilling := feed.New(g.Catalog, feed.Options{Allocator: mem, MaxBatchRows: 7, MemoryBudget: 1, SpillDir: spillDir})
	defer func() {
		if left, _ := os.ReadDir(spillDir); len(left) > 0 {
			t.Errorf("the spill directory holds %d entries after the reads", len(left))
		}
		for _, e := range []*feed.Engine{eng, spilling} {
			if err := e.Close(); err != nil {
				t.Error(err)
			}
		}
		if st := spilling.Stats(); st.SpillFiles == 0 || st.MemoryBudgetInUse != 0 {
			t.Errorf("the spilling engine wrote %d spill files and holds %d bytes of its budget after the reads",
				st.SpillFiles, st.MemoryBudgetInUse)
		}
	}()
	meta := g.Table.Metadata()
	endSchema := func(to int64) *iceberg.Schema {
		s := g.Table.SnapshotByID(to)
		for _, sc := range meta.Schemas() {
			if s.SchemaID != nil && sc.ID == *s.SchemaID {
				return sc
			}
		}
		return meta.CurrentSchema()
	}
	check := func(from *int64, to int64, identity []string) {
		t.Helper()
		checkWith(t, g, eng, endSchema(to), from, to, identity)
		if identity != nil {
			// Enough to spill carry-over and pairing on every snapshot; the
			// net checks spill whole rows without identity.
			checkWith(t, g, spilling, endSchema(to), from, to, identity)
		}
	}
	checkNet := func(from *int64, to int64, identity []string, fold bool) {
		t.Helper()
		checkNetWith(t, g, eng, endSchema(to), from, to, identity, fold)
		checkNetWith(t, g, spilling, endSchema(to), from, to, identity, fold)
	}
	for i, s := range g.Snapshots {
		var from *int64
		if i > 0 {
			from = &g.Snapshots[i-1]
		}
		check(from, s, nil)
		check(from, s, []string{"id"})
		checkFold(t, eng, from, s)
	}
	last := g.Snapshots[len(g.Snapshots)-1]
	checkNet(nil, last, nil, false)
	checkNet(nil, last, []string{"id"}, false)
	checkNet(&g.Snapshots[len(g.Snapshots)/2], last, []string{"id"}, true)
	for _, f := range oracleFilters {
		checkFilter(t, eng, f, feed.Request{Table: histgen.Table, ToSnapshot: &last, Identity: []string{"id"}})
		checkFilter(t, eng, f, feed.Request{Table: histgen.Table, ToSnapshot: &last})
	}
	checkFilter(t, spilling, oracleFilters[seed%uint64(len(oracleFilters))],
		feed.Request{Table: histgen.Table, ToSnapshot: &last, Identity: []string{"id"}})
	r := rand.New(rand.NewPCG(seed, 7))
	for range 4 {
		i, j := r.IntN(len(g.Snapshots)), r.IntN(len(g.Snapshots))
		if i > j {
			i, j = j, i
		}
		from := &g.Snapshots[i]
		if i == j {
			from = nil
		}
		check(from, g.Snapshots[j], nil)
	}
}

// checkWith checks the feed of the window (from, to] against the oracle:
// applied to the state at from, it gives the state at to.
func checkWith(t *testing.T, g *histgen.History, eng *feed.Engine, end *iceberg.Schema, from *int64, to int64,
	identity []string) {
	t.Helper()
	{
		want := scanState(t, g.Table, &to, end)
		got, ops := applyFeed(t, eng, feed.Request{Table: histgen.Table, FromSnapshot: from, ToSnapshot: &to,
			Identity: identity}, scanState(t, g.Table, from, end))
		if d := diffStates(got, want); d != "" {
			fromStr := "start"
			if from != nil {
				fromStr = fmt.Sprint(*from)
			}
			t.Fatalf("window (%s, %d] with identity %v: the feed applied to the state at from is not the "+
				"state at to:\n%s\nops: %v\nhistory: %s", fromStr, to, identity, d, ops, strings.Join(g.Log, "; "))
		}
	}
}

// checkNetWith checks the net changes of the window (from, to]: applied to
// the state at from they give the state at to, and none is more than the
// full-state diff.
func checkNetWith(t *testing.T, g *histgen.History, eng *feed.Engine, end *iceberg.Schema, from *int64, to int64,
	identity []string, fold bool) {
	t.Helper()
	{
		start, want := scanState(t, g.Table, from, end), scanState(t, g.Table, &to, end)
		req := feed.Request{Table: histgen.Table, FromSnapshot: from, ToSnapshot: &to, Identity: identity,
			NetChanges: true, FoldUpdates: fold}
		got, ops := applyFeed(t, eng, req, start)
		if d := diffStates(got, want); d != "" {
			t.Fatalf("net changes of (%v, %d] identity %v: applied to the state at from, not the state at to:\n%s\nops %v\nhistory: %s",
				from, to, identity, d, ops, strings.Join(g.Log, "; "))
		}
		// Net: every change is in the full-state diff, none cancels another.
		dels, ins := netSides(t, eng, req)
		for k, n := range dels {
			if start[k]-want[k] < n {
				t.Fatalf("net changes of (%v, %d] delete %d× %s, but the state lost only %d", from, to, n, k, start[k]-want[k])
			}
		}
		for k, n := range ins {
			if want[k]-start[k] < n {
				t.Fatalf("net changes of (%v, %d] insert %d× %s, but the state gained only %d", from, to, n, k, want[k]-start[k])
			}
		}
	}
}

// netSides returns the before-images the feed removes and the
// after-images it adds.
func netSides(t *testing.T, eng *feed.Engine, req feed.Request) (state, state) {
	t.Helper()
	ctx := context.Background()
	p, err := eng.Plan(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	dels, ins := state{}, state{}
	for b, err := range eng.Read(ctx, p) {
		if err != nil {
			t.Fatal(err)
		}
		before, after := b.Record.Column(1).(*array.Struct), b.Record.Column(2).(*array.Struct)
		for i := range int(b.Record.NumRows()) {
			if !before.IsNull(i) {
				dels[imageRow(before, i)]++
			}
			if !after.IsNull(i) {
				ins[imageRow(after, i)]++
			}
		}
		b.Record.Release()
	}
	return dels, ins
}

// checkFold checks that fold_updates turns each update_before/update_after
// pair into one update row with both images, and changes nothing else.
func checkFold(t *testing.T, eng *feed.Engine, from *int64, to int64) {
	t.Helper()
	req := feed.Request{Table: histgen.Table, FromSnapshot: from, ToSnapshot: &to, Identity: []string{"id"}}
	plain := decodeFeed(t, eng, req)
	req.FoldUpdates = true
	folded := decodeFeed(t, eng, req)
	var want []decoded
	for i := 0; i < len(plain); i++ {
		c := plain[i]
		if c.op == feed.OpUpdateBefore {
			want = append(want, decoded{op: feed.OpUpdate, before: c.before, after: plain[i+1].after, snapshot: c.snapshot})
			i++
			continue
		}
		want = append(want, c)
	}
	if fmt.Sprint(folded) != fmt.Sprint(want) {
		t.Fatalf("fold_updates of (%v, %d]:\n got %v\nwant %v", from, to, folded, want)
	}
}

// decoded is a change row with its images rendered canonically.
type decoded struct {
	op            string
	before, after string
	snapshot      int64
	rowBefore     map[string]any
	rowAfter      map[string]any
}

func (d decoded) String() string {
	return fmt.Sprintf("%s{%s -> %s @%d}", d.op, d.before, d.after, d.snapshot)
}

func decodeFeed(t *testing.T, eng *feed.Engine, req feed.Request) []decoded {
	t.Helper()
	ctx := context.Background()
	p, err := eng.Plan(ctx, req)
	if err != nil {
		t.Fatalf("plan %+v: %v", req, err)
	}
	var out []decoded
	for b, err := range eng.Read(ctx, p) {
		if err != nil {
			t.Fatal(err)
		}
		ops := b.Record.Column(0).(*array.String)
		before, after := b.Record.Column(1).(*array.Struct), b.Record.Column(2).(*array.Struct)
		for i := range int(b.Record.NumRows()) {
			d := decoded{op: strings.Clone(ops.Value(i)), snapshot: b.Snapshot.ID}
			if !before.IsNull(i) {
				d.before, d.rowBefore = imageRow(before, i), imageValues(before, i)
			}
			if !after.IsNull(i) {
				d.after, d.rowAfter = imageRow(after, i), imageValues(after, i)
			}
			out = append(out, d)
		}
		b.Record.Release()
	}
	return out
}

// imageValues decodes row i of an image into Go values by column name.
func imageValues(img *array.Struct, i int) map[string]any {
	out := map[string]any{}
	st := img.DataType().(*arrow.StructType)
	for f := range img.NumField() {
		col := img.Field(f)
		if col.IsNull(i) {
			out[st.Field(f).Name] = nil
			continue
		}
		switch c := col.(type) {
		case *array.Int64:
			out[st.Field(f).Name] = c.Value(i)
		case *array.Int32:
			out[st.Field(f).Name] = int64(c.Value(i))
		case *array.String:
			out[st.Field(f).Name] = strings.Clone(c.Value(i)) // kept past the batch
		default:
			out[st.Field(f).Name] = strings.Clone(col.ValueStr(i))
		}
	}
	return out
}

// oracleFilter is a filter with an independent evaluator, in SQL's
// three-valued logic (nil: unknown).
type oracleFilter struct {
	text string
	eval func(row map[string]any) *bool
}

func tv(b bool) *bool { return &b }

func cmpInt(row map[string]any, col string, fn func(int64) bool) *bool {
	v, ok := row[col].(int64)
	if !ok {
		return nil
	}
	return tv(fn(v))
}

var oracleFilters = []oracleFilter{
	{"val < 300", func(r map[string]any) *bool { return cmpInt(r, "val", func(v int64) bool { return v < 300 }) }},
	{"grp = 'b' OR small >= 60", func(r map[string]any) *bool {
		a := tv(r["grp"] == "b")
		b := cmpInt(r, "small", func(v int64) bool { return v >= 60 })
		switch {
		case *a || (b != nil && *b):
			return tv(true)
		case b == nil:
			return nil
		default:
			return tv(false)
		}
	}},
	{"NOT (small > 50)", func(r map[string]any) *bool {
		b := cmpInt(r, "small", func(v int64) bool { return v > 50 })
		if b == nil {
			return nil
		}
		return tv(!*b)
	}},
}

// checkFilter compares the filtered feed with the unfiltered one filtered
// by the contract's rule: an insert is kept when its after-image matches,
// a delete when its before-image matches or is unknown, an update pair
// whole when either image does.
func checkFilter(t *testing.T, eng *feed.Engine, f oracleFilter, req feed.Request) {
	t.Helper()
	all := decodeFeed(t, eng, req)
	req.Filter = f.text
	got := decodeFeed(t, eng, req)
	before := func(c decoded) bool { v := f.eval(c.rowBefore); return c.rowBefore != nil && (v == nil || *v) }
	after := func(c decoded) bool { v := f.eval(c.rowAfter); return c.rowAfter != nil && v != nil && *v }
	var want []decoded
	for i := 0; i < len(all); i++ {
		c := all[i]
		if c.op == feed.OpUpdateBefore {
			if before(c) || after(all[i+1]) {
				want = append(want, c, all[i+1])
			}
			i++
			continue
		}
		if before(c) || after(c) {
			want = append(want, c)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("filter %q, identity %v:\n got %d %v\nwant %d %v", f.text, req.Identity, len(got), got, len(want), want)
	}
}
