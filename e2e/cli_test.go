package e2e

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/app/demo"
)

// cliResult is what one run of the sluice binary did.
type cliResult struct {
	stdout, stderr string
	code           int
}

// cliEnv is the environment of the sluice runs: the test's, without the
// variables sluice reads, plus env.
func cliEnv(env ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLUICE_") && !strings.HasPrefix(kv, "NO_COLOR=") {
			out = append(out, kv)
		}
	}
	return append(out, env...)
}

// runCLI runs sluice with args against uri (through SLUICE_URI).
func runCLI(t *testing.T, ctx context.Context, uri string, args ...string) cliResult {
	t.Helper()
	cmd := exec.CommandContext(ctx, sluiceBin, args...)
	cmd.Env = cliEnv("SLUICE_URI=" + uri)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := cliResult{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("sluice %v: %v", args, err)
	}
	return res
}

// mustCLI runs sluice and fails the test unless it exits 0.
func mustCLI(t *testing.T, ctx context.Context, uri string, args ...string) string {
	t.Helper()
	res := runCLI(t, ctx, uri, args...)
	if res.code != 0 {
		t.Fatalf("sluice %v: exit %d\n%s", args, res.code, res.stderr)
	}
	return res.stdout
}

// startDemo serves the demo table from a new warehouse.
func startDemo(t *testing.T) (*flightd, string) {
	t.Helper()
	wh := filepath.Join(t.TempDir(), "warehouse")
	return startFlightd(t, "--demo", "--warehouse", wh), wh
}

// clientFeed reads a window with the Go client into one record (nil for
// an empty window) and its schema.
func clientFeed(t *testing.T, ctx context.Context, c *sluice.Client, mem memory.Allocator, req sluice.ChangeRequest) (arrow.RecordBatch, *arrow.Schema) {
	t.Helper()
	rdr, err := c.Changes(ctx, req)
	if err != nil {
		t.Fatalf("%+v: %v", req, err)
	}
	defer rdr.Release()
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for b, err := range rdr.All() {
		if err != nil {
			t.Fatal(err)
		}
		b.Record.Retain()
		recs = append(recs, b.Record)
	}
	return concatRecords(t, mem, rdr.Schema(), recs), rdr.Schema()
}

// concatRecords concatenates batches into one record (nil when they hold
// no rows).
func concatRecords(t *testing.T, mem memory.Allocator, sc *arrow.Schema, recs []arrow.RecordBatch) arrow.RecordBatch {
	t.Helper()
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	if n == 0 {
		return nil
	}
	cols := make([]arrow.Array, sc.NumFields())
	for j := range cols {
		var parts []arrow.Array
		for _, r := range recs {
			parts = append(parts, r.Column(j))
		}
		c, err := array.Concatenate(parts, mem)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Release()
		cols[j] = c
	}
	return array.NewRecordBatch(sc, cols, n)
}

// cliWindows are the requests the CLI and the Go client read alike, as
// sluice flags and as a ChangeRequest.
func cliWindows(snaps []sluice.Snapshot) []struct {
	name  string
	flags []string
	req   sluice.ChangeRequest
} {
	id := func(i int) string { return strconv.FormatInt(snaps[i].ID, 10) }
	at := time.UnixMilli(snaps[2].TimestampMs).UTC().Format(time.RFC3339Nano)
	return []struct {
		name  string
		flags []string
		req   sluice.ChangeRequest
	}{
		{"whole history", nil, sluice.ChangeRequest{Table: demo.Table}},
		{"window, projection, filter", []string{"--from", id(1), "--to", id(4), "--columns", "order_id,status,amount", "--filter", "amount > 50"},
			sluice.ChangeRequest{Table: demo.Table, FromSnapshot: &snaps[1].ID, ToSnapshot: &snaps[4].ID,
				Columns: []string{"order_id", "status", "amount"}, Filter: "amount > 50"}},
		{"folded", []string{"--fold"}, sluice.ChangeRequest{Table: demo.Table, FoldUpdates: true}},
		{"net", []string{"--net", "--from", id(0)}, sluice.ChangeRequest{Table: demo.Table, NetChanges: true, FromSnapshot: &snaps[0].ID}},
		{"from a commit time, identity", []string{"--from", at, "--identity", "customer"},
			sluice.ChangeRequest{Table: demo.Table, FromTimestampMs: &snaps[2].TimestampMs, Identity: []string{"customer"}}},
		{"flat layout", []string{"--layout", "flat", "--from", id(0), "--columns", "order_id,status"},
			sluice.ChangeRequest{Table: demo.Table, Layout: sluice.LayoutFlat, FromSnapshot: &snaps[0].ID, Columns: []string{"order_id", "status"}}},
	}
}

