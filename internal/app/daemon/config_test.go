package daemon

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/server"
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

// TestDurationWithoutUnit: a duration written as a bare number, from a
// flag, the environment or the YAML file, is refused with the unit it
// lacks and the setting's name.
func TestDurationWithoutUnit(t *testing.T) {
	dir := t.TempDir()
	files := 0
	file := func(body string) string {
		files++
		path := filepath.Join(dir, fmt.Sprintf("%d.yaml", files))
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tt := range []struct {
		name string
		args []string
		env  []string
		want []string
	}{
		{"flag", []string{"--poll-interval", "5"}, nil, []string{"-poll-interval", "5 has no unit: write 5s"}},
		{"flag, fraction", []string{"--shutdown-timeout", "2.5"}, nil, []string{"-shutdown-timeout", "write 2.5s"}},
		{"flag, garbage", []string{"--stall-timeout", "soon"}, nil, []string{"-stall-timeout", `"soon" is not a duration`}},
		{"env", nil, []string{"SLUICE_KEEPALIVE_TIME=120"}, []string{"SLUICE_KEEPALIVE_TIME", "write 120s"}},
		{"yaml", []string{"--config", file("follow:\n  poll_interval: 5\n")}, nil,
			[]string{"line 2", "follow.poll_interval", "write 5s"}},
		{"yaml, auth", []string{"--config", file("auth:\n  token_ttl: 3600\n")}, nil,
			[]string{"auth.token_ttl", "write 3600s"}},
		{"yaml, zero", []string{"--config", file("limits:\n  stall_timeout: 0\n")}, nil,
			[]string{"limits.stall_timeout", "write 0s"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadConfig(tt.args, tt.env, io.Discard)
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("LoadConfig = %v, want ErrConfig", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
	c, err := LoadConfig([]string{"--config", file("limits:\n  stall_timeout: 0s\nfollow:\n  poll_interval: 250ms\n")},
		nil, io.Discard)
	if err != nil || c.Limits.StallTimeout != 0 || c.Follow.PollInterval != 250*time.Millisecond {
		t.Fatalf("durations with units: %v %+v", err, c)
	}
}

// TestConfigErrorsReadOnce: every configuration error says "invalid
// configuration" once, names its setting, and never says "flightd:" (which
// main adds); a flag error prints nothing before it is returned.
func TestConfigErrorsReadOnce(t *testing.T) {
	for _, tt := range []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"--auth-mode", "token"}, nil, "tokens file"},
		{[]string{"--catalog-type", "glue"}, nil, `"glue"`},
		{[]string{"--listen", "nowhere"}, nil, "--listen"},
		{[]string{"--max-streams", "-1"}, nil, "--max-streams"},
		{[]string{"--max-batch-rows", "-1"}, nil, "--max-batch-rows"},
		{[]string{"--heartbeat-interval", "-1s"}, nil, "--heartbeat-interval"},
		{[]string{"--log-level", "loud"}, nil, "--log-level"},
		{[]string{"--no-such-flag"}, nil, "no-such-flag"},
		{nil, []string{"SLUICE_CREATE_CATALOG=maybe"}, "SLUICE_CREATE_CATALOG"},
	} {
		var out strings.Builder
		_, err := LoadConfig(tt.args, tt.env, &out)
		if !errors.Is(err, ErrConfig) {
			t.Errorf("%v %v: %v, want ErrConfig", tt.args, tt.env, err)
			continue
		}
		msg := err.Error()
		if strings.Count(msg, "invalid configuration") > 1 || strings.Contains(msg, "flightd:") ||
			!strings.Contains(msg, tt.want) {
			t.Errorf("%v %v: %q: want %q, once prefixed", tt.args, tt.env, msg, tt.want)
		}
		if out.Len() > 0 {
			t.Errorf("%v: printed %q", tt.args, out.String())
		}
	}
	var help strings.Builder
	if _, err := LoadConfig([]string{"--help"}, nil, &help); !errors.Is(err, flag.ErrHelp) ||
		!strings.Contains(help.String(), "-poll-interval duration") || !strings.Contains(help.String(), "-create-catalog") {
		t.Fatalf("--help: %v\n%s", err, help.String())
	}
}

// TestPublicMetrics: metrics on an address that is not loopback need
// AllowPublicMetrics, whatever sets them, and are then warned of.
func TestPublicMetrics(t *testing.T) {
	for _, tt := range []struct {
		args []string
		env  []string
		ok   bool
		want string
	}{
		{[]string{"--metrics-listen", "127.0.0.1:9090"}, nil, true, ""},
		{[]string{"--metrics-listen", "localhost:9090", "--pprof"}, nil, true, ""},
		{[]string{"--metrics-listen", "[::1]:9090"}, nil, true, ""},
		{[]string{"--metrics-listen", "0.0.0.0:9090"}, nil, false, "table names"},
		{[]string{"--metrics-listen", ":9090", "--pprof"}, nil, false, "heap profiles"},
		{nil, []string{"SLUICE_METRICS_LISTEN=10.0.0.5:9090"}, false, "--allow-public-metrics"},
		{[]string{"--metrics-listen", "0.0.0.0:9090", "--allow-public-metrics"}, nil, true, "table names"},
		{[]string{"--metrics-listen", ":9090", "--pprof"}, []string{"SLUICE_ALLOW_PUBLIC_METRICS=true"}, true, "heap profiles"},
	} {
		c, err := LoadConfig(tt.args, tt.env, io.Discard)
		if tt.ok != (err == nil) {
			t.Errorf("%v %v: %v", tt.args, tt.env, err)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.want) ||
				!strings.Contains(err.Error(), "--allow-public-metrics") {
				t.Errorf("%v %v: %v, want ErrConfig saying %q", tt.args, tt.env, err, tt.want)
			}
			continue
		}
		if w := c.publicMetrics(); (w != "") != (tt.want != "") || !strings.Contains(w, tt.want) {
			t.Errorf("%v %v: warning %q, want %q", tt.args, tt.env, w, tt.want)
		}
	}
}

// TestNewSettings: --create-catalog and --allow-public-metrics from each
// source.
func TestNewSettings(t *testing.T) {
	yamlFile := filepath.Join(t.TempDir(), "f.yaml")
	if err := os.WriteFile(yamlFile, []byte("catalog:\n  create: true\nallow_public_metrics: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, src := range []struct {
		args []string
		env  []string
	}{
		{[]string{"--create-catalog", "--allow-public-metrics"}, nil},
		{nil, []string{"SLUICE_CREATE_CATALOG=true", "SLUICE_ALLOW_PUBLIC_METRICS=1"}},
		{[]string{"--config", yamlFile}, nil},
	} {
		c, err := LoadConfig(src.args, src.env, io.Discard)
		if err != nil || !c.Catalog.Create || !c.AllowPublicMetrics {
			t.Errorf("%v %v: %v %+v", src.args, src.env, err, c)
		}
	}
	c, err := LoadConfig(nil, nil, io.Discard)
	if err != nil || c.Catalog.Create || c.AllowPublicMetrics {
		t.Fatalf("defaults: %v %+v", err, c)
	}
}

// TestMemoryBudgetSettings: the engine's memory budget and spill directory
// come from flags, the environment and YAML, with the engine's default.
func TestMemoryBudgetSettings(t *testing.T) {
	c, err := LoadConfig(nil, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Engine.MemoryBudgetMiB != feed.DefaultMemoryBudget>>20 || c.Engine.SpillDir != "" {
		t.Fatalf("defaults: budget %d MiB, spill dir %q", c.Engine.MemoryBudgetMiB, c.Engine.SpillDir)
	}
	yamlFile := filepath.Join(t.TempDir(), "f.yaml")
	if err := os.WriteFile(yamlFile, []byte("engine:\n  memory_budget_mib: 8\n  spill_dir: /y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args, env []string
		mib       int64
		dir       string
	}{
		{[]string{"--config", yamlFile}, nil, 8, "/y"},
		{[]string{"--config", yamlFile}, []string{"SLUICE_MEMORY_BUDGET_MIB=16", "SLUICE_SPILL_DIR=/e"}, 16, "/e"},
		{[]string{"--memory-budget-mib", "24", "--spill-dir", "/f"}, []string{"SLUICE_MEMORY_BUDGET_MIB=16"}, 24, "/f"},
	} {
		c, err := LoadConfig(tc.args, tc.env, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if c.Engine.MemoryBudgetMiB != tc.mib || c.Engine.SpillDir != tc.dir {
			t.Fatalf("%v %v: budget %d MiB, spill dir %q; want %d, %q", tc.args, tc.env, c.Engine.MemoryBudgetMiB,
				c.Engine.SpillDir, tc.mib, tc.dir)
		}
	}
	if _, err := LoadConfig([]string{"--memory-budget-mib", "-1"}, nil, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "--memory-budget-mib") {
		t.Fatalf("a negative budget: err = %v", err)
	}
}

// The buffer pool's bound comes from the default, YAML, the environment
// and flags, in that order; a negative one is refused, naming the flag.
func TestBufferPoolSetting(t *testing.T) {
	yamlFile := filepath.Join(t.TempDir(), "f.yaml")
	if err := os.WriteFile(yamlFile, []byte("engine:\n  buffer_pool_mib: 8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args, env []string
		mib       int64
	}{
		{nil, nil, DefaultBufferPoolMiB},
		{[]string{"--config", yamlFile}, nil, 8},
		{[]string{"--config", yamlFile}, []string{"SLUICE_BUFFER_POOL_MIB=0"}, 0},
		{[]string{"--buffer-pool-mib", "40"}, []string{"SLUICE_BUFFER_POOL_MIB=0"}, 40},
	} {
		c, err := LoadConfig(tc.args, tc.env, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if c.Engine.BufferPoolMiB != tc.mib {
			t.Fatalf("%v %v: pool %d MiB; want %d", tc.args, tc.env, c.Engine.BufferPoolMiB, tc.mib)
		}
	}
	if _, err := LoadConfig([]string{"--buffer-pool-mib", "-1"}, nil, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "--buffer-pool-mib") {
		t.Fatalf("a negative pool: err = %v", err)
	}
}

// The decode cache's bound and TTL come from the defaults, YAML, the
// environment and flags, in that order; a negative bound or a TTL that is
// not positive is refused, naming the flag.
func TestDecodeCacheConfig(t *testing.T) {
	c, err := LoadConfig(nil, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Engine.DecodeCacheBytes != server.DefaultDecodeCacheBytes || c.Engine.DecodeCacheTTL != server.DefaultDecodeCacheTTL {
		t.Fatalf("defaults: %d bytes, TTL %v", c.Engine.DecodeCacheBytes, c.Engine.DecodeCacheTTL)
	}
	yamlFile := filepath.Join(t.TempDir(), "f.yaml")
	if err := os.WriteFile(yamlFile, []byte("engine:\n  decode_cache_bytes: 1000\n  decode_cache_ttl: 5s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args, env []string
		bytes     int64
		ttl       time.Duration
	}{
		{[]string{"--config", yamlFile}, nil, 1000, 5 * time.Second},
		{[]string{"--config", yamlFile}, []string{"SLUICE_DECODE_CACHE_BYTES=0", "SLUICE_DECODE_CACHE_TTL=1m"}, 0, time.Minute},
		{[]string{"--decode-cache-bytes", "2000", "--decode-cache-ttl", "2s"}, []string{"SLUICE_DECODE_CACHE_BYTES=0"}, 2000,
			2 * time.Second},
	} {
		c, err := LoadConfig(tc.args, tc.env, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if c.Engine.DecodeCacheBytes != tc.bytes || c.Engine.DecodeCacheTTL != tc.ttl {
			t.Fatalf("%v %v: %d bytes, TTL %v; want %d, %v", tc.args, tc.env, c.Engine.DecodeCacheBytes,
				c.Engine.DecodeCacheTTL, tc.bytes, tc.ttl)
		}
	}
	for _, args := range [][]string{{"--decode-cache-bytes", "-1"}, {"--decode-cache-ttl", "0s"}} {
		if _, err := LoadConfig(args, nil, io.Discard); err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Fatalf("%v: err = %v", args, err)
		}
	}
}
