// Package daemon is flightd: it loads the configuration, opens the catalog,
// and serves the Flight service and the ControlService until it is told to
// stop.
package daemon

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sluicefeed/sluice/auth"
	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/app/console"
	"github.com/sluicefeed/sluice/registry"
	"github.com/sluicefeed/sluice/server"
)

// Defaults of Config.
const (
	DefaultListen          = "127.0.0.1:8815"
	DefaultShutdownTimeout = 10 * time.Second
	DefaultLogLevel        = "info"
	DefaultLogFormat       = "text"
	DefaultGCPercent       = 300
	DefaultMemoryLimitMiB  = 144
	DefaultBufferPoolMiB   = 16
	// DefaultProgressFile is the SQLite file of consumer progress, inside a
	// local warehouse (in the working directory for a remote one, and for
	// a rest catalog).
	DefaultProgressFile = "sluice-consumers.db"
)

// ErrConfig reports an invalid configuration. The configuration errors of
// the auth and catalog packages (auth.ErrInvalidConfig,
// catalog.ErrInvalidConfig) are reported as ErrConfig too, their messages
// as they are, so that each reads once.
var ErrConfig = errors.New("invalid configuration")

// configError is a configuration error whose message says it all (a flag
// package error, or another package's configuration error): it is
// ErrConfig without a second prefix.
type configError struct{ err error }

func (e configError) Error() string   { return e.err.Error() }
func (e configError) Unwrap() []error { return []error{ErrConfig, e.err} }

