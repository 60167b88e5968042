// Package deltafx reads the Delta fixtures' EXPECTED.json files (the
// change feeds delta-rs's and delta-kernel-rs's own tests state for real
// tables, under testdata/delta) and compares Sluice's feeds with them, for
// the engine's tests and the end-to-end ones alike.
//
// A query maps onto a Sluice window: Delta's inclusive start_version v is
// from_snapshot v-1, its inclusive start_timestamp T is from_timestamp_ms
// T-1, its end bounds are Sluice's. Sluice's changes are flattened into
// Delta CDF rows (insert, delete, update_preimage, update_postimage with
// _commit_version and _commit_timestamp) and compared as multisets over
// the query's columns, with the differences Compare states.
package deltafx

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Expected is one fixture's EXPECTED.json.
type Expected struct {
	Table   string  `json:"table"`
	Queries []Query `json:"queries"`
}

// Query is one of the peers' change feed queries and its answer.
type Query struct {
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
}

// Read reads an EXPECTED.json file, keeping 64-bit integers exact.
func Read(path string) (Expected, error) {
	var exp Expected
	f, err := os.Open(path)
	if err != nil {
		return exp, err
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.UseNumber()
	if err := dec.Decode(&exp); err != nil {
		return exp, fmt.Errorf("%s: %w", path, err)
	}
	return exp, nil
}

// Window is a query's Sluice window.
type Window struct {
	FromSnapshot, ToSnapshot       *int64
	FromTimestampMs, ToTimestampMs *int64
	// Filter is the predicate in Sluice's filter grammar.
	Filter string
}

var sqlDate = regexp.MustCompile(`DATE '`)

// Window maps the query onto a Sluice window.
func (q Query) Window() (Window, error) {
	var w Window
	r := q.Request
	if r.StartVersion != nil && *r.StartVersion > 0 {
		from := *r.StartVersion - 1
		w.FromSnapshot = &from
	}
	w.ToSnapshot = r.EndVersion
	for _, b := range []struct {
		text  string
		shift int64
		into  **int64
	}{{r.StartTimestamp, -1, &w.FromTimestampMs}, {r.EndTimestamp, 0, &w.ToTimestampMs}} {
		if b.text == "" {
			continue
		}
		ts, err := time.Parse(time.RFC3339Nano, b.text)
		if err != nil {
			return w, fmt.Errorf("query %s: %w", q.ID, err)
		}
		ms := ts.UnixMilli() + b.shift
		*b.into = &ms
	}
	w.Filter = sqlDate.ReplaceAllString(r.PredicateSQL, "'") // dates are quoted strings
	return w, nil
}

// Refusal is how Sluice answers a query the peers refuse: Empty, or an
// error whose message says Says.
type Refusal struct {
	Empty bool
	Says  string
}

// Refusals are Sluice's answers to the fixtures' out-of-range queries: a
// window that starts at or after the latest version is empty (that is how
// a follower sees "nothing new"); a reversed window and a version past the
// latest are refused.
var Refusals = map[string]Refusal{
	"delta-rs:test_load_version_out_of_range":                         {Empty: true},
	"delta-rs:test_load_timestamp_out_of_range":                       {Empty: true},
	"delta-kernel-rs:invalid_range_end_before_start":                  {Empty: true},
	"delta-rs:test_load_bad_version_range":                            {Says: "swap them"},
	"delta-kernel-rs:invalid_range_start_after_last_version_of_table": {Says: "is not a snapshot"},
}

// Flatten turns a change batch (op, before, after, snapshot, ts) into Delta
// CDF rows: the image's columns, _change_type, _commit_version and
// _commit_timestamp, each value written by Value.
func Flatten(rec arrow.RecordBatch) ([]map[string]string, error) {
	ops := rec.Column(0).(*array.String)
	before, after := rec.Column(1).(*array.Struct), rec.Column(2).(*array.Struct)
	snaps := rec.Column(3).(*array.Int64)
	ts := rec.Column(4).(*array.Timestamp)
	var out []map[string]string
	for i := range int(rec.NumRows()) {
		row := map[string]string{}
		img := after
		switch ops.Value(i) {
		case "insert":
			row["_change_type"] = "insert"
		case "delete":
			row["_change_type"], img = "delete", before
		case "update_before":
			row["_change_type"], img = "update_preimage", before
		case "update_after":
			row["_change_type"] = "update_postimage"
		default:
			return nil, fmt.Errorf("unexpected op %q", ops.Value(i))
		}
		st := img.DataType().(*arrow.StructType)
		for f := range st.NumFields() {
			row[st.Field(f).Name] = Value(img.Field(f), i)
		}
		row["_commit_version"] = strconv.FormatInt(snaps.Value(i), 10)
		row["_commit_timestamp"] = time.UnixMicro(int64(ts.Value(i))).UTC().Format("2006-01-02T15:04:05.000")
		out = append(out, row)
	}
	return out, nil
}

// Compare compares flattened rows got with the query's rows over its
// columns, and returns what differs ("" when nothing does). Where Sluice
// deliberately answers otherwise than the peer, it says how:
//
//   - delta-rs:test_respect_ict: delta-rs keeps or skips each commit on its
//     own timestamp, and skips commit 1, whose inCommitTimestamp was edited
//     to lie before the start. A Sluice window is one contiguous range of
//     commits (a feed that skipped one would not rebuild the state),
//     resolved as Spark resolves startingTimestamp: commits 0..3; commit
//     1's 4 inserts carry its in-commit timestamp.
//   - delta-kernel-rs:update_operations: commits holding only update_pre
//     or only update_post rows, which kernel passes through. An update
//     image without its other half is, in Sluice's vocabulary, a delete or
//     an insert.
//   - a predicate: the peer filters flat rows one by one; Sluice keeps both
//     images of an update when either matches (a consumer must see a row
//     leave the filter). Those other images are the only extra rows.
func Compare(q Query, got []map[string]string) string {
	cols := q.Columns
	var gotKeys, wantKeys []string
	for _, row := range got {
		gotKeys = append(gotKeys, Key(row, cols))
	}
	for _, row := range q.Rows {
		norm := map[string]string{}
		for k, v := range row {
			norm[k] = JSONValue(v)
		}
		wantKeys = append(wantKeys, Key(norm, cols))
	}
	var problems []string
	switch {
	case q.ID == "delta-rs:test_respect_ict":
		var rest []string
		ict := 0
		for _, row := range got {
			if row["_commit_version"] != "1" {
				rest = append(rest, Key(row, cols))
				continue
			}
			if row["_commit_timestamp"] != "2023-05-12T06:50:06.883" || row["_change_type"] != "insert" {
				problems = append(problems, fmt.Sprintf("commit 1 row %v: want an insert at its in-commit timestamp", row))
			}
			ict++
		}
		if ict != 4 {
			problems = append(problems, fmt.Sprintf("%d rows of commit 1, want its 4 inserts", ict))
		}
		gotKeys = rest
	case q.ID == "delta-kernel-rs:update_operations":
		for i, k := range wantKeys {
			k = strings.Replace(k, "_change_type=update_pre ", "_change_type=delete ", 1)
			wantKeys[i] = strings.Replace(k, "_change_type=update_post ", "_change_type=insert ", 1)
		}
	case q.Request.PredicateSQL != "":
		gotKeys = dropPairedImages(got, cols, wantKeys)
	}
	slices.Sort(gotKeys)
	slices.Sort(wantKeys)
	if !slices.Equal(gotKeys, wantKeys) {
		problems = append(problems, fmt.Sprintf("rows differ (columns %v)\n got:\n  %s\nwant:\n  %s", cols,
			strings.Join(gotKeys, "\n  "), strings.Join(wantKeys, "\n  ")))
	}
	return strings.Join(problems, "\n")
}

// dropPairedImages returns the keys of the rows of got, without the update
// images that are not among want and whose other half (same id and
// version) is in got.
func dropPairedImages(got []map[string]string, cols []string, want []string) []string {
	wanted := map[string]int{}
	for _, k := range want {
		wanted[k]++
	}
	other := map[string]string{"update_preimage": "update_postimage", "update_postimage": "update_preimage"}
	var out []string
	for _, row := range got {
		k := Key(row, cols)
		if wanted[k] > 0 {
			wanted[k]--
			out = append(out, k)
			continue
		}
		paired := slices.ContainsFunc(got, func(o map[string]string) bool {
			return other[row["_change_type"]] != "" && o["_change_type"] == other[row["_change_type"]] &&
				o["id"] == row["id"] && o["_commit_version"] == row["_commit_version"]
		})
		if !paired {
			out = append(out, k)
		}
	}
	return out
}

// Key writes a row's values of cols, each made canonical.
func Key(row map[string]string, cols []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		v, ok := row[c]
		if !ok {
			v = "<absent>"
		}
		parts[i] = c + "=" + canon(v)
	}
	return strings.Join(parts, " ")
}

