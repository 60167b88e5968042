package daemon

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestDeltaFollowSymlinksConfig: delta.follow_symlinks is off by default,
// and set by the YAML key, SLUICE_DELTA_FOLLOW_SYMLINKS and
// --delta-follow-symlinks, each over the one before.
func TestDeltaFollowSymlinksConfig(t *testing.T) {
	dir := t.TempDir()
	yaml := filepath.Join(dir, "flightd.yaml")
	if err := os.WriteFile(yaml, []byte("delta:\n  follow_symlinks: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wh := []string{"--warehouse", dir}
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want bool
	}{
		{"default", wh, nil, false},
		{"yaml", append([]string{"--config", yaml}, wh...), nil, true},
		{"env", wh, []string{"SLUICE_DELTA_FOLLOW_SYMLINKS=true"}, true},
		{"flag over yaml", append([]string{"--config", yaml, "--delta-follow-symlinks=false"}, wh...), nil, false},
		{"flag", append([]string{"--delta-follow-symlinks"}, wh...), nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadConfig(tc.args, tc.env, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if c.Delta.FollowSymlinks != tc.want {
				t.Errorf("Delta.FollowSymlinks = %v, want %v", c.Delta.FollowSymlinks, tc.want)
			}
		})
	}
}

// TestCatalogFollowSymlinksConfig: catalog.follow_symlinks (the local
// warehouse's) is off by default, and set by the YAML key,
// SLUICE_CATALOG_FOLLOW_SYMLINKS and --catalog-follow-symlinks.
func TestCatalogFollowSymlinksConfig(t *testing.T) {
	dir := t.TempDir()
	yaml := filepath.Join(dir, "flightd.yaml")
	if err := os.WriteFile(yaml, []byte("catalog:\n  follow_symlinks: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wh := []string{"--warehouse", dir}
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want bool
	}{
		{"default", wh, nil, false},
		{"yaml", append([]string{"--config", yaml}, wh...), nil, true},
		{"env", wh, []string{"SLUICE_CATALOG_FOLLOW_SYMLINKS=true"}, true},
		{"flag", append([]string{"--catalog-follow-symlinks"}, wh...), nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadConfig(tc.args, tc.env, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if c.Catalog.FollowSymlinks != tc.want {
				t.Errorf("Catalog.FollowSymlinks = %v, want %v", c.Catalog.FollowSymlinks, tc.want)
			}
		})
	}
}
