package feed

// These tests keep docs/PROTOCOL.md, the wire contract users read, true
// to the engine: its filter examples, filter.Truth tables, change row schema and
// value lists are read from the page and checked against the code.

import (
	"encoding/json"
	"errors"
	"go/ast"
	goparser "go/parser"
	gotoken "go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/sluicefeed/sluice/filter"
	icebergformat "github.com/sluicefeed/sluice/format/iceberg"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/internal/testkit/docmd"
	"github.com/sluicefeed/sluice/lake"
)

// protocolDoc is the path of the wire contract, from this package.
const protocolDoc = "../docs/PROTOCOL.md"

func readProtocolDoc(t *testing.T) string { t.Helper(); return docmd.Read(t, protocolDoc) }

// docBlock returns the non-blank lines of the fenced code block whose info
// string is exactly info.
func docBlock(t *testing.T, doc, info string) []string {
	t.Helper()
	return docmd.Block(t, protocolDoc, doc, info)
}

// docTable returns the rows of the table whose header row is exactly
// header, each cell trimmed and stripped of an enclosing code span.
func docTable(t *testing.T, doc string, header ...string) [][]string {
	t.Helper()
	return docmd.Table(t, protocolDoc, doc, header...)
}

// docSchema builds the example table of the filter section.
func docSchema(t *testing.T, doc string) *lake.Schema {
	t.Helper()
	id := 0
	var fields []iceberg.NestedField
	for _, row := range docTable(t, doc, "column", "type") {
		id++
		typ, next := docType(t, row[1], id)
		fields = append(fields, iceberg.NestedField{ID: id, Name: row[0], Type: typ})
		id = next
	}
	sc, err := icebergformat.SchemaFrom(iceberg.NewSchema(0, fields...))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

var (
	docDecimalType = regexp.MustCompile(`^decimal\((\d+),\s*(\d+)\)$`)
	docNestedType  = regexp.MustCompile(`^(struct|list)<(.*)>$`)
)

// docType parses a type of the example table; nested fields take ids after
// id. It returns the type and the last id used.
func docType(t *testing.T, s string, id int) (iceberg.Type, int) {
	t.Helper()
	primitive := map[string]iceberg.Type{"long": iceberg.PrimitiveTypes.Int64, "int": iceberg.PrimitiveTypes.Int32,
		"string": iceberg.PrimitiveTypes.String, "double": iceberg.PrimitiveTypes.Float64,
		"boolean": iceberg.PrimitiveTypes.Bool, "date": iceberg.PrimitiveTypes.Date,
		"timestamp": iceberg.PrimitiveTypes.Timestamp, "timestamptz": iceberg.PrimitiveTypes.TimestampTz}
	if typ, ok := primitive[s]; ok {
		return typ, id
	}
	if m := docDecimalType.FindStringSubmatch(s); m != nil {
		p, _ := strconv.Atoi(m[1])
		sc, _ := strconv.Atoi(m[2])
		return iceberg.DecimalTypeOf(p, sc), id
	}
	m := docNestedType.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("%s: type %q of the example table: unknown", protocolDoc, s)
	}
	if m[1] == "list" {
		elem, last := docType(t, m[2], id+1)
		return &iceberg.ListType{ElementID: id + 1, Element: elem, ElementRequired: false}, last
	}
	st := &iceberg.StructType{}
	for _, part := range strings.Split(m[2], ",") {
		name, typ, ok := strings.Cut(part, ":")
		if !ok {
			t.Fatalf("%s: struct field %q: want name: type", protocolDoc, part)
		}
		id++
		ft, last := docType(t, strings.TrimSpace(typ), id)
		st.FieldList = append(st.FieldList, iceberg.NestedField{ID: id, Name: strings.TrimSpace(name), Type: ft})
		id = last
	}
	return st, id
}

func TestProtocolDocFilterExamples(t *testing.T) {
	doc := readProtocolDoc(t)
	schema := docSchema(t, doc)
	for _, f := range docBlock(t, doc, "sql accepted") {
		if _, err := ParseFilter(f, schema); err != nil {
			t.Errorf("the contract accepts the filter %q; the parser says: %v", f, err)
		}
	}
	for _, f := range docBlock(t, doc, "sql rejected") {
		_, err := ParseFilter(f, schema)
		switch {
		case err == nil:
			t.Errorf("the contract refuses the filter %q; the parser accepts it", f)
		case !errors.Is(err, ErrInvalidFilter) && !errors.Is(err, ErrUnknownColumn):
			t.Errorf("filter %q: %v is neither ErrInvalidFilter nor ErrUnknownColumn (INVALID_ARGUMENT)", f, err)
		}
	}
}

