package e2e

import (
	"context"
	"encoding/json"
	"math"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/app/demo"
	"github.com/sluicefeed/sluice/internal/testkit/docmd"
)

// readmeSection returns the fenced blocks whose info string is info in
// README.md's subsection headed head ("### ..."), failing when there are
// none.
func readmeSection(t *testing.T, head, info string) []string {
	t.Helper()
	doc := docmd.Read(t, "../README.md")
	i := strings.Index(doc, head+"\n")
	if i < 0 {
		t.Fatalf("README.md has no %q", head)
	}
	sec := doc[i+len(head)+1:]
	for _, next := range []string{"\n## ", "\n### "} { // the next heading (a "#" in a block is a comment)
		if j := strings.Index(sec, next); j >= 0 {
			sec = sec[:j]
		}
	}
	var blocks []string
	for {
		k := strings.Index(sec, "```"+info+"\n")
		if k < 0 {
			break
		}
		sec = sec[k+len(info)+4:]
		end := strings.Index(sec, "```\n")
		if end < 0 {
			t.Fatalf("README.md: a ```%s block of %q is not closed", info, head)
		}
		blocks = append(blocks, sec[:end])
		sec = sec[end+4:]
	}
	if len(blocks) == 0 {
		t.Fatalf("README.md's %q has no ```%s block", head, info)
	}
	return blocks
}

// readmeURI is the address the README's Python snippets connect to; the
// tests put the real flightd's in its place.
const readmeURI = `"grpc://127.0.0.1:8815"`

// TestDataframesReadme runs the Python block of README.md's "pandas,
// Polars and DuckDB" subsection, as is but for the address, against the
// demo table, then compares what its DuckDB query, Polars frame and pandas
// frame hold with the Go client's flat feed and net changes.
func TestDataframesReadme(t *testing.T) {
	py := python(t)
	blocks := readmeSection(t, "### pandas, Polars and DuckDB", "python")
	if len(blocks) != 1 || !strings.Contains(blocks[0], readmeURI) {
		t.Fatalf("want one python block connecting to %s, got %d:\n%s", readmeURI, len(blocks), blocks)
	}
	srv, _ := startDemo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script := strings.Replace(blocks[0], readmeURI, `"`+srv.URI()+`"`, 1) + `
import json as _json
print("RESULT " + _json.dumps({
    "by_type": by_type,
    "polars_rows": df.height, "polars_order_id": str(df.schema["order_id"]),
    "shipped": shipped["order_id"].to_list(),
    "net_ops": net["op"].tolist(),
    "net_after_ids": [None if v is None or v is __import__("pandas").NA else v for v in net["after.order_id"].tolist()],
    "net_after_dtype": str(net["after.order_id"].dtype),
}))
`
	cmd := exec.CommandContext(ctx, py, "-c", script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's python block: %v\n%s", err, out)
	}
	i := strings.LastIndex(string(out), "RESULT ")
	if i < 0 {
		t.Fatalf("no RESULT line:\n%s", out)
	}
	var got struct {
		ByType        [][3]any `json:"by_type"`
		PolarsRows    int      `json:"polars_rows"`
		PolarsOrderID string   `json:"polars_order_id"`
		Shipped       []int64  `json:"shipped"`
		NetOps        []string `json:"net_ops"`
		NetAfterIDs   []*int64 `json:"net_after_ids"`
		NetAfterDtype string   `json:"net_after_dtype"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(out[i+len("RESULT "):]))), &got); err != nil {
		t.Fatalf("RESULT: %v\n%s", err, out)
	}

	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := dialGo(t, ctx, srv.URI())
	flat, _ := clientFeed(t, ctx, c, mem, sluice.ChangeRequest{Table: demo.Table, Layout: sluice.LayoutFlat})
	defer flat.Release()
	col := func(name string) int {
		idx := flat.Schema().FieldIndices(name)
		if len(idx) != 1 {
			t.Fatalf("the flat feed has no column %s: %v", name, flat.Schema())
		}
		return idx[0]
	}
	types := flat.Column(col("_change_type")).(*array.String)
	amounts := flat.Column(col("amount")).(*array.Float64)
	ids := flat.Column(col("order_id")).(*array.Int64)
	statuses := flat.Column(col("status")).(*array.String)
	count, sum := map[string]float64{}, map[string]float64{}
	var shipped []int64
	for r := range int(flat.NumRows()) {
		ct := types.Value(r)
		count[ct]++
		sum[ct] += amounts.Value(r)
		if ct == "update_postimage" && statuses.Value(r) == "shipped" {
			shipped = append(shipped, ids.Value(r))
		}
	}
	if len(got.ByType) != len(count) {
		t.Fatalf("DuckDB: %v; the Go client's flat feed: counts %v", got.ByType, count)
	}
	for _, row := range got.ByType {
		ct, _ := row[0].(string)
		n, _ := row[1].(float64)
		amount, _ := row[2].(float64)
		if n != count[ct] || math.Abs(amount-sum[ct]) > 0.006 {
			t.Errorf("DuckDB: %s: %v rows, amount %v; the Go client: %v rows, amount %.2f", ct, n, amount, count[ct], sum[ct])
		}
	}
	if got.PolarsRows != int(flat.NumRows()) || got.PolarsOrderID != "Int64" {
		t.Errorf("Polars: %d rows, order_id %s; the Go client: %d rows of int64", got.PolarsRows, got.PolarsOrderID,
			flat.NumRows())
	}
	if len(shipped) == 0 || len(got.Shipped) != len(shipped) || got.Shipped[0] != shipped[0] {
		t.Errorf("Polars shipped %v; the Go client: %v", got.Shipped, shipped)
	}

	net, _ := clientFeed(t, ctx, c, mem, sluice.ChangeRequest{Table: demo.Table, NetChanges: true})
	defer net.Release()
	ops := net.Column(net.Schema().FieldIndices("op")[0]).(*array.String)
	after := net.Column(net.Schema().FieldIndices("after")[0]).(*array.Struct)
	afterIDs := after.Field(0).(*array.Int64) // order_id, the first column
	if int(net.NumRows()) != len(got.NetOps) || len(got.NetOps) != len(got.NetAfterIDs) {
		t.Fatalf("pandas: %d net rows; the Go client: %d", len(got.NetOps), net.NumRows())
	}
	for r := range int(net.NumRows()) {
		var want *int64
		if after.IsValid(r) && afterIDs.IsValid(r) {
			v := afterIDs.Value(r)
			want = &v
		}
		if got.NetOps[r] != ops.Value(r) || (want == nil) != (got.NetAfterIDs[r] == nil) ||
			(want != nil && *want != *got.NetAfterIDs[r]) {
			t.Errorf("pandas row %d: %s %v; the Go client: %s %v", r, got.NetOps[r], got.NetAfterIDs[r], ops.Value(r), want)
		}
	}
	if got.NetAfterDtype != "int64[pyarrow]" {
		t.Errorf("pandas after.order_id is %s, want int64[pyarrow]", got.NetAfterDtype)
	}
	t.Logf("DuckDB %v; Polars %d rows; pandas %d net rows", got.ByType, got.PolarsRows, len(got.NetOps))
}
