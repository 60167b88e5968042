package iceberg

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/lake"
)

// schemaGen makes random Iceberg schemas: every primitive type, structs,
// lists and maps nested up to a depth, docs, required and optional fields.
type schemaGen struct {
	r    *rand.Rand
	next int
}

var primitives = []iceberg.Type{
	iceberg.PrimitiveTypes.Bool, iceberg.PrimitiveTypes.Int32, iceberg.PrimitiveTypes.Int64,
	iceberg.PrimitiveTypes.Float32, iceberg.PrimitiveTypes.Float64, iceberg.PrimitiveTypes.Date,
	iceberg.PrimitiveTypes.Time, iceberg.PrimitiveTypes.Timestamp, iceberg.PrimitiveTypes.TimestampTz,
	iceberg.PrimitiveTypes.TimestampNs, iceberg.PrimitiveTypes.TimestampTzNs, iceberg.PrimitiveTypes.String,
	iceberg.PrimitiveTypes.UUID, iceberg.PrimitiveTypes.Binary,
}

func (g *schemaGen) id() int { g.next++; return g.next }

func (g *schemaGen) typ(depth int) iceberg.Type {
	n := 4
	if depth > 0 {
		n = 7
	}
	switch g.r.IntN(n) {
	case 0:
		return iceberg.DecimalTypeOf(1+g.r.IntN(38), 0)
	case 1:
		return iceberg.FixedTypeOf(1 + g.r.IntN(32))
	case 4:
		return &iceberg.StructType{FieldList: g.fields(depth-1, 1+g.r.IntN(3))}
	case 5:
		return &iceberg.ListType{ElementID: g.id(), Element: g.typ(depth - 1), ElementRequired: g.r.IntN(2) == 0}
	case 6:
		kid, vid := g.id(), g.id()
		return &iceberg.MapType{KeyID: kid, KeyType: g.typ(0), ValueID: vid, ValueType: g.typ(depth - 1),
			ValueRequired: g.r.IntN(2) == 0}
	}
	return primitives[g.r.IntN(len(primitives))]
}

func (g *schemaGen) fields(depth, n int) []iceberg.NestedField {
	out := make([]iceberg.NestedField, n)
	for i := range out {
		f := iceberg.NestedField{ID: g.id(), Name: fmt.Sprintf("c%d", i), Required: g.r.IntN(2) == 0}
		if g.r.IntN(4) == 0 {
			f.Doc = fmt.Sprintf("doc of %d", f.ID)
		}
		f.Type = g.typ(depth)
		out[i] = f
	}
	return out
}

func (g *schemaGen) schema() *iceberg.Schema {
	fields := g.fields(3, 1+g.r.IntN(6))
	return iceberg.NewSchemaWithIdentifiers(g.r.IntN(5), []int{fields[0].ID}, fields...)
}

