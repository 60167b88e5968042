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
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/internal/tablewrite"
)

const edgesTable = "graph.edges"

// TestGraphIngestExample runs clients/python/examples/graph_ingest.py
// against flightd while a writer adds, removes and re-weighs edges, then
// checks its graph against a plain scan of the table (the example also
// checks itself with --verify).
func TestGraphIngestExample(t *testing.T) {
	py := python(t)
	ctx := context.Background()
	dir := t.TempDir()
	cat, err := tablewrite.OpenWarehouse(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
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
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 11))
	edges := map[int64]bool{}
	edgeRows := func(ids []int64) []tablewrite.Row {
		var rows []tablewrite.Row
		for _, id := range ids {
			rows = append(rows, tablewrite.Row{"id": id, "src": id / 100, "dst": id % 100, "weight": float64(r.IntN(100)) / 10})
		}
		return rows
	}
	pick := func(n int) []int64 {
		var ids []int64
		for id := range edges {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		return ids[:min(n, len(ids))]
	}
	step := func(i int) {
		var err error
		switch op := r.IntN(10); {
		case i == 12:
			tbl, err = tablewrite.Compact(ctx, tbl)
		case op < 5 || len(edges) < 5:
			var ids []int64
			for range 1 + r.IntN(8) {
				src, dst := r.Int64N(20), r.Int64N(20)
				if id := src*100 + dst; src != dst && !edges[id] && !slices.Contains(ids, id) {
					ids = append(ids, id)
				}
			}
			if len(ids) == 0 {
				return
			}
			for _, id := range ids {
				edges[id] = true
			}
			tbl, err = tablewrite.Append(ctx, tbl, edgeRows(ids))
		case op < 7:
			ids := pick(1 + r.IntN(3))
			for _, id := range ids {
				delete(edges, id)
			}
			tbl, err = tbl.Delete(ctx, iceberg.IsIn(iceberg.Reference("id"), ids...), nil)
		default:
			ids := pick(1 + r.IntN(3))
			keys := make([]tablewrite.Row, len(ids))
			for k, id := range ids {
				keys[k] = tablewrite.Row{"id": id}
			}
			tbl, err = tablewrite.EqualityDelete(ctx, tbl, "id", keys, edgeRows(ids))
		}
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	for i := range 3 {
		step(i)
	}
	srv := startFlightd(t, "--warehouse", dir, "--poll-interval", "50ms", "--heartbeat-interval", "300ms")
	work := t.TempDir()
	until, output := filepath.Join(work, "until"), filepath.Join(work, "edges.json")
	example := filepath.Join("..", "clients", "python", "examples", "graph_ingest.py")
	cmd := exec.Command(py, example, "--uri", srv.URI(), "--table", edgesTable, "--consumer", "graph-e2e",
		"--state", filepath.Join(work, "graph.json"), "--until-file", until, "--verify", "--output", output)
	done := make(chan []byte, 1)
	var runErr error
	go func() {
		out, err := cmd.CombinedOutput()
		runErr = err
		done <- out
	}()
	for i := 3; i < 25; i++ {
		step(i)
		time.Sleep(time.Duration(20+r.IntN(80)) * time.Millisecond)
	}
	cur, err := cat.LoadTable(ctx, edgesTable)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(until, []byte(strconv.FormatInt(cur.CurrentSnapshot().SequenceNumber, 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	var out []byte
	select {
	case out = <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("graph_ingest.py did not finish:\n%s", <-done)
	}
	t.Logf("graph_ingest.py: %s", out)
	if runErr != nil {
		t.Fatalf("graph_ingest.py failed: %v\n%s", runErr, out)
	}
	var got [][3]float64
	b, err := os.ReadFile(output)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	// The table's edges, by a plain iceberg-go scan.
	arr, err := cur.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer arr.Release()
	var want [][3]float64
	rdr := array.NewTableReader(arr, 1024)
	defer rdr.Release()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for i := range int(rec.NumRows()) {
			want = append(want, [3]float64{float64(rec.Column(1).(*array.Int64).Value(i)),
				float64(rec.Column(2).(*array.Int64).Value(i)), rec.Column(3).(*array.Float64).Value(i)})
		}
	}
	slices.SortFunc(want, func(a, b [3]float64) int {
		return slices.Compare(a[:], b[:])
	})
	if fmt.Sprint(got) != fmt.Sprint(want) || len(want) != len(edges) {
		t.Fatalf("graph edges\n%v\nwant (scan)\n%v", got, want)
	}
}