// Config is flightd's configuration. It is read, each source overriding the
// one before, from the defaults, a YAML file (--config or SLUICE_CONFIG),
// SLUICE_* environment variables and command-line flags. The YAML keys are
// the yaml tags below; the environment variable of a setting is its flag's
// name in upper case with dashes as underscores, prefixed with SLUICE_
// (--catalog-uri is SLUICE_CATALOG_URI), but for the repeatable
// --catalog-property, whose variable SLUICE_CATALOG_PROPERTIES holds
// comma-separated name=value pairs.
type Config struct {
	// Listen is the address to serve on (--listen). Default 127.0.0.1:8815;
	// port 0 picks a free port (see ReadyFile).
	Listen string `yaml:"listen"`
	// Catalog selects the catalog (--catalog-type, --catalog-uri,
	// --catalog-name, --warehouse, --create-catalog, --catalog-property,
	// --catalog-properties-file, --catalog-start-timeout,
	// --catalog-follow-symlinks). flightd checks
	// it with catalog.Preflight before it opens it, warns about property
	// names iceberg-go does not read, and retries a catalog unavailable at
	// start for up to its StartTimeout.
	Catalog catalog.Config `yaml:"catalog"`
	// Delta says where Delta tables are (--delta-root, SLUICE_DELTA_ROOT;
	// delta.tables in YAML only) and whether symbolic links may lead out
	// of their local roots (--delta-follow-symlinks; delta.follow_symlinks
	// in YAML; default false). They are served beside the catalog's
	// Iceberg tables; a name both serve is refused at start.
	Delta catalog.DeltaConfig `yaml:"delta"`
	// Paimon says where Paimon tables are: the warehouse of a Paimon
	// filesystem catalog (--paimon-warehouse, SLUICE_PAIMON_WAREHOUSE;
	// paimon.warehouse in YAML), a local folder or an object-store URL,
	// whose every table <db>.db/<table> is served as paimon.<db>.<table>,
	// and whether symbolic links may lead out of a local one
	// (--paimon-follow-symlinks; paimon.follow_symlinks in YAML; default
	// false). A name the catalog also serves is refused at start.
	Paimon catalog.PaimonConfig `yaml:"paimon"`
	// Spark names the Spark Connect servers that may serve tables through
	// Spark's own change engines (YAML spark:, one server as a mapping or
	// several as a list, each with remote, tables, namespaces and backend;
	// see registry.SparkConfig and docs/OPERATIONS.md). Default: none.
	// Each table they route gets a verdict (explain, list_tables, the
	// sluice_table_backend metric, a log line).
	Spark registry.SparkConfig `yaml:"spark"`
	// SparkConnect is the remote of the only Spark Connect server
	// (--spark-connect sc://host:15002, SLUICE_SPARK_CONNECT; a token and
	// TLS as Spark Connect URIs spell them: sc://host:15002/;token=T).
	// It overrides spark.remote; with several servers in YAML it is an
	// error.
	SparkConnect string `yaml:"-"`
	// Demo creates the demo table demo.orders when it is absent (--demo)
	// and prints how to read it. It creates the warehouse directory when
	// absent; an existing warehouse must hold a catalog, or be empty.
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
	// collector works harder as the heap nears it. Default 144: the
	// process's resident size adds the binary's code that has run (76-87
	// MiB of file-backed pages), so it then peaks under 256 MiB with a
	// margin (the bounded-memory arms of make bench: 237-249 MiB at 160 on
	// 2026-12-07, 240-253 at 176; reads cost 3-4% more CPU at 144 than at
	// 160, docs/BENCHMARKS.md gives the sluice-bench -ab command); 0: none.
	MemoryLimitMiB int64 `yaml:"memory_limit_mib"`
	// Follow tunes follow streams and WatchCommits.
	Follow FollowConfig `yaml:"follow"`
	// Progress configures the store of durable consumer progress.
	Progress ProgressConfig `yaml:"progress"`
	// Protect configures the protection of consumers' snapshots from
	// expiry (--protect-consumers, --protect-max-ref-age).
	Protect ProtectConfig `yaml:"protect"`
	// Auth configures authentication, TLS and the table grants (--auth-mode,
	// --auth-tokens-file, --auth-users-file, --auth-secret-file,
	// --auth-token-ttl, --tls-cert-file, --tls-key-file,
	// --tls-client-ca-file; rules in YAML only). Default: off, which only a
	// loopback listen address accepts.
	Auth auth.Config `yaml:"auth"`
	// MetricsListen, when set, serves Prometheus metrics on
	// http://<addr>/metrics and a liveness check on /healthz
	// (--metrics-listen). Default: off. An address that is not loopback
	// needs AllowPublicMetrics.
	MetricsListen string `yaml:"metrics_listen"`
	// AllowPublicMetrics lets MetricsListen be an address that is not
	// loopback (--allow-public-metrics), with a warning in the log: the
	// metrics expose the table names, and pprof the process's command
	// line, stacks and heap profiles, to anyone who reaches the address.
	// Default false.
	AllowPublicMetrics bool `yaml:"allow_public_metrics"`
	// HTTPListen, when set, serves the web console (internal/app/console) on
	// http://<addr>/ (--http-listen): the tables, their snapshot timelines,
	// the changes of a window and a live view, with the same
	// authentication and grants as the gRPC calls (a bearer token, or the
	// basic login), over HTTPS when TLS is configured. It may be the
	// metrics address: one server then serves both. Default: off. An
	// address that is not loopback needs authentication (not mtls: the
	// console takes bearer tokens and passwords), and TLS (or
	// auth.allow_plaintext) like the gRPC address.
	HTTPListen string `yaml:"http_listen"`
	// HTTP tunes the HTTP servers: the console's and the metrics'.
	HTTP HTTPConfig `yaml:"http"`
	// Reflection registers gRPC server reflection, for grpcurl
	// (--reflection). Default false.
	Reflection bool `yaml:"reflection"`
	// Pprof serves Go's runtime profiles (net/http/pprof) under
	// /debug/pprof/ on the metrics address (--pprof). Where that is the
	// console's address and authentication is on, they need the
	// console's credentials (they hold the command line). Default false;
	// it needs MetricsListen.
	Pprof bool `yaml:"pprof"`
	// Limits bounds what callers may ask at once.
	Limits LimitsConfig `yaml:"limits"`
	// Replicas says where the replicas of a deployment are, for the
	// endpoints of a window split by max_endpoints (--advertise, --peers).
	Replicas ReplicasConfig `yaml:"replicas"`
}