// names lists every full and short name of s, as iceberg-go indexes them.
func names(t *testing.T, s *iceberg.Schema) map[string]int {
	t.Helper()
	idx, err := iceberg.IndexByName(s)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// sameArrow fails unless got and want are the same Arrow schema, field
// metadata included.
func sameArrow(t *testing.T, what string, got, want *arrow.Schema) {
	t.Helper()
	if !got.Equal(want) || !got.Metadata().Equal(want.Metadata()) ||
		!arrow.TypeEqual(arrow.StructOf(got.Fields()...), arrow.StructOf(want.Fields()...), arrow.CheckMetadata()) {
		t.Fatalf("%s: Arrow schemas differ:\ngot  %s\nwant %s", what, got, want)
	}
}

// TestSchemaFromRandom converts many random schemas and checks that lake
// gives what iceberg-go gives: the Arrow schema, type spellings, the field
// of every id and name, column names and selections.
func TestSchemaFromRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		g := &schemaGen{r: r}
		is := g.schema()
		ls, err := SchemaFrom(is)
		if err != nil {
			t.Fatalf("schema %d: %v\n%s", i, err, is)
		}
		want, err := table.SchemaToArrowSchema(is, nil, false, false)
		if err != nil {
			t.Fatal(err)
		}
		sameArrow(t, fmt.Sprintf("schema %d", i), ls.ToArrow(), want)
		if ls.String() != is.String() {
			t.Fatalf("schema %d: String\ngot  %s\nwant %s", i, ls, is)
		}
		if back := ToIceberg(ls); !back.Equals(is) {
			t.Fatalf("schema %d: round trip\ngot  %s\nwant %s", i, back, is)
		}
		idx := names(t, is)
		for name, id := range idx {
			f, ok := ls.FieldByName(name)
			if !ok || f.ID != id {
				t.Fatalf("schema %d: FieldByName(%q) = %d, %v; want %d", i, name, f.ID, ok, id)
			}
			want, _ := is.FindFieldByID(id)
			if f.String() != want.String() {
				t.Fatalf("schema %d: field %d = %s, want %s", i, id, f, want)
			}
			col, _ := is.FindColumnName(id)
			if got, ok := ls.ColumnName(id); !ok || got != col {
				t.Fatalf("schema %d: ColumnName(%d) = %q, want %q", i, id, got, col)
			}
		}
		for _, bad := range []string{"nope", "c0.nope", "C0"} {
			if _, ok := ls.FieldByName(bad); ok != (idx[bad] != 0) {
				t.Fatalf("schema %d: FieldByName(%q) found %v", i, bad, ok)
			}
		}
		// Select: some names, as feed's changeSchema selects columns.
		all := slices.Sorted(func(yield func(string) bool) {
			for n := range idx {
				if !yield(n) {
					return
				}
			}
		})
		var pick []string
		for _, n := range all {
			f, _ := is.FindFieldByName(n)
			if _, nested := f.Type.(iceberg.NestedType); !nested && r.IntN(3) == 0 {
				pick = append(pick, n)
			}
		}
		isel, err := is.Select(true, pick...)
		if err != nil {
			t.Fatal(err)
		}
		lsel, err := ls.Select(pick...)
		if err != nil {
			t.Fatal(err)
		}
		if lsel.String() != isel.String() || !reflect.DeepEqual(lsel.IdentifierFieldIDs, isel.IdentifierFieldIDs) {
			t.Fatalf("schema %d: Select(%q)\ngot  %s %v\nwant %s %v", i, pick, lsel, lsel.IdentifierFieldIDs,
				isel, isel.IdentifierFieldIDs)
		}
		wantSel, err := table.SchemaToArrowSchema(isel, nil, false, false)
		if err != nil {
			t.Fatal(err)
		}
		sameArrow(t, fmt.Sprintf("schema %d select", i), lsel.ToArrow(), wantSel)
	}
}

func TestSelectUnknown(t *testing.T) {
	s, err := lake.NewSchema(0, nil, lake.Field{ID: 1, Name: "a", Type: lake.LongType{}})
	if err != nil {
		t.Fatal(err)
	}
	_, lerr := s.Select("b")
	_, ierr := ToIceberg(s).Select(true, "b")
	if lerr == nil || ierr == nil || lerr.Error() != ierr.Error() {
		t.Fatalf("Select(b) = %v, iceberg-go says %v", lerr, ierr)
	}
}

func TestDefaults(t *testing.T) {
	for _, tc := range []struct {
		typ  iceberg.Type
		in   any
		want lake.Value
	}{
		{iceberg.PrimitiveTypes.Int32, float64(7), lake.IntValue(7)},
		{iceberg.PrimitiveTypes.Int64, float64(-3), lake.LongValue(-3)},
		{iceberg.PrimitiveTypes.Float64, float64(1.5), lake.DoubleValue(1.5)},
		{iceberg.PrimitiveTypes.String, "x", lake.StringValue("x")},
		{iceberg.PrimitiveTypes.Binary, "0aff", lake.BinaryValue([]byte{0x0a, 0xff})},
		{iceberg.PrimitiveTypes.Bool, true, lake.BooleanValue(true)},
		{iceberg.PrimitiveTypes.Date, "2024-05-01", lake.DateValue(19844)},
	} {
		got, err := DefaultValue(tc.in, tc.typ)
		if err != nil {
			t.Fatalf("%v %v: %v", tc.typ, tc.in, err)
		}
		if c, ok := lake.Compare(got, tc.want); !ok || c != 0 || !lake.Equal(got.Type(), tc.want.Type()) {
			t.Errorf("%v %v = %v (%v), want %v", tc.typ, tc.in, got, got.Type(), tc.want)
		}
	}
	got, err := DefaultValue("2024-05-01T10:00:00Z", iceberg.PrimitiveTypes.TimestampTz)
	if err != nil || got.Type() != (lake.TimestampTzType{}) || got.Int() != 1714557600000000 {
		t.Errorf("timestamptz default = %v (%v), %v", got, got.Type(), err)
	}
	if _, err := FieldFrom(iceberg.NestedField{ID: 1, Name: "a", Type: iceberg.PrimitiveTypes.Int32,
		InitialDefault: "nope"}); err == nil {
		t.Error("a default that does not convert converted")
	}
}
