package daemon

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluicefeed/sluice/internal/lib/suggest"
)

// LoadConfig reads the configuration from the defaults, the YAML file, the
// environment (a list of KEY=VALUE) and the command-line arguments, in that
// order of precedence, and validates it. --help prints the flags to out and
// returns flag.ErrHelp. Every error is an ErrConfig that names the setting.
func LoadConfig(args, environ []string, out io.Writer) (Config, error) {
	cfg := DefaultConfig()
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "SLUICE_") {
			env[k] = v
		}
	}

	// The flags are parsed twice: first to find the config file, then,
	// after the file and the environment are applied, to override them.
	// The flag package prints nothing: a wrong flag is returned as an
	// error (printed once, by main), --help prints the usage.
	fs, configFile := newFlagSet(&cfg)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(out)
			fmt.Fprint(out, usage)
			fs.PrintDefaults()
			return Config{}, err
		}
		return Config{}, configError{suggest.FlagError(fs, args, err, fs.Parse)}
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("%w: unexpected arguments %q (flightd --help lists the flags)", ErrConfig, fs.Args())
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
	fs, _ = newFlagSet(&cfg)
	if err := fs.Parse(args); err != nil {
		return Config{}, configError{err}
	}
	cfg.Catalog = cfg.Catalog.WithDefaults()
	cfg.Auth = cfg.Auth.WithDefaults()
	return cfg, cfg.Validate()
}