// HTTPConfig tunes flightd's HTTP servers (--http-listen, --metrics-listen).
type HTTPConfig struct {
	// AllowedHosts are the names, besides its own, under which the HTTP
	// servers answer (--http-allowed-hosts, SLUICE_HTTP_ALLOWED_HOSTS,
	// comma-separated; a YAML list): host names or IP addresses, without
	// a scheme or a port. Every path of an HTTP server (the console, its
	// API and live streams, /metrics, /healthz, /debug/pprof/) answers
	// only a request whose Host is a loopback name (localhost,
	// 127.0.0.0/8, ::1), the host of its listen address (every address of
	// the machine for 0.0.0.0 or ::), or one of these, and whose Origin,
	// when a browser sends one, is its own host or one of those names:
	// else 421 (Host) or 403 (Origin). A web page cannot then reach the
	// console by resolving its own name to 127.0.0.1 (DNS rebinding).
	// List here the names users and scrapers reach flightd by (a DNS
	// name, a proxy's name). "*" answers every Host; it needs
	// authentication on. Default: none.
	AllowedHosts []string `yaml:"allowed_hosts"`
}

// ReplicasConfig lists the replicas that serve the same catalog: the
// endpoints of a split window are spread over them.
type ReplicasConfig struct {
	// Advertise is the address clients use for this replica
	// (--advertise, SLUICE_ADVERTISE): grpc://host:port or
	// grpc+tls://host:port. Default: none.
	Advertise string `yaml:"advertise"`
	// Peers are every replica's advertised address (--peers, SLUICE_PEERS,
	// comma-separated; this replica's own may be listed), or one
	// dns://name:port, resolved at each split to every address of name on
	// port, with --advertise's scheme. Default: none; with neither, a
	// split window's endpoints carry no location (read them here).
	Peers []string `yaml:"peers"`
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
	// WatchFiles makes a followed table's commits known at once from file
	// notifications where they can be watched (--watch-files, default
	// true): the SQLite file of a local sql catalog, the metadata folder
	// of a local hadoop table, the _delta_log folder of a local Delta
	// table. Polling goes on as the fallback, and alone for rest catalogs
	// and object storage.
	WatchFiles bool `yaml:"watch_files"`
}

// ProgressConfig selects the consumer progress store.
type ProgressConfig struct {
	// DSN is the database (--progress-dsn): a SQLite file (a path,
	// file:///path or sqlite:///path) or postgres://user:pw@host/db.
	// Default: <warehouse>/sluice-consumers.db for a local warehouse,
	// ./sluice-consumers.db (in the working directory) for a remote one
	// and for a rest catalog, whose warehouse is never a local directory.
	DSN string `yaml:"dsn"`
}