// TestCLIChanges runs `sluice changes` against a real flightd serving the
// demo table and compares every output format with the Go client's feed
// of the same window: JSON lines with arrow's own JSON of the records,
// CSV cell by cell with the typed values, Parquet and Arrow files read
// back with arrow-go.
func TestCLIChanges(t *testing.T) {
	srv, _ := startDemo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := dialGo(t, ctx, srv.URI())
	snaps, err := c.Snapshots(ctx, demo.Table)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, w := range cliWindows(snaps) {
		t.Run(w.name, func(t *testing.T) {
			want, sc := clientFeed(t, ctx, c, mem, w.req)
			if want == nil {
				t.Fatalf("the window %+v is empty: a comparison of nothing", w.req)
			}
			defer want.Release()

			t.Run("jsonl", func(t *testing.T) {
				got := mustCLI(t, ctx, srv.URI(), append([]string{"changes", demo.Table, "-o", "jsonl"}, w.flags...)...)
				var exp bytes.Buffer
				if err := array.RecordToJSON(want, &exp); err != nil {
					t.Fatal(err)
				}
				g, e := jsonLines(t, got), jsonLines(t, exp.String())
				if !reflect.DeepEqual(g, e) {
					t.Fatalf("sluice changes -o jsonl:\n%s\nthe Go client's feed:\n%s", got, exp.String())
				}
				// The same without -o: stdout is not a terminal.
				if def := mustCLI(t, ctx, srv.URI(), append([]string{"changes", demo.Table}, w.flags...)...); def != got {
					t.Fatalf("the default output to a pipe is not jsonl:\n%s", def)
				}
			})
			t.Run("csv", func(t *testing.T) {
				got := mustCLI(t, ctx, srv.URI(), append([]string{"changes", demo.Table, "-o", "csv"}, w.flags...)...)
				checkCSV(t, got, want)
			})
			for _, format := range []string{"parquet", "arrow"} {
				t.Run(format, func(t *testing.T) {
					path := filepath.Join(dir, strings.ReplaceAll(w.name, " ", "_")+"."+format)
					res := runCLI(t, ctx, srv.URI(), append([]string{"changes", demo.Table, "--out", path, "--progress"}, w.flags...)...)
					if res.code != 0 {
						t.Fatalf("exit %d: %s", res.code, res.stderr)
					}
					// --progress: the summary names the rows and the file.
					if !strings.Contains(res.stderr, fmt.Sprintf("%d rows, ", want.NumRows())) || !strings.Contains(res.stderr, path) {
						t.Errorf("progress on stderr: %q", res.stderr)
					}
					got := readBack(t, mem, format, path)
					defer got.Release()
					if !sameFieldTypes(got.Schema(), sc) || !sameColumns(got, want) {
						t.Fatalf("%s read back:\n%v\nthe Go client's feed:\n%v", format, got, want)
					}
				})
			}
		})
	}
	t.Run("table", func(t *testing.T) {
		out := mustCLI(t, ctx, srv.URI(), "changes", demo.Table, "-o", "table", "--no-color")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		want, _ := clientFeed(t, ctx, c, mem, sluice.ChangeRequest{Table: demo.Table})
		defer want.Release()
		if int64(len(lines)) != want.NumRows()+1 || !strings.HasPrefix(lines[0], "OP ") {
			t.Fatalf("%d lines for %d rows:\n%s", len(lines), want.NumRows(), out)
		}
		// Aligned: each column starts where its header does.
		col := strings.Index(lines[0], "CUSTOMER")
		for _, l := range lines[1:] {
			if l[col-1] != ' ' || l[col] == ' ' {
				t.Fatalf("line %q is not aligned with %q", l, lines[0])
			}
		}
		if strings.Contains(out, "\x1b[") {
			t.Fatal("--no-color output has escapes")
		}
		if !strings.Contains(out, "update_after ") || !strings.Contains(out, "shipped") {
			t.Fatalf("no update in:\n%s", out)
		}
	})
}