// newFlagSet returns flightd's flags bound to c, which holds their
// defaults, and the --config flag.
func newFlagSet(c *Config) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("flightd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	configFile := fs.String("config", "", "YAML configuration file (env SLUICE_CONFIG)")
	dur := func(p *time.Duration, name, usage string) {
		fs.Var((*durationFlag)(p), name, usage+" (a `duration` with its unit: 500ms, 5s, 2m)")
	}
	fs.StringVar(&c.Listen, "listen", c.Listen, "address to serve on")
	fs.StringVar(&c.Catalog.Warehouse, "warehouse", c.Catalog.Warehouse,
		"warehouse directory or URL (must exist, but for --demo and --create-catalog; default ./warehouse); for rest, the warehouse the server expects (no default)")
	fs.StringVar(&c.Catalog.Type, "catalog-type", c.Catalog.Type, "catalog type: sql, rest or hadoop")
	fs.StringVar(&c.Catalog.URI, "catalog-uri", c.Catalog.URI,
		"catalog location: for sql the SQLite file as file:///abs/path/catalog.db (default <warehouse>/catalog.db), for rest the server URL")
	fs.StringVar(&c.Catalog.Name, "catalog-name", c.Catalog.Name, "catalog name (the name writers used)")
	fs.BoolVar(&c.Catalog.Create, "create-catalog", c.Catalog.Create,
		"create the warehouse and the catalog file when absent, even beside other catalogs' files")
	fs.BoolVar(&c.Catalog.FollowSymlinks, "catalog-follow-symlinks", c.Catalog.FollowSymlinks,
		"read what symbolic links in a local warehouse point to outside it")
	fs.Var((*propertiesFlag)(&c.Catalog.Properties), "catalog-property",
		"a catalog `name=value` property (repeatable; a value may be ${env:NAME} or ${file:PATH}; env SLUICE_CATALOG_PROPERTIES, comma-separated)")
	fs.StringVar(&c.Catalog.PropertiesFile, "catalog-properties-file", c.Catalog.PropertiesFile,
		"YAML file of catalog properties, name: value (a mounted secret)")
	dur(&c.Catalog.StartTimeout, "catalog-start-timeout", "how long to retry a catalog unavailable at start, 0: fail at once")
	fs.StringVar(&c.Delta.Root, "delta-root", c.Delta.Root,
		"serve every sub-folder of this folder holding a _delta_log as the Delta table delta.<sub-folder>")
	fs.StringVar(&c.SparkConnect, "spark-connect", c.SparkConnect,
		"serve the tables spark.tables and spark.namespaces name through this Spark Connect server (sc://host:15002, /;token=...;use_ssl=true)")
	fs.BoolVar(&c.Delta.FollowSymlinks, "delta-follow-symlinks", c.Delta.FollowSymlinks,
		"read what symbolic links in the Delta root or a local Delta table point to outside it")
	fs.StringVar(&c.Paimon.Warehouse, "paimon-warehouse", c.Paimon.Warehouse,
		"serve every table <db>.db/<table> of this Paimon filesystem-catalog warehouse as paimon.<db>.<table>")
	fs.BoolVar(&c.Paimon.FollowSymlinks, "paimon-follow-symlinks", c.Paimon.FollowSymlinks,
		"read what symbolic links in a local Paimon warehouse point to outside it")
	fs.BoolVar(&c.Demo, "demo", c.Demo, "create the demo table demo.orders when absent")
	fs.StringVar(&c.ReadyFile, "ready-file", c.ReadyFile, "write the served address to this file once serving")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "log level: debug, info, warn, error")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "log format: text or json")
	dur(&c.ShutdownTimeout, "shutdown-timeout", "how long a stop waits for running reads")
	fs.IntVar(&c.Engine.ReadConcurrency, "read-concurrency", c.Engine.ReadConcurrency, "data files decoded ahead of a client (0: default)")
	fs.IntVar(&c.Engine.MaxBatchRows, "max-batch-rows", c.Engine.MaxBatchRows, "rows per batch at most (0: default)")
	fs.Int64Var(&c.Engine.MaxBatchBytes, "max-batch-bytes", c.Engine.MaxBatchBytes, "target bytes per batch (0: default)")
	fs.Int64Var(&c.Engine.MemoryBudgetMiB, "memory-budget-mib", c.Engine.MemoryBudgetMiB,
		"MiB all reads may hold for net changes, carry-over and update pairing before they spill to disk")
	fs.Int64Var(&c.Engine.BufferPoolMiB, "buffer-pool-mib", c.Engine.BufferPoolMiB,
		"MiB of freed Arrow buffers kept for the next batches (0: none)")
	fs.StringVar(&c.Engine.SpillDir, "spill-dir", c.Engine.SpillDir,
		"directory for the temporary files of reads over the memory budget (default: the system's temporary directory)")
	fs.Int64Var(&c.Engine.DecodeCacheBytes, "decode-cache-bytes", c.Engine.DecodeCacheBytes,
		"bytes of encoded batches shared among streams reading the same window at once, 0: off")
	dur(&c.Engine.DecodeCacheTTL, "decode-cache-ttl", "how long a read's encoded batches serve new readers after the read")
	fs.IntVar(&c.GCPercent, "gc-percent", c.GCPercent, "Go GC target percent (GOGC wins when set)")
	fs.Int64Var(&c.MemoryLimitMiB, "memory-limit-mib", c.MemoryLimitMiB, "Go soft memory limit in MiB, 0: none (GOMEMLIMIT wins when set)")
	dur(&c.Follow.PollInterval, "poll-interval", "how often follow streams poll a table for new commits")
	dur(&c.Follow.HeartbeatInterval, "heartbeat-interval", "how long an idle follow stream waits before a heartbeat batch")
	dur(&c.Follow.MaxBackoff, "max-backoff", "longest wait between polls while the catalog fails")
	fs.BoolVar(&c.Follow.WatchFiles, "watch-files", c.Follow.WatchFiles,
		"learn of commits to local tables from file notifications at once, not only by polling")
	fs.StringVar(&c.Auth.Mode, "auth-mode", c.Auth.Mode, "authentication: off (loopback only), token, basic, token,basic, mtls")
	fs.StringVar(&c.Auth.TokensFile, "auth-tokens-file", c.Auth.TokensFile, "YAML file of hashed bearer tokens")
	fs.StringVar(&c.Auth.UsersFile, "auth-users-file", c.Auth.UsersFile, "YAML file of users and bcrypt hashes (basic auth)")
	fs.StringVar(&c.Auth.SecretFile, "auth-secret-file", c.Auth.SecretFile, "secret that signs issued tokens")
	dur(&c.Auth.TokenTTL, "auth-token-ttl", "life of a token the handshake issues")
	fs.StringVar(&c.Auth.TLS.CertFile, "tls-cert-file", c.Auth.TLS.CertFile, "server certificate chain (PEM): serve TLS")
	fs.StringVar(&c.Auth.TLS.KeyFile, "tls-key-file", c.Auth.TLS.KeyFile, "server private key (PEM)")
	fs.StringVar(&c.Auth.TLS.ClientCAFile, "tls-client-ca-file", c.Auth.TLS.ClientCAFile, "CA of client certificates (mtls)")
	fs.StringVar(&c.MetricsListen, "metrics-listen", c.MetricsListen, "serve Prometheus /metrics and /healthz on this address")
	fs.BoolVar(&c.AllowPublicMetrics, "allow-public-metrics", c.AllowPublicMetrics,
		"let --metrics-listen be an address that is not loopback (its metrics expose table names, --pprof the process's internals)")
	fs.StringVar(&c.HTTPListen, "http-listen", c.HTTPListen,
		"serve the web console on this address (may be the metrics address)")
	fs.Var((*listFlag)(&c.HTTP.AllowedHosts), "http-allowed-hosts",
		"other names the HTTP servers answer (a Host of another name gets 421), comma-separated; * for any (needs auth)")
	fs.BoolVar(&c.Reflection, "reflection", c.Reflection, "register gRPC server reflection")
	fs.BoolVar(&c.Pprof, "pprof", c.Pprof, "serve /debug/pprof/ on the metrics address")
	fs.IntVar(&c.Limits.MaxStreams, "max-streams", c.Limits.MaxStreams, "streaming calls at once, 0: no limit")
	fs.IntVar(&c.Limits.MaxStreamsPerPrincipal, "max-streams-per-principal", c.Limits.MaxStreamsPerPrincipal, "streaming calls at once per caller, 0: no limit")
	fs.Float64Var(&c.Limits.CallsPerSecond, "calls-per-second", c.Limits.CallsPerSecond, "calls per second per caller, 0: no limit")
	dur(&c.Limits.StallTimeout, "stall-timeout", "end a stream whose client takes nothing for this long, 0: never")
	dur(&c.Limits.KeepaliveTime, "keepalive-time", "ping idle connections this often")
	fs.StringVar(&c.Replicas.Advertise, "advertise", c.Replicas.Advertise,
		"the address clients use for this replica (grpc://host:port, grpc+tls://host:port), in split windows' endpoints")
	fs.Var((*listFlag)(&c.Replicas.Peers), "peers",
		"every replica's advertised address, comma-separated, or dns://name:port: where split windows' endpoints go")
	fs.StringVar(&c.Progress.DSN, "progress-dsn", c.Progress.DSN,
		"consumer progress store: a SQLite file or postgres://... (default <warehouse>/sluice-consumers.db; ./sluice-consumers.db for rest)")
	fs.BoolVar(&c.Protect.Consumers, "protect-consumers", c.Protect.Consumers,
		"let acks with protect keep the consumer's snapshot from expiry (Iceberg tags, Paimon consumer files, Delta lag warnings)")
	dur(&c.Protect.MaxRefAge, "protect-max-ref-age", "max-ref-age-ms of consumers' Iceberg tags")
	return fs, configFile
}

