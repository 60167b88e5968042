package daemon

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestWatchFilesConfig: file notifications are on by default, and turned
// off by the flag, the environment or the YAML file.
func TestWatchFilesConfig(t *testing.T) {
	yml := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(yml, []byte("follow:\n  watch_files: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args, env []string
		want      bool
	}{
		{nil, nil, true},
		{[]string{"--watch-files=false"}, nil, false},
		{nil, []string{"SLUICE_WATCH_FILES=false"}, false},
		{[]string{"--config", yml}, nil, false},
		{[]string{"--config", yml, "--watch-files"}, nil, true},
	} {
		c, err := LoadConfig(tc.args, tc.env, io.Discard)
		if err != nil || c.Follow.WatchFiles != tc.want {
			t.Errorf("%v %v: watch_files %v, %v; want %v", tc.args, tc.env, c.Follow.WatchFiles, err, tc.want)
		}
	}
}
