package delta

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
)

// protocolSchema is the example of PROTOCOL.md's "Schema Serialization
// Format".
const protocolSchema = `{
  "type" : "struct",
  "fields" : [ {
    "name" : "a", "type" : "integer", "nullable" : false, "metadata" : { }
  }, {
    "name" : "b",
    "type" : { "type" : "struct", "fields" : [ { "name" : "d", "type" : "integer", "nullable" : false, "metadata" : { } } ] },
    "nullable" : true, "metadata" : { }
  }, {
    "name" : "c", "type" : { "type" : "array", "elementType" : "integer", "containsNull" : false },
    "nullable" : true, "metadata" : { }
  }, {
    "name" : "e",
    "type" : { "type" : "array", "elementType" : { "type" : "struct", "fields" : [ {
      "name" : "d", "type" : "integer", "nullable" : false, "metadata" : { } } ] }, "containsNull" : true },
    "nullable" : true, "metadata" : { }
  }, {
    "name" : "f", "type" : { "type" : "map", "keyType" : "string", "valueType" : "string", "valueContainsNull" : true },
    "nullable" : true, "metadata" : { }
  } ]
}`

// nestedIDsSchema is PROTOCOL.md's example of nested ids ("Iceberg
// Compatibility V2"), with "integer" where the example writes "int",
// which is no Delta type.
const nestedIDsSchema = `{"type": "struct", "fields": [
  {"name": "col1", "nullable": true,
   "type": {"type": "array", "containsNull": true, "elementType": {"type": "array", "containsNull": true, "elementType": "integer"}},
   "metadata": {"delta.columnMapping.id": 1, "delta.columnMapping.physicalName": "col-aaa",
     "delta.columnMapping.nested.ids": {"col-aaa.element": 100, "col-aaa.element.element": 101}}},
  {"name": "col2", "nullable": true,
   "type": {"type": "map", "keyType": "integer", "valueType": {"type": "array", "elementType": "integer", "containsNull": true}},
   "metadata": {"delta.columnMapping.id": 2, "delta.columnMapping.physicalName": "col-bbb",
     "delta.columnMapping.nested.ids": {"col-bbb.key": 102, "col-bbb.value": 103, "col-bbb.value.element": 104}}},
  {"name": "col3", "nullable": true,
   "type": {"type": "map", "keyType": "integer", "valueType": {"type": "struct", "fields": [
     {"name": "subcol1", "nullable": true, "type": {"type": "array", "elementType": "integer", "containsNull": true},
      "metadata": {"delta.columnMapping.id": 4, "delta.columnMapping.physicalName": "col-ddd",
        "delta.columnMapping.nested.ids": {"col-ddd.element": 107}}}]}},
   "metadata": {"delta.columnMapping.id": 3, "delta.columnMapping.physicalName": "col-ccc",
     "delta.columnMapping.nested.ids": {"col-ccc.key": 105, "col-ccc.value": 106}}}
]}`

func mustParse(t testing.TB, s string) *StructType {
	t.Helper()
	st, err := ParseSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestParseSchemaProtocolExample(t *testing.T) {
	st := mustParse(t, protocolSchema)
	want := &StructType{Fields: []StructField{
		{Name: "a", Type: TypeInteger, Metadata: map[string]any{}},
		{Name: "b", Type: &StructType{Fields: []StructField{{Name: "d", Type: TypeInteger, Metadata: map[string]any{}}}}, Nullable: true, Metadata: map[string]any{}},
		{Name: "c", Type: &ArrayType{ElementType: TypeInteger}, Nullable: true, Metadata: map[string]any{}},
		{Name: "e", Type: &ArrayType{ElementType: &StructType{Fields: []StructField{{Name: "d", Type: TypeInteger, Metadata: map[string]any{}}}}, ContainsNull: true}, Nullable: true, Metadata: map[string]any{}},
		{Name: "f", Type: &MapType{KeyType: TypeString, ValueType: TypeString, ValueContainsNull: true}, Nullable: true, Metadata: map[string]any{}},
	}}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("got %s, want %s", st, want)
	}
	if got := st.String(); got != "struct<a:integer,b:struct<d:integer>,c:array<integer>,e:array<struct<d:integer>>,f:map<string,string>>" {
		t.Fatalf("String() = %s", got)
	}
}