// listFlag is a comma-separated list.
type listFlag []string

func (l *listFlag) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

func (l *listFlag) Set(s string) error {
	*l = splitList(s)
	return nil
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// propertiesFlag is the repeatable --catalog-property name=value: each
// sets one property, over the YAML file's and the environment's.
type propertiesFlag map[string]string

func (p *propertiesFlag) String() string { return "" }

func (p *propertiesFlag) Set(s string) error {
	name, value, err := parseProperty(s)
	if err != nil {
		return err
	}
	if *p == nil {
		*p = map[string]string{}
	}
	(*p)[name] = value
	return nil
}

// parseProperty splits name=value. Its errors never show the value.
func parseProperty(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return "", "", errors.New("want name=value")
	}
	return name, value, nil
}

// durationFlag is a duration flag whose error says what is wrong with the
// value: most often, a missing unit.
type durationFlag time.Duration

func (d *durationFlag) String() string {
	if d == nil {
		return ""
	}
	return time.Duration(*d).String()
}

func (d *durationFlag) Set(s string) error {
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d = durationFlag(v)
	return nil
}

// parseDuration is time.ParseDuration with an error that says what a
// number lacks: "5" is not 5 seconds, but a duration without its unit.
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err == nil {
		return d, nil
	}
	if n := strings.TrimSpace(s); n != "" {
		if _, nerr := strconv.ParseFloat(n, 64); nerr == nil {
			return 0, noUnit(n)
		}
	}
	return 0, fmt.Errorf("%q is not a duration: write a number and its unit, as 500ms, 5s, 2m or 1h", s)
}

