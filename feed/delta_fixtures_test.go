package feed_test

// Delta fixture tests: real Delta tables that delta-rs and delta-kernel-rs
// test against (testdata/delta at the repository root, with their
// provenance), and the change feeds those projects' own tests state
// (EXPECTED.json). Each query maps onto a Sluice window: Delta's inclusive
// start_version v is from_snapshot v-1, its inclusive start_timestamp T is
// from_timestamp_ms T-1, its end bounds are Sluice's. Sluice's changes are
// flattened into Delta CDF rows (insert, delete, update_preimage,
// update_postimage with _commit_version and _commit_timestamp) and compared
// as multisets over the query's columns.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/feed"
)

// deltaFixtureDir is where the Delta fixtures are.
const deltaFixtureDir = "../testdata/delta"

// deltaTables serves Delta tables by name.
type deltaTables map[string]*feed.DeltaSource

func (ts deltaTables) Load(ctx context.Context, name string) (feed.Table, error) {
	src, ok := ts[name]
	if !ok {
		return nil, fmt.Errorf("no table %s", name)
	}
	return src.Load(ctx)
}

func (ts deltaTables) LoadTable(context.Context, string) (*table.Table, error) {
	return nil, errors.New("no Iceberg tables here")
}

func (ts deltaTables) ListTables(context.Context) ([]string, error) {
	var names []string
	for n := range ts {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// openDelta serves the Delta table in dir as name.
func openDelta(t *testing.T, dir, name string) *feed.DeltaSource {
	t.Helper()
	src, err := feed.NewDeltaSource(context.Background(), os.DirFS(dir), name)
	if err != nil {
		t.Fatal(err)
	}
	return src
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

// deltaRange names how Sluice answers the fixtures' out-of-range queries,
// which the peers refuse: a window that starts at or after the latest
// version is empty (that is how a follower sees "nothing new").
var deltaOutOfRange = map[string]string{
	"delta-rs:test_load_version_out_of_range":                         "empty",
	"delta-rs:test_load_timestamp_out_of_range":                       "empty",
	"delta-kernel-rs:invalid_range_end_before_start":                  "empty",
	"delta-rs:test_load_bad_version_range":                            "swap them",
	"delta-kernel-rs:invalid_range_start_after_last_version_of_table": "is not a snapshot",
}

func TestDeltaFixturesExpected(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(deltaFixtureDir, "*", "EXPECTED.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no Delta fixtures under %s: %v", deltaFixtureDir, err)
	}
	for _, path := range paths {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var exp deltaExpected
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(f)
			dec.UseNumber()
			err = dec.Decode(&exp)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			name := "delta." + filepath.Base(dir)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			eng := feed.New(deltaTables{name: openDelta(t, dir, name)}, feed.Options{Allocator: mem, MaxBatchRows: 5})
			for _, q := range exp.Queries {
				t.Run(q.ID, func(t *testing.T) {
					req := feed.Request{Table: name}
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
					got, err := deltaRows(eng, req)
					if q.ExpectError != nil {
						want, ok := deltaOutOfRange[q.ID]
						switch {
						case !ok:
							t.Fatalf("no Sluice answer recorded for the peer's error %v", q.ExpectError)
						case want == "empty":
							if err != nil || len(got) != 0 {
								t.Fatalf("got %d rows, err %v; want an empty window", len(got), err)
							}
						case err == nil || !strings.Contains(err.Error(), want):
							t.Fatalf("got err %v, want one saying %q", err, want)
						}
						t.Logf("peer: %v; Sluice: %v", q.ExpectError, err)
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					cols := q.Columns
					var gotKeys, wantKeys []string
					for _, row := range got {
						gotKeys = append(gotKeys, deltaKey(row, cols))
					}
					for _, row := range q.Rows {
						norm := map[string]string{}
						for k, v := range row {
							norm[k] = deltaJSONValue(v)
						}
						wantKeys = append(wantKeys, deltaKey(norm, cols))
					}
					switch {
					case q.ID == "delta-rs:test_respect_ict":
						// delta-rs keeps or skips each commit on its own
						// timestamp, and skips commit 1, whose
						// inCommitTimestamp was edited to lie before the start.
						// A Sluice window is one contiguous range of commits
						// (a feed that skipped one would not rebuild the
						// state), resolved as Spark resolves
						// startingTimestamp: commits 0..3. Commit 1's rows
						// carry its in-commit timestamp.
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
					case q.ID == "delta-kernel-rs:update_operations":
						// The fixture's commits hold only update_pre (commit 1)
						// or only update_post (commit 2) rows, which kernel
						// passes through. An update image without its other
						// half is, in Sluice's vocabulary, a delete or an
						// insert.
						for i, k := range wantKeys {
							k = strings.Replace(k, "_change_type=update_pre ", "_change_type=delete ", 1)
							wantKeys[i] = strings.Replace(k, "_change_type=update_post ", "_change_type=insert ", 1)
						}
					case r.PredicateSQL != "":
						// The peer filters flat rows one by one; Sluice keeps
						// both images of an update when either matches (SPEC:
						// a consumer must see a row leave the filter). The
						// other images are the only extra rows.
						gotKeys = deltaDropPairedImages(got, cols, wantKeys)
					}
					slices.Sort(gotKeys)
					slices.Sort(wantKeys)
					if !slices.Equal(gotKeys, wantKeys) {
						t.Errorf("rows differ (columns %v)\n got:\n  %s\nwant:\n  %s", cols,
							strings.Join(gotKeys, "\n  "), strings.Join(wantKeys, "\n  "))
					}
				})
			}
		})
	}
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
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return ts.UnixMilli()
}

var sqlDate = regexp.MustCompile(`DATE '`)

// deltaFilter turns the peers' SQL predicates into Sluice's filter
// grammar (dates are quoted strings).
func deltaFilter(sql string) string {
	return sqlDate.ReplaceAllString(sql, "'")
}

// deltaRows reads a window and flattens it into Delta CDF rows.
func deltaRows(eng *feed.Engine, req feed.Request) ([]map[string]string, error) {
	ctx := context.Background()
	p, err := eng.Plan(ctx, req)
	if err != nil {
		return nil, err
	}
	var out []map[string]string
	for b, err := range eng.Read(ctx, p) {
		if err != nil {
			return nil, err
		}
		rec := b.Record
		ops := rec.Column(0).(*array.String)
		before, after := rec.Column(1).(*array.Struct), rec.Column(2).(*array.Struct)
		snaps := rec.Column(3).(*array.Int64)
		ts := rec.Column(4).(*array.Timestamp)
		for i := range int(rec.NumRows()) {
			row := map[string]string{}
			img := after
			switch ops.Value(i) {
			case feed.OpInsert:
				row["_change_type"] = "insert"
			case feed.OpDelete:
				row["_change_type"], img = "delete", before
			case feed.OpUpdateBefore:
				row["_change_type"], img = "update_preimage", before
			case feed.OpUpdateAfter:
				row["_change_type"] = "update_postimage"
			default:
				rec.Release()
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
		rec.Release()
	}
	return out, nil
}

func deltaKey(row map[string]string, cols []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		v, ok := row[c]
		if !ok {
			v = "<absent>"
		}
		parts[i] = c + "=" + deltaCanon(v)
	}
	return strings.Join(parts, " ")
}

var (
	deltaDecimal = regexp.MustCompile(`^-?[0-9]+\.[0-9]*?0+$`)
	deltaDate    = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
)

// deltaCanon writes a value the same way before and after a type widening:
// decimals without trailing zeros (a wider scale), dates as midnight (a
// date widened to timestamp_ntz).
func deltaCanon(v string) string {
	if deltaDecimal.MatchString(v) {
		v = strings.TrimSuffix(strings.TrimRight(v, "0"), ".")
	}
	if deltaDate.MatchString(v) {
		v += "T00:00:00.000000"
	}
	return v
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