// jsonLines parses JSON lines, numbers as json.Number.
func jsonLines(t *testing.T, s string) []any {
	t.Helper()
	var out []any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	for {
		var v any
		if err := dec.Decode(&v); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("%v in:\n%s", err, s)
		}
		out = append(out, v)
	}
}

// checkCSV compares CSV with a record, cell by cell: structs flattened
// into parent.field, nulls (and the fields of a null struct) empty.
func checkCSV(t *testing.T, got string, want arrow.RecordBatch) {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(got)).ReadAll()
	if err != nil {
		t.Fatalf("%v in:\n%s", err, got)
	}
	type leaf struct {
		name   string
		arr    arrow.Array
		parent *array.Struct
	}
	var leaves []leaf
	for j, f := range want.Schema().Fields() {
		if s, ok := want.Column(j).(*array.Struct); ok {
			for k, sf := range f.Type.(*arrow.StructType).Fields() {
				leaves = append(leaves, leaf{f.Name + "." + sf.Name, s.Field(k), s})
			}
			continue
		}
		leaves = append(leaves, leaf{f.Name, want.Column(j), nil})
	}
	if int64(len(rows)) != want.NumRows()+1 {
		t.Fatalf("%d CSV lines for %d rows:\n%s", len(rows), want.NumRows(), got)
	}
	for k, l := range leaves {
		if rows[0][k] != l.name {
			t.Fatalf("header %v, want %s at %d", rows[0], l.name, k)
		}
	}
	for i, row := range rows[1:] {
		for k, l := range leaves {
			null := l.arr.IsNull(i) || (l.parent != nil && l.parent.IsNull(i))
			if !csvCellMatches(t, l.arr, i, null, row[k]) {
				t.Fatalf("row %d, %s: CSV %q, the feed %s\n%s", i, l.name, row[k], l.arr.ValueStr(i), got)
			}
		}
	}
}

func csvCellMatches(t *testing.T, a arrow.Array, i int, null bool, cell string) bool {
	t.Helper()
	if null {
		return cell == ""
	}
	switch a := a.(type) {
	case *array.Int64:
		n, err := strconv.ParseInt(cell, 10, 64)
		return err == nil && n == a.Value(i)
	case *array.Float64:
		f, err := strconv.ParseFloat(cell, 64)
		return err == nil && f == a.Value(i)
	case *array.String:
		return cell == a.Value(i)
	case *array.Timestamp:
		ts, err := time.Parse("2006-01-02 15:04:05.999999999Z07:00", cell)
		return err == nil && ts.UnixMicro() == int64(a.Value(i))
	}
	t.Fatalf("no CSV comparison for %s", a.DataType())
	return false
}

