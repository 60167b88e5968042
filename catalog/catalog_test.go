package catalog_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/sluicefeed/sluice/catalog"
)

func TestParseName(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{"demo.orders", []string{"demo", "orders"}, true},
		{"a.b.orders", []string{"a", "b", "orders"}, true},
		{"orders", nil, false},
		{".orders", nil, false},
		{"demo.", nil, false},
		{"a..b", nil, false},
		{" demo.orders", nil, false},
	} {
		got, err := catalog.ParseName(tt.in)
		if tt.ok != (err == nil) || (tt.ok && !slices.Equal(got, tt.want)) {
			t.Errorf("ParseName(%q) = %v, %v", tt.in, got, err)
		}
		if err != nil && !errors.Is(err, catalog.ErrInvalidName) {
			t.Errorf("ParseName(%q): %v is not ErrInvalidName", tt.in, err)
		}
	}
}

func schema() *iceberg.Schema {
	return iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
}

func TestEmbeddedSQLCatalog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cat, err := catalog.Open(ctx, catalog.Config{Warehouse: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.Iceberg().CreateNamespace(ctx, []string{"a", "b"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.Iceberg().CreateTable(ctx, []string{"a", "b", "t1"}, schema()); err != nil {
		t.Fatal(err)
	}
	cat.Close()

	// Reopened by every URI form that names the same file.
	for _, uri := range []string{"", "file://" + filepath.Join(dir, "catalog.db"), filepath.Join(dir, "catalog.db"),
		"sqlite:///" + filepath.Join(dir, "catalog.db")} {
		cat, err := catalog.Open(ctx, catalog.Config{Warehouse: dir, URI: uri})
		if err != nil {
			t.Fatalf("uri %q: %v", uri, err)
		}
		names, err := cat.ListTables(ctx)
		if err != nil || !slices.Equal(names, []string{"a.b.t1"}) {
			t.Fatalf("uri %q: tables %v, %v", uri, names, err)
		}
		if _, err := cat.LoadTable(ctx, "a.b.t1"); err != nil {
			t.Fatalf("uri %q: %v", uri, err)
		}
		if _, err := cat.LoadTable(ctx, "a.b.nope"); !errors.Is(err, catalog.ErrTableNotFound) {
			t.Fatalf("unknown table: %v", err)
		}
		if _, err := cat.LoadTable(ctx, "x.nope"); !errors.Is(err, catalog.ErrTableNotFound) {
			t.Fatalf("unknown namespace: %v", err)
		}
		cat.Close()
	}
	// Another catalog name in the same file sees no table.
	other, err := catalog.Open(ctx, catalog.Config{Warehouse: dir, Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.LoadTable(ctx, "a.b.t1"); !errors.Is(err, catalog.ErrTableNotFound) {
		t.Fatalf("table seen under another catalog name: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, cfg := range []catalog.Config{
		{Warehouse: dir, URI: "file://" + filepath.Join(dir, "missing.db")},
		{Warehouse: dir, URI: "http://host/x"},
		{Type: "glue"},
		{Type: "rest"},
		{Warehouse: dir, URI: "file://otherhost/x.db"},
	} {
		if _, err := catalog.Open(ctx, cfg); !errors.Is(err, catalog.ErrInvalidConfig) {
			t.Errorf("Open(%+v): %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

func TestHadoopCatalog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cat, err := catalog.Open(ctx, catalog.Config{Type: catalog.TypeHadoop, Warehouse: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if err := cat.Iceberg().CreateNamespace(ctx, []string{"ns"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.Iceberg().CreateTable(ctx, []string{"ns", "t"}, schema()); err != nil {
		t.Fatal(err)
	}
	names, err := cat.ListTables(ctx)
	if err != nil || !slices.Equal(names, []string{"ns.t"}) {
		t.Fatalf("tables %v, %v", names, err)
	}
	if _, err := cat.LoadTable(ctx, "ns.t"); err != nil {
		t.Fatal(err)
	}
}

// TestSQLCatalogFileGoneAndReplaced moves the catalog file away and back,
// and replaces it with another file: a file that is gone is ErrUnavailable
// (not the state of the vanished file, which the open connections could
// still read), the same file back serves again, and a new file's state is
// served at once.
func TestSQLCatalogFileGoneAndReplaced(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "catalog.db")
	writer, err := catalog.Open(ctx, catalog.Config{Warehouse: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := writer.Iceberg().CreateNamespace(ctx, []string{"ns"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Iceberg().CreateTable(ctx, []string{"ns", "t1"}, schema()); err != nil {
		t.Fatal(err)
	}
	writer.Close()

	cat, err := catalog.Open(ctx, catalog.Config{Warehouse: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	tables := func() ([]string, error) { return cat.ListTables(ctx) }
	if names, err := tables(); err != nil || !slices.Equal(names, []string{"ns.t1"}) {
		t.Fatalf("tables %v, %v", names, err)
	}

	if err := os.Rename(path, path+".away"); err != nil {
		t.Fatal(err)
	}
	if _, err := tables(); !errors.Is(err, catalog.ErrUnavailable) {
		t.Fatalf("list with the file moved away: %v, want ErrUnavailable", err)
	}
	if _, err := cat.LoadTable(ctx, "ns.t1"); !errors.Is(err, catalog.ErrUnavailable) {
		t.Fatalf("load with the file moved away: %v, want ErrUnavailable", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the catalog created a file in place of the one moved away: %v", err)
	}
	if err := os.Rename(path+".away", path); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.LoadTable(ctx, "ns.t1"); err != nil {
		t.Fatalf("load with the file back: %v", err)
	}

	// A copy with one more table, renamed over the file.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".new", b, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := catalog.Open(ctx, catalog.Config{Warehouse: dir, URI: path + ".new"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Iceberg().CreateTable(ctx, []string{"ns", "t2"}, schema()); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	if names, err := tables(); err != nil || !slices.Equal(names, []string{"ns.t1", "ns.t2"}) {
		t.Fatalf("tables after the file was replaced: %v, %v", names, err)
	}
	if _, err := cat.LoadTable(ctx, "ns.t2"); err != nil {
		t.Fatal(err)
	}
}
