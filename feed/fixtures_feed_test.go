package feed_test

// Reading a fixture's feed and comparing it with the writer's states: the
// canonical form of rows on both sides, and applying a feed to a state.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"

	"github.com/sluicefeed/sluice/feed"
)

// fxState is a table state as a multiset of canonical rows.
type fxState map[string]int

// fxValue is the canonical text of a JSON value of the expected rows, read
// as the Iceberg type typ.
func fxValue(t *testing.T, v any, typ iceberg.Type) string {
	t.Helper()
	if v == nil {
		return "∅"
	}
	bad := func() string {
		t.Fatalf("expected value %#v (%T) does not fit the type %s", v, v, typ)
		return ""
	}
	switch typ.(type) {
	case iceberg.Int32Type, iceberg.Int64Type:
		n, ok := v.(json.Number)
		if !ok {
			return bad()
		}
		i, err := n.Int64()
		if err != nil {
			return bad()
		}
		return "i" + strconv.FormatInt(i, 10)
	case iceberg.Float32Type, iceberg.Float64Type:
		n, ok := v.(json.Number)
		if !ok {
			return bad()
		}
		f, err := n.Float64()
		if err != nil {
			return bad()
		}
		return "f" + strconv.FormatFloat(f, 'g', -1, 64)
	case iceberg.StringType:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		return strconv.Quote(s)
	case iceberg.BooleanType:
		b, ok := v.(bool)
		if !ok {
			return bad()
		}
		return strconv.FormatBool(b)
	case iceberg.DateType:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return bad()
		}
		return "d" + d.Format(time.DateOnly)
	case iceberg.TimestampType, iceberg.TimestampTzType:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		_, tz := typ.(iceberg.TimestampTzType)
		if tz != strings.HasSuffix(s, "Z") {
			return bad() // the generators write Z exactly for timestamptz
		}
		ts, err := time.Parse("2006-01-02T15:04:05.999999999Z07:00", s)
		if !tz {
			ts, err = time.Parse("2006-01-02T15:04:05.999999999", s)
		}
		if err != nil {
			return bad()
		}
		return fxTime(ts, tz)
	}
	t.Fatalf("fixture column type %s has no canonical form here", typ)
	return ""
}

func fxTime(ts time.Time, tz bool) string {
	s := "t" + ts.UTC().Format("2006-01-02T15:04:05.000000")
	if tz {
		s += "Z"
	}
	return s
}

// fxArrowValue is the canonical text of row i of an Arrow column of an
// image, in the same form as fxValue.
func fxArrowValue(col arrow.Array, i int) string {
	if col.IsNull(i) {
		return "∅"
	}
	switch c := col.(type) {
	case *array.Int32:
		return "i" + strconv.FormatInt(int64(c.Value(i)), 10)
	case *array.Int64:
		return "i" + strconv.FormatInt(c.Value(i), 10)
	case *array.Float32:
		return "f" + strconv.FormatFloat(float64(c.Value(i)), 'g', -1, 32)
	case *array.Float64:
		return "f" + strconv.FormatFloat(c.Value(i), 'g', -1, 64)
	case *array.String:
		return strconv.Quote(c.Value(i))
	case *array.LargeString:
		return strconv.Quote(c.Value(i))
	case *array.Boolean:
		return strconv.FormatBool(c.Value(i))
	case *array.Date32:
		return "d" + c.Value(i).ToTime().Format(time.DateOnly)
	case *array.Timestamp:
		typ := c.DataType().(*arrow.TimestampType)
		return fxTime(c.Value(i).ToTime(typ.Unit), typ.TimeZone != "")
	}
	return fmt.Sprintf("?%s:%s", col.DataType(), col.ValueStr(i))
}

// fxImage is the canonical row of row i of an image struct.
func fxImage(img *array.Struct, i int) string {
	var b strings.Builder
	for f := range img.NumField() {
		b.WriteString(fxArrowValue(img.Field(f), i))
		b.WriteByte('|')
	}
	return b.String()
}

// fxRow is the canonical row of an expected row read at a snapshot with
// schema from, projected by field id onto the schema end: renamed columns
// keep their values, columns the row's schema lacks are null.
func fxRow(t *testing.T, row map[string]any, from, end *iceberg.Schema) string {
	t.Helper()
	var b strings.Builder
	for _, f := range end.Fields() {
		var v any
		if old, ok := from.FindFieldByID(f.ID); ok {
			v = row[old.Name]
		}
		b.WriteString(fxValue(t, v, f.Type))
		b.WriteByte('|')
	}
	return b.String()
}

// state is the expected state at snapshot index i (-1: before the first
// snapshot) projected onto end. An expired fixture has no state before its
// oldest retained snapshot.
func (fx *fxFixture) state(t *testing.T, i int, end *iceberg.Schema) fxState {
	t.Helper()
	if i < fx.start() {
		t.Fatalf("%s: no state before its retained history (snapshot index %d)", fx.name, i)
	}
	st := fxState{}
	if i < 0 {
		return st
	}
	s := fx.exp.Snapshots[i]
	sc := fx.schema(t, s)
	var names []string
	for _, f := range sc.Fields() {
		names = append(names, f.Name)
	}
	if !slices.Equal(names, s.Columns) {
		t.Fatalf("snapshot %d: the engine read columns %v, its schema %d has %v", s.SnapshotID, s.Columns, sc.ID, names)
	}
	for _, r := range s.Rows {
		st[fxRow(t, r, sc, end)]++
	}
	return st
}

