package pqread

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

var (
	tsUTC = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	tsNTZ = &arrow.TimestampType{Unit: arrow.Microsecond}
)

// baseSchema is the schema of the file most tests read: one column of
// each kind, with Iceberg field ids.
var baseSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(1)},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fid(2)},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true, Metadata: fid(3)},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true, Metadata: fid(4)},
	{Name: "ts", Type: tsUTC, Nullable: true, Metadata: fid(5)},
	{Name: "small", Type: arrow.PrimitiveTypes.Int32, Nullable: true, Metadata: fid(6)},
	{Name: "ratio", Type: arrow.PrimitiveTypes.Float32, Nullable: true, Metadata: fid(7)},
	{Name: "price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true, Metadata: fid(8)},
	{Name: "tms", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true, Metadata: fid(9)},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true, Metadata: fid(10)},
	{Name: "tns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, Nullable: true, Metadata: fid(11)},
}, nil)

const baseRows = `[
{"id": 1, "name": "a", "amount": 1.5, "day": "2024-01-02", "ts": 1700000000000001, "small": 7, "ratio": 0.5, "price": "12.34", "tms": 1700000000123, "bin": "YQ==", "tns": 1700000000000002000},
{"id": 2, "name": null, "amount": null, "day": null, "ts": null, "small": null, "ratio": null, "price": null, "tms": null, "bin": null, "tns": null},
{"id": 3, "name": "c", "amount": -2.25, "day": "1970-01-01", "ts": 0, "small": -7, "ratio": -1.25, "price": "-0.01", "tms": -1, "bin": "w6k=", "tns": -1000}
]`

// baseFile writes baseRows as a Parquet file.
func baseFile(t testing.TB, mem memory.Allocator) *bytes.Reader {
	rec := fromJSON(t, mem, baseSchema, baseRows)
	defer rec.Release()
	return writeParquet(t, rec, 1000)
}

func field(name string, dt arrow.DataType) arrow.Field {
	return arrow.Field{Name: name, Type: dt, Nullable: true}
}

