package pqread

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// nestedSchema is a file schema with a struct in a struct, a list, a map
// and a list of structs, with Iceberg field ids. Its leaves, in order:
// id 0, s.a 1, s.b 2, s.c.x 3, s.c.y 4, l 5, m.key 6, m.value 7, ls.p 8,
// ls.q 9.
var nestedSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(1)},
	{Name: "s", Nullable: true, Metadata: fid(2), Type: arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true, Metadata: fid(3)},
		arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fid(4)},
		arrow.Field{Name: "c", Nullable: true, Metadata: fid(5), Type: arrow.StructOf(
			arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true, Metadata: fid(6)},
			arrow.Field{Name: "y", Type: arrow.PrimitiveTypes.Float32, Nullable: true, Metadata: fid(7)},
		)},
	)},
	{Name: "l", Nullable: true, Metadata: fid(8), Type: arrow.ListOfField(
		arrow.Field{Name: "element", Type: arrow.PrimitiveTypes.Int32, Nullable: true, Metadata: fid(9)})},
	{Name: "m", Nullable: true, Metadata: fid(10), Type: arrow.MapOfWithMetadata(
		arrow.BinaryTypes.String, fid(11), arrow.PrimitiveTypes.Int32, fid(12))},
	{Name: "ls", Nullable: true, Metadata: fid(13), Type: arrow.ListOfField(arrow.Field{Name: "element", Nullable: true, Metadata: fid(16),
		Type: arrow.StructOf(
			arrow.Field{Name: "p", Type: arrow.PrimitiveTypes.Int32, Nullable: true, Metadata: fid(14)},
			arrow.Field{Name: "q", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fid(15)},
		)})},
}, nil)

const nestedRows = `[
{"id": 1, "s": {"a": 1, "b": "x", "c": {"x": 10, "y": 1.5}}, "l": [1, 2], "m": [{"key": "k", "value": 1}], "ls": [{"p": 1, "q": "a"}]},
{"id": 2, "s": null, "l": null, "m": null, "ls": []},
{"id": 3, "s": {"a": null, "b": null, "c": null}, "l": [], "m": [], "ls": [{"p": null, "q": "b"}, {"p": 3, "q": null}]}
]`

func nestedFile(t testing.TB, mem memory.Allocator) *bytes.Reader {
	rec := fromJSON(t, mem, nestedSchema, nestedRows)
	defer rec.Release()
	return writeParquet(t, rec, 1000)
}

