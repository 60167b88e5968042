// Package daemon is flightd: it loads the configuration, opens the catalog,
// and serves the Flight service and the ControlService until it is told to
// stop.
package daemon

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/server"
)

// Defaults of Config.
const (
	DefaultListen          = "127.0.0.1:8815"
	DefaultShutdownTimeout = 10 * time.Second
	DefaultLogLevel        = "info"
	DefaultLogFormat       = "text"
	DefaultGCPercent       = 300
	DefaultMemoryLimitMiB  = 192
	// DefaultProgressFile is the SQLite file of consumer progress, inside a
	// local warehouse (in the working directory for a remote one).
	DefaultProgressFile = "sluice-consumers.db"
)

// ErrConfig reports an invalid configuration.
var ErrConfig = errors.New("flightd: invalid configuration")

// Config is flightd's configuration. It is read, each source overriding the
// one before, from the defaults, a YAML file (--config or SLUICE_CONFIG),
// SLUICE_* environment variables and command-line flags. The YAML keys are
// the yaml tags below; the environment variable of a setting is its flag's
// name in upper case with dashes as underscores, prefixed with SLUICE_
// (--catalog-uri is SLUICE_CATALOG_URI).
type Config struct {
	// Listen is the address to serve on (--listen). Default 127.0.0.1:8815;
	// port 0 picks a free port (see ReadyFile).
	Listen string `yaml:"listen"`
	// Catalog selects the catalog (--catalog-type, --catalog-uri,
	// --catalog-name, --warehouse).
	Catalog catalog.Config `yaml:"catalog"`
	// Demo creates the demo table demo.orders when it is absent (--demo)
	// and prints how to read it.
	Demo bool `yaml:"demo"`
	// ReadyFile, when set, receives the address being served once the
	// server accepts connections (--ready-file): how scripts and tests wait
	// for flightd and learn its port.
	ReadyFile string `yaml:"ready_file"`
	// LogLevel is debug, info, warn or error (--log-level). Default info.
	LogLevel string `yaml:"log_level"`
	// LogFormat is text or json (--log-format). Default text.
	LogFormat string `yaml:"log_format"`
	// ShutdownTimeout is how long a stop waits for running reads to finish
	// (--shutdown-timeout). Default 10s.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// Engine tunes the change engine.
	Engine EngineConfig `yaml:"engine"`
	// GCPercent is the Go garbage collector's target (--gc-percent, like
	// GOGC, which wins when set). Default 300: decoding Parquet allocates a
	// lot of short-lived memory, and a lazier collector streams faster.
	GCPercent int `yaml:"gc_percent"`
	// MemoryLimitMiB is the Go runtime's soft memory limit in MiB
	// (--memory-limit-mib, like GOMEMLIMIT, which wins when set): the
	// collector works harder as the heap nears it. Default 192; 0: none.
	MemoryLimitMiB int64 `yaml:"memory_limit_mib"`
	// Follow tunes follow streams and WatchCommits.
	Follow FollowConfig `yaml:"follow"`
	// Progress configures the store of durable consumer progress.
	Progress ProgressConfig `yaml:"progress"`
}

// FollowConfig tunes how follow streams watch tables.
type FollowConfig struct {
	// PollInterval is how often a follow stream reads a table's metadata
	// for new commits (--poll-interval). Default 1s.
	PollInterval time.Duration `yaml:"poll_interval"`
	// HeartbeatInterval is how long an idle follow stream waits before it
	// sends a 0-row heartbeat batch (--heartbeat-interval). Default 5s.
	HeartbeatInterval time.Duration `yaml:"heartbeat_interval"`
	// MaxBackoff bounds the wait between polls while the catalog fails; the
	// wait doubles from PollInterval (--max-backoff). Default 30s.
	MaxBackoff time.Duration `yaml:"max_backoff"`
}

// ProgressConfig selects the consumer progress store.
type ProgressConfig struct {
	// DSN is the database (--progress-dsn): a SQLite file (a path,
	// file:///path or sqlite:///path) or postgres://user:pw@host/db.
	// Default: <warehouse>/sluice-consumers.db for a local warehouse,
	// ./sluice-consumers.db for a remote one.
	DSN string `yaml:"dsn"`
}

// ProgressDSN returns the progress store's DSN, the default applied.
func (c Config) ProgressDSN() string {
	if c.Progress.DSN != "" {
		return c.Progress.DSN
	}
	w := c.Catalog.Warehouse
	switch {
	case strings.HasPrefix(w, "file://"):
		return filepath.Join(strings.TrimPrefix(w, "file://"), DefaultProgressFile)
	case strings.Contains(w, "://"):
		return DefaultProgressFile
	default:
		return filepath.Join(w, DefaultProgressFile)
	}
}

