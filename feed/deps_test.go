package feed_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestEngineNeedsNoFormat checks the format seam: the engine's own
// (non-test) dependencies name no table format package (format/...) and
// not iceberg-go. Formats reach the engine through package lake only.
func TestEngineNeedsNoFormat(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/sluicefeed/sluice/lake") {
		t.Fatalf("go list named %d packages, without package lake: the listing failed", len(deps))
	}
	for _, dep := range deps {
		if strings.HasPrefix(dep, "github.com/apache/iceberg-go") ||
			strings.HasPrefix(dep, "github.com/sluicefeed/sluice/format/") {
			t.Errorf("package feed depends on %s", dep)
		}
	}
}
