package filter_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"

	"github.com/sluicefeed/sluice/filter"
	icebergformat "github.com/sluicefeed/sluice/format/iceberg"
	"github.com/sluicefeed/sluice/lake"
)

// filterSchema is the schema the filter tests parse against, in
// iceberg-go's model: iceberg-go binds and evaluates the filters' meaning
// as an oracle.
func filterSchema() *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "country", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 4, Name: "qty", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 5, Name: "flag", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 6, Name: "created", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 7, Name: "local_ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 8, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 9, Name: "addr", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 10, Name: "city", Type: iceberg.PrimitiveTypes.String},
			{ID: 11, Name: "zip", Type: iceberg.PrimitiveTypes.Int32},
		}}},
		iceberg.NestedField{ID: 12, Name: "tags", Type: &iceberg.ListType{
			ElementID: 13, Element: iceberg.PrimitiveTypes.String}},
		iceberg.NestedField{ID: 14, Name: "dec", Type: iceberg.DecimalTypeOf(9, 2)},
		iceberg.NestedField{ID: 15, Name: "ns", Type: iceberg.PrimitiveTypes.TimestampNs},
		iceberg.NestedField{ID: 16, Name: "Country Code", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 17, Name: "in", Type: iceberg.PrimitiveTypes.String},
	)
}

// lakeSchema is filterSchema as Sluice's schema, what Parse binds to.
func lakeSchema(t testing.TB) *lake.Schema {
	t.Helper()
	s, err := icebergformat.SchemaFrom(filterSchema())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// row is a StructLike over values in schema order.
type row []any

func (r row) Size() int          { return len(r) }
func (r row) Get(pos int) any    { return r[pos] }
func (r row) Set(pos int, v any) { r[pos] = v }
func (r row) String() string     { return fmt.Sprint([]any(r)) }
func micros(s string) iceberg.Timestamp {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return iceberg.Timestamp(t.UnixMicro())
}

func days(s string) iceberg.Date {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return iceberg.Date(t.Unix() / 86400)
}

func cents(n int64) iceberg.Decimal { return iceberg.Decimal{Val: decimal128.FromI64(n), Scale: 2} }

// sampleRows are rows of filterSchema that the evaluation tests filter.
func sampleRows() []iceberg.StructLike {
	return []iceberg.StructLike{
		row{int64(1), "SE", 10.5, int32(3), true, micros("2024-05-01T12:00:00Z"), micros("2024-05-01T12:00:00Z"),
			days("2024-05-01"), row{"Malmö", int32(21100)}, nil, cents(1250),
			iceberg.TimestampNano(time.Date(2024, 5, 1, 12, 0, 0, 1, time.UTC).UnixNano()), "SE", "a"},
		row{int64(2), "it's", -1.5e3, int32(-7), false, micros("2023-12-31T23:00:00Z"), micros("2023-12-31T23:00:00Z"),
			days("1969-12-31"), row{"Oslo", int32(150)}, nil, cents(-1),
			iceberg.TimestampNano(time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC).UnixNano()), "NO", "b"},
		row{int64(3), nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil},
	}
}

type filterCase struct {
	name string
	in   string
	want iceberg.BooleanExpression
	cols []string
}

var (
	id      = iceberg.Reference("id")
	country = iceberg.Reference("country")
	amount  = iceberg.Reference("amount")
	qty     = iceberg.Reference("qty")
	flag    = iceberg.Reference("flag")
	created = iceberg.Reference("created")
	localTS = iceberg.Reference("local_ts")
	day     = iceberg.Reference("day")
	dec     = iceberg.Reference("dec")
	ns      = iceberg.Reference("ns")
)