func TestParseSchemaTypes(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		want DataType
		err  string // in the error, when it fails
	}{
		{typ: `"string"`, want: TypeString},
		{typ: `"long"`, want: TypeLong},
		{typ: `"integer"`, want: TypeInteger},
		{typ: `"short"`, want: TypeShort},
		{typ: `"byte"`, want: TypeByte},
		{typ: `"float"`, want: TypeFloat},
		{typ: `"double"`, want: TypeDouble},
		{typ: `"boolean"`, want: TypeBoolean},
		{typ: `"binary"`, want: TypeBinary},
		{typ: `"date"`, want: TypeDate},
		{typ: `"timestamp"`, want: TypeTimestamp},
		{typ: `"timestamp_ntz"`, want: TypeTimestampNTZ},
		{typ: `"decimal(10,2)"`, want: DecimalType{10, 2}},
		{typ: `"decimal(38, 18)"`, want: DecimalType{38, 18}},
		{typ: `"decimal(1,1)"`, want: DecimalType{1, 1}},
		{typ: `{"type":"map","keyType":"string","valueType":"long"}`, want: &MapType{TypeString, TypeLong, true}},
		{typ: `{"type":"array","elementType":"date"}`, want: &ArrayType{TypeDate, true}},
		{typ: `"decimal(39,0)"`, err: "precision 1 to 38"},
		{typ: `"decimal(5,6)"`, err: "precision 1 to 38"},
		{typ: `"decimal(10)"`, err: "precision 1 to 38"},
		{typ: `"decimal(-1,0)"`, err: "precision 1 to 38"},
		{typ: `"variant"`, err: "variant columns are not supported"},
		{typ: `"void"`, err: "void columns"},
		{typ: `"interval day to second"`, err: "unknown type"},
		{typ: `"int"`, err: `unknown type "int"`},
		{typ: `{"type":"udt"}`, err: `unknown type "udt"`},
		{typ: `{"type":"array"}`, err: "column x.element has no type"},
		{typ: `{"type":"map","keyType":"string","valueType":"variant"}`, err: "column x.value: variant"},
		{typ: `7`, err: "column x"},
		{typ: `null`, err: "column x has no type"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			st, err := ParseSchema(`{"type":"struct","fields":[{"name":"x","nullable":true,"type":` + tc.typ + `}]}`)
			if tc.err != "" {
				if !errors.Is(err, ErrBadSchema) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, %v; want ErrBadSchema saying %q", st, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Fields[0].Type; !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("type %s, want %s", got, tc.want)
			}
		})
	}
}

func TestParseSchemaErrors(t *testing.T) {
	for _, tc := range []struct{ name, schema, err string }{
		{"not JSON", `{"type":`, "(the schema)"},
		{"not a struct", `"integer"`, "not a struct"},
		{"trailing data", `{"type":"struct","fields":[]} {}`, "after the JSON value"},
		{"no name", `{"type":"struct","fields":[{"type":"integer"}]}`, "field 0 of (struct) has no name"},
		{"names differ in case", `{"type":"struct","fields":[{"name":"a","type":"long"},{"name":"A","type":"long"}]}`, "columns a and A differ only in case"},
		{"nested", `{"type":"struct","fields":[{"name":"s","type":{"type":"struct","fields":[{"name":"v","type":"variant"}]}}]}`, "column s.v: variant"},
		{"too deep", `{"type":"struct","fields":[{"name":"a","type":` + strings.Repeat(`{"type":"array","elementType":`, 1001) + `"long"` + strings.Repeat("}", 1001) + `}]}`, "nest more than 1000 deep"},
		{"metadata not an object", `{"type":"struct","fields":[{"name":"a","type":"long","metadata":[]}]}`, "(the schema)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := ParseSchema(tc.schema)
			if !errors.Is(err, ErrBadSchema) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %v, %v; want ErrBadSchema saying %q", st, err, tc.err)
			}
		})
	}
	st := mustParse(t, `{"type":"struct","fields":[{"name":"a","type":"long"}]}`)
	if f := st.Fields[0]; !f.Nullable || f.Metadata != nil {
		t.Fatalf("defaults: %+v", f)
	}
}

