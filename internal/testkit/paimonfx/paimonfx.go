// Package paimonfx reads the writer-made Paimon fixtures of
// testdata/paimon (see its README.md): the tables Paimon's own writers
// wrote, and per snapshot the full state and the changes those writers'
// reads returned, as canonical JSON lines. It renders Arrow rows in the
// same canonical encoding, for the tests of format/paimon and of the
// engine alike.
//
// The encoding: one JSON object per row, keyed by column name; numbers as
// JSON numbers, decimals as strings with their scale's digits, dates as
// YYYY-MM-DD, timestamps as YYYY-MM-DDTHH:MM:SS.ffffff, binaries in
// base64, lists as arrays, maps as [key, value] pairs sorted by their
// JSON, rows as objects; numbers compare by value.
package paimonfx

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// The system columns of a Paimon primary-key table's files, and the
// column of the expected changes that holds a row's kind.
const (
	SequenceNumberColumn = "_SEQUENCE_NUMBER"
	ValueKindColumn      = "_VALUE_KIND"
	RowKindKey           = "_row_kind"
)

// rowKinds are the short forms of Paimon's row kinds, by _VALUE_KIND.
var rowKinds = []string{"+I", "-U", "+U", "-D"}

// Table is a fixture table's expected/<db>/<table>/table.json.
type Table struct {
	Table     string     `json:"table"`
	Writer    string     `json:"writer"`
	Snapshots []Snapshot `json:"snapshots"`
	Tags      []string   `json:"tags"`
}

// Snapshot is what table.json says of one snapshot.
type Snapshot struct {
	ID         int64  `json:"id"`
	CommitKind string `json:"commitKind"`
	SchemaID   int64  `json:"schemaId"`
	Rows       int    `json:"rows"`
	Changes    bool   `json:"changes"`
	Expired    bool   `json:"expired"`
}

// Fixture is one fixture table.
type Fixture struct {
	// DB and Name are the table's database and name.
	DB, Name string
	// Dir is the table's folder in the warehouse; Expected its folder of
	// expected reads.
	Dir, Expected string
	// Meta is its table.json.
	Meta Table
}