// filterCases are filters that parse, with the expression each means.
func filterCases() []filterCase {
	cs := []string{"country"}
	return []filterCase{
		// comparison operators
		{"eq", "id = 1", iceberg.EqualTo(id, int64(1)), []string{"id"}},
		{"eq doubled", "id == 1", iceberg.EqualTo(id, int64(1)), []string{"id"}},
		{"neq", "id != 1", iceberg.NotEqualTo(id, int64(1)), []string{"id"}},
		{"neq sql", "id <> 1", iceberg.NotEqualTo(id, int64(1)), []string{"id"}},
		{"lt", "id < 1", iceberg.LessThan(id, int64(1)), []string{"id"}},
		{"lte", "id <= 1", iceberg.LessThanEqual(id, int64(1)), []string{"id"}},
		{"gt", "id > 1", iceberg.GreaterThan(id, int64(1)), []string{"id"}},
		{"gte", "id >= 1", iceberg.GreaterThanEqual(id, int64(1)), []string{"id"}},
		{"no spaces", "id>=1", iceberg.GreaterThanEqual(id, int64(1)), []string{"id"}},
		{"string", "country = 'SE'", iceberg.EqualTo(country, "SE"), cs},
		{"empty string", "country = ''", iceberg.EqualTo(country, ""), cs},
		{"doubled quote", "country = 'it''s'", iceberg.EqualTo(country, "it's"), cs},
		{"only a quote", "country = ''''", iceberg.EqualTo(country, "'"), cs},
		{"unicode string", "country = 'Malmö ✓'", iceberg.EqualTo(country, "Malmö ✓"), cs},
		{"string keeps keywords", "country = 'a AND b OR NOT c'", iceberg.EqualTo(country, "a AND b OR NOT c"), cs},
		{"string with double quote", `country = 'say "hi"'`, iceberg.EqualTo(country, `say "hi"`), cs},

		// numbers
		{"negative int", "id > -5", iceberg.GreaterThan(id, int64(-5)), []string{"id"}},
		{"plus int", "id > +5", iceberg.GreaterThan(id, int64(5)), []string{"id"}},
		{"min int64", "id >= -9223372036854775808", iceberg.GreaterThanEqual(id, int64(-9223372036854775808)), []string{"id"}},
		{"int on int column", "qty = 7", iceberg.EqualTo(qty, int32(7)), []string{"qty"}},
		{"int above int32", "qty < 2147483648", iceberg.AlwaysTrue{}, []string{"qty"}},
		{"int below int32", "qty = -2147483649", iceberg.AlwaysFalse{}, []string{"qty"}},
		{"float", "amount > 10.5", iceberg.GreaterThan(amount, 10.5), []string{"amount"}},
		{"negative float", "amount > -0.25", iceberg.GreaterThan(amount, -0.25), []string{"amount"}},
		{"leading dot", "amount < .5", iceberg.LessThan(amount, 0.5), []string{"amount"}},
		{"trailing dot", "amount < 5.", iceberg.LessThan(amount, 5.0), []string{"amount"}},
		{"exponent", "amount < 1e3", iceberg.LessThan(amount, 1000.0), []string{"amount"}},
		{"exponent sign", "amount < 2.5E-3", iceberg.LessThan(amount, 0.0025), []string{"amount"}},
		{"negative exponent float", "amount > -1.5e+3", iceberg.GreaterThan(amount, -1500.0), []string{"amount"}},
		{"int on double column", "amount = 3", iceberg.EqualTo(amount, 3.0), []string{"amount"}},
		{"huge int on double column", "amount < 99999999999999999999", iceberg.LessThan(amount, 1e20), []string{"amount"}},
		{"numeric string", "id = '42'", iceberg.EqualTo(id, int64(42)), []string{"id"}},
		{"infinity string", "amount < 'Inf'", iceberg.LessThan(amount, math.Inf(1)), []string{"amount"}},
		{"decimal int", "dec = 12", iceberg.EqualTo(dec, cents(1200)), []string{"dec"}},
		{"decimal", "dec = 12.5", iceberg.EqualTo(dec, cents(1250)), []string{"dec"}},
		{"decimal exact", "dec >= 0.07", iceberg.GreaterThanEqual(dec, cents(7)), []string{"dec"}},
		{"decimal exponent", "dec < 1.5e2", iceberg.LessThan(dec, cents(15000)), []string{"dec"}},
		{"decimal negative", "dec > -0.01", iceberg.GreaterThan(dec, cents(-1)), []string{"dec"}},
		{"decimal trailing zeros", "dec = 1.2500", iceberg.EqualTo(dec, cents(125)), []string{"dec"}},
		{"decimal string", "dec = '3.1'", iceberg.EqualTo(dec, cents(310)), []string{"dec"}},
		{"decimal max", "dec <= 9999999.99", iceberg.LessThanEqual(dec, cents(999999999)), []string{"dec"}},

		// booleans
		{"true literal", "flag = TRUE", iceberg.EqualTo(flag, true), []string{"flag"}},
		{"false literal lower", "flag = false", iceberg.EqualTo(flag, false), []string{"flag"}},
		{"bool string", "flag = 'true'", iceberg.EqualTo(flag, true), []string{"flag"}},
		{"true alone", "TRUE", iceberg.AlwaysTrue{}, nil},
		{"false alone", "false", iceberg.AlwaysFalse{}, nil},
		{"not true", "NOT TRUE", iceberg.AlwaysFalse{}, nil},

		// temporal literals
		{"timestamp literal", "created >= TIMESTAMP '2024-05-01 12:00:00'",
			iceberg.GreaterThanEqual(created, micros("2024-05-01T12:00:00Z")), []string{"created"}},
		{"timestamp literal T and zone", "created >= timestamp '2024-05-01T14:00:00+02:00'",
			iceberg.GreaterThanEqual(created, micros("2024-05-01T12:00:00Z")), []string{"created"}},
		{"timestamp literal micros", "created < TIMESTAMP '2024-05-01 12:00:00.123456Z'",
			iceberg.LessThan(created, micros("2024-05-01T12:00:00.123456Z")), []string{"created"}},
		{"timestamp literal date only", "created < TIMESTAMP '2024-05-01'",
			iceberg.LessThan(created, micros("2024-05-01T00:00:00Z")), []string{"created"}},
		{"timestamp literal minutes", "created < TIMESTAMP '2024-05-01 08:30'",
			iceberg.LessThan(created, micros("2024-05-01T08:30:00Z")), []string{"created"}},
		{"bare string on timestamptz", "created > '2024-05-01 12:00:00'",
			iceberg.GreaterThan(created, micros("2024-05-01T12:00:00Z")), []string{"created"}},
		{"bare string with zone on timestamptz", "created > '2024-05-01T12:00:00-01:00'",
			iceberg.GreaterThan(created, micros("2024-05-01T13:00:00Z")), []string{"created"}},
		{"bare string on timestamp", "local_ts <= '2024-05-01T12:00:00'",
			iceberg.LessThanEqual(localTS, micros("2024-05-01T12:00:00Z")), []string{"local_ts"}},
		{"timestamp literal on timestamp", "local_ts = TIMESTAMP '1969-12-31 23:59:59.5'",
			iceberg.EqualTo(localTS, micros("1969-12-31T23:59:59.5Z")), []string{"local_ts"}},
		{"date literal on timestamp", "local_ts >= DATE '2024-05-01'",
			iceberg.GreaterThanEqual(localTS, micros("2024-05-01T00:00:00Z")), []string{"local_ts"}},
		{"date literal", "day = DATE '2024-05-01'", iceberg.EqualTo(day, days("2024-05-01")), []string{"day"}},
		{"date literal lower", "day = date '2024-05-01'", iceberg.EqualTo(day, days("2024-05-01")), []string{"day"}},
		{"date before epoch", "day < DATE '1969-12-31'", iceberg.LessThan(day, iceberg.Date(-1)), []string{"day"}},
		{"bare string on date", "day >= '2024-05-01'", iceberg.GreaterThanEqual(day, days("2024-05-01")), []string{"day"}},
		{"midnight timestamp on date", "day = TIMESTAMP '2024-05-01 00:00:00'",
			iceberg.EqualTo(day, days("2024-05-01")), []string{"day"}},
		{"timestamp on timestamp_ns", "ns > TIMESTAMP '2024-05-01 12:00:00.000000001'",
			iceberg.GreaterThan(ns, iceberg.TimestampNano(time.Date(2024, 5, 1, 12, 0, 0, 1, time.UTC).UnixNano())), []string{"ns"}},
		{"bare string on timestamp_ns", "ns < '2024-05-01 12:00'",
			iceberg.LessThan(ns, iceberg.TimestampNano(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC).UnixNano())), []string{"ns"}},
		{"IN of timestamps", "created IN ('2024-05-01', TIMESTAMP '2024-05-02 00:00')",
			iceberg.IsIn(created, micros("2024-05-01T00:00:00Z"), micros("2024-05-02T00:00:00Z")), []string{"created"}},

		// IN and NOT IN
		{"in", "country IN ('SE', 'NO')", iceberg.IsIn(country, "SE", "NO"), cs},
		{"in one", "country IN ('SE')", iceberg.EqualTo(country, "SE"), cs},
		{"in duplicates", "id IN (1, 1, 2)", iceberg.IsIn(id, int64(1), int64(2)), []string{"id"}},
		{"not in", "id NOT IN (1, -2, 3)", iceberg.NotIn(id, int64(1), int64(-2), int64(3)), []string{"id"}},
		{"not in one", "id not in (1)", iceberg.NotEqualTo(id, int64(1)), []string{"id"}},
		{"in no spaces", "id IN(1,2)", iceberg.IsIn(id, int64(1), int64(2)), []string{"id"}},
		{"in floats", "amount IN (1.5, 2e1)", iceberg.IsIn(amount, 1.5, 20.0), []string{"amount"}},
		{"in out of range dropped", "qty IN (1, 2147483648)", iceberg.EqualTo(qty, int32(1)), []string{"qty"}},
		{"in decimals", "dec IN (1, 2.5)", iceberg.IsIn(dec, cents(100), cents(250)), []string{"dec"}},
		{"not in dates", "day NOT IN (DATE '2024-05-01', '2024-05-02')",
			iceberg.NotIn(day, days("2024-05-01"), days("2024-05-02")), []string{"day"}},
		{"not in string list", "country NOT IN ('it''s', '')", iceberg.NotIn(country, "it's", ""), cs},

		// IS [NOT] NULL
		{"is null", "country IS NULL", iceberg.IsNull(country), cs},
		{"is not null", "country IS NOT NULL", iceberg.NotNull(country), cs},
		{"is null lower", "country is null", iceberg.IsNull(country), cs},
		{"is null required", "id IS NULL", iceberg.AlwaysFalse{}, []string{"id"}},
		{"is not null required", "id IS NOT NULL", iceberg.AlwaysTrue{}, []string{"id"}},

		// boolean structure and precedence
		{"and", "country = 'SE' AND amount > 10",
			iceberg.NewAnd(iceberg.EqualTo(country, "SE"), iceberg.GreaterThan(amount, 10.0)), []string{"country", "amount"}},
		{"or", "id = 1 OR id = 2", iceberg.NewOr(iceberg.EqualTo(id, int64(1)), iceberg.EqualTo(id, int64(2))), []string{"id"}},
		{"not", "NOT id = 1", iceberg.NewNot(iceberg.EqualTo(id, int64(1))), []string{"id"}},
		{"not not", "NOT NOT id = 1", iceberg.EqualTo(id, int64(1)), []string{"id"}},
		{"and binds tighter than or", "id = 1 OR id = 2 AND qty = 3",
			iceberg.NewOr(iceberg.EqualTo(id, int64(1)),
				iceberg.NewAnd(iceberg.EqualTo(id, int64(2)), iceberg.EqualTo(qty, int32(3)))), []string{"id", "qty"}},
		{"and binds tighter than or, left", "id = 1 AND id = 2 OR qty = 3",
			iceberg.NewOr(iceberg.NewAnd(iceberg.EqualTo(id, int64(1)), iceberg.EqualTo(id, int64(2))),
				iceberg.EqualTo(qty, int32(3))), []string{"id", "qty"}},
		{"not binds tighter than and", "NOT id = 1 AND qty = 3",
			iceberg.NewAnd(iceberg.NewNot(iceberg.EqualTo(id, int64(1))), iceberg.EqualTo(qty, int32(3))), []string{"id", "qty"}},
		{"not binds tighter than or", "NOT id = 1 OR qty = 3",
			iceberg.NewOr(iceberg.NewNot(iceberg.EqualTo(id, int64(1))), iceberg.EqualTo(qty, int32(3))), []string{"id", "qty"}},
		{"parentheses override", "(id = 1 OR id = 2) AND qty = 3",
			iceberg.NewAnd(iceberg.NewOr(iceberg.EqualTo(id, int64(1)), iceberg.EqualTo(id, int64(2))),
				iceberg.EqualTo(qty, int32(3))), []string{"id", "qty"}},
		{"not of parentheses", "NOT (id = 1 AND qty = 3)",
			iceberg.NewNot(iceberg.NewAnd(iceberg.EqualTo(id, int64(1)), iceberg.EqualTo(qty, int32(3)))), []string{"id", "qty"}},
		{"nested parentheses", "((id = 1))", iceberg.EqualTo(id, int64(1)), []string{"id"}},
		{"and chain is left-assoc", "id = 1 AND id = 2 AND id = 3",
			iceberg.NewAnd(iceberg.NewAnd(iceberg.EqualTo(id, int64(1)), iceberg.EqualTo(id, int64(2))),
				iceberg.EqualTo(id, int64(3))), []string{"id"}},
		{"true and", "TRUE AND id = 1", iceberg.EqualTo(id, int64(1)), []string{"id"}},
		{"false or", "FALSE OR id = 1", iceberg.EqualTo(id, int64(1)), []string{"id"}},
		{"columns in order of first use", "qty = 1 AND (id = 2 OR qty = 3) AND country IS NULL",
			iceberg.NewAnd(iceberg.NewAnd(iceberg.EqualTo(qty, int32(1)),
				iceberg.NewOr(iceberg.EqualTo(id, int64(2)), iceberg.EqualTo(qty, int32(3)))),
				iceberg.IsNull(country)), []string{"qty", "id", "country"}},
		{"mixed case keywords", "id In (1, 2) aNd NoT country iS nOt NuLl Or flag = tRuE",
			iceberg.NewOr(iceberg.NewAnd(iceberg.IsIn(id, int64(1), int64(2)), iceberg.NewNot(iceberg.NotNull(country))),
				iceberg.EqualTo(flag, true)), []string{"id", "country", "flag"}},
		{"whitespace", "\tid\n=\r\n1 \u00a0AND\u2003qty=2 ",
			iceberg.NewAnd(iceberg.EqualTo(id, int64(1)), iceberg.EqualTo(qty, int32(2))), []string{"id", "qty"}},

		// column names
		{"double-quoted column", `"country" = 'SE'`, iceberg.EqualTo(country, "SE"), cs},
		{"backquoted column", "`country` = 'SE'", iceberg.EqualTo(country, "SE"), cs},
		{"quoted column with space", `"Country Code" = 'SE'`,
			iceberg.EqualTo(iceberg.Reference("Country Code"), "SE"), []string{"Country Code"}},
		{"backquoted column with space", "`Country Code` IS NULL",
			iceberg.IsNull(iceberg.Reference("Country Code")), []string{"Country Code"}},
		{"quoted reserved word", `"in" IN ('a')`, iceberg.EqualTo(iceberg.Reference("in"), "a"), []string{"in"}},
		{"backquoted reserved word", "`in` = 'a'", iceberg.EqualTo(iceberg.Reference("in"), "a"), []string{"in"}},
		{"nested field", "addr.zip > 100", iceberg.GreaterThan(iceberg.Reference("addr.zip"), int32(100)), []string{"addr.zip"}},
		{"quoted nested field", `"addr.city" = 'Oslo'`,
			iceberg.EqualTo(iceberg.Reference("addr.city"), "Oslo"), []string{"addr.city"}},
		{"date keyword after column", "day = DATE '2024-05-01' AND created IS NULL",
			iceberg.NewAnd(iceberg.EqualTo(day, days("2024-05-01")), iceberg.IsNull(created)), []string{"day", "created"}},
	}
}