func TestMappingMode(t *testing.T) {
	for _, tc := range []struct {
		conf map[string]string
		want ColumnMappingMode
		err  bool
	}{
		{conf: nil, want: MappingNone},
		{conf: map[string]string{"delta.columnMapping.mode": "none"}, want: MappingNone},
		{conf: map[string]string{"delta.columnMapping.mode": "name"}, want: MappingName},
		{conf: map[string]string{"delta.columnMapping.mode": "ID"}, want: MappingID},
		{conf: map[string]string{"delta.columnMapping.mode": "position"}, err: true},
		{conf: map[string]string{"delta.columnMapping.mode": ""}, err: true},
	} {
		t.Run(tc.conf["delta.columnMapping.mode"], func(t *testing.T) {
			got, err := MappingMode(tc.conf)
			if tc.err {
				if !errors.Is(err, ErrBadSchema) {
					t.Fatalf("got %q, %v; want ErrBadSchema", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestToIcebergNoMapping(t *testing.T) {
	got, err := ToIceberg(mustParse(t, protocolSchema), MappingNone)
	if err != nil {
		t.Fatal(err)
	}
	// Pre-order: a field, what it holds, then its next sibling.
	want := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "a", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		iceberg.NestedField{ID: 2, Name: "b", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 3, Name: "d", Type: iceberg.PrimitiveTypes.Int32, Required: true}}}},
		iceberg.NestedField{ID: 4, Name: "c", Type: &iceberg.ListType{ElementID: 5, Element: iceberg.PrimitiveTypes.Int32, ElementRequired: true}},
		iceberg.NestedField{ID: 6, Name: "e", Type: &iceberg.ListType{ElementID: 7, Element: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 8, Name: "d", Type: iceberg.PrimitiveTypes.Int32, Required: true}}}}},
		iceberg.NestedField{ID: 9, Name: "f", Type: &iceberg.MapType{KeyID: 10, KeyType: iceberg.PrimitiveTypes.String, ValueID: 11, ValueType: iceberg.PrimitiveTypes.String}},
	)
	if !got.Equals(want) {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

func TestToIcebergTypes(t *testing.T) {
	st := mustParse(t, `{"type":"struct","fields":[
		{"name":"l","type":"long"},{"name":"i","type":"integer"},{"name":"s","type":"short"},{"name":"b","type":"byte"},
		{"name":"f","type":"float"},{"name":"d","type":"double"},{"name":"o","type":"boolean"},{"name":"str","type":"string"},
		{"name":"bin","type":"binary"},{"name":"dt","type":"date"},{"name":"dec","type":"decimal(12,3)"},
		{"name":"ts","type":"timestamp","nullable":false},{"name":"ntz","type":"timestamp_ntz","metadata":{"comment":"local"}}]}`)
	sc, err := ToIceberg(st, MappingNone)
	if err != nil {
		t.Fatal(err)
	}
	want := []iceberg.Type{
		iceberg.PrimitiveTypes.Int64, iceberg.PrimitiveTypes.Int32, iceberg.PrimitiveTypes.Int32, iceberg.PrimitiveTypes.Int32,
		iceberg.PrimitiveTypes.Float32, iceberg.PrimitiveTypes.Float64, iceberg.PrimitiveTypes.Bool, iceberg.PrimitiveTypes.String,
		iceberg.PrimitiveTypes.Binary, iceberg.PrimitiveTypes.Date, iceberg.DecimalTypeOf(12, 3),
		iceberg.PrimitiveTypes.TimestampTz, iceberg.PrimitiveTypes.Timestamp,
	}
	for i, f := range sc.Fields() {
		if !f.Type.Equals(want[i]) || f.ID != i+1 || f.Required != (f.Name == "ts") {
			t.Errorf("field %d: %s", i, f)
		}
	}
	if doc := sc.Field(12).Doc; doc != "local" {
		t.Errorf("doc %q", doc)
	}
}

func TestToIcebergNestedIDs(t *testing.T) {
	got, err := ToIceberg(mustParse(t, nestedIDsSchema), MappingID)
	if err != nil {
		t.Fatal(err)
	}
	i32 := iceberg.PrimitiveTypes.Int32
	want := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "col1", Type: &iceberg.ListType{ElementID: 100, Element: &iceberg.ListType{ElementID: 101, Element: i32}}},
		iceberg.NestedField{ID: 2, Name: "col2", Type: &iceberg.MapType{KeyID: 102, KeyType: i32, ValueID: 103, ValueType: &iceberg.ListType{ElementID: 104, Element: i32}}},
		iceberg.NestedField{ID: 3, Name: "col3", Type: &iceberg.MapType{KeyID: 105, KeyType: i32, ValueID: 106, ValueType: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 4, Name: "subcol1", Type: &iceberg.ListType{ElementID: 107, Element: i32}}}}}},
	)
	if !got.Equals(want) {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	cols, err := Columns(mustParse(t, nestedIDsSchema), MappingID)
	if err != nil || len(cols) != 3 || cols[1].PhysicalName != "col-bbb" || cols[1].FieldID != 2 || cols[1].Name != "col2" {
		t.Fatalf("columns %+v, %v", cols, err)
	}
}