// readBack reads a Parquet or Arrow IPC file into one record.
func readBack(t *testing.T, mem memory.Allocator, format, path string) arrow.RecordBatch {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []arrow.RecordBatch
	var sc *arrow.Schema
	switch format {
	case "parquet":
		pr, err := file.NewParquetReader(f)
		if err != nil {
			t.Fatal(err)
		}
		defer pr.Close()
		fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, mem)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := fr.ReadTable(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer tbl.Release()
		tr := array.NewTableReader(tbl, -1)
		defer tr.Release()
		sc = tbl.Schema()
		for tr.Next() {
			r := tr.RecordBatch()
			r.Retain()
			recs = append(recs, r)
		}
	case "arrow":
		fr, err := ipc.NewFileReader(f, ipc.WithAllocator(mem))
		if err != nil {
			t.Fatal(err)
		}
		defer fr.Close()
		sc = fr.Schema()
		for i := range fr.NumRecords() {
			r, err := fr.RecordBatchAt(i)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, r)
		}
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	// Without the field metadata Parquet adds (field ids): the change
	// row's schema.
	plain := arrow.NewSchema(sc.Fields(), nil)
	rec := concatRecords(t, mem, plain, recs)
	if rec == nil {
		t.Fatalf("%s holds no rows", path)
	}
	return rec
}

// sameColumns compares the columns' values row by row: the values under
// a null struct do not count (Parquet writes them null, the server's
// arrays may hold anything there), nor do the schemas' metadata.
func sameColumns(a, b arrow.RecordBatch) bool {
	if a.NumCols() != b.NumCols() || a.NumRows() != b.NumRows() {
		return false
	}
	for j := range int(a.NumCols()) {
		if !sameValues(a.Column(j), b.Column(j)) {
			return false
		}
	}
	return true
}

func sameValues(x, y arrow.Array) bool {
	sx, okx := x.(*array.Struct)
	sy, oky := y.(*array.Struct)
	if !okx || !oky {
		return array.Equal(x, y)
	}
	if sx.NumField() != sy.NumField() {
		return false
	}
	for i := range sx.Len() {
		if sx.IsNull(i) != sy.IsNull(i) {
			return false
		}
		if sx.IsNull(i) {
			continue
		}
		for k := range sx.NumField() {
			if !array.SliceEqual(sx.Field(k), int64(i), int64(i+1), sy.Field(k), int64(i), int64(i+1)) {
				return false
			}
		}
	}
	return true
}

// sameFieldTypes compares names, types and nullability.
func sameFieldTypes(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i, f := range a.Fields() {
		g := b.Field(i)
		if f.Name != g.Name || f.Nullable != g.Nullable || !arrow.TypeEqual(f.Type, g.Type) {
			return false
		}
	}
	return true
}