// TestParse checks what each filter means against the Iceberg expression
// it should bind to, as iceberg-go binds it.
func TestParse(t *testing.T) {
	schema, ls := filterSchema(), lakeSchema(t)
	for _, tc := range filterCases() {
		t.Run(tc.name, func(t *testing.T) {
			f, err := filter.Parse(tc.in, ls)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if f.Text != tc.in {
				t.Errorf("Text = %q, want %q", f.Text, tc.in)
			}
			got, err := iceberg.BindExpr(schema, icebergformat.ExprTo(f.Expr), true)
			if err != nil {
				t.Fatalf("Parse(%q) = %s, which does not bind: %v", tc.in, f.Expr, err)
			}
			want, err := iceberg.BindExpr(schema, tc.want, true)
			if err != nil {
				t.Fatalf("binding the wanted %s: %v", tc.want, err)
			}
			if !got.Equals(want) {
				t.Errorf("Parse(%q) = %s\n got %s\nwant %s", tc.in, f.Expr, got, want)
			}
			if fmt.Sprint(f.Columns) != fmt.Sprint(tc.cols) {
				t.Errorf("Columns = %q, want %q", f.Columns, tc.cols)
			}
		})
	}
}

// TestParseMatches evaluates filters on sample rows, to check what
// literals mean (zones, quoting, null handling) rather than how they print:
// with RowEvaluator on the rows as an Arrow batch, and with iceberg-go's
// evaluator as the oracle.
func TestParseMatches(t *testing.T) {
	schema, ls := filterSchema(), lakeSchema(t)
	rows := sampleRows()
	rec := sampleBatch(t, ls, rows)
	defer rec.Release()
	// Iceberg's row evaluator orders nulls first (null < 1 and null != 1
	// are true), unlike SQL, so only the cases marked null evaluate the
	// all-null row 2 with it; RowEvaluator evaluates every row, row 2's
	// comparisons being unknown.
	for _, tc := range []struct {
		in   string
		want []int // indexes of the sample rows that match
		null bool  // also evaluate row 2
	}{
		{"country = 'SE'", []int{0}, false},
		{"country = 'it''s'", []int{1}, false},
		{"country != 'SE'", []int{1}, false},
		{"country <> 'SE'", []int{1}, false},
		{"country IS NULL", []int{2}, true},
		{"country IS NOT NULL", []int{0, 1}, true},
		{"NOT country IS NULL", []int{0, 1}, true},
		{"country IN ('SE', 'NO', 'it''s')", []int{0, 1}, false},
		{"country NOT IN ('SE')", []int{1}, false},
		{"amount > 0", []int{0}, false},
		{"amount < -1e3", []int{1}, false},
		{"amount >= -1.5e3 AND amount <= 10.5", []int{0, 1}, false},
		{"qty < 0 OR flag = TRUE", []int{0, 1}, false},
		{"qty < 0 OR flag = TRUE AND amount > 0", []int{0, 1}, false},
		{"(qty < 0 OR flag = TRUE) AND amount > 0", []int{0}, false},
		{"NOT flag = false AND qty > 0", []int{0}, false},
		{"id >= 2", []int{1, 2}, true},
		{"id <= 2 AND id > 1", []int{1}, false},
		{"created = '2024-05-01 12:00:00'", []int{0}, false},
		{"created = '2024-05-01T14:00:00+02:00'", []int{0}, false},
		{"created = TIMESTAMP '2024-05-01T12:00:00Z'", []int{0}, false},
		{"created < '2024-01-01'", []int{1}, false},
		{"created >= DATE '2024-01-01'", []int{0}, false},
		{"local_ts > TIMESTAMP '2023-12-31 22:59:59.999999'", []int{0, 1}, false},
		{"day = '2024-05-01'", []int{0}, false},
		{"day < DATE '1970-01-01'", []int{1}, false},
		{"day = DATE '1969-12-31'", []int{1}, false},
		{"ns > '2024-05-01 12:00:00'", []int{0}, false},
		{"ns < TIMESTAMP '1970-01-01'", []int{1}, false},
		{"dec = 12.5", []int{0}, false},
		{"dec < 0", []int{1}, false},
		{"dec = -0.01", []int{1}, false},
		{"addr.zip > 1000", []int{0}, false},
		{"addr.city = 'Oslo'", []int{1}, false},
		{"addr.city IS NULL", []int{2}, true},
		{`"Country Code" = 'NO'`, []int{1}, false},
		{"`in` IN ('a', 'b')", []int{0, 1}, false},
		{"TRUE", []int{0, 1, 2}, true},
		{"FALSE", nil, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			f, err := filter.Parse(tc.in, ls)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			eval, err := iceberg.ExpressionEvaluator(schema, icebergformat.ExprTo(f.Expr), true)
			if err != nil {
				t.Fatal(err)
			}
			var oracle []int
			n := 2
			if tc.null {
				n = 3
			}
			for i, r := range rows[:n] {
				ok, err := eval(r)
				if err != nil {
					t.Fatalf("row %d: %v", i, err)
				}
				if ok {
					oracle = append(oracle, i)
				}
			}
			if fmt.Sprint(oracle) != fmt.Sprint(tc.want) {
				t.Errorf("iceberg-go: %q (%s) matches rows %v, want %v", tc.in, f.Expr, oracle, tc.want)
			}
			truths, err := filter.NewRowEvaluator(f.Expr).Eval(rec)
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for i, v := range truths {
				if v == filter.IsTrue {
					got = append(got, i)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("RowEvaluator: %q (%s) matches rows %v (%v), want %v", tc.in, f.Expr, got, truths, tc.want)
			}
		})
	}
}

