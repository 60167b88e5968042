package e2e

// The Delta fixtures (testdata/delta: tables delta-rs and delta-kernel-rs
// test against, with the change feeds those projects state in
// EXPECTED.json) read through a real flightd with the Go client. The
// mapping of the peers' queries onto Sluice windows, and the differences
// stated there, are those of feed/delta_fixtures_test.go, whose small
// helpers are copied here (a _test file cannot be imported): Delta's
// inclusive start_version v is from_snapshot v-1, its inclusive
// start_timestamp T is from_timestamp_ms T-1, its end bounds are Sluice's;
// the changes are flattened into Delta CDF rows and compared as multisets
// over the query's columns.

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

// deltaFixtureDir holds the Delta fixtures, relative to e2e/.
const deltaFixtureDir = "../testdata/delta"

// copyDeltaFixtures copies every table of testdata/delta (each folder
// holding a _delta_log; not the written/ and gen/ folders) into a new
// folder, keeping the files' modification times (a commit without a
// commitInfo timestamp is dated by its file's), and returns it: the tests
// serve and change the copy, never the committed tree.
func copyDeltaFixtures(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	entries, err := os.ReadDir(deltaFixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		src := filepath.Join(deltaFixtureDir, e.Name())
		if st, err := os.Stat(filepath.Join(src, "_delta_log")); err != nil || !st.IsDir() {
			continue
		}
		copyTree(t, src, filepath.Join(root, e.Name()))
		n++
	}
	if n == 0 {
		t.Fatalf("no Delta tables under %s", deltaFixtureDir)
	}
	return root
}

// copyTree copies the folder src to dst, keeping modification times.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.Chtimes(to, info.ModTime(), info.ModTime())
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}

// serveDeltaFixtures starts flightd on a copy of the Delta fixtures (and an
// empty Iceberg warehouse) and returns it with the copy's folder.
func serveDeltaFixtures(t *testing.T, args ...string) (*flightd, string) {
	t.Helper()
	root := copyDeltaFixtures(t)
	args = append([]string{"--warehouse", t.TempDir(), "--delta-root", root}, args...)
	return startFlightd(t, args...), root
}

type deltaExpected struct {
	Table   string `json:"table"`
	Queries []struct {
		ID      string `json:"id"`
		Request struct {
			StartVersion    *int64 `json:"start_version"`
			EndVersion      *int64 `json:"end_version"`
			StartTimestamp  string `json:"start_timestamp"`
			EndTimestamp    string `json:"end_timestamp"`
			PredicateSQL    string `json:"predicate_sql"`
			AllowOutOfRange bool   `json:"allow_out_of_range"`
		} `json:"request"`
		Columns     []string         `json:"columns"`
		Rows        []map[string]any `json:"rows"`
		ExpectError any              `json:"expect_error"`
	} `json:"queries"`
}

// deltaOutOfRange says how Sluice answers the fixtures' out-of-range
// queries, which the peers refuse (feed/delta_fixtures_test.go): a window
// that starts at or after the latest version is empty (how a follower sees
// "nothing new"); the others are refused with a message saying this and
// the code given.
var deltaOutOfRange = map[string]struct {
	msg  string
	code codes.Code
}{
	"delta-rs:test_load_version_out_of_range":                         {"empty", codes.OK},
	"delta-rs:test_load_timestamp_out_of_range":                       {"empty", codes.OK},
	"delta-kernel-rs:invalid_range_end_before_start":                  {"empty", codes.OK},
	"delta-rs:test_load_bad_version_range":                            {"swap them", codes.InvalidArgument},
	"delta-kernel-rs:invalid_range_start_after_last_version_of_table": {"is not a snapshot", codes.NotFound},
}

func readDeltaExpected(t *testing.T, path string) deltaExpected {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var exp deltaExpected
	dec := json.NewDecoder(f)
	dec.UseNumber()
	if err := dec.Decode(&exp); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return exp
}