// noUnit is the error of a duration written as the bare number n.
func noUnit(n string) error {
	return fmt.Errorf("%s has no unit: write %ss (or %sms, %sm)", n, n, n, n)
}

func loadYAML(path string, cfg *Config) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w: read config file: %v", ErrConfig, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%w: config file %s: %v", ErrConfig, path, err)
	}
	if err := checkDurations(&doc, reflect.TypeFor[Config](), ""); err != nil {
		return fmt.Errorf("%w: config file %s: %v", ErrConfig, path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: config file %s: %v", ErrConfig, path, err)
	}
	return nil
}

// checkDurations finds a duration written as a bare number in a YAML
// document decoded into t (yaml.v3 says only "cannot unmarshal !!int `5`
// into time.Duration"), and names its key and the unit it lacks.
func checkDurations(n *yaml.Node, t reflect.Type, key string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if err := checkDurations(c, t, key); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		if t.Kind() != reflect.Struct {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			f, ok := yamlField(t, k)
			if !ok {
				continue // the decoder names unknown keys
			}
			if key != "" {
				k = key + "." + k
			}
			if err := checkDurations(n.Content[i+1], f.Type, k); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		if t == reflect.TypeFor[time.Duration]() && (n.Tag == "!!int" || n.Tag == "!!float") {
			return fmt.Errorf("line %d: %s: %v", n.Line, key, noUnit(n.Value))
		}
	}
	return nil
}