type filterErrorCase struct {
	name string
	in   string
	is   error    // the sentinel the error wraps
	pos  int      // the 1-based position the message gives
	msg  []string // more text the message contains
}

// filterErrorCases are filters that fail, with where and why.
func filterErrorCases() []filterErrorCase {
	inv, unk := filter.ErrInvalidFilter, filter.ErrUnknownColumn
	return []filterErrorCase{
		{"empty", "", inv, 1, []string{"empty"}},
		{"blank", "  \t\n", inv, 1, []string{"empty"}},
		{"unterminated string", "country = 'SE", inv, 11, []string{"unterminated string"}},
		{"unterminated string at doubled quote", "country = 'it''", inv, 11, []string{"unterminated string"}},
		{"unterminated quoted column", `"country = 'SE'`, inv, 1, []string{"unterminated quoted column"}},
		{"unterminated backquote", "`country", inv, 1, []string{"unterminated"}},
		{"empty quoted column", `"" = 1`, inv, 1, []string{"empty quoted column"}},
		{"unknown column", "id = 1 AND nope = 2", unk, 12,
			[]string{`"nope"`, "columns: id, country, amount, qty, flag, created, local_ts, day, addr, tags, dec, ns, Country Code, in"}},
		{"unknown column case", "Country = 'SE'", unk, 1, []string{`did you mean "country"`}},
		{"unknown quoted column", `"coun try" = 'SE'`, unk, 1, []string{"columns: id, country"}},
		{"unknown column after unicode", "country = 'ööö' OR x = 1", unk, 20, nil},
		{"unknown nested field", "addr.street = 'x'", unk, 1, nil},
		{"string on long", "id = 'abc'", inv, 6, []string{`"id"`, "long", "'abc'"}},
		{"string on long in list", "id IN (1, 'abc')", inv, 11, []string{`"id"`, "long"}},
		{"string on bool", "flag = 'maybe'", inv, 8, []string{`"flag"`, "boolean"}},
		{"int on string", "country = 1", inv, 11, []string{`"country"`, "string"}},
		{"bool on string", "country = TRUE", inv, 11, []string{`"country"`}},
		{"float on long", "id = 1.5", inv, 6, []string{`"id"`, "long"}},
		{"int on bool", "flag = 1", inv, 8, nil},
		{"timestamp on string", "country = TIMESTAMP '2024-01-01'", inv, 11, []string{`"country"`}},
		{"date on long", "id > DATE '2024-01-01'", inv, 6, nil},
		{"bad timestamp", "created > 'yesterday'", inv, 11, []string{"'yesterday'", "timestamp"}},
		{"bad timestamp literal", "created > TIMESTAMP '2024-13-01'", inv, 11, nil},
		{"bad date literal", "day = DATE '2024-02-30'", inv, 7, nil},
		{"date literal with time", "day = DATE '2024-05-01 12:00'", inv, 7, nil},
		{"time of day on date column", "day = TIMESTAMP '2024-05-01 12:00'", inv, 7, []string{"time of day"}},
		{"time of day string on date column", "day >= '2024-05-01T00:00:01Z'", inv, 8, []string{"time of day"}},
		{"nanoseconds on micros column", "created > '2024-05-01 12:00:00.0000001'", inv, 11, []string{"microsecond"}},
		{"timestamp_ns out of range", "ns > TIMESTAMP '3000-01-01'", inv, 6, []string{"range"}},
		{"timestamp without string", "created > TIMESTAMP 5", inv, 21, []string{"TIMESTAMP"}},
		{"NaN", "amount = 'NaN'", inv, 10, []string{"NaN"}},
		{"NaN in list", "amount IN (1, 'nan')", inv, 15, []string{"NaN"}},
		{"decimal too precise", "dec = 1.005", inv, 7, []string{"decimal(9, 2)"}},
		{"decimal too large", "dec < 10000000", inv, 7, []string{"decimal(9, 2)"}},
		{"decimal huge exponent", "dec < 1e999999999", inv, 7, nil},
		{"decimal tiny exponent", "dec < 1e-999999999", inv, 7, nil},
		{"decimal bad string", "dec = '1/2'", inv, 7, nil},
		{"decimal bool", "dec = TRUE", inv, 7, nil},
		{"number too large", "id = 99999999999999999999", inv, 6, []string{`"id"`}},
		{"number out of float range", "amount = 1e400", inv, 10, []string{"invalid number"}},
		{"number followed by letters", "id = 1and qty = 2", inv, 6, []string{"invalid number"}},
		{"hex number", "id = 0x10", inv, 6, []string{"invalid number"}},
		{"lone minus", "id = - 1", inv, 6, []string{"invalid number"}},
		{"double minus", "id = --1", inv, 6, []string{"invalid number"}},
		{"two points", "amount = 1.2.3", inv, 10, []string{"invalid number"}},
		{"eq null", "country = NULL", inv, 11, []string{"IS NULL"}},
		{"neq null", "country != null", inv, 12, []string{"IS NOT NULL"}},
		{"in null", "country IN ('a', NULL)", inv, 18, []string{"IS NULL"}},
		{"struct column", "addr IS NULL", inv, 1, []string{`"addr"`, "struct"}},
		{"struct compare", "addr = 'x'", inv, 1, []string{"struct"}},
		{"list column", "tags IS NOT NULL", inv, 1, []string{`"tags"`, "list"}},
		{"list element", "tags.element = 'x'", inv, 1, []string{"list"}},
		{"trailing garbage", "id = 1 2", inv, 8, []string{"expected AND, OR or the end"}},
		{"trailing word", "id = 1 foo", inv, 8, []string{"foo"}},
		{"trailing paren", "id = 1)", inv, 7, nil},
		{"missing paren", "(id = 1", inv, 8, []string{"expected ')'", "end of filter"}},
		{"missing paren in list", "id IN (1, 2", inv, 12, []string{"',' or ')'"}},
		{"missing open paren in list", "id IN 1, 2", inv, 7, []string{"'('"}},
		{"empty list", "id IN ()", inv, 8, []string{"literal"}},
		{"trailing comma in list", "id IN (1,)", inv, 10, []string{"literal"}},
		{"empty parentheses", "()", inv, 2, nil},
		{"missing operand", "id =", inv, 5, []string{"end of filter"}},
		{"missing operator", "id 1", inv, 4, []string{`"id"`}},
		{"column alone", "flag", inv, 5, nil},
		{"column vs column", "id = qty", inv, 6, []string{"literal"}},
		{"literal first", "1 = id", inv, 1, []string{"column name"}},
		{"dangling and", "id = 1 AND", inv, 11, nil},
		{"dangling or", "id = 1 OR", inv, 10, nil},
		{"dangling not", "NOT", inv, 4, nil},
		{"double and", "id = 1 AND AND id = 2", inv, 12, nil},
		{"is without null", "id IS 1", inv, 7, []string{"NULL"}},
		{"is not without null", "id IS NOT TRUE", inv, 11, []string{"NULL"}},
		{"not without in", "id NOT 1", inv, 8, []string{"IN"}},
		{"bang", "id ! 1", inv, 4, []string{"!="}},
		{"bad character", "id = 1 ; DROP TABLE x", inv, 8, []string{"';'"}},
		{"unsupported operator", "country LIKE 'S%'", inv, 9, []string{"LIKE"}},
		{"reserved word as column", "in = 'a'", inv, 1, []string{"column name"}},
		{"invalid UTF-8", "id = 1 AND \xff", inv, 12, []string{"UTF-8"}},
		{"invalid UTF-8 in string", "country = 'a\xffb'", inv, 13, []string{"UTF-8"}},
		{"invalid UTF-8 in quoted column", "\"co\xc3\" = 1", inv, 4, []string{"UTF-8"}},
		{"too deep", strings.Repeat("(", 65) + "id = 1" + strings.Repeat(")", 65), inv, 65, []string{"64"}},
		{"too deep with NOT", strings.Repeat("NOT ", 65) + "id = 1", inv, 257, []string{"64"}},
		{"too long", "id IN (" + strings.Repeat("1, ", 30000) + "1)", inv, 65537, []string{"65536"}},
		{"one byte too long", "country = '" + strings.Repeat("x", 64<<10-len("country = ''")+1) + "'", inv, 65537, []string{"65537 bytes"}},
		{"too long in characters", strings.Repeat("ö", 40000), inv, 32769, []string{"65536"}},
	}
}

