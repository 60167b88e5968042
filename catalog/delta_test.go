package catalog

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicefeed/sluice/internal/lib/storage"
)

func TestDeltaConfigValidate(t *testing.T) {
	root := t.TempDir()
	table := func(dir string) string {
		if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	x := table(filepath.Join(root, "x"))
	other := table(filepath.Join(t.TempDir(), "other"))
	plain := t.TempDir()
	file := filepath.Join(plain, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  DeltaConfig
		want string // "" for valid
	}{
		{"root", DeltaConfig{Root: root}, ""},
		{"tables", DeltaConfig{Tables: map[string]string{"sales.orders": other, "sales.x": "file://" + x}}, ""},
		{"missing root", DeltaConfig{Root: filepath.Join(root, "nope")}, "--delta-root"},
		{"root is a file", DeltaConfig{Root: file}, "is not a folder"},
		{"no _delta_log", DeltaConfig{Tables: map[string]string{"sales.orders": plain}}, "holds no _delta_log"},
		{"bad name", DeltaConfig{Tables: map[string]string{"orders": other}}, "delta.tables"},
		{"object store", DeltaConfig{Tables: map[string]string{"sales.orders": "s3://b/t"}}, ""},
		{"object store without a bucket", DeltaConfig{Root: "s3:///t"}, "no bucket"},
		{"the root's name", DeltaConfig{Root: root, Tables: map[string]string{"delta.x": other}}, "same name"},
		{"another name", DeltaConfig{Root: root, Tables: map[string]string{"delta.y": other}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (!errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v; want ErrInvalidConfig saying %q", err, tc.want)
			}
		})
	}
}

// deltaFolder makes dir a folder holding an empty _delta_log folder.
func deltaFolder(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDeltaTablesSymlinks: a sub-folder of a local Delta root that is a
// symbolic link out of the root is not served, and is reported as
// skipped; a file of a served table that is a link out of the root is
// not read (storage.ErrOutsideRoot, naming the setting). With
// FollowSymlinks both are, as before. A link that stays inside the root
// is followed either way.
func TestDeltaTablesSymlinks(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	elsewhere := deltaFolder(t, filepath.Join(base, "elsewhere", "table"))
	tbl := deltaFolder(t, filepath.Join(root, "t"))
	if err := os.WriteFile(filepath.Join(elsewhere, "secret.parquet"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	for target, link := range map[string]string{
		elsewhere: filepath.Join(root, "symtab"),
		filepath.Join(elsewhere, "secret.parquet"): filepath.Join(tbl, "part-0.parquet"),
		tbl: filepath.Join(root, "alias"),
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	ctx := t.Context()

	d := NewDeltaTables(ctx, DeltaConfig{Root: root}, nil)
	names, err := d.ListTables(ctx)
	if err != nil || strings.Join(names, ",") != "delta.alias,delta.t" {
		t.Errorf("ListTables: %v, %v; want delta.alias and delta.t, not the link out of the root", names, err)
	}
	if d.Has("delta.symtab") {
		t.Error("Has(delta.symtab): the folder links out of the root")
	}
	sv, err := d.Survey(ctx)
	if err != nil || len(sv.Skipped) != 1 || sv.Skipped[0].Name != "delta.symtab" ||
		!strings.Contains(sv.Skipped[0].Reason, "delta.follow_symlinks") {
		t.Errorf("Survey: %+v, %v; want delta.symtab skipped, naming delta.follow_symlinks", sv, err)
	}
	loc, err := d.Locate("delta.t")
	if err != nil {
		t.Fatal(err)
	}
	_, err = fs.ReadFile(loc.FS, "part-0.parquet")
	if !errors.Is(err, storage.ErrOutsideRoot) || !strings.Contains(err.Error(), "delta.follow_symlinks") {
		t.Errorf("read a data file linked out of the root: %v; want storage.ErrOutsideRoot naming delta.follow_symlinks", err)
	}

	// A table named in delta.tables: its own folder is its root.
	d = NewDeltaTables(ctx, DeltaConfig{Tables: map[string]string{"s.t": tbl}}, nil)
	if loc, err = d.Locate("s.t"); err != nil {
		t.Fatal(err)
	}
	if _, err = fs.ReadFile(loc.FS, "part-0.parquet"); !errors.Is(err, storage.ErrOutsideRoot) {
		t.Errorf("read a data file of a named table linked out of it: %v; want storage.ErrOutsideRoot", err)
	}

	d = NewDeltaTables(ctx, DeltaConfig{Root: root, FollowSymlinks: true}, nil)
	names, err = d.ListTables(ctx)
	if err != nil || strings.Join(names, ",") != "delta.alias,delta.symtab,delta.t" {
		t.Errorf("ListTables following links: %v, %v; want every table", names, err)
	}
	if loc, err = d.Locate("delta.t"); err != nil {
		t.Fatal(err)
	}
	if b, err := fs.ReadFile(loc.FS, "part-0.parquet"); err != nil || string(b) != "secret" {
		t.Errorf("read a linked data file following links: %q, %v", b, err)
	}
}

// TestDeltaRootIsTable: a Delta root that is itself a table's folder (it
// holds _delta_log) serves that table as delta.<folder name>, rather than
// nothing.
func TestDeltaRootIsTable(t *testing.T) {
	dir := deltaFolder(t, filepath.Join(t.TempDir(), "orders"))
	deltaFolder(t, filepath.Join(dir, "p=1")) // not a table of its own
	ctx := t.Context()
	d := NewDeltaTables(ctx, DeltaConfig{Root: dir}, nil)
	if err := d.Check(ctx); err != nil {
		t.Fatal(err)
	}
	names, err := d.ListTables(ctx)
	if err != nil || strings.Join(names, ",") != "delta.orders" {
		t.Fatalf("ListTables: %v, %v; want delta.orders", names, err)
	}
	if !d.Has("delta.orders") || d.Has("delta.p=1") {
		t.Errorf("Has: delta.orders %v, delta.p=1 %v", d.Has("delta.orders"), d.Has("delta.p=1"))
	}
	loc, err := d.Locate("delta.orders")
	if err != nil || loc.Dir != dir {
		t.Fatalf("Locate: %+v, %v; want the root %s", loc, err, dir)
	}
	if got, ok := d.LocalDir("delta.orders"); !ok || got != dir {
		t.Errorf("LocalDir: %s, %v; want %s", got, ok, dir)
	}
	sv, err := d.Survey(ctx)
	if err != nil || sv.RootTable != "delta.orders" || len(sv.Tables) != 1 {
		t.Errorf("Survey: %+v, %v; want the root's own table delta.orders", sv, err)
	}
}