// TestDeltaFixtures reads every query of every testdata/delta/*/EXPECTED.json
// through flightd with the Go client and compares the rows with the peers'
// (with the differences feed/delta_fixtures_test.go states).
func TestDeltaFixtures(t *testing.T) {
	srv, root := serveDeltaFixtures(t, "--max-batch-rows", "5")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	client, err := sluice.Dial(ctx, srv.URI(), sluice.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		client.Close()
		mem.AssertSize(t, 0)
	}()
	paths, err := filepath.Glob(filepath.Join(root, "*", "EXPECTED.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no EXPECTED.json under %s: %v", root, err)
	}
	queries := 0
	for _, path := range paths {
		exp := readDeltaExpected(t, path)
		name := "delta." + filepath.Base(filepath.Dir(path))
		t.Run(filepath.Base(filepath.Dir(path)), func(t *testing.T) {
			for _, q := range exp.Queries {
				queries++
				t.Run(q.ID, func(t *testing.T) {
					req := sluice.ChangeRequest{Table: name}
					r := q.Request
					if r.StartVersion != nil && *r.StartVersion > 0 {
						from := *r.StartVersion - 1
						req.FromSnapshot = &from
					}
					req.ToSnapshot = r.EndVersion
					if r.StartTimestamp != "" {
						ts := deltaParseTime(t, r.StartTimestamp) - 1
						req.FromTimestampMs = &ts
					}
					if r.EndTimestamp != "" {
						ts := deltaParseTime(t, r.EndTimestamp)
						req.ToTimestampMs = &ts
					}
					req.Filter = deltaFilter(r.PredicateSQL)
					got, err := deltaRowsGo(ctx, client, req)
					if q.ExpectError != nil {
						want, ok := deltaOutOfRange[q.ID]
						switch {
						case !ok:
							t.Fatalf("no Sluice answer recorded for the peer's error %v", q.ExpectError)
						case want.msg == "empty":
							if err != nil || len(got) != 0 {
								t.Fatalf("got %d rows, err %v; want an empty window", len(got), err)
							}
						case err == nil || !strings.Contains(err.Error(), want.msg) || sluice.Code(err) != want.code:
							t.Fatalf("got err %v, want %s saying %q", err, want.code, want.msg)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					compareDeltaRows(t, q.ID, r.PredicateSQL, q.Columns, got, q.Rows)
				})
			}
		})
	}
	if queries < 28 {
		t.Fatalf("%d queries in the fixtures, want the 28 testdata/delta/README.md counts", queries)
	}
}

// compareDeltaRows compares the flattened rows got with the peer's rows
// want over cols, with the differences feed/delta_fixtures_test.go states.
func compareDeltaRows(t *testing.T, id, predicate string, cols []string, got []map[string]string, want []map[string]any) {
	t.Helper()
	var gotKeys, wantKeys []string
	for _, row := range got {
		gotKeys = append(gotKeys, deltaKey(row, cols))
	}
	for _, row := range want {
		norm := map[string]string{}
		for k, v := range row {
			norm[k] = deltaJSONValue(v)
		}
		wantKeys = append(wantKeys, deltaKey(norm, cols))
	}
	switch {
	case id == "delta-rs:test_respect_ict":
		// delta-rs keeps or skips each commit on its own timestamp, and
		// skips commit 1, whose inCommitTimestamp was edited to lie before
		// the start. A Sluice window is one contiguous range of commits,
		// resolved as Spark resolves startingTimestamp: commits 0..3.
		// Commit 1's rows carry its in-commit timestamp.
		var rest []string
		ict := 0
		for _, row := range got {
			if row["_commit_version"] == "1" {
				if row["_commit_timestamp"] != "2023-05-12T06:50:06.883" || row["_change_type"] != "insert" {
					t.Errorf("commit 1 row %v: want an insert at its in-commit timestamp", row)
				}
				ict++
				continue
			}
			rest = append(rest, deltaKey(row, cols))
		}
		if ict != 4 {
			t.Errorf("%d rows of commit 1, want its 4 inserts", ict)
		}
		gotKeys = rest
	case id == "delta-kernel-rs:update_operations":
		// Commits holding only update_pre (1) or only update_post (2)
		// rows: an update image without its other half is, in Sluice's
		// vocabulary, a delete or an insert.
		for i, k := range wantKeys {
			k = strings.Replace(k, "_change_type=update_pre ", "_change_type=delete ", 1)
			wantKeys[i] = strings.Replace(k, "_change_type=update_post ", "_change_type=insert ", 1)
		}
	case predicate != "":
		// The peer filters flat rows one by one; Sluice keeps both images
		// of an update when either matches.
		gotKeys = deltaDropPairedImages(got, cols, wantKeys)
	}
	slices.Sort(gotKeys)
	slices.Sort(wantKeys)
	if !slices.Equal(gotKeys, wantKeys) {
		t.Errorf("rows differ (columns %v)\n got:\n  %s\nwant:\n  %s", cols,
			strings.Join(gotKeys, "\n  "), strings.Join(wantKeys, "\n  "))
	}
}

// deltaRowsGo reads a window with the Go client and flattens it into Delta
// CDF rows. Every batch must carry its own version as snapshot and
// commit_seq.
func deltaRowsGo(ctx context.Context, c *sluice.Client, req sluice.ChangeRequest) ([]map[string]string, error) {
	rdr, err := c.Changes(ctx, req)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var out []map[string]string
	for b, err := range rdr.All() {
		if err != nil {
			return nil, err
		}
		if b.Meta.CommitSeq != b.Meta.Snapshot {
			return nil, fmt.Errorf("a batch of version %d says commit_seq %d", b.Meta.Snapshot, b.Meta.CommitSeq)
		}
		rows, err := deltaFlatten(b.Record)
		if err != nil {
			return nil, err
		}
		for _, row := range rows {
			if row["_commit_version"] != strconv.FormatInt(b.Meta.Snapshot, 10) {
				return nil, fmt.Errorf("a row of version %s in a batch of %d", row["_commit_version"], b.Meta.Snapshot)
			}
		}
		out = append(out, rows...)
	}
	return out, nil
}

// deltaFlatten turns a change batch into Delta CDF rows: the image's
// columns, _change_type, _commit_version and _commit_timestamp.
func deltaFlatten(rec arrow.RecordBatch) ([]map[string]string, error) {
	ops := rec.Column(0).(*array.String)
	before, after := rec.Column(1).(*array.Struct), rec.Column(2).(*array.Struct)
	snaps := rec.Column(3).(*array.Int64)
	ts := rec.Column(4).(*array.Timestamp)
	var out []map[string]string
	for i := range int(rec.NumRows()) {
		row := map[string]string{}
		img := after
		switch ops.Value(i) {
		case sluice.OpInsert:
			row["_change_type"] = "insert"
		case sluice.OpDelete:
			row["_change_type"], img = "delete", before
		case sluice.OpUpdateBefore:
			row["_change_type"], img = "update_preimage", before
		case sluice.OpUpdateAfter:
			row["_change_type"] = "update_postimage"
		default:
			return nil, fmt.Errorf("unexpected op %q", ops.Value(i))
		}
		st := img.DataType().(*arrow.StructType)
		for f := range st.NumFields() {
			row[st.Field(f).Name] = deltaArrowValue(img.Field(f), i)
		}
		row["_commit_version"] = strconv.FormatInt(snaps.Value(i), 10)
		row["_commit_timestamp"] = time.UnixMicro(int64(ts.Value(i))).UTC().Format("2006-01-02T15:04:05.000")
		out = append(out, row)
	}
	return out, nil
}

// deltaDropPairedImages returns the keys of the rows of got, without the
// update images whose other half (same id and version) is among want and
// that are not among want themselves.
func deltaDropPairedImages(got []map[string]string, cols []string, want []string) []string {
	wanted := map[string]int{}
	for _, k := range want {
		wanted[k]++
	}
	var out []string
	for _, row := range got {
		k := deltaKey(row, cols)
		if wanted[k] > 0 {
			wanted[k]--
			out = append(out, k)
			continue
		}
		other := map[string]string{"update_preimage": "update_postimage", "update_postimage": "update_preimage"}[row["_change_type"]]
		paired := false
		for _, o := range got {
			if other != "" && o["_change_type"] == other && o["id"] == row["id"] && o["_commit_version"] == row["_commit_version"] {
				paired = true
			}
		}
		if !paired {
			out = append(out, k)
		}
	}
	return out
}

func deltaParseTime(t *testing.T, s string) int64 {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return ts.UnixMilli()
}

var sqlDate = regexp.MustCompile(`DATE '`)

// deltaFilter turns the peers' SQL predicates into Sluice's filter grammar
// (dates are quoted strings).
func deltaFilter(sql string) string {
	return sqlDate.ReplaceAllString(sql, "'")
}

func deltaKey(row map[string]string, cols []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		v, ok := row[c]
		if !ok {
			v = "<absent>"
		}
		parts[i] = c + "=" + v
	}
	return strings.Join(parts, " ")
}

func deltaJSONValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return strconv.FormatInt(n, 10)
		}
		f, _ := x.Float64()
		return strconv.FormatFloat(f, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case string:
		return x
	}
	return fmt.Sprint(v)
}

func deltaArrowValue(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "null"
	}
	switch c := a.(type) {
	case *array.Float64:
		return strconv.FormatFloat(c.Value(i), 'g', -1, 64)
	case *array.Float32:
		return strconv.FormatFloat(float64(c.Value(i)), 'g', -1, 32)
	case *array.Date32:
		return c.Value(i).ToTime().UTC().Format("2006-01-02")
	case *array.Decimal128:
		return c.Value(i).ToString(c.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Timestamp:
		unit := c.DataType().(*arrow.TimestampType).Unit
		return c.Value(i).ToTime(unit).UTC().Format("2006-01-02T15:04:05.000000")
	}
	return a.ValueStr(i)
}