// TestCLIControl compares tables, status and snapshots (as JSON) with the
// Go client's answers, and their tables for a person.
func TestCLIControl(t *testing.T) {
	srv, _ := startDemo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := dialGo(t, ctx, srv.URI())
	seq, err := c.CommitSeq(ctx, demo.Table)
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := c.Snapshots(ctx, demo.Table)
	if err != nil {
		t.Fatal(err)
	}

	var tables []struct {
		Name            string `json:"name"`
		CurrentSnapshot int64  `json:"current_snapshot"`
		CommitSeq       int64  `json:"commit_seq"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, ctx, srv.URI(), "tables", "-o", "json")), &tables); err != nil {
		t.Fatal(err)
	}
	if len(tables) != 1 || tables[0].Name != demo.Table || tables[0].CurrentSnapshot != *seq.Snapshot || tables[0].CommitSeq != seq.CommitSeq {
		t.Fatalf("sluice tables: %+v, the client: %v", tables, seq)
	}
	var status []struct {
		Table       string `json:"table"`
		CommitSeq   int64  `json:"commit_seq"`
		Snapshot    int64  `json:"snapshot"`
		TimestampMs int64  `json:"timestamp_ms"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, ctx, srv.URI(), "status", "-o", "json")), &status); err != nil {
		t.Fatal(err)
	}
	if len(status) != 1 || status[0].CommitSeq != seq.CommitSeq || status[0].Snapshot != *seq.Snapshot || status[0].TimestampMs != seq.TimestampMs {
		t.Fatalf("sluice status: %+v, the client: %v", status, seq)
	}
	var got []struct {
		Snapshot    int64  `json:"snapshot"`
		CommitSeq   int64  `json:"commit_seq"`
		TimestampMs int64  `json:"timestamp_ms"`
		Operation   string `json:"operation"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, ctx, srv.URI(), "snapshots", demo.Table, "-o", "json")), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(snaps) {
		t.Fatalf("%d snapshots, want %d", len(got), len(snaps))
	}
	for i, s := range snaps {
		if got[i].Snapshot != s.ID || got[i].CommitSeq != s.CommitSeq || got[i].TimestampMs != s.TimestampMs || got[i].Operation != s.Operation {
			t.Fatalf("snapshot %d: %+v, want %v", i, got[i], s)
		}
	}
	// The tables for a person name the same.
	if out := mustCLI(t, ctx, srv.URI(), "status"); !strings.Contains(out, fmt.Sprintf("%s  %d", demo.Table, seq.CommitSeq)) ||
		!strings.Contains(out, strconv.FormatInt(*seq.Snapshot, 10)) {
		t.Fatalf("sluice status:\n%s", out)
	}
	out := mustCLI(t, ctx, srv.URI(), "snapshots", demo.Table)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != len(snaps)+1 || !strings.Contains(lines[len(lines)-1], strconv.FormatInt(snaps[len(snaps)-1].ID, 10)) {
		t.Fatalf("sluice snapshots:\n%s", out)
	}
	// explain: the plan, as the client's, with the explain action's names.
	var plan struct {
		Table        string   `json:"table"`
		FromSnapshot *int64   `json:"from_snapshot"`
		ToSnapshot   *int64   `json:"to_snapshot"`
		Columns      []string `json:"columns"`
		Identity     []string `json:"identity"`
		Snapshots    []struct {
			Snapshot  int64  `json:"snapshot"`
			CommitSeq int64  `json:"commit_seq"`
			Strategy  string `json:"strategy"`
			Files     []struct {
				Path          string `json:"path"`
				Role          string `json:"role"`
				FileSizeBytes int64  `json:"file_size_bytes"`
			} `json:"files"`
			BytesRead int64 `json:"bytes_read"`
		} `json:"snapshots"`
		FilesRead   int64 `json:"files_read"`
		BytesRead   int64 `json:"bytes_read"`
		RecordsRead int64 `json:"records_read"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, ctx, srv.URI(), "explain", demo.Table, "--from", strconv.FormatInt(snaps[1].ID, 10), "-o", "json")), &plan); err != nil {
		t.Fatal(err)
	}
	want, err := c.Explain(ctx, sluice.ChangeRequest{Table: demo.Table, FromSnapshot: &snaps[1].ID})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Table != want.Table || *plan.FromSnapshot != *want.FromSnapshot || *plan.ToSnapshot != *want.ToSnapshot ||
		!reflect.DeepEqual(plan.Columns, want.Columns) || !reflect.DeepEqual(plan.Identity, want.Identity) ||
		plan.FilesRead != want.FilesRead || plan.BytesRead != want.BytesRead || plan.RecordsRead != want.RecordsRead ||
		len(plan.Snapshots) != len(want.Snapshots) || len(want.Snapshots) != len(snaps)-2 {
		t.Fatalf("sluice explain: %+v\nthe client: %v", plan, want)
	}
	for i, s := range want.Snapshots {
		g := plan.Snapshots[i]
		if g.Snapshot != s.Snapshot || g.CommitSeq != s.CommitSeq || g.Strategy != s.Strategy || g.BytesRead != s.BytesRead ||
			len(g.Files) != len(s.Files) {
			t.Fatalf("snapshot %d: %+v, the client: %+v", i, g, s)
		}
		for k, f := range s.Files {
			if g.Files[k].Path != f.Path || g.Files[k].Role != f.Role || g.Files[k].FileSizeBytes != f.FileSizeBytes {
				t.Fatalf("snapshot %d file %d: %+v, the client: %+v", i, k, g.Files[k], f)
			}
		}
	}
	if out := mustCLI(t, ctx, srv.URI(), "explain", demo.Table, "--files"); !strings.Contains(out, "equality-delete") ||
		!strings.Contains(out, "position-delete") || !strings.Contains(out, want.Snapshots[0].Files[0].Path) {
		t.Fatalf("sluice explain:\n%s", out)
	}
}