// yamlField returns the field of struct t that the YAML key decodes into.
func yamlField(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		if name == key && f.IsExported() {
			return f, true
		}
	}
	return reflect.StructField{}, false
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
		"SLUICE_HTTP_LISTEN":        &cfg.HTTPListen,
		"SLUICE_LISTEN":             &cfg.Listen,
		"SLUICE_WAREHOUSE":          &cfg.Catalog.Warehouse,
		"SLUICE_CATALOG_TYPE":       &cfg.Catalog.Type,
		"SLUICE_CATALOG_URI":        &cfg.Catalog.URI,
		"SLUICE_CATALOG_NAME":       &cfg.Catalog.Name,
		"SLUICE_DELTA_ROOT":         &cfg.Delta.Root,
		"SLUICE_PAIMON_WAREHOUSE":   &cfg.Paimon.Warehouse,
		"SLUICE_SPARK_CONNECT":      &cfg.SparkConnect,
		"SLUICE_READY_FILE":         &cfg.ReadyFile,
		"SLUICE_LOG_LEVEL":          &cfg.LogLevel,
		"SLUICE_LOG_FORMAT":         &cfg.LogFormat,
		"SLUICE_PROGRESS_DSN":       &cfg.Progress.DSN,
		"SLUICE_SPILL_DIR":          &cfg.Engine.SpillDir,
		"SLUICE_ADVERTISE":          &cfg.Replicas.Advertise,
	}
	for k, p := range str {
		if v, ok := env[k]; ok {
			*p = v
		}
	}
	if v, ok := env["SLUICE_PEERS"]; ok {
		cfg.Replicas.Peers = splitList(v)
	}
	if v, ok := env["SLUICE_HTTP_ALLOWED_HOSTS"]; ok {
		cfg.HTTP.AllowedHosts = splitList(v)
	}
	bools := map[string]*bool{
		"SLUICE_PPROF":                   &cfg.Pprof,
		"SLUICE_REFLECTION":              &cfg.Reflection,
		"SLUICE_DEMO":                    &cfg.Demo,
		"SLUICE_CREATE_CATALOG":          &cfg.Catalog.Create,
		"SLUICE_ALLOW_PUBLIC_METRICS":    &cfg.AllowPublicMetrics,
		"SLUICE_WATCH_FILES":             &cfg.Follow.WatchFiles,
		"SLUICE_DELTA_FOLLOW_SYMLINKS":   &cfg.Delta.FollowSymlinks,
		"SLUICE_PAIMON_FOLLOW_SYMLINKS":  &cfg.Paimon.FollowSymlinks,
		"SLUICE_CATALOG_FOLLOW_SYMLINKS": &cfg.Catalog.FollowSymlinks,
		"SLUICE_PROTECT_CONSUMERS":       &cfg.Protect.Consumers,
	}
	for k, p := range bools {
		if v, ok := env[k]; ok {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("%w: %s=%q is not a boolean (true or false)", ErrConfig, k, v)
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
	int64s := map[string]*int64{
		"SLUICE_MEMORY_LIMIT_MIB":   &cfg.MemoryLimitMiB,
		"SLUICE_MAX_BATCH_BYTES":    &cfg.Engine.MaxBatchBytes,
		"SLUICE_MEMORY_BUDGET_MIB":  &cfg.Engine.MemoryBudgetMiB,
		"SLUICE_BUFFER_POOL_MIB":    &cfg.Engine.BufferPoolMiB,
		"SLUICE_DECODE_CACHE_BYTES": &cfg.Engine.DecodeCacheBytes,
	}
	for k, p := range int64s {
		if v, ok := env[k]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("%w: %s=%q is not an integer", ErrConfig, k, v)
			}
			*p = n
		}
	}
	durations := map[string]*time.Duration{
		"SLUICE_SHUTDOWN_TIMEOUT":    &cfg.ShutdownTimeout,
		"SLUICE_POLL_INTERVAL":       &cfg.Follow.PollInterval,
		"SLUICE_HEARTBEAT_INTERVAL":  &cfg.Follow.HeartbeatInterval,
		"SLUICE_MAX_BACKOFF":         &cfg.Follow.MaxBackoff,
		"SLUICE_AUTH_TOKEN_TTL":      &cfg.Auth.TokenTTL,
		"SLUICE_STALL_TIMEOUT":       &cfg.Limits.StallTimeout,
		"SLUICE_KEEPALIVE_TIME":      &cfg.Limits.KeepaliveTime,
		"SLUICE_DECODE_CACHE_TTL":    &cfg.Engine.DecodeCacheTTL,
		"SLUICE_PROTECT_MAX_REF_AGE": &cfg.Protect.MaxRefAge,
	}
	for k, p := range durations {
		if v, ok := env[k]; ok {
			d, err := parseDuration(v)
			if err != nil {
				return fmt.Errorf("%w: %s=%q: %v", ErrConfig, k, v, err)
			}
			*p = d
		}
	}
	return applyEnvCatalog(env, cfg)
}

// applyEnvCatalog applies SLUICE_CATALOG_PROPERTIES_FILE,
// SLUICE_CATALOG_START_TIMEOUT and SLUICE_CATALOG_PROPERTIES: name=value
// pairs separated by commas, over the YAML file's properties. A value
// cannot hold a comma there (it belongs in the YAML file, the properties
// file or a --catalog-property); a piece without "=" is refused, naming
// its place but not its text, which may be part of a secret.
func applyEnvCatalog(env map[string]string, cfg *Config) error {
	if v, ok := env["SLUICE_CATALOG_PROPERTIES_FILE"]; ok {
		cfg.Catalog.PropertiesFile = v
	}
	if v, ok := env["SLUICE_CATALOG_START_TIMEOUT"]; ok {
		d, err := parseDuration(v)
		if err != nil {
			return fmt.Errorf("%w: SLUICE_CATALOG_START_TIMEOUT=%q: %v", ErrConfig, v, err)
		}
		cfg.Catalog.StartTimeout = d
	}
	v := env["SLUICE_CATALOG_PROPERTIES"]
	if strings.TrimSpace(v) == "" {
		return nil
	}
	if cfg.Catalog.Properties == nil {
		cfg.Catalog.Properties = map[string]string{}
	}
	for i, piece := range strings.Split(v, ",") {
		name, value, err := parseProperty(piece)
		if err != nil {
			return fmt.Errorf("%w: SLUICE_CATALOG_PROPERTIES: item %d: %v (comma-separated name=value pairs; a value "+
				"with a comma goes in --catalog-property or --catalog-properties-file)", ErrConfig, i+1, err)
		}
		cfg.Catalog.Properties[name] = value
	}
	return nil
}
