package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

// row is a renderable change row as the page draws it: the before- and
// after-images as arrays zipped positionally (value i of both is column i
// of the view's columns), and, for an update, the positions of the cells
// it changed.
type row struct {
	Op string `json:"op"`
	// Before and After are the images; nil for an insert's before and a
	// delete's after.
	Before []json.RawMessage `json:"before"`
	After  []json.RawMessage `json:"after"`
	// Changed lists the columns whose values differ between the images of
	// an update (empty for other rows).
	Changed  []int `json:"changed"`
	Snapshot *id   `json:"snapshot"`
	// Ts is the commit time, RFC 3339 in UTC with milliseconds.
	Ts string `json:"ts"`
}

// imageColumns returns the data columns of the change rows' images: the
// fields of the before struct (the after struct has the same ones).
func imageColumns(schema *arrow.Schema) ([]string, error) {
	idx := schema.FieldIndices(sluice.ColumnBefore)
	if len(idx) != 1 {
		return nil, fmt.Errorf("%w: the change rows have no %q column", sluice.ErrProtocol, sluice.ColumnBefore)
	}
	st, ok := schema.Field(idx[0]).Type.(*arrow.StructType)
	if !ok {
		return nil, fmt.Errorf("%w: the %q column is %s, not a struct", sluice.ErrProtocol, sluice.ColumnBefore,
			schema.Field(idx[0]).Type)
	}
	cols := make([]string, st.NumFields())
	for i, f := range st.Fields() {
		cols[i] = f.Name
	}
	return cols, nil
}

// appendRows appends at most max rows of a batch of change rows.
func appendRows(rows []row, rec arrow.RecordBatch, max int) ([]row, error) {
	col := func(name string) (arrow.Array, error) {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("%w: the change rows have no %q column", sluice.ErrProtocol, name)
		}
		return rec.Column(idx[0]), nil
	}
	var arrs [5]arrow.Array
	for i, name := range []string{sluice.ColumnOp, sluice.ColumnBefore, sluice.ColumnAfter, sluice.ColumnSnapshot,
		sluice.ColumnTs} {
		a, err := col(name)
		if err != nil {
			return nil, err
		}
		arrs[i] = a
	}
	ops, ok1 := arrs[0].(*array.String)
	before, ok2 := arrs[1].(*array.Struct)
	after, ok3 := arrs[2].(*array.Struct)
	snaps, ok4 := arrs[3].(*array.Int64)
	ts, ok5 := arrs[4].(*array.Timestamp)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		return nil, fmt.Errorf("%w: the change rows' columns are not of the renderable row's types", sluice.ErrProtocol)
	}
	unit := ts.DataType().(*arrow.TimestampType).Unit
	n := min(int(rec.NumRows()), max)
	for i := range n {
		r := row{Op: ops.Value(i), Changed: []int{}}
		var err error
		if r.Before, err = image(before, i); err != nil {
			return nil, err
		}
		if r.After, err = image(after, i); err != nil {
			return nil, err
		}
		if r.Before != nil && r.After != nil {
			for j := range r.Before {
				if !bytes.Equal(r.Before[j], r.After[j]) {
					r.Changed = append(r.Changed, j)
				}
			}
		}
		if snaps.IsValid(i) {
			r.Snapshot = idOf(snaps.Value(i))
		}
		if ts.IsValid(i) {
			r.Ts = ts.Value(i).ToTime(unit).UTC().Format("2006-01-02T15:04:05.000Z07:00")
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// image returns row i of an image struct as JSON values, one per field;
// nil when the image is null.
func image(s *array.Struct, i int) ([]json.RawMessage, error) {
	if s.IsNull(i) {
		return nil, nil
	}
	out := make([]json.RawMessage, s.NumField())
	for j := range out {
		b, err := json.Marshal(value(s.Field(j), i))
		if err != nil {
			return nil, fmt.Errorf("encode column %d: %w", j, err)
		}
		out[j] = b
	}
	return out, nil
}

// value returns value i of an array as the page shows it: timestamps in
// RFC 3339, everything else as Arrow's JSON form.
func value(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch v := a.(type) {
	case *array.Int64:
		return safeInt(v.Value(i))
	case *array.Uint64:
		if v.Value(i) > maxSafeInt {
			return strconv.FormatUint(v.Value(i), 10)
		}
		return v.Value(i)
	}
	if ts, ok := a.(*array.Timestamp); ok {
		tt := ts.DataType().(*arrow.TimestampType)
		t := ts.Value(i).ToTime(tt.Unit)
		if tt.TimeZone == "" {
			return t.UTC().Format("2006-01-02T15:04:05.999999")
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	return a.GetOneForMarshal(i)
}

// maxSafeInt is the largest integer a JavaScript number holds exactly.
const maxSafeInt = 1<<53 - 1

// safeInt returns n as a JSON number when JavaScript reads it exactly, else
// as a string.
func safeInt(n int64) any {
	if n > maxSafeInt || n < -maxSafeInt {
		return strconv.FormatInt(n, 10)
	}
	return n
}

// id is a snapshot id: JSON strings, since ids take all 64 bits and a
// JavaScript number holds 53.
type id int64

func (i id) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatInt(int64(i), 10) + `"`), nil
}

// idOf returns the id of a snapshot.
func idOf(n int64) *id {
	v := id(n)
	return &v
}

// idPtr returns the id of an optional snapshot (nil for none).
func idPtr(p *int64) *id {
	if p == nil {
		return nil
	}
	return idOf(*p)
}