// TestToIcebergMappingWithoutNestedIDs: elements, keys and values without
// nested ids get ids after the largest one, in pre-order.
func TestToIcebergMappingWithoutNestedIDs(t *testing.T) {
	st := mustParse(t, `{"type":"struct","fields":[
		{"name":"m","type":{"type":"map","keyType":"string","valueType":{"type":"array","elementType":"long"}},
		 "metadata":{"delta.columnMapping.id":7,"delta.columnMapping.physicalName":"col-m"}},
		{"name":"x","type":"long","metadata":{"delta.columnMapping.id":3,"delta.columnMapping.physicalName":"col-x"}}]}`)
	got, err := ToIceberg(st, MappingName)
	if err != nil {
		t.Fatal(err)
	}
	want := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 7, Name: "m", Type: &iceberg.MapType{KeyID: 8, KeyType: iceberg.PrimitiveTypes.String, ValueID: 9,
			ValueType: &iceberg.ListType{ElementID: 10, Element: iceberg.PrimitiveTypes.Int64}}},
		iceberg.NestedField{ID: 3, Name: "x", Type: iceberg.PrimitiveTypes.Int64},
	)
	if !got.Equals(want) {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	// In none mode the same schema's mapping metadata is ignored.
	if f := st.Fields[0]; f.PhysicalName(MappingNone) != "m" || f.PhysicalName(MappingID) != "col-m" {
		t.Fatalf("physical names %q, %q", f.PhysicalName(MappingNone), f.PhysicalName(MappingID))
	}
	if id, ok := st.Fields[1].FieldID(); !ok || id != 3 {
		t.Fatalf("FieldID() = %d, %v", id, ok)
	}
}

func TestToIcebergErrors(t *testing.T) {
	field := func(name, meta string) string {
		return `{"name":"` + name + `","type":{"type":"array","elementType":"long"},"metadata":{` + meta + `}}`
	}
	for _, tc := range []struct{ name, schema, err string }{
		{"no id", field("a", `"delta.columnMapping.physicalName":"p"`), "column a lacks"},
		{"no physical name", field("a", `"delta.columnMapping.id":1`), "column a lacks"},
		{"id too large", field("a", `"delta.columnMapping.id":2147483648,"delta.columnMapping.physicalName":"p"`), "column a lacks"},
		{"id negative", field("a", `"delta.columnMapping.id":-1,"delta.columnMapping.physicalName":"p"`), "column a lacks"},
		{"same ids", field("a", `"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"p"`) + "," +
			field("b", `"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"q"`), "columns a and b have the same field id 1"},
		{"nested id taken", field("a", `"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"p","delta.columnMapping.nested.ids":{"p.element":1}`),
			"columns a and a.element have the same field id 1"},
		{"nested id not a number", field("a", `"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"p","delta.columnMapping.nested.ids":{"p.element":"x"}`),
			`"p.element" is not an id`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := mustParse(t, `{"type":"struct","fields":[`+tc.schema+`]}`)
			sc, err := ToIceberg(st, MappingID)
			if !errors.Is(err, ErrBadSchema) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %v, %v; want ErrBadSchema saying %q", sc, err, tc.err)
			}
		})
	}
	if _, err := ToIceberg(nil, MappingNone); !errors.Is(err, ErrBadSchema) {
		t.Fatalf("nil schema: %v", err)
	}
	if _, err := ToIceberg(&StructType{}, "position"); !errors.Is(err, ErrBadSchema) {
		t.Fatalf("bad mode: %v", err)
	}
}