func TestParseErrors(t *testing.T) {
	schema := lakeSchema(t)
	for _, tc := range filterErrorCases() {
		t.Run(tc.name, func(t *testing.T) {
			f, err := filter.Parse(tc.in, schema)
			if err == nil {
				t.Fatalf("Parse(%q) = %s, want an error", tc.in, f.Expr)
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("error %q does not wrap %q", err, tc.is)
			}
			other := filter.ErrUnknownColumn
			if tc.is == other {
				other = filter.ErrInvalidFilter
			}
			if errors.Is(err, other) {
				t.Errorf("error %q wraps %q too", err, other)
			}
			msg := err.Error()
			if want := fmt.Sprintf("position %d", tc.pos); !containsWord(msg, want) {
				t.Errorf("error %q does not say %q", msg, want)
			}
			for _, s := range tc.msg {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not say %q", msg, s)
				}
			}
			if len(msg) > 600 {
				t.Errorf("error is %d bytes long: %.200q...", len(msg), msg)
			}
		})
	}
}

// containsWord reports whether s contains sub not followed by a digit, so
// that "position 1" does not match "position 12".
func containsWord(s, sub string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			return false
		}
		end := i + j + len(sub)
		if end == len(s) || s[end] < '0' || s[end] > '9' {
			return true
		}
		i = end
	}
}

