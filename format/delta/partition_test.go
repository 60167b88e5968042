package delta

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/iceberg-go/table"
)

func ptr(s string) *string { return &s }

// micros is the microseconds since the epoch of an RFC 3339 time.
func micros(t *testing.T, s string) int64 {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return ts.UnixMicro()
}

func TestPartitionValue(t *testing.T) {
	tsUTC := arrow.FixedWidthTypes.Timestamp_us
	tsNTZ := &arrow.TimestampType{Unit: arrow.Microsecond}
	dec := func(v int64, p, s int32) scalar.Scalar {
		return scalar.NewDecimal128Scalar(decimal128.FromI64(v), &arrow.Decimal128Type{Precision: p, Scale: s})
	}
	for _, tc := range []struct {
		raw  string
		typ  DataType
		want scalar.Scalar // nil: an error
	}{
		{"a b/c=d", TypeString, scalar.NewStringScalar("a b/c=d")},
		{"BMS", TypeString, scalar.NewStringScalar("BMS")},
		{"\u0001\u0002\u0003", TypeBinary, scalar.NewBinaryScalar(memory.NewBufferBytes([]byte{1, 2, 3}), arrow.BinaryTypes.Binary)},
		{"true", TypeBoolean, scalar.NewBooleanScalar(true)},
		{"FALSE", TypeBoolean, scalar.NewBooleanScalar(false)},
		{"yes", TypeBoolean, nil},
		{"9223372036854775807", TypeLong, scalar.NewInt64Scalar(math.MaxInt64)},
		{"-9223372036854775808", TypeLong, scalar.NewInt64Scalar(math.MinInt64)},
		{"9223372036854775808", TypeLong, nil},
		{"1995", TypeInteger, scalar.NewInt32Scalar(1995)},
		{"-2147483648", TypeInteger, scalar.NewInt32Scalar(math.MinInt32)},
		{"2147483648", TypeInteger, nil},
		{"1.0", TypeInteger, nil},
		{"32767", TypeShort, scalar.NewInt32Scalar(32767)},
		{"32768", TypeShort, nil},
		{"-128", TypeByte, scalar.NewInt32Scalar(-128)},
		{"128", TypeByte, nil},
		{"1.5", TypeFloat, scalar.NewFloat32Scalar(1.5)},
		{"Infinity", TypeFloat, scalar.NewFloat32Scalar(float32(math.Inf(1)))},
		{"3.5E38", TypeFloat, nil},
		{"1.7976931348623157E308", TypeDouble, scalar.NewFloat64Scalar(math.MaxFloat64)},
		{"5.0E-324", TypeDouble, scalar.NewFloat64Scalar(5e-324)},
		{"-Infinity", TypeDouble, scalar.NewFloat64Scalar(math.Inf(-1))},
		{"-0.0", TypeDouble, scalar.NewFloat64Scalar(math.Copysign(0, -1))},
		{"one", TypeDouble, nil},
		{"1970-01-01", TypeDate, scalar.NewDate32Scalar(0)},
		{"2023-12-22", TypeDate, scalar.NewDate32Scalar(19713)},
		{"0001-01-01", TypeDate, scalar.NewDate32Scalar(-719162)},
		{"9999-12-31", TypeDate, scalar.NewDate32Scalar(2932896)},
		{"2024-02-30", TypeDate, nil},
		{"2024-1-01", TypeDate, nil},
		{"2024-01-01 00:00:00", TypeDate, nil},
		{"1970-01-01 00:00:00", TypeTimestamp, scalar.NewTimestampScalar(0, tsUTC)},
		{"1970-01-01 00:00:00.123456", TypeTimestamp, scalar.NewTimestampScalar(123456, tsUTC)},
		{"1970-01-01T00:00:00.123456Z", TypeTimestamp, scalar.NewTimestampScalar(123456, tsUTC)},
		{"2024-06-15T19:30:45.000000Z", TypeTimestamp, scalar.NewTimestampScalar(arrow.Timestamp(micros(t, "2024-06-15T19:30:45Z")), tsUTC)},
		{"2024-06-15t19:30:45z", TypeTimestamp, scalar.NewTimestampScalar(arrow.Timestamp(micros(t, "2024-06-15T19:30:45Z")), tsUTC)},
		{"2024-06-16T01:00:45+05:30", TypeTimestamp, scalar.NewTimestampScalar(arrow.Timestamp(micros(t, "2024-06-15T19:30:45Z")), tsUTC)},
		{"2024-06-16 01:00:45+0530", TypeTimestamp, scalar.NewTimestampScalar(arrow.Timestamp(micros(t, "2024-06-15T19:30:45Z")), tsUTC)},
		{"1969-12-31 23:59:59.5", TypeTimestamp, scalar.NewTimestampScalar(-500000, tsUTC)},
		{"1970-01-01 00:00:00.1234567", TypeTimestamp, scalar.NewTimestampScalar(123456, tsUTC)},
		{"1970-01-01", TypeTimestamp, nil},
		{"1970-01-01 25:00:00", TypeTimestamp, nil},
		{"2024-06-15 12:30:45", TypeTimestampNTZ, scalar.NewTimestampScalar(arrow.Timestamp(micros(t, "2024-06-15T12:30:45Z")), tsNTZ)},
		{"2024-06-15 12:30:45.000000", TypeTimestampNTZ, scalar.NewTimestampScalar(arrow.Timestamp(micros(t, "2024-06-15T12:30:45Z")), tsNTZ)},
		{"2024-06-15T12:30:45", TypeTimestampNTZ, scalar.NewTimestampScalar(arrow.Timestamp(micros(t, "2024-06-15T12:30:45Z")), tsNTZ)},
		{"2024-06-15T12:30:45Z", TypeTimestampNTZ, nil},
		{"1.230000000000000000", DecimalType{38, 18}, dec(1_230000000000000000, 38, 18)},
		{"-1.23", DecimalType{38, 18}, dec(-1_230000000000000000, 38, 18)},
		{"0", DecimalType{5, 2}, dec(0, 5, 2)},
		{"+12.5", DecimalType{5, 2}, dec(1250, 5, 2)},
		{"123.4500", DecimalType{5, 2}, dec(12345, 5, 2)},
		{"1E+2", DecimalType{5, 0}, dec(100, 5, 0)},
		{"12345e-2", DecimalType{5, 2}, dec(12345, 5, 2)},
		{"1.235", DecimalType{5, 2}, nil},
		{"1000.00", DecimalType{5, 2}, nil},
		{"99999999999999999999999999999999999999", DecimalType{38, 0}, nil}, // checked below
		{"100000000000000000000000000000000000000", DecimalType{38, 0}, nil},
		{"1.2.3", DecimalType{5, 2}, nil},
		{"--1", DecimalType{5, 2}, nil},
		{"1e", DecimalType{5, 2}, nil},
		{".", DecimalType{5, 2}, nil},
		{"1e99999", DecimalType{5, 2}, nil},
		{"x", &ArrayType{ElementType: TypeLong}, nil},
	} {
		t.Run(tc.typ.String()+"/"+tc.raw, func(t *testing.T) {
			got, err := PartitionValue(ptr(tc.raw), tc.typ)
			switch {
			case tc.raw == "99999999999999999999999999999999999999":
				want, _ := decimal128.FromString(tc.raw, 38, 0)
				if err != nil || !scalar.Equals(got, scalar.NewDecimal128Scalar(want, &arrow.Decimal128Type{Precision: 38, Scale: 0})) {
					t.Fatalf("got %v, %v", got, err)
				}
				return
			case tc.want == nil:
				if !errors.Is(err, ErrBadPartitionValue) {
					t.Fatalf("got %v, %v; want ErrBadPartitionValue", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !scalar.Equals(got, tc.want) || !arrow.TypeEqual(got.DataType(), tc.want.DataType()) {
				t.Fatalf("got %v (%s), want %v (%s)", got, got.DataType(), tc.want, tc.want.DataType())
			}
		})
	}
}

// TestPartitionValueNullAndTypes: nil and "" are null for every type, and
// every scalar has the Arrow type iceberg-go gives ToIceberg's type.
func TestPartitionValueNullAndTypes(t *testing.T) {
	for _, typ := range []DataType{
		TypeString, TypeLong, TypeInteger, TypeShort, TypeByte, TypeFloat, TypeDouble, TypeBoolean,
		TypeBinary, TypeDate, TypeTimestamp, TypeTimestampNTZ, DecimalType{10, 2},
	} {
		t.Run(typ.String(), func(t *testing.T) {
			sc, err := ToIceberg(&StructType{Fields: []StructField{{Name: "p", Type: typ}}}, MappingNone)
			if err != nil {
				t.Fatal(err)
			}
			want, err := table.TypeToArrowType(sc.Field(0).Type, false, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, raw := range []*string{nil, ptr("")} {
				got, err := PartitionValue(raw, typ)
				if err != nil || got.IsValid() || !arrow.TypeEqual(got.DataType(), want) {
					t.Fatalf("PartitionValue(%v) = %v, %v; want a null %s", raw, got, err, want)
				}
			}
		})
	}
}

// TestFixturePartitionValues parses the partition values of every add,
// remove and cdc in the fixtures as their columns' types (by physical
// name), and checks cdf-table's dates against EXPECTED.json's birthdays.
func TestFixturePartitionValues(t *testing.T) {
	types := map[string]map[string]DataType{} // table → physical name → type
	for file, md := range fixtureMetadata(t) {
		st, err := ParseSchema(md.SchemaString)
		if err != nil {
			t.Fatal(err)
		}
		mode, err := MappingMode(md.Configuration)
		if err != nil {
			t.Fatal(err)
		}
		cols := map[string]DataType{}
		for _, f := range st.Fields {
			if slices.Contains(md.PartitionColumns, f.Name) {
				cols[f.PhysicalName(mode)] = f.Type
			}
		}
		types[path.Dir(file)] = cols
	}
	birthdays := map[string]bool{}
	parsed := 0
	for _, table := range fixtureTables(t) {
		if types[table] == nil {
			continue // its metaData is only in a Parquet checkpoint
		}
		fixtureActions(t, table, func(file string, a *Action) {
			var values map[string]*string
			switch {
			case a.Add != nil:
				values = a.Add.PartitionValues
			case a.Remove != nil:
				values = a.Remove.PartitionValues
			case a.CDC != nil:
				values = a.CDC.PartitionValues
			}
			for name, raw := range values {
				typ, ok := types[table][name]
				if !ok {
					t.Fatalf("%s/%s: partition value of %q, which is no partition column", table, file, name)
				}
				v, err := PartitionValue(raw, typ)
				if err != nil {
					t.Fatalf("%s/%s: %v", table, file, err)
				}
				parsed++
				if table == "cdf-table" {
					d := time.Unix(int64(v.(*scalar.Date32).Value)*86400, 0).UTC()
					birthdays[d.Format(time.DateOnly)] = true
				}
			}
		})
	}
	if parsed < 50 {
		t.Fatalf("parsed only %d partition values", parsed)
	}
	if got := types["cdf-table"]["birthday"]; got != TypeDate {
		t.Fatalf("cdf-table's birthday is %v", got)
	}
	raw, err := os.ReadFile(filepath.Join(fixtures, "cdf-table", "EXPECTED.json"))
	if err != nil {
		t.Fatal(err)
	}
	var expected struct {
		Queries []struct {
			Rows []struct {
				Birthday string `json:"birthday"`
			} `json:"rows"`
		} `json:"queries"`
	}
	if err := json.Unmarshal(raw, &expected); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, q := range expected.Queries {
		for _, r := range q.Rows {
			if r.Birthday != "" {
				want[r.Birthday] = true
			}
		}
	}
	for d := range want {
		if !birthdays[d] {
			t.Errorf("EXPECTED.json has birthday %s, no file of the log has it", d)
		}
	}
	if len(want) == 0 || len(birthdays) == 0 {
		t.Fatalf("birthdays: log %v, EXPECTED.json %v", birthdays, want)
	}
}

// FuzzPartitionValue feeds arbitrary values to PartitionValue for every
// primitive type: it never panics, fails only with ErrBadPartitionValue,
// and a value it accepts is a valid scalar of the type's Arrow type.
func FuzzPartitionValue(f *testing.F) {
	for _, s := range []string{
		"", "0", "-1", "1.5", "NaN", "-Infinity", "1E+2", "true", "2023-12-22", "1970-01-01 00:00:00.123456",
		"1970-01-01T00:00:00.123456Z", "2024-06-16 01:00:45+0530", "1.230000000000000000", "\u0001\u0002",
	} {
		f.Add(s)
	}
	types := []DataType{
		TypeString, TypeLong, TypeInteger, TypeShort, TypeByte, TypeFloat, TypeDouble, TypeBoolean,
		TypeBinary, TypeDate, TypeTimestamp, TypeTimestampNTZ, DecimalType{38, 18}, DecimalType{5, 2}, DecimalType{1, 0},
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, typ := range types {
			v, err := PartitionValue(&s, typ)
			if err != nil {
				if !errors.Is(err, ErrBadPartitionValue) {
					t.Fatalf("%s: error %v does not wrap ErrBadPartitionValue", typ, err)
				}
				continue
			}
			want, _ := arrowType(typ)
			if !arrow.TypeEqual(v.DataType(), want) || v.IsValid() == (s == "") {
				t.Fatalf("%s: %q gave %v of %s", typ, s, v, v.DataType())
			}
			if err := v.ValidateFull(); err != nil {
				t.Fatalf("%s: %q gave an invalid scalar: %v", typ, s, err)
			}
		}
	})
}