func TestTypeChanges(t *testing.T) {
	column := func(typ, changes string) string {
		return `{"type":"struct","fields":[{"name":"e","type":` + typ + `,"metadata":{"delta.typeChanges":` + changes + `}}]}`
	}
	for _, tc := range []struct {
		name, typ, changes string
		want               []TypeChange
		err                string
	}{
		{name: "protocol: short to long", typ: `"long"`,
			changes: `[{"fromType":"short","toType":"integer"},{"fromType":"integer","toType":"long"}]`,
			want:    []TypeChange{{TypeShort, TypeInteger, ""}, {TypeInteger, TypeLong, ""}}},
		{name: "protocol: map key", typ: `{"type":"map","keyType":"double","valueType":"integer"}`,
			changes: `[{"fromType":"float","toType":"double","fieldPath":"key"}]`,
			want:    []TypeChange{{TypeFloat, TypeDouble, "key"}}},
		{name: "protocol: map value in an array", typ: `{"type":"array","elementType":{"type":"map","keyType":"string","valueType":"decimal(10, 4)"}}`,
			changes: `[{"fromType":"decimal(6, 2)","toType":"decimal(10, 4)","fieldPath":"element.value"}]`,
			want:    []TypeChange{{DecimalType{6, 2}, DecimalType{10, 4}, "element.value"}}},
		{name: "as a JSON string", typ: `"long"`, changes: `"[{\"fromType\":\"byte\",\"toType\":\"long\"}]"`,
			want: []TypeChange{{TypeByte, TypeLong, ""}}},
		{name: "date to timestamp_ntz", typ: `"timestamp_ntz"`, changes: `[{"fromType":"date","toType":"timestamp_ntz"}]`,
			want: []TypeChange{{TypeDate, TypeTimestampNTZ, ""}}},
		{name: "integer to double", typ: `"double"`, changes: `[{"fromType":"integer","toType":"double"}]`,
			want: []TypeChange{{TypeInteger, TypeDouble, ""}}},
		{name: "integer to decimal", typ: `"decimal(12,2)"`, changes: `[{"fromType":"integer","toType":"decimal(12,2)"}]`,
			want: []TypeChange{{TypeInteger, DecimalType{12, 2}, ""}}},
		{name: "long to decimal", typ: `"decimal(20,0)"`, changes: `[{"fromType":"long","toType":"decimal(20,0)"}]`,
			want: []TypeChange{{TypeLong, DecimalType{20, 0}, ""}}},
		{name: "narrowing", typ: `"integer"`, changes: `[{"fromType":"long","toType":"integer"}]`, err: "long to integer"},
		{name: "long to double", typ: `"double"`, changes: `[{"fromType":"long","toType":"double"}]`, err: "long to double"},
		{name: "date to timestamp", typ: `"timestamp"`, changes: `[{"fromType":"date","toType":"timestamp"}]`, err: "date to timestamp"},
		{name: "decimal scale only", typ: `"decimal(10,4)"`, changes: `[{"fromType":"decimal(10,2)","toType":"decimal(10,4)"}]`, err: "decimal(10,2) to decimal(10,4)"},
		{name: "integer to small decimal", typ: `"decimal(9,0)"`, changes: `[{"fromType":"integer","toType":"decimal(9,0)"}]`, err: "integer to decimal(9,0)"},
		{name: "bad field path", typ: `"long"`, changes: `[{"fromType":"integer","toType":"long","fieldPath":"element"}]`, err: `no field path "element"`},
		{name: "unknown type", typ: `"long"`, changes: `[{"fromType":"int","toType":"long"}]`, err: `unknown type "int"`},
		{name: "not a list", typ: `"long"`, changes: `{}`, err: "not a list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := ParseSchema(column(tc.typ, tc.changes))
			if tc.err != "" {
				if !errors.Is(err, ErrBadSchema) || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "column e") {
					t.Fatalf("got %v; want ErrBadSchema saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Fields[0].TypeChanges; !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("changes %+v, want %+v", got, tc.want)
			}
			cols, err := Columns(st, MappingNone)
			if err != nil || !reflect.DeepEqual(cols[0].TypeChanges, tc.want) {
				t.Fatalf("Columns: %+v, %v", cols, err)
			}
		})
	}
}

