package delta

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"
)

// TestToLakeArrow: for the schema of every fixture and of the protocol's
// examples, the Arrow schema of ToLake's schema is the one iceberg-go
// gives for ToIceberg's, field metadata included: the engine serves the
// same bytes whichever model it converts through.
func TestToLakeArrow(t *testing.T) {
	type schemaCase struct {
		schema string
		mode   ColumnMappingMode
	}
	cases := map[string]schemaCase{
		"protocol":   {protocolSchema, MappingNone},
		"nested ids": {nestedIDsSchema, MappingID},
	}
	for file, md := range fixtureMetadata(t) {
		mode, err := MappingMode(md.Configuration)
		if err != nil {
			t.Fatal(err)
		}
		cases[file] = schemaCase{md.SchemaString, mode}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := mustParse(t, tc.schema)
			ls, err := ToLake(st, tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			is, err := ToIceberg(st, tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			want, err := table.SchemaToArrowSchema(is, nil, false, false)
			if err != nil {
				t.Fatal(err)
			}
			got := ls.ToArrow()
			if !got.Equal(want) || !got.Metadata().Equal(want.Metadata()) ||
				!arrow.TypeEqual(arrow.StructOf(got.Fields()...), arrow.StructOf(want.Fields()...), arrow.CheckMetadata()) {
				t.Fatalf("Arrow schemas differ:\ngot  %s\nwant %s", got, want)
			}
			if ls.String() != is.String() {
				t.Fatalf("schemas differ:\ngot  %s\nwant %s", ls, is)
			}
		})
	}
}
