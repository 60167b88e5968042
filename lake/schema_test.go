package lake

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

func testSchema(t *testing.T) *Schema {
	t.Helper()
	s, err := NewSchema(3, []int{1},
		Field{ID: 1, Name: "id", Type: LongType{}, Required: true},
		Field{ID: 2, Name: "addr", Type: &StructType{Fields: []Field{
			{ID: 3, Name: "city", Type: StringType{}, Doc: "where"},
		}}},
		Field{ID: 4, Name: "points", Type: &ListType{ElementID: 5, Element: &StructType{Fields: []Field{
			{ID: 6, Name: "x", Type: DoubleType{}, Required: true},
		}}}},
		Field{ID: 7, Name: "tags", Type: &MapType{KeyID: 8, Key: StringType{}, ValueID: 9, Value: DecimalType{Precision: 9, Scale: 2}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSchemaLookups(t *testing.T) {
	s := testSchema(t)
	for name, id := range map[string]int{"id": 1, "addr.city": 3, "points.element.x": 6, "points.x": 6,
		"points.element": 5, "tags.key": 8, "tags.value": 9} {
		if f, ok := s.FieldByName(name); !ok || f.ID != id {
			t.Errorf("FieldByName(%q) = %v, %v; want id %d", name, f, ok, id)
		}
	}
	if _, ok := s.FieldByName("ADDR.city"); ok {
		t.Error("FieldByName matched another case")
	}
	if f, ok := s.FieldByNameFold("ADDR.City"); !ok || f.ID != 3 {
		t.Errorf("FieldByNameFold = %v, %v", f, ok)
	}
	if name, ok := s.ColumnName(6); !ok || name != "points.element.x" {
		t.Errorf("ColumnName(6) = %q, %v", name, ok)
	}
	if got := s.Fields[3].Type.String(); got != "map<string, decimal(9, 2)>" {
		t.Errorf("map type = %s", got)
	}
	if got := s.Fields[1].Type.String(); got != "struct<3: city: optional string (where)>" {
		t.Errorf("struct type = %s", got)
	}
	sel, err := s.Select("points.x", "id")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sel.String(), "table {\n\t1: id: required long\n\t4: points: optional list<struct<6: x: required double>>\n}"; got != want {
		t.Errorf("Select = %s, want %s", got, want)
	}
	if _, err := s.Select("nope"); !errors.Is(err, ErrInvalidSchema) {
		t.Errorf("Select(nope) = %v", err)
	}
}

func TestNewSchemaDuplicates(t *testing.T) {
	_, err := NewSchema(0, nil, Field{ID: 1, Name: "a", Type: IntType{}}, Field{ID: 1, Name: "b", Type: IntType{}})
	if !errors.Is(err, ErrInvalidSchema) {
		t.Errorf("duplicate id: %v", err)
	}
	_, err = NewSchema(0, nil, Field{ID: 1, Name: "a", Type: IntType{}}, Field{ID: 2, Name: "a", Type: IntType{}})
	if !errors.Is(err, ErrInvalidSchema) {
		t.Errorf("duplicate name: %v", err)
	}
}

func TestCompare(t *testing.T) {
	ts, _ := TimestampValue(TimestampTzType{}, 5)
	d2 := DecimalType{Precision: 9, Scale: 2}
	for _, tc := range []struct {
		a, b   Value
		c      int
		wantOK bool
	}{
		{IntValue(1), LongValue(2), -1, true},
		{ts, LongValue(5), 0, true},
		{DoubleValue(2), FloatValue(1), 1, true},
		{DoubleValue(nan()), DoubleValue(1), 0, false},
		{StringValue("b"), StringValue("a"), 1, true},
		{BinaryValue([]byte{1}), FixedValue([]byte{1, 0}), -1, true},
		{DecimalValue(d2, decimal128.FromI64(150)), DecimalValue(d2, decimal128.FromI64(-1)), 1, true},
		{DecimalValue(d2, decimal128.FromI64(1)), DecimalValue(DecimalType{Precision: 9, Scale: 3}, decimal128.FromI64(1)), 0, false},
		{StringValue("1"), LongValue(1), 0, false},
		{Value{}, Value{}, 0, false},
	} {
		c, ok := Compare(tc.a, tc.b)
		if c != tc.c || ok != tc.wantOK {
			t.Errorf("Compare(%v, %v) = %d, %v; want %d, %v", tc.a, tc.b, c, ok, tc.c, tc.wantOK)
		}
	}
}

func nan() float64 { z := 0.0; return z / z }
