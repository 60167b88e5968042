package bench

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestABTiny compares two flightd configurations on a tiny reference
// window: each has a CPU figure per round for both reads, its memory, and
// a row of the table per read.
func TestABTiny(t *testing.T) {
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "github.com/sluicefeed/sluice/cmd/flightd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build flightd: %v\n%s", err, out)
	}
	cfg := Config{Work: filepath.Join(dir, "work"), Flightd: filepath.Join(dir, "flightd"), Rows: 4000,
		Log: testLog{t}}
	sets := [][]string{{"--buffer-pool-mib", "0"}, {"--buffer-pool-mib", "16"}}
	rep, err := RunAB(context.Background(), cfg, sets, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 {
		t.Fatalf("%d results, want 2", len(rep.Results))
	}
	for _, r := range rep.Results {
		if len(r.CPU) != 2 || r.PeakMiB <= 0 || r.FileMiB <= 0 {
			t.Errorf("result %+v: want both reads measured and the memory read", r)
		}
		for name, v := range r.CPU {
			if len(v) != 2 {
				t.Errorf("%v %s: %d rounds, want 2", r.Flags, name, len(v))
			}
		}
	}
	md := rep.Markdown()
	for _, s := range []string{"`--buffer-pool-mib 0` | reference window, flat", "`--buffer-pool-mib 16` | reference window, net_changes"} {
		if !strings.Contains(md, s) {
			t.Errorf("the table lacks %q:\n%s", s, md)
		}
	}
	if _, err := RunAB(context.Background(), cfg, nil, 1, 1); err == nil {
		t.Error("a comparison of no configurations ran")
	}
}
