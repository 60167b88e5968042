package filter_test

import (
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/iceberg-go"

	"github.com/sluicefeed/sluice/filter"
	icebergformat "github.com/sluicefeed/sluice/format/iceberg"
)

var positionRE = regexp.MustCompile(`position (\d+)`)

// FuzzParse checks Parse's contract on arbitrary text: it never panics; it
// returns either a filter whose expression binds to the schema (as
// iceberg-go binds it) and evaluates on rows, or an error that wraps
// ErrInvalidFilter or ErrUnknownColumn and names a position inside (or just
// past) the text. On the sample rows without nulls, RowEvaluator agrees
// with iceberg-go's evaluator, and the pruner never rules out statistics
// of rows that match.
func FuzzParse(f *testing.F) {
	for _, tc := range filterCases() {
		f.Add(tc.in)
	}
	for _, tc := range filterErrorCases() {
		if len(tc.in) < 1<<10 {
			f.Add(tc.in)
		}
	}
	for _, s := range []string{
		"", " ", "(", ")", "'", `"`, "`", "!", "-", ".", "1e", "1e+", "NOT", "id", "id =", "id IN", "id IN (",
		"id IN ()", "id IS", "id IS NOT", "x = NULL", "amount = 'NaN'", "amount <> '-Inf'",
		"qty = 99999999999", "qty IN (2147483648, -2147483649, 1)", "id = 99999999999999999999",
		"id = -9223372036854775808", "dec = 1.005", "dec = '12.5'", "dec < 1e3", "dec IN (1, 2.50, '3.1')",
		"day = TIMESTAMP '2024-01-01 12:00'", "day = DATE '2024-01-01 12:00'", "day >= '1969-12-31'",
		"ns > TIMESTAMP '2024-01-01 00:00:00.123456789'", "ns < '3000-01-01'", "created = '2024-01-01T00:00:00.0000001Z'",
		"addr IS NULL", "tags IS NOT NULL", "tags.element = 'x'", "addr.zip > 10", `"Country Code" = 'SE'`,
		"`in` IN ('a')", "id = 1and flag", "id = 0x10", "id = 1_000", "\xff", "country = '\xff'", "\"\"",
		"NOT NOT NOT TRUE", "((((id = 1))))", "id = 1 OR id = 2 AND NOT flag = true",
		"country = 'é' AND amount > 1", "città = 1", "id\u00a0=\u20281",
	} {
		f.Add(s)
	}
	f.Add(strings.Repeat("(", 70) + "TRUE" + strings.Repeat(")", 70))
	f.Add(strings.Repeat("NOT ", 70) + "TRUE")

	schema, ls := filterSchema(), lakeSchema(f)
	rows := sampleRows()
	rec := sampleBatch(f, ls, rows)
	defer rec.Release()
	f.Fuzz(func(t *testing.T, text string) {
		flt, err := filter.Parse(text, ls)
		if err != nil {
			checkFilterError(t, text, err)
			return
		}
		if flt == nil || flt.Expr == nil {
			t.Fatalf("Parse(%q) = %v, nil error", text, flt)
		}
		if flt.Text != text {
			t.Fatalf("Parse(%q).Text = %q", text, flt.Text)
		}
		for i, c := range flt.Columns {
			if _, ok := ls.FieldByName(c); !ok {
				t.Fatalf("Parse(%q).Columns has %q, not in the schema", text, c)
			}
			if slices.Contains(flt.Columns[:i], c) {
				t.Fatalf("Parse(%q).Columns = %q repeats %q", text, flt.Columns, c)
			}
		}
		expr := icebergformat.ExprTo(flt.Expr)
		bound, err := iceberg.BindExpr(schema, expr, true)
		if err != nil {
			t.Fatalf("Parse(%q) = %s, which does not bind: %v", text, flt.Expr, err)
		}
		_ = bound.String()
		eval, err := iceberg.ExpressionEvaluator(schema, expr, true)
		if err != nil {
			t.Fatalf("Parse(%q): evaluator: %v", text, err)
		}
		got := make([]bool, len(rows))
		for i, r := range rows {
			if got[i], err = eval(r); err != nil {
				t.Fatalf("Parse(%q) = %s: evaluating row %d: %v", text, flt.Expr, i, err)
			}
		}
		truths, err := filter.NewRowEvaluator(flt.Expr).Eval(rec)
		if err != nil {
			t.Fatalf("Parse(%q) = %s: RowEvaluator: %v", text, flt.Expr, err)
		}
		for i := range 2 { // rows 0 and 1 hold no nulls: both logics agree
			if (truths[i] == filter.IsTrue) != got[i] {
				t.Fatalf("Parse(%q) = %s: row %d is %v, iceberg-go says %v", text, flt.Expr, i, truths[i], got[i])
			}
		}
		checkPruner(t, text, flt.Expr, rec, truths)

		// Parentheses change nothing: the wrapped filter, if within the
		// limits, matches the same rows.
		wrapped, err := filter.Parse("("+text+")", ls)
		if err != nil {
			if !strings.Contains(err.Error(), "nests deeper") && !strings.Contains(err.Error(), "longer than") {
				t.Fatalf("Parse(%q) succeeds but (%s) fails: %v", text, text, err)
			}
			return
		}
		weval, err := iceberg.ExpressionEvaluator(schema, icebergformat.ExprTo(wrapped.Expr), true)
		if err != nil {
			t.Fatalf("Parse((%s)): evaluator: %v", text, err)
		}
		for i, r := range rows {
			if w, err := weval(r); err != nil || w != got[i] {
				t.Fatalf("row %d: %q matches %v but (%s) matches %v (err %v)", i, text, got[i], text, w, err)
			}
		}
	})
}

// checkFilterError asserts that err is a filter error naming a position
// within the text.
func checkFilterError(t *testing.T, text string, err error) {
	t.Helper()
	if !errors.Is(err, filter.ErrInvalidFilter) && !errors.Is(err, filter.ErrUnknownColumn) {
		t.Fatalf("Parse(%q): error %v wraps neither ErrInvalidFilter nor ErrUnknownColumn", text, err)
	}
	m := positionRE.FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("Parse(%q): error %q gives no position", text, err)
	}
	pos, _ := strconv.Atoi(m[1])
	if n := utf8.RuneCountInString(text); pos < 1 || pos > n+1 {
		t.Fatalf("Parse(%q): error %q gives position %d outside 1..%d", text, err, pos, n+1)
	}
}
