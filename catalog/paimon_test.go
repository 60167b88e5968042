package catalog

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// paimonWarehouse is the warehouse of the writer-made Paimon fixtures.
const paimonWarehouse = "../testdata/paimon/warehouse"

func TestPaimonTables(t *testing.T) {
	ctx := context.Background()
	cfg := PaimonConfig{Warehouse: paimonWarehouse}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	p := NewPaimonTables(ctx, cfg, nil)
	if err := p.Check(ctx); err != nil {
		t.Fatal(err)
	}
	names, err := p.ListTables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"paimon.py.append_log", "paimon.java.pk_dv", "paimon.java.pk_expire"} {
		if !slices.Contains(names, want) {
			t.Errorf("ListTables = %v, want %s among them", names, want)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("ListTables = %v, not sorted", names)
	}
	for _, n := range names {
		if !p.Has(n) {
			t.Errorf("Has(%s) = false for a listed table", n)
		}
	}
	fsys, err := p.Locate("paimon.py.append_log")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := fs.Stat(fsys, "schema/schema-0"); err != nil || st.IsDir() {
		t.Errorf("the located table has no schema/schema-0: %v", err)
	}
	for _, bad := range []string{"paimon.py", "paimon.py.nope", "delta.py.append_log", "paimon.py.a.b",
		"paimon...", "paimon.py./etc", "paimon.py.."} {
		if p.Has(bad) {
			t.Errorf("Has(%q) = true", bad)
		}
		if _, err := p.Locate(bad); !errors.Is(err, ErrTableNotFound) {
			t.Errorf("Locate(%q): %v, want ErrTableNotFound", bad, err)
		}
	}
}

func TestPaimonConfigValidate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cfg PaimonConfig
		ok  bool
	}{
		{PaimonConfig{}, true},
		{PaimonConfig{Warehouse: t.TempDir()}, true},
		{PaimonConfig{Warehouse: "s3://bucket/wh"}, true},
		{PaimonConfig{Warehouse: "s3:///wh"}, false},
		{PaimonConfig{Warehouse: file}, false},
		{PaimonConfig{Warehouse: filepath.Join(t.TempDir(), "missing")}, false},
	} {
		err := c.cfg.Validate()
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInvalidConfig)) {
			t.Errorf("Validate(%+v) = %v, want ok=%v", c.cfg, err, c.ok)
		}
	}
}
