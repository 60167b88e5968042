package daemon

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestPaimonConfig: paimon.warehouse and paimon.follow_symlinks are set by
// the YAML keys, SLUICE_PAIMON_WAREHOUSE / SLUICE_PAIMON_FOLLOW_SYMLINKS
// and --paimon-warehouse / --paimon-follow-symlinks, each over the one
// before; Validate refuses a warehouse that is not a folder.
func TestPaimonConfig(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	for _, d := range []string{a, b, c} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	yaml := filepath.Join(dir, "flightd.yaml")
	if err := os.WriteFile(yaml, []byte("paimon:\n  warehouse: "+a+"\n  follow_symlinks: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wh := []string{"--warehouse", dir}
	for _, tc := range []struct {
		name      string
		args, env []string
		warehouse string
		follow    bool
	}{
		{"default", wh, nil, "", false},
		{"yaml", append([]string{"--config", yaml}, wh...), nil, a, true},
		{"env over yaml", append([]string{"--config", yaml}, wh...),
			[]string{"SLUICE_PAIMON_WAREHOUSE=" + b, "SLUICE_PAIMON_FOLLOW_SYMLINKS=false"}, b, false},
		{"flag over env", append([]string{"--config", yaml, "--paimon-warehouse", c, "--paimon-follow-symlinks"}, wh...),
			[]string{"SLUICE_PAIMON_WAREHOUSE=" + b, "SLUICE_PAIMON_FOLLOW_SYMLINKS=false"}, c, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := LoadConfig(tc.args, tc.env, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Paimon.Warehouse != tc.warehouse || cfg.Paimon.FollowSymlinks != tc.follow {
				t.Errorf("Paimon = %+v, want warehouse %q, follow_symlinks %v", cfg.Paimon, tc.warehouse, tc.follow)
			}
		})
	}
	cfg, err := LoadConfig(append([]string{"--paimon-warehouse", yaml}, wh...), nil, io.Discard)
	if err == nil {
		err = cfg.Validate()
	}
	if !errors.Is(err, ErrConfig) {
		t.Errorf("a warehouse that is a file: %v, want ErrConfig", err)
	}
}