// fixtureMetadata returns every metaData action in the fixtures' commit
// and JSON checkpoint files, by table and file ("cdf-table/0...0.json").
func fixtureMetadata(t *testing.T) map[string]*Metadata {
	t.Helper()
	out := map[string]*Metadata{}
	for _, table := range fixtureTables(t) {
		fixtureActions(t, table, func(file string, a *Action) {
			if a.MetaData != nil {
				out[table+"/"+file] = a.MetaData
			}
		})
	}
	return out
}

// TestFixtureSchemas: the schema of every fixture parses and converts in
// the table's mapping mode.
func TestFixtureSchemas(t *testing.T) {
	for file, md := range fixtureMetadata(t) {
		t.Run(file, func(t *testing.T) {
			st, err := ParseSchema(md.SchemaString)
			if err != nil {
				t.Fatal(err)
			}
			mode, err := MappingMode(md.Configuration)
			if err != nil {
				t.Fatal(err)
			}
			cols, err := Columns(st, mode)
			if err != nil {
				t.Fatal(err)
			}
			if len(cols) == 0 {
				t.Fatal("no columns")
			}
			if strings.HasPrefix(file, "table_with_column_mapping") {
				want := []Column{
					{Name: "Company Very Short", PhysicalName: "col-173b4db9-b5ad-427f-9e75-516aae37fbbb", FieldID: 1, Type: TypeString, Nullable: true},
					{Name: "Super Name", PhysicalName: "col-3877fd94-0973-4941-ac6b-646849a1ff65", FieldID: 2, Type: TypeString, Nullable: true},
				}
				if mode != MappingName || !reflect.DeepEqual(cols, want) {
					t.Fatalf("mode %s, columns %+v", mode, cols)
				}
			}
		})
	}
}

// FuzzParseSchema feeds arbitrary schema strings to ParseSchema: it never
// panics, fails only with ErrBadSchema, and a schema it accepts converts
// in none mode (and in the mapping modes converts or fails with
// ErrBadSchema, never panics on duplicate ids).
func FuzzParseSchema(f *testing.F) {
	for _, s := range []string{
		protocolSchema, nestedIDsSchema, `"integer"`, `{"type":"struct","fields":[]}`,
		`{"type":"struct","fields":[{"name":"a","type":"decimal(10,2)","metadata":{"delta.typeChanges":[{"fromType":"decimal(6,2)","toType":"decimal(10,2)"}]}}]}`,
		`{"type":"struct","fields":[{"name":"a","type":"long","metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"x"}},{"name":"b","type":"long","metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"y"}}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseSchema(s)
		if err != nil {
			if !errors.Is(err, ErrBadSchema) {
				t.Fatalf("error %v does not wrap ErrBadSchema", err)
			}
			return
		}
		sc, err := ToIceberg(st, MappingNone)
		if err != nil || len(sc.Fields()) != len(st.Fields) {
			t.Fatalf("ToIceberg(none): %v, %v", sc, err)
		}
		for _, mode := range []ColumnMappingMode{MappingName, MappingID} {
			if _, err := Columns(st, mode); err != nil && !errors.Is(err, ErrBadSchema) {
				t.Fatalf("Columns(%s): %v does not wrap ErrBadSchema", mode, err)
			}
		}
	})
}