// TestParseLimits checks that filters right at the limits parse.
func TestParseLimits(t *testing.T) {
	schema, ls := filterSchema(), lakeSchema(t)
	for _, tc := range []struct {
		name string
		in   string
	}{
		{"64 parentheses", strings.Repeat("(", 64) + "id = 1" + strings.Repeat(")", 64)},
		{"64 NOTs", strings.Repeat("NOT ", 64) + "id = 1"},
		{"32 NOT (", strings.Repeat("NOT (", 32) + "id = 1" + strings.Repeat(")", 32)},
		{"long AND chain", strings.TrimSuffix(strings.Repeat("id = 1 AND ", 5900), " AND ")},
		{"long IN list", "id IN (" + strings.Repeat("1, ", 21000) + "2)"},
		{"64 KiB", "country = '" + strings.Repeat("x", 64<<10-len("country = ''")) + "'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := filter.Parse(tc.in, ls)
			if err != nil {
				t.Fatalf("Parse(%.80q...): %v", tc.in, err)
			}
			if _, err := iceberg.BindExpr(schema, icebergformat.ExprTo(f.Expr), true); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestParseLongToken checks that an error quoting a long token keeps
// the message short.
func TestParseLongToken(t *testing.T) {
	schema := lakeSchema(t)
	long := strings.Repeat("x", 10000)
	for _, in := range []string{
		"id = 1 '" + long + "'",
		long + " = 1",
		`"` + long + `" = 1`,
		"id = 1 " + long,
		"country = 1" + long,
		"id = '" + long + "'",
	} {
		_, err := filter.Parse(in, schema)
		if err == nil {
			t.Fatalf("Parse(%.40q...) succeeded", in)
		}
		if len(err.Error()) > 600 {
			t.Errorf("Parse(%.40q...): error is %d bytes: %.200s", in, len(err.Error()), err)
		}
	}
}
