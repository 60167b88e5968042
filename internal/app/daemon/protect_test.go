package daemon

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
	"github.com/sluicefeed/sluice/registry"
)

// TestProtectConfig: --protect-consumers and --protect-max-ref-age (and
// their variables and YAML keys) set the protection; a max ref age that is
// not positive is refused, naming its flag.
func TestProtectConfig(t *testing.T) {
	cfg, err := LoadConfig([]string{"--protect-consumers", "--protect-max-ref-age", "36h"}, nil, io.Discard)
	if err != nil || !cfg.Protect.Consumers || cfg.Protect.MaxRefAge != 36*time.Hour ||
		cfg.Protect.RetentionCheck != DefaultRetentionCheck {
		t.Fatalf("flags: %+v %v", cfg.Protect, err)
	}
	cfg, err = LoadConfig(nil, []string{"SLUICE_PROTECT_CONSUMERS=true"}, io.Discard)
	if err != nil || !cfg.Protect.Consumers || cfg.Protect.MaxRefAge != DefaultProtectMaxRefAge {
		t.Fatalf("environment: %+v %v", cfg.Protect, err)
	}
	yaml := filepath.Join(t.TempDir(), "flightd.yaml")
	if err := os.WriteFile(yaml, []byte("protect:\n  consumers: true\n  retention_check: 5s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = LoadConfig([]string{"--config", yaml}, nil, io.Discard)
	if err != nil || !cfg.Protect.Consumers || cfg.Protect.RetentionCheck != 5*time.Second {
		t.Fatalf("YAML: %+v %v", cfg.Protect, err)
	}
	_, err = LoadConfig([]string{"--protect-max-ref-age", "0s"}, nil, io.Discard)
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "--protect-max-ref-age") {
		t.Fatalf("a zero max ref age: %v", err)
	}
}

// TestStartProtection: off, the log says Sluice writes nothing; on, it says
// how consumers are protected and returns the guard; on with a Paimon
// warehouse it cannot write, start fails with a configuration error naming
// the flag and the warehouse.
func TestStartProtection(t *testing.T) {
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	cfg := DefaultConfig()
	tables := registry.New(cat, registry.Options{})
	if p, err := startProtection(cfg, tables, log); p != nil || err != nil ||
		!strings.Contains(logs.String(), "consumer protection off: Sluice writes nothing") {
		t.Fatalf("off: %v %v\n%s", p, err, logs.String())
	}
	cfg.Protect.Consumers = true
	if p, err := startProtection(cfg, tables, log); p == nil || err != nil ||
		!strings.Contains(logs.String(), "consumer protection on") {
		t.Fatalf("on: %v %v\n%s", p, err, logs.String())
	}
	// A Paimon warehouse that cannot be written to (gone since start: as
	// root every existing folder is writable).
	wh := filepath.Join(t.TempDir(), "paimon")
	if err := os.Mkdir(wh, 0o755); err != nil {
		t.Fatal(err)
	}
	paimon := catalog.NewPaimonTables(ctx, catalog.PaimonConfig{Warehouse: wh}, nil)
	if err := os.Remove(wh); err != nil {
		t.Fatal(err)
	}
	_, err = startProtection(cfg, registry.New(cat, registry.Options{Paimon: paimon}), log)
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "--protect-consumers") ||
		!strings.Contains(err.Error(), wh) {
		t.Fatalf("a read-only Paimon warehouse: %v", err)
	}
}