// ProgressDSN returns the progress store's DSN, the default applied.
func (c Config) ProgressDSN() string {
	if c.Progress.DSN != "" {
		return c.Progress.DSN
	}
	w := c.Catalog.Warehouse
	switch {
	case c.Catalog.Type == catalog.TypeREST:
		return DefaultProgressFile
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
	// MemoryBudgetMiB bounds, for all reads together, the changes held in
	// memory by net changes and by snapshots that both delete and insert
	// rows (carry-over, update pairing); past it reads spill to SpillDir
	// (--memory-budget-mib). Default 32.
	MemoryBudgetMiB int64 `yaml:"memory_budget_mib"`
	// BufferPoolMiB bounds the freed Arrow buffers flightd keeps for its
	// next batches (--buffer-pool-mib): reusing them spares the allocation
	// and clearing of fresh memory, about a fifth of a read's CPU. Default
	// 16; 0: none (every buffer goes back to the collector). The pool also
	// drops, at each collection, the buffers that stayed unused since the
	// last.
	BufferPoolMiB int64 `yaml:"buffer_pool_mib"`
	// SpillDir is where reads over the budget write their temporary files,
	// each read in its own directory removed when it ends (--spill-dir).
	// Default: sluice-spill in the system's temporary directory.
	SpillDir string `yaml:"spill_dir"`
	// DecodeCacheBytes bounds the decode cache, which shares one read and
	// encoding of a window or full state among the streams that read it
	// at about the same time (the follow streams of a table, at each
	// commit) (--decode-cache-bytes). Default 32 MiB; 0: off.
	DecodeCacheBytes int64 `yaml:"decode_cache_bytes"`
	// DecodeCacheTTL is how long a read's encoded batches are served to
	// new readers once the read has ended (--decode-cache-ttl). Default
	// 30s.
	DecodeCacheTTL time.Duration `yaml:"decode_cache_ttl"`
}

// SparkServers returns the Spark Connect servers: Spark with the remote of
// --spark-connect applied.
func (c Config) SparkServers() (registry.SparkConfig, error) {
	return c.Spark.WithRemote(c.SparkConnect)
}

// DefaultConfig returns the configuration with every default set.
func DefaultConfig() Config {
	// The warehouse's default depends on the catalog type (a rest catalog
	// has none): LoadConfig sets it once the type is known.
	cat := catalog.Config{Type: catalog.DefaultType, Name: catalog.DefaultName, StartTimeout: catalog.DefaultStartTimeout}
	return Config{
		Listen:          DefaultListen,
		Catalog:         cat,
		LogLevel:        DefaultLogLevel,
		LogFormat:       DefaultLogFormat,
		ShutdownTimeout: DefaultShutdownTimeout,
		GCPercent:       DefaultGCPercent,
		MemoryLimitMiB:  DefaultMemoryLimitMiB,
		Engine: EngineConfig{MemoryBudgetMiB: feed.DefaultMemoryBudget >> 20, BufferPoolMiB: DefaultBufferPoolMiB,
			DecodeCacheBytes: server.DefaultDecodeCacheBytes, DecodeCacheTTL: server.DefaultDecodeCacheTTL},
		Auth: auth.Config{}.WithDefaults(),
		Limits: LimitsConfig{MaxStreams: 256, MaxStreamsPerPrincipal: 64, CallsPerSecond: 200,
			StallTimeout: 5 * time.Minute, KeepaliveTime: 2 * time.Minute},
		Follow: FollowConfig{
			PollInterval:      server.DefaultPollInterval,
			HeartbeatInterval: server.DefaultHeartbeatInterval,
			MaxBackoff:        server.DefaultMaxBackoff,
			WatchFiles:        true,
		},
		Protect: ProtectConfig{MaxRefAge: DefaultProtectMaxRefAge, RetentionCheck: DefaultRetentionCheck},
	}
}

// Validate reports the first invalid setting, naming it by its flag.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("%w: --listen %q: %v", ErrConfig, c.Listen, unwrapAddrError(err))
	}
	if err := c.Catalog.Validate(); err != nil {
		return configError{err}
	}
	if err := c.Delta.Validate(); err != nil {
		return configError{err}
	}
	if err := c.Paimon.Validate(); err != nil {
		return configError{err}
	}
	if sc, err := c.SparkServers(); err != nil {
		return configError{err}
	} else if err := sc.Validate(); err != nil {
		return configError{err}
	}
	if err := c.Auth.Validate(c.Listen); err != nil {
		return configError{err}
	}
	if err := c.Replicas.validate(); err != nil {
		return err
	}
	if err := c.validateMetrics(); err != nil {
		return err
	}
	if err := c.validateHTTP(); err != nil {
		return err
	}
	if err := c.validateAllowedHosts(); err != nil {
		return err
	}
	for _, n := range []struct {
		flag  string
		value float64
	}{
		{"--max-streams", float64(c.Limits.MaxStreams)},
		{"--max-streams-per-principal", float64(c.Limits.MaxStreamsPerPrincipal)},
		{"--calls-per-second", c.Limits.CallsPerSecond},
		{"--stall-timeout", float64(c.Limits.StallTimeout)},
		{"--keepalive-time", float64(c.Limits.KeepaliveTime)},
		{"--shutdown-timeout", float64(c.ShutdownTimeout)},
		{"--read-concurrency", float64(c.Engine.ReadConcurrency)},
		{"--max-batch-rows", float64(c.Engine.MaxBatchRows)},
		{"--max-batch-bytes", float64(c.Engine.MaxBatchBytes)},
		{"--memory-budget-mib", float64(c.Engine.MemoryBudgetMiB)},
		{"--buffer-pool-mib", float64(c.Engine.BufferPoolMiB)},
		{"--decode-cache-bytes", float64(c.Engine.DecodeCacheBytes)},
		{"--memory-limit-mib", float64(c.MemoryLimitMiB)},
	} {
		if n.value < 0 {
			return fmt.Errorf("%w: %s must not be negative", ErrConfig, n.flag)
		}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("%w: --log-level %q (want debug, info, warn or error)", ErrConfig, c.LogLevel)
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		return fmt.Errorf("%w: --log-format %q (want text or json)", ErrConfig, c.LogFormat)
	}
	if c.GCPercent < -1 {
		return fmt.Errorf("%w: --gc-percent %d (want -1, off, or more)", ErrConfig, c.GCPercent)
	}
	for _, d := range []struct {
		flag  string
		value time.Duration
	}{
		{"--poll-interval", c.Follow.PollInterval},
		{"--heartbeat-interval", c.Follow.HeartbeatInterval},
		{"--max-backoff", c.Follow.MaxBackoff},
		{"--decode-cache-ttl", c.Engine.DecodeCacheTTL},
	} {
		if d.value <= 0 {
			return fmt.Errorf("%w: %s %s: must be positive", ErrConfig, d.flag, d.value)
		}
	}
	if err := c.Protect.validate(); err != nil {
		return err
	}
	if c.Follow.MaxBackoff < c.Follow.PollInterval {
		return fmt.Errorf("%w: --max-backoff %s is shorter than --poll-interval %s", ErrConfig, c.Follow.MaxBackoff,
			c.Follow.PollInterval)
	}
	if c.Engine.MaxBatchBytes > feed.HardMaxBatchBytes {
		return fmt.Errorf("%w: --max-batch-bytes %d is above the limit of %d", ErrConfig, c.Engine.MaxBatchBytes,
			feed.HardMaxBatchBytes)
	}
	return nil
}

