package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
