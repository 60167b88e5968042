package cli

import (
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

// change is one change row decoded for display: its operation in the
// renderable row's vocabulary, and its images as display strings (nil
// when the image is absent), one per data column.
type change struct {
	// op is the operation in the renderable row's vocabulary; label is
	// the change as the batch names it (the flat layout's _change_type).
	op, label     string
	snapshot      string
	ts            string
	before, after []cell
}

// cell is one value for display; null is a null value.
type cell struct {
	text string
	null bool
}

func (c cell) equal(o cell) bool { return c.null == o.null && c.text == o.text }

// image is the one image of a change that a row shows: the after-image
// for inserts and update_after rows, the before-image otherwise.
func (c change) image() []cell {
	if c.after != nil {
		return c.after
	}
	return c.before
}

// decoded is a batch of changes with its data column names.
type decoded struct {
	columns []string
	rows    []change
}

// decode reads a batch of either layout: the renderable row (op, before,
// after, snapshot, ts) or the flat layout (data columns, _change_type,
// _commit_version, _commit_timestamp). Any other schema is shown as plain
// columns, each row an insert of all of them.
func decode(rec arrow.RecordBatch) decoded {
	sc := rec.Schema()
	idx := func(name string) int {
		if is := sc.FieldIndices(name); len(is) == 1 {
			return is[0]
		}
		return -1
	}
	op, before, after := idx(sluice.ColumnOp), idx(sluice.ColumnBefore), idx(sluice.ColumnAfter)
	if op >= 0 && before >= 0 && after >= 0 {
		return decodeRenderable(rec, op, before, after, idx(sluice.ColumnSnapshot), idx(sluice.ColumnTs))
	}
	return decodeFlat(rec, idx(sluice.ColumnChangeType), idx(sluice.ColumnCommitVersion), idx(sluice.ColumnCommitTimestamp))
}

func decodeRenderable(rec arrow.RecordBatch, opI, beforeI, afterI, snapI, tsI int) decoded {
	ops, _ := rec.Column(opI).(*array.String)
	bs, _ := rec.Column(beforeI).(*array.Struct)
	as, _ := rec.Column(afterI).(*array.Struct)
	var d decoded
	if st, ok := rec.Schema().Field(afterI).Type.(*arrow.StructType); ok {
		for _, f := range st.Fields() {
			d.columns = append(d.columns, f.Name)
		}
	}
	for i := range int(rec.NumRows()) {
		c := change{op: "?"}
		if ops != nil && ops.IsValid(i) {
			c.op = ops.Value(i)
		}
		c.label = c.op
		if bs != nil && bs.IsValid(i) {
			c.before = structCells(bs, i)
		}
		if as != nil && as.IsValid(i) {
			c.after = structCells(as, i)
		}
		if snapI >= 0 {
			c.snapshot = display(rec.Column(snapI), i).text
		}
		if tsI >= 0 {
			c.ts = display(rec.Column(tsI), i).text
		}
		d.rows = append(d.rows, c)
	}
	return d
}

func structCells(s *array.Struct, i int) []cell {
	out := make([]cell, s.NumField())
	for j := range s.NumField() {
		out[j] = display(s.Field(j), i)
	}
	return out
}

// flatOps maps the flat layout's change types to the renderable row's ops.
var flatOps = map[string]string{
	sluice.ChangeInsert: sluice.OpInsert, sluice.ChangeDelete: sluice.OpDelete,
	sluice.ChangeUpdatePreimage: sluice.OpUpdateBefore, sluice.ChangeUpdatePostimage: sluice.OpUpdateAfter,
}

func decodeFlat(rec arrow.RecordBatch, typeI, versionI, tsI int) decoded {
	var d decoded
	var data []int
	for j, f := range rec.Schema().Fields() {
		if j != typeI && j != versionI && j != tsI {
			d.columns = append(d.columns, f.Name)
			data = append(data, j)
		}
	}
	for i := range int(rec.NumRows()) {
		c := change{op: sluice.OpInsert, label: sluice.ChangeInsert}
		if typeI >= 0 {
			c.label = display(rec.Column(typeI), i).text
			c.op = c.label
			if op, ok := flatOps[c.label]; ok {
				c.op = op
			}
		}
		img := make([]cell, len(data))
		for k, j := range data {
			img[k] = display(rec.Column(j), i)
		}
		if c.op == sluice.OpDelete || c.op == sluice.OpUpdateBefore {
			c.before = img
		} else {
			c.after = img
		}
		if versionI >= 0 {
			c.snapshot = display(rec.Column(versionI), i).text
		}
		if tsI >= 0 {
			c.ts = display(rec.Column(tsI), i).text
		}
		d.rows = append(d.rows, c)
	}
	return d
}

// display formats one value for a person: timestamps in RFC 3339 (UTC
// ones with Z), numbers as Go prints them, nested values as JSON.
func display(a arrow.Array, i int) cell {
	if a.IsNull(i) {
		return cell{text: "null", null: true}
	}
	if ts, ok := a.(*array.Timestamp); ok {
		typ := ts.DataType().(*arrow.TimestampType)
		if toTime, err := typ.GetToTimeFunc(); err == nil {
			t := toTime(ts.Value(i))
			if typ.TimeZone == "" {
				return cell{text: t.Format("2006-01-02T15:04:05.999999999")}
			}
			return cell{text: t.Format(time.RFC3339Nano)}
		}
	}
	return cell{text: a.ValueStr(i)}
}

// painter adds ANSI colors, or nothing when off (NO_COLOR, --no-color, not
// a terminal).
type painter struct{ on bool }

const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiDim    = "\x1b[2m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiCyan   = "\x1b[36m"
	// ansiOld and ansiNew mark the changed cells of an update: the old
	// value struck through in red, the new one bold green on a dark
	// background.
	ansiOld = "\x1b[31;9m"
	ansiNew = "\x1b[1;32;48;5;22m"
)

func (p painter) paint(style, s string) string {
	if !p.on || style == "" || s == "" {
		return s
	}
	return style + s + ansiReset
}

// opStyle is the color of an operation.
func opStyle(op string) string {
	switch op {
	case sluice.OpInsert:
		return ansiGreen
	case sluice.OpDelete:
		return ansiRed
	case sluice.OpUpdate, sluice.OpUpdateBefore, sluice.OpUpdateAfter:
		return ansiYellow
	}
	return ""
}

// opMark is the one-character mark of an operation in a diff.
func opMark(op string) string {
	switch op {
	case sluice.OpInsert:
		return "+"
	case sluice.OpDelete:
		return "-"
	case sluice.OpUpdate, sluice.OpUpdateAfter:
		return "~"
	}
	return "?"
}

// quote shows a value in a diff line: as is, unless it is empty or holds
// spaces, quotes or '=' (which would blur the name=value pairs), then
// Go-quoted; termValue quotes it when it holds control characters.
func quote(c cell) string {
	if c.null {
		return c.text
	}
	if c.text == "" || strings.ContainsAny(c.text, " \"'=") {
		return strconv.Quote(c.text)
	}
	return termValue(c.text)
}
