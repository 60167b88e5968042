package spark

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestParseChangeType(t *testing.T) {
	for in, want := range map[string]Op{"insert": OpInsert, "INSERT": OpInsert, "delete": OpDelete, "DELETE": OpDelete,
		"update_preimage": OpUpdateBefore, "UPDATE_BEFORE": OpUpdateBefore,
		"update_postimage": OpUpdateAfter, "UPDATE_AFTER": OpUpdateAfter} {
		got, err := ParseChangeType(in)
		if err != nil || got != want {
			t.Errorf("ParseChangeType(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "Insert", "update", "UPDATE_PREIMAGE", "upsert"} {
		if _, err := ParseChangeType(bad); !errors.Is(err, ErrUnknownChangeType) {
			t.Errorf("ParseChangeType(%q) = %v, want ErrUnknownChangeType", bad, err)
		}
	}
}

// row is a row of the query's result: a data column id and c, the change
// type and the version.
type row struct {
	id   int64
	c    string
	kind string
	v    int64
}

var querySchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "c", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: colKind, Type: arrow.BinaryTypes.String},
	{Name: colVersion, Type: arrow.PrimitiveTypes.Int64},
	{Name: colTime, Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "Etc/UTC"}, Nullable: true},
}, nil)

func batch(mem memory.Allocator, rows ...row) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, querySchema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		b.Field(1).(*array.StringBuilder).Append(r.c)
		b.Field(2).(*array.StringBuilder).Append(r.kind)
		b.Field(3).(*array.Int64Builder).Append(r.v)
		b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(r.v * 1_000_000))
	}
	return b.NewRecordBatch()
}

// render writes change batches as lines "op before after snapshot ts".
func render(t *testing.T, recs []arrow.RecordBatch) []string {
	t.Helper()
	var out []string
	for _, rec := range recs {
		if !rec.Schema().Equal(ChangeSchema(querySchema.Fields()[:2])) {
			t.Fatalf("schema %s", rec.Schema())
		}
		op := rec.Column(0).(*array.String)
		img := func(col int, i int) string {
			s := rec.Column(col).(*array.Struct)
			if s.IsNull(i) {
				return "-"
			}
			return fmt.Sprintf("%d/%s", s.Field(0).(*array.Int64).Value(i), s.Field(1).(*array.String).Value(i))
		}
		snap := rec.Column(3).(*array.Int64)
		ts := rec.Column(4).(*array.Timestamp)
		for i := range int(rec.NumRows()) {
			out = append(out, fmt.Sprintf("%s %s %s %d %s", op.Value(i), img(1, i), img(2, i), snap.Value(i),
				ts.Value(i).ToTime(arrow.Microsecond).Format("15:04:05")))
		}
	}
	return out
}