// validateMetrics checks the metrics address: pprof needs one, and one that
// is not loopback needs AllowPublicMetrics.
func (c Config) validateMetrics() error {
	if c.MetricsListen == "" {
		if c.Pprof {
			return fmt.Errorf("%w: --pprof serves the profiles on the metrics address: set --metrics-listen too", ErrConfig)
		}
		return nil
	}
	if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
		return fmt.Errorf("%w: --metrics-listen %q: %v", ErrConfig, c.MetricsListen, unwrapAddrError(err))
	}
	if auth.IsLoopback(c.MetricsListen) || c.AllowPublicMetrics {
		return nil
	}
	exposes := "its /metrics expose the table names"
	if c.Pprof {
		exposes += ", and --pprof the process's internals (its command line, stacks and heap profiles),"
	}
	return fmt.Errorf("%w: --metrics-listen %q is not a loopback address, and %s to anyone who reaches it: "+
		"serve it on 127.0.0.1, or pass --allow-public-metrics when a firewall keeps it private", ErrConfig,
		c.MetricsListen, exposes)
}

// validateHTTP checks the console's address: the console serves table
// rows, so an address that is not loopback needs authentication by bearer
// token or password (the console cannot take client certificates), and
// TLS for those, as the gRPC address does.
func (c Config) validateHTTP() error {
	if c.HTTPListen == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(c.HTTPListen); err != nil {
		return fmt.Errorf("%w: --http-listen %q: %v", ErrConfig, c.HTTPListen, unwrapAddrError(err))
	}
	var modes []string
	for m := range strings.SplitSeq(c.Auth.Mode, ",") {
		modes = append(modes, strings.ToLower(strings.TrimSpace(m)))
	}
	if slices.Contains(modes, auth.ModeMTLS) {
		return fmt.Errorf("%w: --http-listen: the web console authenticates with bearer tokens or the basic "+
			"login, not client certificates (--auth-mode %s): use mode token or basic to serve it", ErrConfig,
			c.Auth.Mode)
	}
	if auth.IsLoopback(c.HTTPListen) {
		return nil
	}
	if authOff(c.Auth.Mode) {
		return fmt.Errorf("%w: --http-listen %q is not a loopback address, and authentication is off: the web "+
			"console would serve the tables' rows to anyone who reaches it: serve it on 127.0.0.1, or set "+
			"--auth-mode token or basic", ErrConfig, c.HTTPListen)
	}
	if !c.Auth.TLS.Enabled() && !c.Auth.AllowPlaintext {
		return fmt.Errorf("%w: --http-listen %q is not a loopback address, and without TLS the console's tokens "+
			"and passwords cross the network in the clear: set --tls-cert-file and --tls-key-file (the console "+
			"then speaks HTTPS), or auth.allow_plaintext behind a TLS-terminating proxy", ErrConfig, c.HTTPListen)
	}
	return nil
}