// EngineConfig tunes the change engine; zero values take the engine's
// defaults.
type EngineConfig struct {
	// ReadConcurrency is how many data files are decoded ahead of a client
	// (--read-concurrency). Default 2.
	ReadConcurrency int `yaml:"read_concurrency"`
	// MaxBatchRows bounds the rows of a batch (--max-batch-rows). Default
	// 65536.
	MaxBatchRows int `yaml:"max_batch_rows"`
	// MaxBatchBytes is the target size of a batch (--max-batch-bytes).
	// Default 2 MiB, at most 3 MiB.
	MaxBatchBytes int64 `yaml:"max_batch_bytes"`
}

// DefaultConfig returns the configuration with every default set.
func DefaultConfig() Config {
	return Config{
		Listen:          DefaultListen,
		Catalog:         catalog.Config{}.WithDefaults(),
		LogLevel:        DefaultLogLevel,
		LogFormat:       DefaultLogFormat,
		ShutdownTimeout: DefaultShutdownTimeout,
		GCPercent:       DefaultGCPercent,
		MemoryLimitMiB:  DefaultMemoryLimitMiB,
		Follow: FollowConfig{
			PollInterval:      server.DefaultPollInterval,
			HeartbeatInterval: server.DefaultHeartbeatInterval,
			MaxBackoff:        server.DefaultMaxBackoff,
		},
	}
}

// Validate reports the first invalid setting.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("%w: listen address %q: %v", ErrConfig, c.Listen, err)
	}
	if err := c.Catalog.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("%w: log level %q (want debug, info, warn or error)", ErrConfig, c.LogLevel)
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		return fmt.Errorf("%w: log format %q (want text or json)", ErrConfig, c.LogFormat)
	}
	if c.GCPercent < -1 || c.MemoryLimitMiB < 0 {
		return fmt.Errorf("%w: gc percent must be -1 (off) or more, the memory limit 0 (none) or more", ErrConfig)
	}
	if c.ShutdownTimeout < 0 {
		return fmt.Errorf("%w: negative shutdown timeout", ErrConfig)
	}
	e := c.Engine
	if e.ReadConcurrency < 0 || e.MaxBatchRows < 0 || e.MaxBatchBytes < 0 {
		return fmt.Errorf("%w: engine settings must not be negative", ErrConfig)
	}
	if fc := c.Follow; fc.PollInterval <= 0 || fc.HeartbeatInterval <= 0 || fc.MaxBackoff <= 0 {
		return fmt.Errorf("%w: poll interval, heartbeat interval and max backoff must be positive", ErrConfig)
	}
	if c.Follow.MaxBackoff < c.Follow.PollInterval {
		return fmt.Errorf("%w: max backoff %s is shorter than the poll interval %s", ErrConfig, c.Follow.MaxBackoff,
			c.Follow.PollInterval)
	}
	if e.MaxBatchBytes > feed.HardMaxBatchBytes {
		return fmt.Errorf("%w: max batch bytes %d is above the limit of %d", ErrConfig, e.MaxBatchBytes,
			feed.HardMaxBatchBytes)
	}
	return nil
}