func TestProtocolDocThreeValuedLogic(t *testing.T) {
	doc := readProtocolDoc(t)
	schema := docSchema(t, doc)
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)

	values := map[string]json.RawMessage{}
	for _, f := range schema.Fields {
		values[f.Name] = json.RawMessage("null")
	}
	for _, row := range docTable(t, doc, "column", "value") {
		if _, ok := values[row[0]]; !ok {
			t.Fatalf("the example row names %q, which the example table lacks", row[0])
		}
		if !json.Valid([]byte(row[1])) {
			t.Fatalf("the example row's value %q of %s is not a JSON value", row[1], row[0])
		}
		values[row[0]] = json.RawMessage(row[1])
	}
	line, err := json.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	arrowSchema := schema.ToArrow()
	rec, _, err := array.RecordFromJSON(mem, arrowSchema, strings.NewReader("["+string(line)+"]"))
	if err != nil {
		t.Fatalf("the example row %s: %v", line, err)
	}
	defer rec.Release()

	names := map[string]filter.Truth{"true": filter.IsTrue, "false": filter.IsFalse, "unknown": filter.IsUnknown}
	for _, row := range docTable(t, doc, "filter", "value") {
		want, ok := names[row[1]]
		if !ok {
			t.Fatalf("filter %q: value %q is not true, false or unknown", row[0], row[1])
		}
		f, err := ParseFilter(row[0], schema)
		if err != nil {
			t.Fatalf("filter %q: %v", row[0], err)
		}
		got, err := filter.NewRowEvaluator(f.Expr).Eval(rec)
		if err != nil {
			t.Fatalf("filter %q: %v", row[0], err)
		}
		if got[0] != want {
			t.Errorf("on the example row %s the filter %q is %s; the contract says %s", line, row[0],
				docTruthName(got[0]), row[1])
		}
	}
}

func docTruthName(v filter.Truth) string {
	return map[filter.Truth]string{filter.IsTrue: "true", filter.IsFalse: "false", filter.IsUnknown: "unknown"}[v]
}

func TestProtocolDocRowMatching(t *testing.T) {
	doc := readProtocolDoc(t)
	names := map[string]filter.Truth{"true": filter.IsTrue, "false": filter.IsFalse, "unknown": filter.IsUnknown}
	rows := docTable(t, doc, "change", "filter on the before-image", "filter on the after-image", "kept")
	for _, row := range rows {
		kind, before, after, kept := row[0], row[1], row[2], row[3]
		var changes []change
		switch kind {
		case "insert":
			changes = []change{{op: OpInsert, before: -1, after: 0}}
		case "delete":
			changes = []change{{op: OpDelete, before: 0, after: -1}}
		case "update pair":
			changes = []change{{op: OpUpdateBefore, before: 0, after: -1}, {op: OpUpdateAfter, before: -1, after: 0}}
		case "update":
			changes = []change{{op: OpUpdate, before: 0, after: 0}}
		default:
			t.Fatalf("row %v: unknown change %q", row, kind)
		}
		truths := func(cell string, used bool) []filter.Truth {
			if !used {
				if cell != "" {
					t.Fatalf("row %v: a %s has no such image", row, kind)
				}
				return nil
			}
			v, ok := names[cell]
			if !ok {
				t.Fatalf("row %v: %q is not true, false or unknown", row, cell)
			}
			return []filter.Truth{v}
		}
		bv := truths(before, kind != "insert")
		av := truths(after, kind != "delete")
		got := filterChanges(slices.Clone(changes), bv, av)
		switch {
		case kept == "yes" && len(got) != len(changes), kept == "no" && len(got) != 0:
			t.Errorf("%s with before %q and after %q: kept %d of %d rows; the contract says %s", kind, before, after,
				len(got), len(changes), kept)
		case kept != "yes" && kept != "no":
			t.Fatalf("row %v: kept is %q, not yes or no", row, kept)
		}
	}
}

