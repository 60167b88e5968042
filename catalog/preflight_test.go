package catalog_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicefeed/sluice/catalog"
)

// writeTables creates the tables (namespace.table) under the catalog name
// in the SQLite catalog file path, which it creates when absent.
func writeTables(t *testing.T, warehouse, path, name string, tables ...string) {
	t.Helper()
	ctx := context.Background()
	cat, err := catalog.Open(ctx, catalog.Config{Warehouse: warehouse, URI: path, Name: name, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	for _, tbl := range tables {
		ident, err := catalog.ParseName(tbl)
		if err != nil {
			t.Fatal(err)
		}
		ns := ident[:len(ident)-1]
		if ok, _ := cat.Iceberg().CheckNamespaceExists(ctx, ns); !ok {
			if err := cat.Iceberg().CreateNamespace(ctx, ns, nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := cat.Iceberg().CreateTable(ctx, ident, schema()); err != nil {
			t.Fatal(err)
		}
	}
}

// writeSQLite writes a SQLite database with one table that is not an
// Iceberg catalog (like the consumer progress store).
func writeSQLite(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE consumer_progress (consumer TEXT)`); err != nil {
		t.Fatal(err)
	}
}

func TestPreflight(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, wh string) catalog.Config
		// want are the phrases of the refusal; none: Preflight passes.
		want []string
	}{
		{"empty warehouse", func(t *testing.T, wh string) catalog.Config {
			return catalog.Config{Warehouse: wh}
		}, nil},
		{"missing warehouse", func(t *testing.T, wh string) catalog.Config {
			return catalog.Config{Warehouse: filepath.Join(wh, "lakx")}
		}, []string{"lakx does not exist", "--warehouse", "--create-catalog"}},
		{"missing warehouse, created", func(t *testing.T, wh string) catalog.Config {
			return catalog.Config{Warehouse: filepath.Join(wh, "new"), Create: true}
		}, nil},
		{"missing hadoop warehouse", func(t *testing.T, wh string) catalog.Config {
			return catalog.Config{Type: catalog.TypeHadoop, Warehouse: filepath.Join(wh, "lakx")}
		}, []string{"does not exist"}},
		{"missing warehouse with a catalog file", func(t *testing.T, wh string) catalog.Config {
			writeTables(t, wh, filepath.Join(wh, "catalog.db"), "sluice", "a.t")
			return catalog.Config{Warehouse: filepath.Join(wh, "lakx"), URI: "file://" + filepath.Join(wh, "catalog.db")}
		}, []string{"lakx does not exist"}},
		{"warehouse is a file", func(t *testing.T, wh string) catalog.Config {
			path := filepath.Join(wh, "file")
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return catalog.Config{Warehouse: path}
		}, []string{"not a directory"}},
		{"remote warehouse, rest catalog", func(t *testing.T, wh string) catalog.Config {
			return catalog.Config{Type: catalog.TypeREST, URI: "http://127.0.0.1:1", Warehouse: filepath.Join(wh, "nope")}
		}, nil},
		{"only a progress store and dot files", func(t *testing.T, wh string) catalog.Config {
			writeSQLite(t, filepath.Join(wh, "sluice-consumers.db"))
			if err := os.WriteFile(filepath.Join(wh, ".DS_Store"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return catalog.Config{Warehouse: wh}
		}, nil},
		{"pyiceberg's catalog beside", func(t *testing.T, wh string) catalog.Config {
			writeTables(t, wh, filepath.Join(wh, "pyiceberg.db"), "lake", "sales.orders", "sales.items")
			return catalog.Config{Warehouse: wh}
		}, []string{`pyiceberg.db (2 tables of "lake")`, "the folder sales.db",
			"--catalog-uri file:///", "/pyiceberg.db --catalog-name lake to serve it", "--create-catalog"}},
		{"pyiceberg's catalog beside, created", func(t *testing.T, wh string) catalog.Config {
			writeTables(t, wh, filepath.Join(wh, "pyiceberg.db"), "lake", "sales.orders")
			return catalog.Config{Warehouse: wh, Create: true}
		}, nil},
		{"a catalog of the same name beside", func(t *testing.T, wh string) catalog.Config {
			writeTables(t, wh, filepath.Join(wh, "other.sqlite"), "sluice", "a.t")
			return catalog.Config{Warehouse: wh}
		}, []string{`other.sqlite (1 table of "sluice")`, "other.sqlite to serve it"}},
		{"two catalogs beside", func(t *testing.T, wh string) catalog.Config {
			writeTables(t, wh, filepath.Join(wh, "cat-a.db"), "a", "a.t")
			writeTables(t, wh, filepath.Join(wh, "cat-b.db"), "b", "b.t")
			return catalog.Config{Warehouse: wh}
		}, []string{"cat-a.db", "cat-b.db", "--catalog-uri with the file its writers used"}},
		{"table folders only", func(t *testing.T, wh string) catalog.Config {
			for _, d := range []string{"a", "b", "c", "d", "e", "f", "g"} {
				if err := os.MkdirAll(filepath.Join(wh, d+".db", "t", "metadata"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			return catalog.Config{Warehouse: wh}
		}, []string{"the folders a.db, b.db, c.db, d.db, e.db and 2 more", "--catalog-uri with the catalog file"}},
		{"a hadoop warehouse", func(t *testing.T, wh string) catalog.Config {
			meta := filepath.Join(wh, "ns", "t", "metadata")
			if err := os.MkdirAll(meta, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(meta, "version-hint.text"), []byte("1"), 0o644); err != nil {
				t.Fatal(err)
			}
			return catalog.Config{Warehouse: wh}
		}, []string{"--catalog-type hadoop"}},
		{"an unreadable .db file", func(t *testing.T, wh string) catalog.Config {
			if err := os.WriteFile(filepath.Join(wh, "junk.db"), []byte(strings.Repeat("not sqlite ", 100)), 0o644); err != nil {
				t.Fatal(err)
			}
			return catalog.Config{Warehouse: wh}
		}, []string{"junk.db (not a readable SQLite file)"}},
		{"tables under another catalog name", func(t *testing.T, wh string) catalog.Config {
			writeTables(t, wh, filepath.Join(wh, "catalog.db"), "lake", "a.t")
			return catalog.Config{Warehouse: wh}
		}, []string{`no table of the catalog "sluice"`, `1 table of "lake"`, "--catalog-name lake"}},
		{"tables under two other catalog names", func(t *testing.T, wh string) catalog.Config {
			writeTables(t, wh, filepath.Join(wh, "catalog.db"), "lake", "a.t", "a.u")
			writeTables(t, wh, filepath.Join(wh, "catalog.db"), "pond", "a.t")
			return catalog.Config{Warehouse: wh, Name: "sea"}
		}, []string{`"lake" (2), "pond" (1)`, "--catalog-name with the name its writers used"}},
		{"tables under its own name and another", func(t *testing.T, wh string) catalog.Config {
			writeTables(t, wh, filepath.Join(wh, "catalog.db"), "lake", "a.t")
			writeTables(t, wh, filepath.Join(wh, "catalog.db"), "sluice", "a.t")
			return catalog.Config{Warehouse: wh}
		}, nil},
		{"the right name", func(t *testing.T, wh string) catalog.Config {
			writeTables(t, wh, filepath.Join(wh, "catalog.db"), "lake", "a.t")
			return catalog.Config{Warehouse: wh, Name: "lake"}
		}, nil},
		{"an empty catalog file", func(t *testing.T, wh string) catalog.Config {
			if err := os.WriteFile(filepath.Join(wh, "catalog.db"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return catalog.Config{Warehouse: wh}
		}, nil},
		{"a named catalog file that is missing", func(t *testing.T, wh string) catalog.Config {
			return catalog.Config{Warehouse: wh, URI: "file://" + filepath.Join(wh, "pyiceberg.db")}
		}, []string{"pyiceberg.db does not exist", "--catalog-uri"}},
		{"a named catalog file that is missing, created", func(t *testing.T, wh string) catalog.Config {
			return catalog.Config{Warehouse: wh, URI: "file://" + filepath.Join(wh, "pyiceberg.db"), Create: true}
		}, nil},
		{"a SQLite file that is no catalog", func(t *testing.T, wh string) catalog.Config {
			writeSQLite(t, filepath.Join(wh, "sluice-consumers.db"))
			return catalog.Config{Warehouse: wh, URI: filepath.Join(wh, "sluice-consumers.db")}
		}, []string{"not an Iceberg catalog", "--catalog-uri"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wh := t.TempDir()
			cfg := tt.setup(t, wh)
			before := listDir(t, wh)
			err := catalog.Preflight(ctx, cfg)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Preflight: %v", err)
				}
			} else {
				if !errors.Is(err, catalog.ErrInvalidConfig) {
					t.Fatalf("Preflight = %v, want ErrInvalidConfig", err)
				}
				for _, w := range tt.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%v\ndoes not say %q", err, w)
					}
				}
				if n := strings.Count(err.Error(), "invalid configuration"); n != 1 {
					t.Errorf("%q: %d prefixes", err, n)
				}
			}
			if after := listDir(t, wh); after != before {
				t.Fatalf("Preflight changed the warehouse: %s, was %s", after, before)
			}
		})
	}
}

// listDir lists the files below dir, for checks that nothing was written.
func listDir(t *testing.T, dir string) string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		names = append(names, path+":"+fi.ModTime().String())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(names, "\n")
}

// TestOpenCreate: Create makes Open create a missing warehouse and a named
// catalog file, which without it must exist.
func TestOpenCreate(t *testing.T) {
	ctx := context.Background()
	wh := filepath.Join(t.TempDir(), "new", "warehouse")
	file := filepath.Join(t.TempDir(), "mine.db")
	if _, err := catalog.Open(ctx, catalog.Config{Warehouse: wh, URI: file}); !errors.Is(err, catalog.ErrInvalidConfig) {
		t.Fatalf("a missing named file without Create: %v", err)
	}
	cat, err := catalog.Open(ctx, catalog.Config{Warehouse: wh, URI: file, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	cat.Close()
	for _, p := range []string{wh, file} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("not created: %v", err)
		}
	}
}