var (
	decimalText = regexp.MustCompile(`^-?[0-9]+\.[0-9]*?0+$`)
	dateText    = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
)

// canon writes a value the same way before and after a type widening:
// decimals without trailing zeros (a wider scale), dates as midnight (a
// date widened to timestamp_ntz).
func canon(v string) string {
	if decimalText.MatchString(v) {
		v = strings.TrimSuffix(strings.TrimRight(v, "0"), ".")
	}
	if dateText.MatchString(v) {
		v += "T00:00:00.000000"
	}
	return v
}

// JSONValue writes a value of an EXPECTED.json row as Value writes Arrow
// values.
func JSONValue(v any) string {
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

// Value writes an Arrow value as the fixtures do: dates YYYY-MM-DD,
// timestamps in microseconds (with a Z when they have a time zone),
// decimals with their scale, null as null.
func Value(a arrow.Array, i int) string {
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
		tt := c.DataType().(*arrow.TimestampType)
		if tt.TimeZone == "" {
			return c.Value(i).ToTime(tt.Unit).UTC().Format("2006-01-02T15:04:05.000000")
		}
		return c.Value(i).ToTime(tt.Unit).UTC().Format("2006-01-02T15:04:05.000000Z")
	}
	// A copy: a string array's ValueStr is a string over its buffer, which
	// an allocator that reuses buffers gives to the next batch once the
	// caller releases this one (arrowpool).
	return strings.Clone(a.ValueStr(i))
}
