package spark

import (
	"testing"

	"github.com/sluicefeed/sluice/filter"
	"github.com/sluicefeed/sluice/lake"
)

// TestFromFilter: Sluice's filters become Spark SQL with typed literals,
// exactly where every node translates; a conjunct that does not is left
// to Sluice (the rest pushed, not exact); an OR or NOT over one that does
// not pushes nothing.
func TestFromFilter(t *testing.T) {
	schema, err := lake.NewSchema(0, nil,
		lake.Field{ID: 1, Name: "id", Type: lake.LongType{}},
		lake.Field{ID: 2, Name: "n", Type: lake.IntType{}},
		lake.Field{ID: 3, Name: "c", Type: lake.StringType{}},
		lake.Field{ID: 4, Name: "x", Type: lake.DoubleType{}},
		lake.Field{ID: 5, Name: "d", Type: lake.DecimalType{Precision: 9, Scale: 2}},
		lake.Field{ID: 6, Name: "day", Type: lake.DateType{}},
		lake.Field{ID: 7, Name: "at", Type: lake.TimestampTzType{}},
		lake.Field{ID: 8, Name: "wall", Type: lake.TimestampType{}},
		lake.Field{ID: 9, Name: "tod", Type: lake.TimeType{}},
		lake.Field{ID: 10, Name: "ok", Type: lake.BooleanType{}},
		lake.Field{ID: 11, Name: "addr", Type: &lake.StructType{Fields: []lake.Field{
			{ID: 12, Name: "city", Type: lake.StringType{}}}}},
		lake.Field{ID: 13, Name: "ns", Type: lake.TimestampTzNsType{}},
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		filter string
		want   string // "" for nothing pushed
		exact  bool
	}{
		{"id = 2 AND c != 'it''s'", "((`id` = 2L) AND (`c` <> CAST(X'69742773' AS STRING)))", true},
		{"n IN (1, 2) OR c IS NULL", "((`n` IN (1L, 2L)) OR (`c` IS NULL))", true},
		{"NOT (n NOT IN (3))", "(NOT (`n` NOT IN (3L)))", true},
		{"x > 1.5", "(CASE WHEN isnan(`x`) THEN FALSE ELSE (`x` > 1.5E+00D) END)", true},
		{"d >= -12.5", "(`d` >= -12.50BD)", true},
		{"day = DATE '2024-05-06'", "(`day` = DATE '2024-05-06')", true},
		{"at < TIMESTAMP '2024-05-06 07:08:09.5+02:00'", "(`at` < TIMESTAMP '2024-05-06 05:08:09.5Z')", true},
		{"wall < TIMESTAMP '2024-05-06 07:08:09'", "(`wall` < TIMESTAMP_NTZ '2024-05-06 07:08:09')", true},
		{"ok = TRUE AND addr.city IS NOT NULL", "((`ok` = TRUE) AND (`addr`.`city` IS NOT NULL))", true},
		{"n > 99999999999", "FALSE", true},
		// A time of day has no literal here: the rest is pushed.
		{"id = 1 AND tod = '10:00:00'", "(`id` = 1L)", false},
		{"tod = '10:00:00' OR id = 1", "", false},
		{"NOT (tod = '10:00:00' AND id = 1)", "", false},
		{"ns = TIMESTAMP '2024-05-06 07:08:09.000000001Z'", "", false},
		{"ns = TIMESTAMP '2024-05-06 07:08:09.000001Z'", "(`ns` = TIMESTAMP '2024-05-06 07:08:09.000001Z')", true},
	} {
		t.Run(tc.filter, func(t *testing.T) {
			f, err := filter.Parse(tc.filter, schema)
			if err != nil {
				t.Fatal(err)
			}
			pushed, exact := FromFilter(f.Expr)
			got := ""
			if pushed != nil {
				if got, err = FilterSQL(pushed); err != nil {
					t.Fatal(err)
				}
			}
			if got != tc.want || exact != tc.exact {
				t.Errorf("got  %s (exact %v)\nwant %s (exact %v)", got, exact, tc.want, tc.exact)
			}
		})
	}
}