// validateAllowedHosts checks the names of http.allowed_hosts: each a host
// name or an address, and "*" (every host, which reopens DNS rebinding)
// only with authentication on.
func (c Config) validateAllowedHosts() error {
	for _, h := range c.HTTP.AllowedHosts {
		name, err := console.ParseAllowedHost(h)
		if err != nil {
			return fmt.Errorf("%w: --http-allowed-hosts: %v", ErrConfig, err)
		}
		if name == console.AnyHost && authOff(c.Auth.Mode) {
			return fmt.Errorf("%w: --http-allowed-hosts %s answers every Host, and authentication is off: any web "+
				"page could then read the tables through the console by resolving its own name to this address "+
				"(DNS rebinding): list the names flightd is reached by, or set --auth-mode token or basic",
				ErrConfig, console.AnyHost)
		}
	}
	return nil
}

// publicMetrics returns, when the metrics are served on an address that is
// not loopback, what they expose to anyone who reaches it, for the warning
// at start ("" when they are not).
func (c Config) publicMetrics() string {
	if c.MetricsListen == "" || auth.IsLoopback(c.MetricsListen) {
		return ""
	}
	if c.Pprof {
		return "the table names, and the process's command line, stacks and heap profiles"
	}
	return "the table names"
}

// unwrapAddrError returns the reason of a net.AddrError, whose message
// repeats the address.
func unwrapAddrError(err error) string {
	var ae *net.AddrError
	if errors.As(err, &ae) {
		return ae.Err
	}
	return err.Error()
}

// validate checks the replicas' addresses.
func (r ReplicasConfig) validate() error {
	if r.Advertise != "" {
		if err := server.ParseLocation(r.Advertise); err != nil {
			return fmt.Errorf("%w: --advertise %v", ErrConfig, err)
		}
	}
	for _, p := range r.Peers {
		if err := server.ParsePeer(p); err != nil {
			return fmt.Errorf("%w: --peers %v", ErrConfig, err)
		}
		if strings.HasPrefix(p, "dns://") && len(r.Peers) > 1 {
			return fmt.Errorf("%w: --peers: a dns:// name stands for every replica, list it alone", ErrConfig)
		}
	}
	return nil
}