func TestRead(t *testing.T) {
	str := func(s string) scalar.Scalar { return scalar.NewStringScalar(s) }
	byID := func(ids ...int) []Column {
		cs := make([]Column, len(ids))
		for i, id := range ids {
			cs[i] = Column{FieldID: ptr(id)}
		}
		return cs
	}
	tests := []struct {
		name   string
		fields []arrow.Field
		cols   []Column
		want   string
	}{{
		name:   "every column by field id",
		fields: baseSchema.Fields(),
		cols:   byID(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11),
		want:   baseRows,
	}, {
		name:   "a subset reordered by field id, under other names",
		fields: []arrow.Field{field("amt", arrow.PrimitiveTypes.Float64), field("key", arrow.PrimitiveTypes.Int64)},
		cols:   byID(3, 1),
		want:   `[{"amt": 1.5, "key": 1}, {"amt": null, "key": 2}, {"amt": -2.25, "key": 3}]`,
	}, {
		name:   "by name",
		fields: []arrow.Field{field("name", arrow.BinaryTypes.String), field("id", arrow.PrimitiveTypes.Int64)},
		cols:   []Column{{Name: "name"}, {Name: "id"}},
		want:   `[{"name": "a", "id": 1}, {"name": null, "id": 2}, {"name": "c", "id": 3}]`,
	}, {
		name:   "by name in another case",
		fields: []arrow.Field{field("ID", arrow.PrimitiveTypes.Int64)},
		cols:   []Column{{Name: "ID"}},
		want:   `[{"ID": 1}, {"ID": 2}, {"ID": 3}]`,
	}, {
		name: "the same column twice",
		fields: []arrow.Field{field("a", arrow.PrimitiveTypes.Int64), field("b", arrow.PrimitiveTypes.Int64),
			field("c", arrow.PrimitiveTypes.Int64)},
		cols: []Column{{FieldID: ptr(1)}, {Name: "id"}, {FieldID: ptr(1)}},
		want: `[{"a": 1, "b": 1, "c": 1}, {"a": 2, "b": 2, "c": 2}, {"a": 3, "b": 3, "c": 3}]`,
	}, {
		name: "constants",
		fields: []arrow.Field{field("id", arrow.PrimitiveTypes.Int64), field("part", arrow.BinaryTypes.String),
			field("none", arrow.PrimitiveTypes.Int32), field("wide", arrow.PrimitiveTypes.Int64),
			field("day", arrow.FixedWidthTypes.Date32)},
		cols: []Column{{FieldID: ptr(1)}, {Constant: str("x")}, {Constant: scalar.MakeNullScalar(arrow.PrimitiveTypes.Int32)},
			{Constant: scalar.NewInt32Scalar(5)}, {Constant: scalar.NewDate32Scalar(19724)}},
		want: `[{"id": 1, "part": "x", "none": null, "wide": 5, "day": "2024-01-02"},
			{"id": 2, "part": "x", "none": null, "wide": 5, "day": "2024-01-02"},
			{"id": 3, "part": "x", "none": null, "wide": 5, "day": "2024-01-02"}]`,
	}, {
		name:   "a null scalar of another type",
		fields: []arrow.Field{field("id", arrow.PrimitiveTypes.Int64), field("p", arrow.FixedWidthTypes.Date32)},
		cols:   []Column{{FieldID: ptr(1)}, {Constant: scalar.MakeNullScalar(arrow.Null)}},
		want:   `[{"id": 1, "p": null}, {"id": 2, "p": null}, {"id": 3, "p": null}]`,
	}, {
		name: "missing columns are null",
		fields: []arrow.Field{field("id", arrow.PrimitiveTypes.Int64), field("added", arrow.BinaryTypes.String),
			field("by_id", tsUTC), field("by_name", arrow.PrimitiveTypes.Float64)},
		cols: []Column{{FieldID: ptr(1)}, {}, {FieldID: ptr(99)}, {Name: "nope"}},
		want: `[{"id": 1, "added": null, "by_id": null, "by_name": null}, {"id": 2, "added": null, "by_id": null, "by_name": null},
			{"id": 3, "added": null, "by_id": null, "by_name": null}]`,
	}, {
		name: "widening casts",
		fields: []arrow.Field{
			field("small", arrow.PrimitiveTypes.Int64),
			field("ratio", arrow.PrimitiveTypes.Float64),
			field("price", &arrow.Decimal128Type{Precision: 20, Scale: 4}),
			field("day", tsNTZ),
			field("tms", tsNTZ),
			field("name", arrow.BinaryTypes.LargeString),
			field("bin", arrow.BinaryTypes.String),
			field("small_f", arrow.PrimitiveTypes.Float64),
			field("id_dec", &arrow.Decimal128Type{Precision: 25, Scale: 0}),
			field("name_bin", arrow.BinaryTypes.Binary),
			field("day64", arrow.FixedWidthTypes.Date64),
		},
		cols: byID(6, 7, 8, 4, 9, 2, 10, 6, 1, 2, 4),
		want: `[
			{"small": 7, "ratio": 0.5, "price": "12.3400", "day": 1704153600000000, "tms": 1700000000123000, "name": "a", "bin": "a", "small_f": 7, "id_dec": "1", "name_bin": "YQ==", "day64": "2024-01-02"},
			{"small": null, "ratio": null, "price": null, "day": null, "tms": null, "name": null, "bin": null, "small_f": null, "id_dec": "2", "name_bin": null, "day64": null},
			{"small": -7, "ratio": -1.25, "price": "-0.0100", "day": 0, "tms": -1000, "name": "c", "bin": "é", "small_f": -7, "id_dec": "3", "name_bin": "Yw==", "day64": "1970-01-01"}]`,
	}, {
		name:   "timestamps: zone as the target says, units to microseconds",
		fields: []arrow.Field{field("ts", tsNTZ), field("tms", tsUTC), field("tns", tsUTC), field("tns_ms", &arrow.TimestampType{Unit: arrow.Nanosecond})},
		cols:   byID(5, 9, 11, 9),
		want: `[{"ts": 1700000000000001, "tms": 1700000000123000, "tns": 1700000000000002, "tns_ms": 1700000000123000000},
			{"ts": null, "tms": null, "tns": null, "tns_ms": null},
			{"ts": 0, "tms": -1000, "tns": -1, "tns_ms": -1000000}]`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			f := baseFile(t, mem)
			target := arrow.NewSchema(tc.fields, nil)
			res, err := readAll(t, f, target, tc.cols, Options{Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			defer res.release()
			want := fromJSON(t, mem, target, tc.want)
			defer want.Release()
			wantEqual(t, res.rec, want)
			if !slices.Equal(res.firsts, []int64{0}) {
				t.Errorf("firsts %v, want [0]", res.firsts)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	i64 := arrow.PrimitiveTypes.Int64
	tests := []struct {
		name   string
		fields []arrow.Field
		cols   []Column
		opts   Options
		want   error
		says   []string // the error names these
	}{
		{"int64 to int32", []arrow.Field{field("key", arrow.PrimitiveTypes.Int32)}, []Column{{FieldID: ptr(1)}}, Options{},
			ErrCast, []string{`"key"`, "int64", "int32"}},
		{"double to float", []arrow.Field{field("amt", arrow.PrimitiveTypes.Float32)}, []Column{{Name: "amount"}}, Options{},
			ErrCast, []string{`"amt"`, "float64", "float32"}},
		{"decimal narrowed", []arrow.Field{field("p", &arrow.Decimal128Type{Precision: 9, Scale: 2})}, []Column{{FieldID: ptr(8)}}, Options{},
			ErrCast, []string{`"p"`, "decimal(10, 2)", "decimal(9, 2)"}},
		{"decimal scale dropped", []arrow.Field{field("p", &arrow.Decimal128Type{Precision: 12, Scale: 1})}, []Column{{FieldID: ptr(8)}}, Options{},
			ErrCast, []string{`"p"`}},
		{"string to int", []arrow.Field{field("n", i64)}, []Column{{Name: "name"}}, Options{},
			ErrCast, []string{`"n"`, "utf8", "int64"}},
		{"timestamp to date", []arrow.Field{field("d", arrow.FixedWidthTypes.Date32)}, []Column{{Name: "ts"}}, Options{},
			ErrCast, []string{"timestamp[us, tz=UTC]", "date32"}},
		{"primitive to struct", []arrow.Field{field("s", arrow.StructOf(field("a", i64)))}, []Column{{Name: "id"}}, Options{},
			ErrCast, []string{`"s"`}},
		{"a constant that does not cast", []arrow.Field{field("c", i64)}, []Column{{Constant: scalar.NewStringScalar("x")}}, Options{},
			ErrCast, []string{`"c"`, "utf8", "int64"}},
		{"too few columns", []arrow.Field{field("a", i64), field("b", i64)}, []Column{{Name: "id"}}, Options{},
			ErrInvalid, nil},
		{"two sources", []arrow.Field{field("a", i64)}, []Column{{Name: "id", FieldID: ptr(1)}}, Options{},
			ErrInvalid, []string{`"a"`}},
		{"children of a primitive", []arrow.Field{field("a", i64)}, []Column{{Name: "id", Children: []Column{{}}}}, Options{},
			ErrInvalid, []string{`"a"`}},
		{"row groups out of order", []arrow.Field{field("a", i64)}, []Column{{Name: "id"}}, Options{RowGroups: []int{0, 0}},
			ErrInvalid, nil},
		{"a row group the file lacks", []arrow.Field{field("a", i64)}, []Column{{Name: "id"}}, Options{RowGroups: []int{1}},
			ErrInvalid, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			tc.opts.Allocator = mem
			tc.opts.Path = "data/f.parquet"
			res, err := readAll(t, baseFile(t, mem), arrow.NewSchema(tc.fields, nil), tc.cols, tc.opts)
			res.release()
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %s", err, s)
				}
			}
		})
	}
}

// TestReadLossyValues: casts whose rule holds but a value would change
// fail with ErrCast naming the column, not with a null.
func TestReadLossyValues(t *testing.T) {
	tests := []struct {
		name string
		from arrow.DataType
		rows string
		to   arrow.DataType
	}{
		{"a sub-microsecond timestamp", &arrow.TimestampType{Unit: arrow.Nanosecond}, `[{"v": 1000}, {"v": 1001}]`, tsNTZ},
		{"bytes that are not UTF-8", arrow.BinaryTypes.Binary, `[{"v": "YQ=="}, {"v": "/w=="}]`, arrow.BinaryTypes.String},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			rec := fromJSON(t, mem, arrow.NewSchema([]arrow.Field{field("v", tc.from)}, nil), tc.rows)
			f := writeParquet(t, rec, 100)
			rec.Release()
			res, err := readAll(t, f, arrow.NewSchema([]arrow.Field{field("v", tc.to)}, nil), []Column{{Name: "v"}}, Options{Allocator: mem})
			res.release()
			if !errors.Is(err, ErrCast) || !strings.Contains(err.Error(), `"v"`) {
				t.Fatalf("error %v, want ErrCast naming v", err)
			}
		})
	}
}

