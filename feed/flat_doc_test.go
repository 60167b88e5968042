package feed

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluicefeed/sluice/internal/testkit/docmd"
)

// TestProtocolDocFlatSchema checks the flat layout's table of
// docs/PROTOCOL.md against the engine: the projected columns come first,
// with the images' types, then the three columns with their names, types,
// nullability and change types.
func TestProtocolDocFlatSchema(t *testing.T) {
	doc := readProtocolDoc(t)
	projected := []string{"country", "id", "addr"}
	renderable, err := changeSchema(docSchema(t, doc), projected)
	if err != nil {
		t.Fatal(err)
	}
	got, err := flatSchema("shop.orders", renderable)
	if err != nil {
		t.Fatal(err)
	}
	rows := docTable(t, doc, "flat column", "Arrow type", "nullable", "meaning")
	if len(rows) != 1+len(flatColumns) {
		t.Fatalf("the contract lists %d rows of flat columns; want the projected columns and %v", len(rows), flatColumns)
	}
	if !strings.Contains(rows[0][0], "projected columns") || rows[0][2] != "yes" {
		t.Errorf("the first row of the flat table is %v; want the projected columns, nullable", rows[0])
	}
	image := imageType(renderable)
	for j, name := range projected {
		f := got.Field(j)
		if f.Name != name || !f.Nullable || !arrow.TypeEqual(f.Type, image.Field(j).Type) {
			t.Errorf("flat column %d is %s; want the image's field %s", j, f, image.Field(j))
		}
	}
	for i, row := range rows[1:] {
		f := got.Field(len(projected) + i)
		if f.Name != row[0] {
			t.Errorf("flat column %d is %q; the contract says %q", len(projected)+i, f.Name, row[0])
		}
		if f.Type.String() != row[1] {
			t.Errorf("flat column %s has the Arrow type %s; the contract says %q", f.Name, f.Type, row[1])
		}
		if want := map[string]bool{"yes": true, "no": false}[row[2]]; f.Nullable != want || (row[2] != "yes" && row[2] != "no") {
			t.Errorf("flat column %s: nullable %v; the contract says %q", f.Name, f.Nullable, row[2])
		}
	}
	if got.NumFields() != len(projected)+len(flatColumns) {
		t.Errorf("the flat schema has %d fields: %s", got.NumFields(), got)
	}
	types := docConsts(t, "Change")
	if documented := docmd.CodeSpans(rows[1][3]); !docSameSet(documented, types) {
		t.Errorf("the contract lists the change types %v; the engine's are %v", documented, types)
	}
	var mapped []string
	for _, ct := range changeTypes {
		mapped = append(mapped, ct.name)
	}
	if !docSameSet(mapped, types) {
		t.Errorf("the ops map onto the change types %v; the engine declares %v", mapped, types)
	}
}
