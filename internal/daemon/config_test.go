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
		{"pprof without a metrics address", []string{"--pprof"}, nil},
		{"bad pprof boolean in env", []string{"--metrics-listen", "127.0.0.1:0"}, []string{"SLUICE_PPROF=sometimes"}},
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

func TestFollowConfig(t *testing.T) {
	dir := t.TempDir()
	yamlFile := filepath.Join(dir, "flightd.yaml")
	if err := os.WriteFile(yamlFile, []byte("follow:\n  poll_interval: 2s\n  heartbeat_interval: 7s\nprogress:\n  dsn: postgres://u@h/db\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(nil, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Follow.PollInterval != time.Second || c.Follow.HeartbeatInterval != 5*time.Second || c.Follow.MaxBackoff != 30*time.Second {
		t.Fatalf("defaults: %+v", c.Follow)
	}
	if got := c.ProgressDSN(); got != filepath.Join("./warehouse", "sluice-consumers.db") {
		t.Fatalf("default DSN %s", got)
	}
	c, err = LoadConfig([]string{"--config", yamlFile, "--max-backoff", "9s"}, []string{"SLUICE_HEARTBEAT_INTERVAL=3s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Follow.PollInterval != 2*time.Second || c.Follow.HeartbeatInterval != 3*time.Second ||
		c.Follow.MaxBackoff != 9*time.Second || c.ProgressDSN() != "postgres://u@h/db" {
		t.Fatalf("yaml, env and flags: %+v %s", c.Follow, c.ProgressDSN())
	}
	c, err = LoadConfig([]string{"--warehouse", "s3://bucket/wh", "--catalog-type", "rest", "--catalog-uri", "http://x"}, nil, io.Discard)
	if err != nil || c.ProgressDSN() != "sluice-consumers.db" {
		t.Fatalf("remote warehouse: %v %s", err, c.ProgressDSN())
	}
	for _, args := range [][]string{{"--poll-interval", "0s"}, {"--heartbeat-interval", "-1s"}, {"--poll-interval", "10s", "--max-backoff", "1s"}} {
		if _, err := LoadConfig(args, nil, io.Discard); !errors.Is(err, ErrConfig) {
			t.Errorf("%v: %v", args, err)
		}
	}
	if _, err := LoadConfig(nil, []string{"SLUICE_POLL_INTERVAL=soon"}, io.Discard); !errors.Is(err, ErrConfig) {
		t.Errorf("bad env duration: %v", err)
	}
}