// LoadConfig reads the configuration from the defaults, the YAML file, the
// environment (a list of KEY=VALUE) and the command-line arguments, in that
// order of precedence, and validates it. --help prints the flags to out and
// returns flag.ErrHelp.
func LoadConfig(args, environ []string, out io.Writer) (Config, error) {
	cfg := DefaultConfig()
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "SLUICE_") {
			env[k] = v
		}
	}

	fs := flag.NewFlagSet("flightd", flag.ContinueOnError)
	fs.SetOutput(out)
	configFile := fs.String("config", "", "YAML configuration file (env SLUICE_CONFIG)")
	// The flags are parsed twice: first to find the config file, then, after
	// the file and the environment are applied, to override them.
	bind := func(c *Config) {
		fs.StringVar(&c.Listen, "listen", c.Listen, "address to serve on")
		fs.StringVar(&c.Catalog.Warehouse, "warehouse", c.Catalog.Warehouse, "warehouse directory or URL")
		fs.StringVar(&c.Catalog.Type, "catalog-type", c.Catalog.Type, "catalog type: sql, rest or hadoop")
		fs.StringVar(&c.Catalog.URI, "catalog-uri", c.Catalog.URI,
			"catalog location: for sql the SQLite file as file:///abs/path/catalog.db (default <warehouse>/catalog.db), for rest the server URL")
		fs.StringVar(&c.Catalog.Name, "catalog-name", c.Catalog.Name, "catalog name (the name writers used)")
		fs.BoolVar(&c.Demo, "demo", c.Demo, "create the demo table demo.orders when absent")
		fs.StringVar(&c.ReadyFile, "ready-file", c.ReadyFile, "write the served address to this file once serving")
		fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "log level: debug, info, warn, error")
		fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "log format: text or json")
		fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long a stop waits for running reads")
		fs.IntVar(&c.Engine.ReadConcurrency, "read-concurrency", c.Engine.ReadConcurrency, "data files decoded ahead of a client (0: default)")
		fs.IntVar(&c.Engine.MaxBatchRows, "max-batch-rows", c.Engine.MaxBatchRows, "rows per batch at most (0: default)")
		fs.Int64Var(&c.Engine.MaxBatchBytes, "max-batch-bytes", c.Engine.MaxBatchBytes, "target bytes per batch (0: default)")
		fs.IntVar(&c.GCPercent, "gc-percent", c.GCPercent, "Go GC target percent (GOGC wins when set)")
		fs.Int64Var(&c.MemoryLimitMiB, "memory-limit-mib", c.MemoryLimitMiB, "Go soft memory limit in MiB, 0: none (GOMEMLIMIT wins when set)")
		fs.DurationVar(&c.Follow.PollInterval, "poll-interval", c.Follow.PollInterval, "how often follow streams poll a table for new commits")
		fs.DurationVar(&c.Follow.HeartbeatInterval, "heartbeat-interval", c.Follow.HeartbeatInterval,
			"how long an idle follow stream waits before a heartbeat batch")
		fs.DurationVar(&c.Follow.MaxBackoff, "max-backoff", c.Follow.MaxBackoff, "longest wait between polls while the catalog fails")
		fs.StringVar(&c.Progress.DSN, "progress-dsn", c.Progress.DSN,
			"consumer progress store: a SQLite file or postgres://... (default <warehouse>/sluice-consumers.db)")
	}
	probe := cfg
	bind(&probe)
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("%w: unexpected arguments %q", ErrConfig, fs.Args())
	}
	path := *configFile
	if path == "" {
		path = env["SLUICE_CONFIG"]
	}
	if path != "" {
		if err := loadYAML(path, &cfg); err != nil {
			return Config{}, err
		}
	}
	if err := applyEnv(env, &cfg); err != nil {
		return Config{}, err
	}

	fs = flag.NewFlagSet("flightd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.String("config", "", "")
	bind(&cfg)
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	cfg.Catalog = cfg.Catalog.WithDefaults()
	return cfg, cfg.Validate()
}

func loadYAML(path string, cfg *Config) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w: read config file: %v", ErrConfig, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: config file %s: %v", ErrConfig, path, err)
	}
	return nil
}

// applyEnv applies the SLUICE_* variables.
func applyEnv(env map[string]string, cfg *Config) error {
	str := map[string]*string{
		"SLUICE_LISTEN":       &cfg.Listen,
		"SLUICE_WAREHOUSE":    &cfg.Catalog.Warehouse,
		"SLUICE_CATALOG_TYPE": &cfg.Catalog.Type,
		"SLUICE_CATALOG_URI":  &cfg.Catalog.URI,
		"SLUICE_CATALOG_NAME": &cfg.Catalog.Name,
		"SLUICE_READY_FILE":   &cfg.ReadyFile,
		"SLUICE_LOG_LEVEL":    &cfg.LogLevel,
		"SLUICE_LOG_FORMAT":   &cfg.LogFormat,
		"SLUICE_PROGRESS_DSN": &cfg.Progress.DSN,
	}
	for k, p := range str {
		if v, ok := env[k]; ok {
			*p = v
		}
	}
	ints := map[string]*int{
		"SLUICE_READ_CONCURRENCY": &cfg.Engine.ReadConcurrency,
		"SLUICE_MAX_BATCH_ROWS":   &cfg.Engine.MaxBatchRows,
		"SLUICE_GC_PERCENT":       &cfg.GCPercent,
	}
	for k, p := range ints {
		if v, ok := env[k]; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%w: %s=%q is not an integer", ErrConfig, k, v)
			}
			*p = n
		}
	}
	if v, ok := env["SLUICE_MEMORY_LIMIT_MIB"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%w: SLUICE_MEMORY_LIMIT_MIB=%q is not an integer", ErrConfig, v)
		}
		cfg.MemoryLimitMiB = n
	}
	if v, ok := env["SLUICE_MAX_BATCH_BYTES"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%w: SLUICE_MAX_BATCH_BYTES=%q is not an integer", ErrConfig, v)
		}
		cfg.Engine.MaxBatchBytes = n
	}
	if v, ok := env["SLUICE_DEMO"]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%w: SLUICE_DEMO=%q is not a boolean", ErrConfig, v)
		}
		cfg.Demo = b
	}
	durations := map[string]*time.Duration{
		"SLUICE_SHUTDOWN_TIMEOUT":   &cfg.ShutdownTimeout,
		"SLUICE_POLL_INTERVAL":      &cfg.Follow.PollInterval,
		"SLUICE_HEARTBEAT_INTERVAL": &cfg.Follow.HeartbeatInterval,
		"SLUICE_MAX_BACKOFF":        &cfg.Follow.MaxBackoff,
	}
	for k, p := range durations {
		if v, ok := env[k]; ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("%w: %s=%q is not a duration", ErrConfig, k, v)
			}
			*p = d
		}
	}
	return nil
}