func TestProtocolDocChangeSchema(t *testing.T) {
	doc := readProtocolDoc(t)
	schema := docSchema(t, doc)
	projected := []string{"country", "id", "addr"}
	got, err := changeSchema(schema, projected)
	if err != nil {
		t.Fatal(err)
	}
	rows := docTable(t, doc, "column", "Arrow type", "nullable", "meaning")
	if len(rows) != got.NumFields() {
		t.Fatalf("the contract lists %d columns; the schema has %d: %s", len(rows), got.NumFields(), got)
	}
	for i, row := range rows {
		f := got.Field(i)
		if f.Name != row[0] {
			t.Errorf("column %d is %q; the contract says %q", i, f.Name, row[0])
		}
		if want := map[string]bool{"yes": true, "no": false}[row[2]]; f.Nullable != want || (row[2] != "yes" && row[2] != "no") {
			t.Errorf("column %s: nullable %v; the contract says %q", f.Name, f.Nullable, row[2])
		}
		if st, ok := f.Type.(*arrow.StructType); ok {
			if !strings.Contains(row[1], "struct") {
				t.Errorf("column %s is a struct; the contract says %q", f.Name, row[1])
			}
			if !arrow.TypeEqual(st, got.Field(1).Type) {
				t.Errorf("column %s is %s, not the same struct as before (%s)", f.Name, st, got.Field(1).Type)
			}
			for j, sf := range st.Fields() {
				if sf.Name != projected[j] || !sf.Nullable {
					t.Errorf("image field %d is %s; want the nullable projected column %q", j, sf, projected[j])
				}
			}
			continue
		}
		if f.Type.String() != row[1] {
			t.Errorf("column %s has the Arrow type %s; the contract says %q", f.Name, f.Type, row[1])
		}
	}
	ops := docmd.CodeSpans(rows[0][3])
	if want := docConsts(t, "Op"); !docSameSet(ops, want) {
		t.Errorf("the contract lists the ops %v; the engine's are %v", ops, want)
	}
}

// TestProtocolDocPlanValues checks that the explain bullet names every
// strategy, file content and role a plan can show, and nothing else.
func TestProtocolDocPlanValues(t *testing.T) {
	doc := readProtocolDoc(t)
	var bullet string
	for _, para := range strings.Split(doc, "\n- ") {
		if strings.HasPrefix(para, "`explain`:") {
			bullet = para
		}
	}
	if bullet == "" {
		t.Fatalf("%s has no bullet starting with `explain`:", protocolDoc)
	}
	var documented []string
	for _, s := range docmd.CodeSpans(bullet) {
		if !slices.Contains([]string{"explain", "strategy", "content", "role"}, s) {
			documented = append(documented, s)
		}
	}
	var want []string
	for _, prefix := range []string{"Strategy", "Content", "Role"} {
		want = append(want, docConsts(t, prefix)...)
	}
	if !docSameSet(documented, want) {
		t.Errorf("the explain bullet names %v; a plan can show %v", documented, want)
	}
}

func TestProtocolDocFilterLimits(t *testing.T) {
	doc := readProtocolDoc(t)
	for _, row := range docTable(t, doc, "what", "limit", "beyond it") {
		if row[0] != "a filter" {
			continue
		}
		m := regexp.MustCompile(`^(\d+) KiB, nested (\d+) `).FindStringSubmatch(row[1])
		if m == nil {
			t.Fatalf("the filter's limits %q: want \"<n> KiB, nested <n> ...\"", row[1])
		}
		kib, _ := strconv.Atoi(m[1])
		depth, _ := strconv.Atoi(m[2])
		if kib<<10 != maxFilterLength || depth != maxFilterDepth {
			t.Errorf("the contract limits a filter to %d KiB and %d levels; the parser to %d bytes and %d levels",
				kib, depth, maxFilterLength, maxFilterDepth)
		}
		return
	}
	t.Fatalf("%s: the limits table has no row for a filter", protocolDoc)
}

// docConsts returns the values of the package's exported string
// constants whose names start with prefix and an upper-case letter.
func docConsts(t *testing.T, prefix string) []string {
	t.Helper()
	// The strategies, contents and roles a format plans are package lake's
	// (the seam's), which feed re-exports.
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	seam, err := filepath.Glob(filepath.Join("..", "lake", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, seam...)
	var out []string
	fset := gotoken.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := goparser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != gotoken.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					rest, ok := strings.CutPrefix(n.Name, prefix)
					if !ok || rest == "" || rest[0] < 'A' || rest[0] > 'Z' || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == gotoken.STRING {
						v, err := strconv.Unquote(lit.Value)
						if err != nil {
							t.Fatal(err)
						}
						out = append(out, v)
					}
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("packages feed and lake have no string constant %s*", prefix)
	}
	return out
}

func docSameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b)) && len(a) == len(b)
}