// TestCLIErrors checks the exit status and message of the server's errors,
// and that a failed read leaves no file behind.
func TestCLIErrors(t *testing.T) {
	srv, _ := startDemo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"changes", "e2e.nope"}, 15, "NotFound"},
		{[]string{"snapshots", "e2e.nope"}, 15, "NotFound"},
		{[]string{"changes", demo.Table, "--filter", "amount >"}, 13, "InvalidArgument"},
		{[]string{"changes", demo.Table, "--columns", "nope"}, 13, "InvalidArgument"},
		{[]string{"changes", demo.Table, "--from", "99"}, 15, "NotFound"},
		{[]string{"explain", demo.Table, "--filter", "amount >"}, 13, "InvalidArgument"},
		{[]string{"tail", demo.Table, "--filter", "nope = 1"}, 13, "InvalidArgument"},
		{[]string{"changes", demo.Table, "--layout", "flat", "--fold"}, 13, "InvalidArgument"},
		{[]string{"changes", "e2e.nope", "--out", filepath.Join(dir, "nope.parquet")}, 15, "NotFound"},
	} {
		res := runCLI(t, ctx, srv.URI(), tt.args...)
		if res.code != tt.code || !strings.HasPrefix(res.stderr, "sluice "+tt.args[0]+": "+tt.msg+": ") {
			t.Errorf("sluice %v: exit %d, stderr %q; want %d and %s", tt.args, res.code, res.stderr, tt.code, tt.msg)
		}
		if res.stdout != "" {
			t.Errorf("sluice %v wrote %q", tt.args, res.stdout)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a failed read left %v", ents)
	}
	// No server: Unavailable.
	res := runCLI(t, ctx, "grpc://127.0.0.1:1", "tables")
	if res.code != 24 || !strings.Contains(res.stderr, "Unavailable") {
		t.Fatalf("no server: exit %d %q", res.code, res.stderr)
	}
}

// TestCLIMidStreamFailure reads a history whose third snapshot lost half
// a data file: the read streams the first snapshots, then fails. The CLI
// exits with FailedPrecondition, and --out leaves no file.
func TestCLIMidStreamFailure(t *testing.T) {
	const victim = 2
	fix := writeEvents(t, 5, 21)
	data, _ := addedFiles(t, fix.Warehouse, eventsTable, fix.Snapshots[victim].Snapshot)
	st, err := os.Stat(data[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(data[0], st.Size()/2); err != nil {
		t.Fatal(err)
	}
	srv := startFlightd(t, "--warehouse", fix.Warehouse, "--max-batch-rows", "8")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	for _, format := range []string{"jsonl", "csv", "parquet", "arrow"} {
		path := filepath.Join(dir, "events."+format)
		res := runCLI(t, ctx, srv.URI(), "changes", eventsTable, "--out", path)
		if res.code != 19 || !strings.Contains(res.stderr, "FailedPrecondition") {
			t.Fatalf("%s: exit %d, stderr %q", format, res.code, res.stderr)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("failed reads left %v", ents)
	}
	// To stdout: the rows before the failure came out, and the exit
	// status says the feed is not whole.
	res := runCLI(t, ctx, srv.URI(), "changes", eventsTable, "-o", "jsonl")
	n := 0
	for _, s := range fix.Snapshots[:victim] {
		n += len(s.Rows)
	}
	if got := strings.Count(res.stdout, "\n"); res.code != 19 || got < 8 || got > n {
		t.Fatalf("exit %d after %d lines (the snapshots before the damaged one hold %d)", res.code, got, n)
	}
}
