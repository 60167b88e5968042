package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPaimonConsumerFiles: SetConsumer writes Paimon's consumer file
// ({"nextSnapshot": N} at consumer/consumer-sluice-<id>) into the table's
// folder, replaces it on the next call and DropConsumer removes it. When
// SLUICE_PAIMON_PYTHON names a Python with pypaimon (.tmp/venv-paimon),
// Paimon's own ConsumerManager reads the file back: the consumer and the
// minimum next snapshot its expiry keeps.
func TestPaimonConsumerFiles(t *testing.T) {
	ctx := context.Background()
	wh := t.TempDir()
	if err := os.CopyFS(filepath.Join(wh, "py.db", "append_log"),
		os.DirFS(filepath.Join(paimonWarehouse, "py.db", "append_log"))); err != nil {
		t.Fatal(err)
	}
	p := NewPaimonTables(ctx, PaimonConfig{Warehouse: wh}, nil)
	if err := p.CheckWritable(); err != nil {
		t.Fatal(err)
	}
	const name, consumer = "paimon.py.append_log", "svc/a:1"
	id := PaimonConsumerID(consumer)
	if id != "sluice-svc%2Fa%3A1" {
		t.Fatalf("PaimonConsumerID(%q) = %q", consumer, id)
	}
	file := filepath.Join(wh, "py.db", "append_log", "consumer", "consumer-"+id)
	for _, next := range []int64{2, 3} {
		if err := p.SetConsumer(ctx, name, "", consumer, next); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(b, &got); err != nil || len(got) != 1 || got["nextSnapshot"] != float64(next) {
			t.Fatalf("consumer file %s: %v, want {\"nextSnapshot\": %d}", b, err, next)
		}
	}
	if py := os.Getenv("SLUICE_PAIMON_PYTHON"); py != "" {
		script := `import sys
from pypaimon import CatalogFactory
cat = CatalogFactory.create({"warehouse": sys.argv[1]})
cm = cat.get_table("py.append_log").consumer_manager()
print(cm.consumer(sys.argv[2]).next_snapshot, cm.min_next_snapshot())`
		out, err := exec.CommandContext(ctx, py, "-c", script, wh, id).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "3 3" {
			t.Fatalf("pypaimon's ConsumerManager: %v: %s, want next snapshot 3 and minimum 3", err, out)
		}
	} else {
		t.Log("pypaimon's reading of the consumer file not checked: set SLUICE_PAIMON_PYTHON (make paimon-venv)")
	}
	for range 2 {
		if err := p.DropConsumer(ctx, name, "", consumer); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("the consumer file after DropConsumer: %v", err)
	}
	if err := p.SetConsumer(ctx, "paimon.py.missing", "", consumer, 1); err == nil {
		t.Fatal("a consumer file for a table that does not exist: no error")
	}
	// A consumer of a branch has its file in the branch's consumer folder,
	// where Paimon's expiry of the branch reads it.
	onBranch := filepath.Join(wh, "py.db", "append_log", "branch", "branch-b1", "consumer", "consumer-"+id)
	if err := p.SetConsumer(ctx, name, "b1", consumer, 4); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(onBranch); err != nil || string(b) != `{"nextSnapshot":4}` {
		t.Fatalf("the branch's consumer file: %s %v", b, err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("a branch's consumer wrote the main branch's file: %v", err)
	}
	if err := p.DropConsumer(ctx, name, "b1", consumer); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(onBranch); !os.IsNotExist(err) {
		t.Fatalf("the branch's consumer file after DropConsumer: %v", err)
	}
	for _, bad := range []string{"../x", "a/b", ".."} {
		if err := p.SetConsumer(ctx, name, bad, consumer, 1); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("branch %q: %v, want ErrInvalidConfig", bad, err)
		}
	}
}
