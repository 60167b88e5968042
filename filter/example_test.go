package filter_test

import (
	"fmt"

	"github.com/sluicefeed/sluice/filter"
	"github.com/sluicefeed/sluice/lake"
)

func ExampleParse() {
	schema, err := lake.NewSchema(0, nil,
		lake.Field{ID: 1, Name: "id", Type: lake.LongType{}, Required: true},
		lake.Field{ID: 2, Name: "country", Type: lake.StringType{}},
		lake.Field{ID: 3, Name: "addr", Type: &lake.StructType{Fields: []lake.Field{
			{ID: 4, Name: "zip", Type: lake.IntType{}},
		}}},
	)
	if err != nil {
		panic(err)
	}
	f, err := filter.Parse("country IN ('SE', 'NO') AND NOT addr.zip < 100", schema)
	if err != nil {
		panic(err)
	}
	fmt.Println(f.Expr)
	fmt.Println(f.Columns)
	fmt.Println(filter.RewriteNot(f.Expr))

	_, err = filter.Parse("Country = 'SE'", schema)
	fmt.Println(err)
	// Output:
	// (country IN ("SE", "NO") AND NOT addr.zip < 100)
	// [country addr.zip]
	// (country IN ("SE", "NO") AND addr.zip >= 100)
	// feed: unknown column: "Country" at position 1 of the filter (did you mean "country"? columns: id, country, addr)
}