// Fixtures lists the fixture tables under root (testdata/paimon).
func Fixtures(root string) ([]Fixture, error) {
	metas, err := filepath.Glob(filepath.Join(root, "expected", "*", "*", "table.json"))
	if err != nil {
		return nil, err
	}
	if len(metas) == 0 {
		return nil, fmt.Errorf("no fixtures under %s", root)
	}
	var out []Fixture
	for _, m := range metas {
		dir := filepath.Dir(m)
		f := Fixture{DB: filepath.Base(filepath.Dir(dir)), Name: filepath.Base(dir), Expected: dir}
		f.Dir = filepath.Join(root, "warehouse", f.DB+".db", f.Name)
		b, err := os.ReadFile(m)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &f.Meta); err != nil {
			return nil, fmt.Errorf("%s: %w", m, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// StatePath is the file of the expected state at snapshot id.
func (f Fixture) StatePath(id int64) string {
	return filepath.Join(f.Expected, "state", strconv.FormatInt(id, 10)+".jsonl")
}

// ChangesPath is the file of the expected changes of snapshot id.
func (f Fixture) ChangesPath(id int64) string {
	return filepath.Join(f.Expected, "changes", strconv.FormatInt(id, 10)+".jsonl")
}

// ReadLines reads a file of canonical lines, normalized and sorted.
func ReadLines(p string) ([]string, error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var out []string
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l, err := Normalize(sc.Bytes())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// Rows renders the rows of batches as canonical lines, sorted. With
// kinds, a batch's _VALUE_KIND column becomes each row's _row_kind, and
// _SEQUENCE_NUMBER is left out.
func Rows(batches []arrow.RecordBatch, kinds bool) ([]string, error) {
	var out []string
	for _, b := range batches {
		for r := range int(b.NumRows()) {
			row := map[string]any{}
			for c := range int(b.NumCols()) {
				name := b.ColumnName(c)
				switch {
				case kinds && name == ValueKindColumn:
					k, ok := b.Column(c).(*array.Int8)
					if !ok || int(k.Value(r)) < 0 || int(k.Value(r)) >= len(rowKinds) {
						return nil, fmt.Errorf("column %s is not a row kind", name)
					}
					row[RowKindKey] = rowKinds[k.Value(r)]
				case kinds && name == SequenceNumberColumn:
				default:
					v, err := Value(b.Column(c), r)
					if err != nil {
						return nil, fmt.Errorf("column %s: %w", name, err)
					}
					row[name] = v
				}
			}
			line, err := Line(row)
			if err != nil {
				return nil, err
			}
			out = append(out, line)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Line renders a row of canonical values as a normalized line.
func Line(row map[string]any) (string, error) {
	b, err := json.Marshal(row)
	if err != nil {
		return "", err
	}
	return Normalize(b)
}

// Value is the canonical value of a[i].
func Value(a arrow.Array, i int) (any, error) {
	if a.IsNull(i) {
		return nil, nil
	}
	switch c := a.(type) {
	case *array.Boolean:
		return c.Value(i), nil
	case *array.Int8:
		return c.Value(i), nil
	case *array.Int16:
		return c.Value(i), nil
	case *array.Int32:
		return c.Value(i), nil
	case *array.Int64:
		return c.Value(i), nil
	case *array.Float32:
		return c.Value(i), nil
	case *array.Float64:
		return c.Value(i), nil
	case *array.String:
		return c.Value(i), nil
	case *array.Binary:
		return base64.StdEncoding.EncodeToString(c.Value(i)), nil
	case *array.Decimal128:
		return c.Value(i).ToString(c.DataType().(*arrow.Decimal128Type).Scale), nil
	case *array.Date32:
		return c.Value(i).ToTime().Format("2006-01-02"), nil
	case *array.Timestamp:
		unit := c.DataType().(*arrow.TimestampType).Unit
		return c.Value(i).ToTime(unit).UTC().Format("2006-01-02T15:04:05.000000"), nil
	case *array.Map:
		start, end := c.ValueOffsets(i)
		pairs := [][]any{}
		for j := start; j < end; j++ {
			k, err := Value(c.Keys(), int(j))
			if err != nil {
				return nil, err
			}
			v, err := Value(c.Items(), int(j))
			if err != nil {
				return nil, err
			}
			pairs = append(pairs, []any{k, v})
		}
		var err error
		slices.SortFunc(pairs, func(x, y []any) int {
			bx, e1 := json.Marshal(x)
			by, e2 := json.Marshal(y)
			if e1 != nil || e2 != nil {
				err = fmt.Errorf("map entry: %v %v", e1, e2)
			}
			return bytes.Compare(bx, by)
		})
		return pairs, err
	case *array.List:
		start, end := c.ValueOffsets(i)
		out := []any{}
		for j := start; j < end; j++ {
			v, err := Value(c.ListValues(), int(j))
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case *array.Struct:
		st := c.DataType().(*arrow.StructType)
		out := map[string]any{}
		for f := range st.NumFields() {
			v, err := Value(c.Field(f), i)
			if err != nil {
				return nil, err
			}
			out[st.Field(f).Name] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("no canonical form for %s", a.DataType())
}

// Normalize re-encodes a canonical JSON line so that the writers' number
// spellings compare equal (1.0 and 1, 1e-05 and 1.0E-5).
func Normalize(line []byte) (string, error) {
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "", fmt.Errorf("%s: %w", line, err)
	}
	b, err := json.Marshal(numbers(v))
	return string(b), err
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

// Diff describes how two sorted multisets of lines differ (empty when
// equal), showing at most five lines of each kind.
func Diff(got, want []string) string {
	var extra, missing []string
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j == len(want) || (i < len(got) && got[i] < want[j]):
			extra = append(extra, got[i])
			i++
		case i == len(got) || want[j] < got[i]:
			missing = append(missing, want[j])
			j++
		default:
			i++
			j++
		}
	}
	if len(extra) == 0 && len(missing) == 0 {
		return ""
	}
	const show = 5
	s := strconv.Itoa(len(got)) + " rows read, " + strconv.Itoa(len(want)) + " expected\n"
	for k, l := range extra {
		if k == show {
			break
		}
		s += "  unexpected " + l + "\n"
	}
	for k, l := range missing {
		if k == show {
			break
		}
		s += "  missing    " + l + "\n"
	}
	return s
}
