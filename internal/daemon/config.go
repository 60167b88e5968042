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

	"github.com/sluicefeed/sluice/auth"
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
	// Auth configures authentication, TLS and the table grants (--auth-mode,
	// --auth-tokens-file, --auth-users-file, --auth-secret-file,
	// --auth-token-ttl, --tls-cert-file, --tls-key-file,
	// --tls-client-ca-file; rules in YAML only). Default: off, which only a
	// loopback listen address accepts.
	Auth auth.Config `yaml:"auth"`
	// MetricsListen, when set, serves Prometheus metrics on
	// http://<addr>/metrics and a liveness check on /healthz
	// (--metrics-listen). Default: off.
	MetricsListen string `yaml:"metrics_listen"`
	// Reflection registers gRPC server reflection, for grpcurl
	// (--reflection). Default false.
	Reflection bool `yaml:"reflection"`
	// Pprof serves Go's runtime profiles (net/http/pprof) under
	// /debug/pprof/ on the metrics address (--pprof). Default false; it
	// needs MetricsListen.
	Pprof bool `yaml:"pprof"`
	// Limits bounds what callers may ask at once.
	Limits LimitsConfig `yaml:"limits"`
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

// LimitsConfig bounds what callers may ask of the server at once; exceeding
// a limit fails the call with ResourceExhausted. Zero: no limit.
type LimitsConfig struct {
	// MaxStreams bounds the streaming calls running at once
	// (--max-streams). Default 256.
	MaxStreams int `yaml:"max_streams"`
	// MaxStreamsPerPrincipal bounds them per caller
	// (--max-streams-per-principal). Default 64.
	MaxStreamsPerPrincipal int `yaml:"max_streams_per_principal"`
	// CallsPerSecond is each caller's call rate, with bursts of twice as
	// many (--calls-per-second). Default 200.
	CallsPerSecond float64 `yaml:"calls_per_second"`
	// StallTimeout ends a stream whose client has taken no message for this
	// long (--stall-timeout). Default 5m.
	StallTimeout time.Duration `yaml:"stall_timeout"`
	// KeepaliveTime is how often the server pings an idle connection
	// (--keepalive-time). Default 2m.
	KeepaliveTime time.Duration `yaml:"keepalive_time"`
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
		Auth:            auth.Config{}.WithDefaults(),
		Limits: LimitsConfig{MaxStreams: 256, MaxStreamsPerPrincipal: 64, CallsPerSecond: 200,
			StallTimeout: 5 * time.Minute, KeepaliveTime: 2 * time.Minute},
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
	if err := c.Auth.Validate(c.Listen); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if c.Pprof && c.MetricsListen == "" {
		return fmt.Errorf("%w: pprof is served on the metrics address: set metrics_listen too", ErrConfig)
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			return fmt.Errorf("%w: metrics listen address %q: %v", ErrConfig, c.MetricsListen, err)
		}
	}
	l := c.Limits
	if l.MaxStreams < 0 || l.MaxStreamsPerPrincipal < 0 || l.CallsPerSecond < 0 || l.StallTimeout < 0 || l.KeepaliveTime < 0 {
		return fmt.Errorf("%w: limits must not be negative", ErrConfig)
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
	fs.Usage = func() {
		fmt.Fprint(out, usage)
		fs.PrintDefaults()
	}
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
		fs.StringVar(&c.Auth.Mode, "auth-mode", c.Auth.Mode, "authentication: off (loopback only), token, basic, token,basic, mtls")
		fs.StringVar(&c.Auth.TokensFile, "auth-tokens-file", c.Auth.TokensFile, "YAML file of hashed bearer tokens")
		fs.StringVar(&c.Auth.UsersFile, "auth-users-file", c.Auth.UsersFile, "YAML file of users and bcrypt hashes (basic auth)")
		fs.StringVar(&c.Auth.SecretFile, "auth-secret-file", c.Auth.SecretFile, "secret that signs issued tokens")
		fs.DurationVar(&c.Auth.TokenTTL, "auth-token-ttl", c.Auth.TokenTTL, "life of a token the handshake issues")
		fs.StringVar(&c.Auth.TLS.CertFile, "tls-cert-file", c.Auth.TLS.CertFile, "server certificate chain (PEM): serve TLS")
		fs.StringVar(&c.Auth.TLS.KeyFile, "tls-key-file", c.Auth.TLS.KeyFile, "server private key (PEM)")
		fs.StringVar(&c.Auth.TLS.ClientCAFile, "tls-client-ca-file", c.Auth.TLS.ClientCAFile, "CA of client certificates (mtls)")
		fs.StringVar(&c.MetricsListen, "metrics-listen", c.MetricsListen, "serve Prometheus /metrics and /healthz on this address")
		fs.BoolVar(&c.Reflection, "reflection", c.Reflection, "register gRPC server reflection")
		fs.BoolVar(&c.Pprof, "pprof", c.Pprof, "serve /debug/pprof/ on the metrics address")
		fs.IntVar(&c.Limits.MaxStreams, "max-streams", c.Limits.MaxStreams, "streaming calls at once, 0: no limit")
		fs.IntVar(&c.Limits.MaxStreamsPerPrincipal, "max-streams-per-principal", c.Limits.MaxStreamsPerPrincipal, "streaming calls at once per caller, 0: no limit")
		fs.Float64Var(&c.Limits.CallsPerSecond, "calls-per-second", c.Limits.CallsPerSecond, "calls per second per caller, 0: no limit")
		fs.DurationVar(&c.Limits.StallTimeout, "stall-timeout", c.Limits.StallTimeout, "end a stream whose client takes nothing for this long, 0: never")
		fs.DurationVar(&c.Limits.KeepaliveTime, "keepalive-time", c.Limits.KeepaliveTime, "ping idle connections this often")
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
	cfg.Auth = cfg.Auth.WithDefaults()
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
		"SLUICE_AUTH_MODE":          &cfg.Auth.Mode,
		"SLUICE_AUTH_TOKENS_FILE":   &cfg.Auth.TokensFile,
		"SLUICE_AUTH_USERS_FILE":    &cfg.Auth.UsersFile,
		"SLUICE_AUTH_SECRET_FILE":   &cfg.Auth.SecretFile,
		"SLUICE_TLS_CERT_FILE":      &cfg.Auth.TLS.CertFile,
		"SLUICE_TLS_KEY_FILE":       &cfg.Auth.TLS.KeyFile,
		"SLUICE_TLS_CLIENT_CA_FILE": &cfg.Auth.TLS.ClientCAFile,
		"SLUICE_METRICS_LISTEN":     &cfg.MetricsListen,
		"SLUICE_LISTEN":             &cfg.Listen,
		"SLUICE_WAREHOUSE":          &cfg.Catalog.Warehouse,
		"SLUICE_CATALOG_TYPE":       &cfg.Catalog.Type,
		"SLUICE_CATALOG_URI":        &cfg.Catalog.URI,
		"SLUICE_CATALOG_NAME":       &cfg.Catalog.Name,
		"SLUICE_READY_FILE":         &cfg.ReadyFile,
		"SLUICE_LOG_LEVEL":          &cfg.LogLevel,
		"SLUICE_LOG_FORMAT":         &cfg.LogFormat,
		"SLUICE_PROGRESS_DSN":       &cfg.Progress.DSN,
	}
	for k, p := range str {
		if v, ok := env[k]; ok {
			*p = v
		}
	}
	bools := map[string]*bool{
		"SLUICE_PPROF":      &cfg.Pprof,
		"SLUICE_REFLECTION": &cfg.Reflection,
		"SLUICE_DEMO":       &cfg.Demo,
	}
	for k, p := range bools {
		if v, ok := env[k]; ok {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("%w: %s=%q is not a boolean", ErrConfig, k, v)
			}
			*p = b
		}
	}
	if v, ok := env["SLUICE_CALLS_PER_SECOND"]; ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("%w: SLUICE_CALLS_PER_SECOND=%q is not a number", ErrConfig, v)
		}
		cfg.Limits.CallsPerSecond = f
	}
	ints := map[string]*int{
		"SLUICE_MAX_STREAMS":               &cfg.Limits.MaxStreams,
		"SLUICE_MAX_STREAMS_PER_PRINCIPAL": &cfg.Limits.MaxStreamsPerPrincipal,
		"SLUICE_READ_CONCURRENCY":          &cfg.Engine.ReadConcurrency,
		"SLUICE_MAX_BATCH_ROWS":            &cfg.Engine.MaxBatchRows,
		"SLUICE_GC_PERCENT":                &cfg.GCPercent,
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
	durations := map[string]*time.Duration{
		"SLUICE_SHUTDOWN_TIMEOUT":   &cfg.ShutdownTimeout,
		"SLUICE_POLL_INTERVAL":      &cfg.Follow.PollInterval,
		"SLUICE_HEARTBEAT_INTERVAL": &cfg.Follow.HeartbeatInterval,
		"SLUICE_MAX_BACKOFF":        &cfg.Follow.MaxBackoff,
		"SLUICE_AUTH_TOKEN_TTL":     &cfg.Auth.TokenTTL,
		"SLUICE_STALL_TIMEOUT":      &cfg.Limits.StallTimeout,
		"SLUICE_KEEPALIVE_TIME":     &cfg.Limits.KeepaliveTime,
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