func TestReadNested(t *testing.T) {
	i32, i64, utf8 := arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String
	tests := []struct {
		name   string
		fields []arrow.Field
		cols   []Column
		want   string
	}{{
		name:   "struct children by field id, renamed, reordered and widened",
		fields: []arrow.Field{field("t", arrow.StructOf(field("bee", utf8), field("ay", i64)))},
		cols:   []Column{{FieldID: ptr(2), Children: []Column{{FieldID: ptr(4)}, {FieldID: ptr(3)}}}},
		want:   `[{"t": {"bee": "x", "ay": 1}}, {"t": null}, {"t": {"bee": null, "ay": null}}]`,
	}, {
		name:   "struct children missing and constant",
		fields: []arrow.Field{field("s", arrow.StructOf(field("a", i32), field("gone", utf8), field("k", utf8), field("gone_id", i64)))},
		cols:   []Column{{Name: "s", Children: []Column{{Name: "a"}, {}, {Constant: scalar.NewStringScalar("z")}, {FieldID: ptr(99)}}}},
		want: `[{"s": {"a": 1, "gone": null, "k": "z", "gone_id": null}}, {"s": null},
			{"s": {"a": null, "gone": null, "k": "z", "gone_id": null}}]`,
	}, {
		name: "a struct in a struct by name, part of it",
		fields: []arrow.Field{field("s", arrow.StructOf(
			field("c", arrow.StructOf(field("y", arrow.PrimitiveTypes.Float64), field("z", i64)))))},
		cols: []Column{{Name: "s"}},
		want: `[{"s": {"c": {"y": 1.5, "z": null}}}, {"s": null}, {"s": {"c": null}}]`,
	}, {
		name:   "a struct none of whose fields the file has keeps its nulls",
		fields: []arrow.Field{field("s", arrow.StructOf(field("gone", i64)))},
		cols:   []Column{{Name: "s"}},
		want:   `[{"s": {"gone": null}}, {"s": null}, {"s": {"gone": null}}]`,
	}, {
		name:   "a missing struct",
		fields: []arrow.Field{field("id", i64), field("s", arrow.StructOf(field("a", i32)))},
		cols:   []Column{{Name: "id"}, {FieldID: ptr(77)}},
		want:   `[{"id": 1, "s": null}, {"id": 2, "s": null}, {"id": 3, "s": null}]`,
	}, {
		name:   "a list's element widened",
		fields: []arrow.Field{field("l", arrow.ListOf(i64))},
		cols:   []Column{{FieldID: ptr(8)}},
		want:   `[{"l": [1, 2]}, {"l": null}, {"l": []}]`,
	}, {
		name:   "a list as a large list",
		fields: []arrow.Field{field("l", arrow.LargeListOf(i32))},
		cols:   []Column{{Name: "l"}},
		want:   `[{"l": [1, 2]}, {"l": null}, {"l": []}]`,
	}, {
		name:   "a map's value widened",
		fields: []arrow.Field{field("m", arrow.MapOf(utf8, i64))},
		cols:   []Column{{Name: "m"}},
		want:   `[{"m": [{"key": "k", "value": 1}]}, {"m": null}, {"m": []}]`,
	}, {
		name:   "a list of structs, the element's fields by field id",
		fields: []arrow.Field{field("ls", arrow.ListOf(arrow.StructOf(field("qq", utf8), field("pp", i64), field("new", utf8))))},
		cols:   []Column{{FieldID: ptr(13), Children: []Column{{Children: []Column{{FieldID: ptr(15)}, {FieldID: ptr(14)}, {}}}}}},
		want: `[{"ls": [{"qq": "a", "pp": 1, "new": null}]}, {"ls": []},
			{"ls": [{"qq": "b", "pp": null, "new": null}, {"qq": null, "pp": 3, "new": null}]}]`,
	}, {
		name:   "nested columns as written, without field ids",
		fields: withoutMetadata(nestedSchema.Fields()),
		cols:   []Column{{Name: "id"}, {Name: "s"}, {Name: "l"}, {Name: "m"}, {Name: "ls"}},
		want:   nestedRows,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			target := arrow.NewSchema(tc.fields, nil)
			res, err := readAll(t, nestedFile(t, mem), target, tc.cols, Options{Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			defer res.release()
			want := fromJSON(t, mem, target, tc.want)
			defer want.Release()
			wantEqual(t, res.rec, want)
		})
	}
}

// withoutMetadata is fs without field metadata, at every depth.
func withoutMetadata(fs []arrow.Field) []arrow.Field {
	out := slices.Clone(fs)
	for i := range out {
		out[i].Metadata = arrow.Metadata{}
		out[i].Type = typeWithoutMetadata(out[i].Type)
	}
	return out
}

func typeWithoutMetadata(dt arrow.DataType) arrow.DataType {
	one := func(f arrow.Field) arrow.Field { return withoutMetadata([]arrow.Field{f})[0] }
	switch t := dt.(type) {
	case *arrow.StructType:
		return arrow.StructOf(withoutMetadata(t.Fields())...)
	case *arrow.MapType:
		return arrow.MapOfFields(one(t.KeyField()), one(t.ItemField()))
	case *arrow.ListType:
		return arrow.ListOfField(one(t.ElemField()))
	case *arrow.LargeListType:
		return arrow.LargeListOfField(one(t.ElemField()))
	}
	return dt
}

func TestReadNestedErrors(t *testing.T) {
	i64 := arrow.PrimitiveTypes.Int64
	tests := []struct {
		name   string
		fields []arrow.Field
		cols   []Column
		want   error
	}{
		{"a list as a struct", []arrow.Field{field("l", arrow.StructOf(field("a", i64)))}, []Column{{Name: "l"}}, ErrCast},
		{"a struct as a list", []arrow.Field{field("s", arrow.ListOf(i64))}, []Column{{Name: "s"}}, ErrCast},
		{"a struct child that does not cast", []arrow.Field{field("s", arrow.StructOf(field("b", i64)))}, []Column{{Name: "s"}}, ErrCast},
		{"too few children", []arrow.Field{field("s", arrow.StructOf(field("a", i64), field("b", i64)))},
			[]Column{{Name: "s", Children: []Column{{Name: "a"}}}}, ErrInvalid},
		{"a list with two element columns", []arrow.Field{field("l", arrow.ListOf(i64))},
			[]Column{{Name: "l", Children: []Column{{}, {}}}}, ErrInvalid},
		{"a list element that is a constant", []arrow.Field{field("l", arrow.ListOf(i64))},
			[]Column{{Name: "l", Children: []Column{{Constant: scalar.NewInt64Scalar(1), Name: "x"}}}}, ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			res, err := readAll(t, nestedFile(t, mem), arrow.NewSchema(tc.fields, nil), tc.cols, Options{Allocator: mem})
			res.release()
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
}

// TestProjectLeaves: a read decodes only the leaf columns its target
// needs.
func TestProjectLeaves(t *testing.T) {
	i64 := arrow.PrimitiveTypes.Int64
	tests := []struct {
		name   string
		fields []arrow.Field
		cols   []Column
		leaves []int
	}{
		{"one top-level column", []arrow.Field{field("id", i64)}, []Column{{FieldID: ptr(1)}}, []int{0}},
		{"a struct's field in a struct", []arrow.Field{field("s", arrow.StructOf(field("c", arrow.StructOf(field("y", arrow.PrimitiveTypes.Float32)))))},
			[]Column{{Name: "s"}}, []int{4}},
		{"a struct none of whose fields the file has: its first leaf, for its nulls",
			[]arrow.Field{field("s", arrow.StructOf(field("gone", i64)))}, []Column{{Name: "s"}}, []int{1}},
		{"a list of structs, one field of the element", []arrow.Field{field("ls", arrow.ListOf(arrow.StructOf(field("q", arrow.BinaryTypes.String))))},
			[]Column{{Name: "ls"}}, []int{9}},
		{"a map, whole", []arrow.Field{field("m", arrow.MapOf(arrow.BinaryTypes.String, i64))}, []Column{{Name: "m"}}, []int{6, 7}},
		{"constants and missing columns: none", []arrow.Field{field("a", i64), field("b", i64)},
			[]Column{{Constant: scalar.NewInt64Scalar(1)}, {FieldID: ptr(50)}}, []int{}},
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	pf, err := file.NewParquetReader(nestedFile(t, mem))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := project(fr.Manifest, arrow.NewSchema(tc.fields, nil), tc.cols)
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Sorted(maps.Keys(p.leaves)); !slices.Equal(got, tc.leaves) {
				t.Fatalf("leaves %v, want %v", got, tc.leaves)
			}
		})
	}
}