func TestCancellerNoOps(t *testing.T) {
	ins := func(id int64, c string, v int64) row { return row{id, c, "insert", v} }
	del := func(id int64, c string, v int64) row { return row{id, c, "DELETE", v} }
	pre := func(id int64, c string, v int64) row { return row{id, c, "update_preimage", v} }
	post := func(id int64, c string, v int64) row { return row{id, c, "UPDATE_AFTER", v} }
	for _, tc := range []struct {
		name    string
		batches [][]row
		want    []string
	}{
		{"no updates", [][]row{{del(1, "a", 2), ins(2, "b", 2)}},
			[]string{"delete 1/a - 2 00:00:02", "insert - 2/b 2 00:00:02"}},
		{"real update kept", [][]row{{pre(1, "a", 3), post(1, "b", 3)}},
			[]string{"update_before 1/a - 3 00:00:03", "update_after - 1/b 3 00:00:03"}},
		{"no-op cancelled", [][]row{{ins(5, "x", 3), pre(1, "a", 3), post(1, "a", 3), ins(6, "y", 3)}},
			[]string{"insert - 5/x 3 00:00:03", "insert - 6/y 3 00:00:03"}},
		{"only no-ops", [][]row{{pre(1, "a", 3), post(1, "a", 3)}}, nil},
		{"no-op across batches", [][]row{{ins(5, "x", 3), pre(1, "a", 3)}, {post(1, "a", 3), ins(6, "y", 4)}},
			[]string{"insert - 5/x 3 00:00:03", "insert - 6/y 4 00:00:04"}},
		{"update across batches", [][]row{{pre(1, "a", 3)}, {post(1, "b", 3)}},
			[]string{"update_before 1/a - 3 00:00:03", "update_after - 1/b 3 00:00:03"}},
		{"held row across an empty batch", [][]row{{pre(1, "a", 3)}, {}, {post(1, "a", 3)}}, nil},
		{"unpaired before at the end", [][]row{{pre(1, "a", 3)}},
			[]string{"update_before 1/a - 3 00:00:03"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			c := newCanceller(mem, 2, false, nil)
			defer c.release()
			var outs []arrow.RecordBatch
			for _, rows := range tc.batches {
				rec := batch(mem, rows...)
				got, err := c.push(rec)
				rec.Release()
				if err != nil {
					t.Fatal(err)
				}
				outs = append(outs, got...)
			}
			got, err := c.flush()
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, got...)
			lines := render(t, outs)
			releaseAll(outs)
			if strings.Join(lines, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestCancellerWholeImage cancels a pair by the whole image when the
// projection hides the column that changed: equal projections with
// different whole images are a real update.
func TestCancellerWholeImage(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema(append(querySchema.Fields()[:1:1], querySchema.Fields()[2:]...), nil)
	schema = arrow.NewSchema(append(schema.Fields(), arrow.Field{Name: colImage, Type: arrow.BinaryTypes.String, Nullable: true}), nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, r := range []struct {
		kind, img string
	}{{"update_preimage", `{"id":1,"c":"a"}`}, {"update_postimage", `{"id":1,"c":"b"}`},
		{"update_preimage", `{"id":2,"c":"a"}`}, {"update_postimage", `{"id":2,"c":"a"}`}} {
		b.Field(0).(*array.Int64Builder).Append(int64(r.img[6] - '0'))
		b.Field(1).(*array.StringBuilder).Append(r.kind)
		b.Field(2).(*array.Int64Builder).Append(1)
		b.Field(3).(*array.TimestampBuilder).Append(0)
		b.Field(4).(*array.StringBuilder).Append(r.img)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	c := newCanceller(mem, 1, true, nil)
	defer c.release()
	outs, err := c.push(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseAll(outs)
	if len(outs) != 1 || outs[0].NumRows() != 2 {
		t.Fatalf("got %v, want the pair of id 1 only", outs)
	}
	if got := outs[0].Column(0).(*array.String).Value(0); got != "update_before" {
		t.Errorf("first op %s", got)
	}
}

func TestCancellerRefusesUnknownChangeType(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := newCanceller(mem, 2, false, nil)
	defer c.release()
	rec := batch(mem, row{1, "a", "insert", 1}, row{2, "b", "upsert", 1})
	defer rec.Release()
	if outs, err := c.push(rec); !errors.Is(err, ErrUnknownChangeType) {
		releaseAll(outs)
		t.Fatalf("err = %v, want ErrUnknownChangeType", err)
	}
}

func TestCancellerIcebergTimes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	at := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	c := newCanceller(mem, 2, false, map[int64]time.Time{77: at})
	defer c.release()
	rec := batch(mem, row{1, "a", "INSERT", 77}, row{2, "b", "INSERT", 78})
	defer rec.Release()
	outs, err := c.push(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseAll(outs)
	ts := outs[0].Column(4).(*array.Timestamp)
	if !ts.Value(0).ToTime(arrow.Microsecond).Equal(at) || ts.IsValid(1) {
		t.Errorf("ts = %v, %v (valid %v)", ts.Value(0).ToTime(arrow.Microsecond), ts.Value(1), ts.IsValid(1))
	}
}