// rowsFile is a file of n rows (id = row index, s = its decimal string) in
// row groups of rg rows.
func rowsFile(t testing.TB, mem memory.Allocator, n, rg int) *bytes.Reader {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(1)},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fid(2)},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprint(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return writeParquet(t, rec, int64(rg))
}

func TestReadRowGroups(t *testing.T) {
	tests := []struct {
		name      string
		rowGroups []int
		batchRows int
		cols      []Column // default: id and s by field id
		firsts    []int64
		lens      []int64
	}{
		{"every row group", nil, 16, nil,
			[]int64{0, 16, 32, 48, 64, 80, 96}, []int64{16, 16, 16, 16, 16, 16, 4}},
		{"some: a batch never spans a skipped row group", []int{1, 2, 5, 9}, 7, nil,
			[]int64{10, 17, 24, 50, 57, 90, 97}, []int64{7, 7, 6, 7, 3, 7, 3}},
		{"none", []int{}, 16, nil, nil, nil},
		{"the last", []int{9}, 0, nil, []int64{90}, []int64{10}},
		{"no column from the file", []int{1, 2}, 16, []Column{{Constant: scalar.NewInt64Scalar(7)}, {}},
			[]int64{10, 26}, []int64{16, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			f := rowsFile(t, mem, 100, 10)
			target := arrow.NewSchema([]arrow.Field{field("id", arrow.PrimitiveTypes.Int64), field("s", arrow.BinaryTypes.String)}, nil)
			cols := tc.cols
			if cols == nil {
				cols = []Column{{FieldID: ptr(1)}, {FieldID: ptr(2)}}
			}
			var firsts, lens []int64
			err := Read(context.Background(), f, target, cols, Options{Allocator: mem, RowGroups: tc.rowGroups, BatchRows: tc.batchRows},
				func(rec arrow.RecordBatch, first int64) error {
					defer rec.Release()
					firsts, lens = append(firsts, first), append(lens, rec.NumRows())
					if tc.cols != nil {
						return nil
					}
					ids, ss := rec.Column(0).(*array.Int64), rec.Column(1).(*array.String)
					for i := range ids.Len() {
						if ids.Value(i) != first+int64(i) || ss.Value(i) != fmt.Sprint(first+int64(i)) {
							return fmt.Errorf("row %d of the batch at %d holds %d %q", i, first, ids.Value(i), ss.Value(i))
						}
					}
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(firsts, tc.firsts) || !slices.Equal(lens, tc.lens) {
				t.Errorf("batches at %v of %v rows, want at %v of %v", firsts, lens, tc.firsts, tc.lens)
			}
		})
	}
}

func TestFooter(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	f := rowsFile(t, mem, 25, 10)
	m, err := Footer(f)
	if err != nil {
		t.Fatal(err)
	}
	if m.Rows != 25 || len(m.RowGroups) != 3 {
		t.Fatalf("%d rows in %d row groups, want 25 in 3", m.Rows, len(m.RowGroups))
	}
	end := int64(4) // after the magic bytes
	for i, rg := range m.RowGroups {
		if rg.First != int64(10*i) || rg.Rows != min(10, 25-int64(10*i)) {
			t.Errorf("row group %d: first %d rows %d", i, rg.First, rg.Rows)
		}
		if rg.Offset != end || rg.Size <= 0 {
			t.Errorf("row group %d: bytes %d+%d, want from %d", i, rg.Offset, rg.Size, end)
		}
		end = rg.Offset + rg.Size
	}
	leaf, ok := m.LeafIndex(Column{FieldID: ptr(2)})
	if !ok || leaf != 1 {
		t.Fatalf("leaf of field 2: %d %v", leaf, ok)
	}
	if _, ok := m.LeafIndex(Column{Name: "nope"}); ok {
		t.Error("a leaf for a column the file lacks")
	}
	st, err := m.File.RowGroup(1).ColumnChunk(leaf)
	if err != nil {
		t.Fatal(err)
	}
	if stats, err := st.Statistics(); err != nil || stats == nil || !stats.HasMinMax() {
		t.Errorf("no statistics: %v", err)
	}
	// The footer read once serves a read of some row groups.
	var firsts []int64
	target := arrow.NewSchema([]arrow.Field{field("id", arrow.PrimitiveTypes.Int64)}, nil)
	err = Read(context.Background(), f, target, []Column{{Name: "id"}}, Options{Allocator: mem, Meta: m, RowGroups: []int{2}},
		func(rec arrow.RecordBatch, first int64) error {
			defer rec.Release()
			firsts = append(firsts, first)
			return nil
		})
	if err != nil || !slices.Equal(firsts, []int64{20}) {
		t.Fatalf("read with the footer: %v, batches at %v", err, firsts)
	}
}

// TestReadInt96: a timestamp written as Parquet's deprecated INT96 (as
// Spark and Photon do) reads as microseconds, with or without zone.
func TestReadInt96(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sc := arrow.NewSchema([]arrow.Field{field("t", &arrow.TimestampType{Unit: arrow.Nanosecond})}, nil)
	rec := fromJSON(t, mem, sc, `[{"t": 1700000000123456000}, {"t": null}, {"t": -86400000000000}]`)
	f := writeParquet(t, rec, 100, pqarrow.WithDeprecatedInt96Timestamps(true))
	rec.Release()
	m, err := Footer(f)
	if err != nil {
		t.Fatal(err)
	}
	if pt := m.File.Schema.Column(0).PhysicalType().String(); pt != "INT96" {
		t.Fatalf("written as %s, want INT96", pt)
	}
	for _, to := range []*arrow.TimestampType{tsNTZ, tsUTC} {
		t.Run(to.String(), func(t *testing.T) {
			target := arrow.NewSchema([]arrow.Field{field("t", to)}, nil)
			res, err := readAll(t, f, target, []Column{{Name: "t"}}, Options{Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			defer res.release()
			want := fromJSON(t, mem, target, `[{"t": 1700000000123456}, {"t": null}, {"t": -86400000000}]`)
			defer want.Release()
			wantEqual(t, res.rec, want)
		})
	}
}

// TestReadDictionary: a column the file's stored Arrow schema says is
// dictionary-encoded reads as the plain target type.
func TestReadDictionary(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	b := array.NewDictionaryBuilder(mem, dt).(*array.BinaryDictionaryBuilder)
	for _, s := range []string{"x", "y", "", "x"} {
		if s == "" {
			b.AppendNull()
			continue
		}
		if err := b.AppendString(s); err != nil {
			t.Fatal(err)
		}
	}
	arr := b.NewArray()
	b.Release()
	sc := arrow.NewSchema([]arrow.Field{field("d", dt)}, nil)
	rec := array.NewRecordBatch(sc, []arrow.Array{arr}, -1)
	arr.Release()
	f := writeParquet(t, rec, 100, pqarrow.WithStoreSchema())
	rec.Release()
	for _, to := range []arrow.DataType{arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString} {
		t.Run(to.String(), func(t *testing.T) {
			target := arrow.NewSchema([]arrow.Field{field("d", to)}, nil)
			res, err := readAll(t, f, target, []Column{{Name: "d"}}, Options{Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			defer res.release()
			want := fromJSON(t, mem, target, `[{"d": "x"}, {"d": "y"}, {"d": null}, {"d": "x"}]`)
			defer want.Release()
			wantEqual(t, res.rec, want)
		})
	}
}

// TestReadCancel: a cancelled context ends the read before the next batch.
func TestReadCancel(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	f := rowsFile(t, mem, 100, 10)
	target := arrow.NewSchema([]arrow.Field{field("id", arrow.PrimitiveTypes.Int64)}, nil)
	t.Run("while reading", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		n := 0
		err := Read(ctx, f, target, []Column{{Name: "id"}}, Options{Allocator: mem, BatchRows: 10}, func(rec arrow.RecordBatch, _ int64) error {
			rec.Release()
			n++
			cancel()
			return nil
		})
		if !errors.Is(err, context.Canceled) || n != 1 {
			t.Fatalf("error %v after %d batches, want context.Canceled after 1", err, n)
		}
	})
	t.Run("before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := Read(ctx, f, target, []Column{{Name: "id"}}, Options{Allocator: mem}, func(rec arrow.RecordBatch, _ int64) error {
			rec.Release()
			return errors.New("a batch after cancelling")
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v, want context.Canceled", err)
		}
	})
	t.Run("the callback's error", func(t *testing.T) {
		stop := errors.New("stop")
		err := Read(context.Background(), f, target, []Column{{Name: "id"}}, Options{Allocator: mem, BatchRows: 10}, func(rec arrow.RecordBatch, _ int64) error {
			rec.Release()
			return stop
		})
		if !errors.Is(err, stop) {
			t.Fatalf("error %v, want the callback's", err)
		}
	})
}