// fxChange is one change row of the feed, canonically.
type fxChange struct {
	op       string
	snapshot int64
	before   string
	after    string
}

// readFeed plans and reads a window, checking the stream's shape: batches
// in plan order, one complete batch ending each snapshot, the snapshot
// column equal to the batch's snapshot, images in the end schema's columns.
func (fx *fxFixture) readFeed(t *testing.T, eng *feed.Engine, req feed.Request, end *iceberg.Schema) (*feed.Plan, []fxChange) {
	t.Helper()
	ctx := context.Background()
	req.Table = fx.name
	p, err := eng.Plan(ctx, req)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	var endNames []string
	for _, f := range end.Fields() {
		endNames = append(endNames, f.Name)
	}
	if !slices.Equal(p.Columns, endNames) {
		t.Fatalf("plan columns %v, want the end schema's %v", p.Columns, endNames)
	}
	var out []fxChange
	var order []int64
	var last int64
	complete := true
	for b, err := range eng.Read(ctx, p) {
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		rec := b.Record
		if b.Snapshot.ID != last {
			if !complete {
				t.Errorf("snapshot %d ended without a complete batch", last)
			}
			order = append(order, b.Snapshot.ID)
			last = b.Snapshot.ID
		}
		complete = b.SnapshotComplete
		ops := rec.Column(0).(*array.String)
		before, after := rec.Column(1).(*array.Struct), rec.Column(2).(*array.Struct)
		snaps := rec.Column(3).(*array.Int64)
		for i := range int(rec.NumRows()) {
			if snaps.IsNull(i) || snaps.Value(i) != b.Snapshot.ID {
				t.Errorf("row of snapshot %s in a batch of snapshot %d", snaps.ValueStr(i), b.Snapshot.ID)
			}
			c := fxChange{op: strings.Clone(ops.Value(i)), snapshot: b.Snapshot.ID}
			if !before.IsNull(i) {
				c.before = fxImage(before, i)
			}
			if !after.IsNull(i) {
				c.after = fxImage(after, i)
			}
			out = append(out, c)
		}
		rec.Release()
	}
	if !complete {
		t.Errorf("snapshot %d ended without a complete batch", last)
	}
	var planned []int64
	for _, sp := range p.Snapshots {
		planned = append(planned, sp.ID)
	}
	// Snapshots appear in plan order, each at most once (a snapshot with no
	// change still sends its complete batch).
	if !slices.Equal(order, planned) {
		t.Errorf("snapshots streamed %v, planned %v", order, planned)
	}
	return p, out
}

// fxApply applies a feed to a copy of st, reporting every change that
// breaks the contract's order or deletes a row that is not there.
func fxApply(t *testing.T, st fxState, changes []fxChange) fxState {
	t.Helper()
	out := fxCopy(st)
	rank := map[string]int{feed.OpDelete: 0, feed.OpUpdateBefore: 1, feed.OpUpdateAfter: 1, feed.OpUpdate: 1, feed.OpInsert: 2}
	var snap int64
	phase := 0
	for i, c := range changes {
		if c.snapshot != snap {
			snap, phase = c.snapshot, 0
		}
		r, ok := rank[c.op]
		if !ok {
			t.Errorf("snapshot %d: unknown op %q", c.snapshot, c.op)
			continue
		}
		if r < phase {
			t.Errorf("snapshot %d: %s after a later kind of change", c.snapshot, c.op)
		}
		phase = r
		if c.op == feed.OpUpdateBefore && (i+1 == len(changes) || changes[i+1].op != feed.OpUpdateAfter) {
			t.Errorf("snapshot %d: update_before %s not followed by its update_after", c.snapshot, c.before)
		}
		if c.op == feed.OpUpdateAfter && (i == 0 || changes[i-1].op != feed.OpUpdateBefore) {
			t.Errorf("snapshot %d: update_after %s without its update_before", c.snapshot, c.after)
		}
		if c.op == feed.OpDelete || c.op == feed.OpUpdateBefore || c.op == feed.OpUpdate {
			switch {
			case c.before == "":
				t.Errorf("snapshot %d: %s without a before-image", c.snapshot, c.op)
			case out[c.before] == 0:
				t.Errorf("snapshot %d: %s of a row that is not there: %s", c.snapshot, c.op, c.before)
			default:
				if out[c.before]--; out[c.before] == 0 {
					delete(out, c.before)
				}
			}
		}
		if c.op == feed.OpInsert || c.op == feed.OpUpdateAfter || c.op == feed.OpUpdate {
			if c.after == "" {
				t.Errorf("snapshot %d: %s without an after-image", c.snapshot, c.op)
				continue
			}
			out[c.after]++
		}
	}
	return out
}

func fxCopy(st fxState) fxState {
	out := make(fxState, len(st))
	for k, v := range st {
		out[k] = v
	}
	return out
}

// fxDiff lists the rows whose counts differ: missing (in want, not got) and
// extra (in got, not want).
func fxDiff(got, want fxState) string {
	var lines []string
	for k, w := range want {
		if g := got[k]; g < w {
			lines = append(lines, fmt.Sprintf("  missing %d× %s", w-g, k))
		}
	}
	for k, g := range got {
		if w := want[k]; g > w {
			lines = append(lines, fmt.Sprintf("  extra   %d× %s", g-w, k))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func fxOps(changes []fxChange) string {
	var b strings.Builder
	for _, c := range changes {
		fmt.Fprintf(&b, "\n    @%d %s %s -> %s", c.snapshot, c.op, c.before, c.after)
	}
	return b.String()
}
