package paimon

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// The canonical row encoding of testdata/paimon/README.md: one JSON
// object per row, keyed by column name; numbers as JSON numbers, decimals
// as strings with their scale's digits, dates as YYYY-MM-DD, timestamps as
// YYYY-MM-DDTHH:MM:SS.ffffff, binaries in base64, lists as arrays, maps as
// [key, value] pairs sorted by their JSON, rows as objects.

// canonRows renders the rows of batches as canonical lines, sorted; kinds
// (if not nil) adds each row's _row_kind from the batch's _VALUE_KIND
// column, which is then left out with _SEQUENCE_NUMBER.
func canonRows(t *testing.T, batches []arrow.RecordBatch, kinds bool) []string {
	t.Helper()
	var out []string
	for _, b := range batches {
		for r := range int(b.NumRows()) {
			row := map[string]any{}
			for c := range int(b.NumCols()) {
				name := b.ColumnName(c)
				switch {
				case kinds && name == ValueKindColumn:
					row["_row_kind"] = RowKind(b.Column(c).(*array.Int8).Value(r)).String()
				case kinds && name == SequenceNumberColumn:
				default:
					row[name] = canonValue(t, b.Column(c), r)
				}
			}
			out = append(out, normalize(t, mustJSON(t, row)))
		}
	}
	sort.Strings(out)
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func canonValue(t *testing.T, a arrow.Array, i int) any {
	t.Helper()
	if a.IsNull(i) {
		return nil
	}
	switch c := a.(type) {
	case *array.Boolean:
		return c.Value(i)
	case *array.Int8:
		return c.Value(i)
	case *array.Int16:
		return c.Value(i)
	case *array.Int32:
		return c.Value(i)
	case *array.Int64:
		return c.Value(i)
	case *array.Float32:
		return c.Value(i)
	case *array.Float64:
		return c.Value(i)
	case *array.String:
		return c.Value(i)
	case *array.Binary:
		return base64.StdEncoding.EncodeToString(c.Value(i))
	case *array.Decimal128:
		return c.Value(i).ToString(c.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Date32:
		return c.Value(i).ToTime().Format("2006-01-02")
	case *array.Timestamp:
		unit := c.DataType().(*arrow.TimestampType).Unit
		return c.Value(i).ToTime(unit).UTC().Format("2006-01-02T15:04:05.000000")
	case *array.Map:
		start, end := c.ValueOffsets(i)
		pairs := [][]any{}
		for j := start; j < end; j++ {
			pairs = append(pairs, []any{canonValue(t, c.Keys(), int(j)), canonValue(t, c.Items(), int(j))})
		}
		slices.SortFunc(pairs, func(x, y []any) int { return bytes.Compare(mustJSON(t, x), mustJSON(t, y)) })
		return pairs
	case *array.List:
		start, end := c.ValueOffsets(i)
		out := []any{}
		for j := start; j < end; j++ {
			out = append(out, canonValue(t, c.ListValues(), int(j)))
		}
		return out
	case *array.Struct:
		st := c.DataType().(*arrow.StructType)
		out := map[string]any{}
		for f := range st.NumFields() {
			out[st.Field(f).Name] = canonValue(t, c.Field(f), i)
		}
		return out
	}
	t.Fatalf("no canonical form for %s", a.DataType())
	return nil
}

// normalize re-encodes a canonical JSON line so that the writers' number
// spellings compare equal (1.0 and 1, 1e-05 and 1.0E-5).
func normalize(t *testing.T, line []byte) string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return string(mustJSON(t, numbers(v)))
}

func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return string(x)
		}
		return json.RawMessage(strconv.FormatFloat(f, 'g', -1, 64))
	case []any:
		for i := range x {
			x[i] = numbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = numbers(x[k])
		}
	}
	return v
}
