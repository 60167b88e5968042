package catalog_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/internal/lib/storage"
)

// TestLocalWarehouseSymlinks: the files of a table in a local warehouse,
// read through Confine (as flightd reads them), are read inside the
// warehouse: one that a symbolic link leads out of it
// fails with storage.ErrOutsideRoot naming catalog.follow_symlinks, as a
// Delta root's do, unless FollowSymlinks. Files inside it read as before.
func TestLocalWarehouseSymlinks(t *testing.T) {
	ctx := context.Background()
	wh := filepath.Join(t.TempDir(), "wh")
	cat, err := catalog.Open(ctx, catalog.Config{Warehouse: wh, Create: true})
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
	outside := filepath.Join(t.TempDir(), "secret.parquet")
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(wh, "ns", "t", "data", "linked.parquet")
	if err := os.MkdirAll(filepath.Dir(linked), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, linked); err != nil {
		t.Fatal(err)
	}
	read := func(cat *catalog.Catalog, name string) (string, error) {
		tbl, err := cat.LoadTable(ctx, "ns.t")
		if err != nil {
			t.Fatal(err)
		}
		fsys, err := cat.Confine(tbl).FS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		f, err := fsys.Open(name)
		if err != nil {
			return "", err
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		return string(b), err
	}
	for _, name := range []string{linked, "file://" + linked} {
		_, err := read(cat, name)
		if !errors.Is(err, storage.ErrOutsideRoot) || !strings.Contains(err.Error(), "catalog.follow_symlinks") {
			t.Errorf("read %s: %v; want storage.ErrOutsideRoot naming catalog.follow_symlinks", name, err)
		}
	}
	tbl, err := cat.LoadTable(ctx, "ns.t")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := read(cat, tbl.MetadataLocation()); err != nil || !strings.Contains(b, "format-version") {
		t.Errorf("read the metadata file in the warehouse: %.40q, %v", b, err)
	}
	if b, err := read(cat, outside); err != nil || b != "secret" {
		t.Errorf("read a file outside the warehouse by its own path: %q, %v", b, err)
	}

	follow, err := catalog.Open(ctx, catalog.Config{Warehouse: wh, FollowSymlinks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer follow.Close()
	if b, err := read(follow, linked); err != nil || b != "secret" {
		t.Errorf("read %s following links: %q, %v", linked, b, err)
	}
}
