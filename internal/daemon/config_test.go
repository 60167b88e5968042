package daemon

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	yamlFile := filepath.Join(dir, "flightd.yaml")
	if err := os.WriteFile(yamlFile, []byte(`
listen: 127.0.0.1:9000
catalog:
  type: sql
  warehouse: /data/lake
  name: lake
log_level: debug
engine:
  read_concurrency: 4
`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		env   []string
		check func(t *testing.T, c Config)
	}{
		{"defaults", nil, nil, func(t *testing.T, c Config) {
			if c.Listen != "127.0.0.1:8815" || c.Catalog.Type != "sql" || c.Catalog.Warehouse != "./warehouse" ||
				c.Catalog.Name != "sluice" || c.LogLevel != "info" || c.ShutdownTimeout != 10*time.Second || c.Demo {
				t.Fatalf("defaults: %+v", c)
			}
		}},
		{"yaml file", []string{"--config", yamlFile}, nil, func(t *testing.T, c Config) {
			if c.Listen != "127.0.0.1:9000" || c.Catalog.Warehouse != "/data/lake" || c.Catalog.Name != "lake" ||
				c.LogLevel != "debug" || c.Engine.ReadConcurrency != 4 {
				t.Fatalf("from yaml: %+v", c)
			}
		}},
		{"environment over yaml", []string{"--config", yamlFile},
			[]string{"SLUICE_LISTEN=127.0.0.1:9100", "SLUICE_DEMO=true", "SLUICE_CATALOG_URI=file:///x/c.db", "OTHER=1"},
			func(t *testing.T, c Config) {
				if c.Listen != "127.0.0.1:9100" || !c.Demo || c.Catalog.URI != "file:///x/c.db" || c.Catalog.Name != "lake" {
					t.Fatalf("env over yaml: %+v", c)
				}
			}},
		{"flags over environment", []string{"--listen", "127.0.0.1:0", "--catalog-type", "hadoop", "--warehouse", "/w"},
			[]string{"SLUICE_LISTEN=127.0.0.1:9100", "SLUICE_CATALOG_TYPE=rest"},
			func(t *testing.T, c Config) {
				if c.Listen != "127.0.0.1:0" || c.Catalog.Type != "hadoop" || c.Catalog.Warehouse != "/w" {
					t.Fatalf("flags over env: %+v", c)
				}
			}},
		{"config file from the environment", nil, []string{"SLUICE_CONFIG=" + yamlFile}, func(t *testing.T, c Config) {
			if c.Catalog.Name != "lake" {
				t.Fatalf("SLUICE_CONFIG ignored: %+v", c)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadConfig(tt.args, tt.env, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestLoadConfigErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("listen: x\nunknown_key: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		env  []string
	}{
		{"unknown yaml key", []string{"--config", bad}, nil},
		{"missing config file", []string{"--config", filepath.Join(dir, "nope.yaml")}, nil},
		{"bad listen address", []string{"--listen", "nowhere"}, nil},
		{"unknown catalog type", []string{"--catalog-type", "glue"}, nil},
		{"rest without uri", []string{"--catalog-type", "rest"}, nil},
		{"bad log level", []string{"--log-level", "loud"}, nil},
		{"bad boolean in env", nil, []string{"SLUICE_DEMO=perhaps"}},
		{"bad integer in env", nil, []string{"SLUICE_READ_CONCURRENCY=many"}},
		{"batch too large", []string{"--max-batch-bytes", "100000000"}, nil},
		{"stray argument", []string{"serve"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := LoadConfig(tt.args, tt.env, io.Discard); err == nil {
				t.Fatal("no error")
			}
		})
	}
	if _, err := LoadConfig([]string{"--help"}, nil, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
}
