package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	"github.com/sluicefeed/sluice/auth"
	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/app/demo"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	_ "github.com/sluicefeed/sluice/internal/lib/storage" // object-store file IO (s3, gs, abfs)
	"github.com/sluicefeed/sluice/progress"
	"github.com/sluicefeed/sluice/registry"
	"github.com/sluicefeed/sluice/server"
	"github.com/sluicefeed/sluice/spark"
)

// Run serves until ctx is done, then stops gracefully: it stops accepting
// calls and waits up to ShutdownTimeout for running ones. Human-readable
// notices (the address, the demo's connect snippet) go to out; logs go to
// stderr.
func Run(ctx context.Context, cfg Config, out io.Writer) error {
	log := newLogger(cfg, os.Stderr)
	tuneRuntime(cfg)

	if err := prepareWarehouse(ctx, cfg); err != nil {
		return err
	}
	if err := logCatalog(cfg, log); err != nil {
		return err
	}
	if err := checkWarehouseStorage(ctx, cfg, log); err != nil {
		return err
	}
	// Nothing listens, and the ready file is not written, until the
	// catalog is open.
	cat, err := openCatalog(ctx, cfg, log)
	if err != nil {
		if ctx.Err() != nil {
			// Stopped while waiting for the catalog: a clean stop.
			log.Info("stopping", "before", "the catalog was open")
			return nil
		}
		return err
	}
	defer cat.Close()
	if cfg.Demo {
		if _, err := demo.Ensure(ctx, cat); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	authn, err := auth.New(cfg.Auth)
	if err != nil {
		return err
	}
	authz, err := auth.NewAuthorizer(cfg.Auth)
	if err != nil {
		return err
	}
	tlsConfig, err := cfg.Auth.ServerTLS()
	if err != nil {
		return err
	}

	var delta *catalog.DeltaTables
	if cfg.Delta.Enabled() {
		if delta, err = newDeltaTables(ctx, cfg); err != nil {
			return err
		}
	}
	var notify *registry.FileNotifier
	if cfg.Follow.WatchFiles {
		notify = registry.NewFileNotifier(cfg.Catalog, cfg.Delta, cat, delta, log)
		defer notify.Close()
	}
	var paimon *catalog.PaimonTables
	if cfg.Paimon.Enabled() {
		props, err := storageProperties(cfg)
		if err != nil {
			return err
		}
		// Their requests outlive ctx, as the Delta tables' do.
		paimon = catalog.NewPaimonTables(context.WithoutCancel(ctx), cfg.Paimon, props)
	}
	tables := registry.New(cat, registry.Options{Authorizer: authz, Delta: delta, Paimon: paimon, Notify: notify})
	for _, check := range []func(context.Context, *slog.Logger) error{tables.CheckDelta, tables.CheckPaimon} {
		if err := check(ctx, log); err != nil {
			if errors.Is(err, registry.ErrConfig) {
				return configError{err}
			}
			return err
		}
	}
	if err := serveSpark(cfg, tables, log); err != nil {
		return err
	}
	defer tables.Close()
	// The engine and the server share the process's pool of Arrow buffers:
	// a batch's buffers serve the next once it is encoded (package arrowpool).
	arrowpool.Shared().SetLimit(cfg.Engine.BufferPoolMiB << 20)
	engine := feed.New(tables, feed.Options{
		Allocator:       arrowpool.Shared(),
		ReadConcurrency: cfg.Engine.ReadConcurrency,
		MaxBatchRows:    cfg.Engine.MaxBatchRows,
		MaxBatchBytes:   cfg.Engine.MaxBatchBytes,
		MemoryBudget:    cfg.Engine.MemoryBudgetMiB << 20,
		SpillDir:        cfg.Engine.SpillDir,
	})
	dsn := cfg.ProgressDSN()
	if err := checkProgressDir(cfg); err != nil {
		return err
	}
	store, err := progress.Open(ctx, dsn)
	if err != nil {
		return fmt.Errorf("consumer progress store: %w", err)
	}
	defer store.Close()
	guard, err := startProtection(cfg, tables, log)
	if err != nil {
		return err
	}
	metrics := server.NewMetrics(engine)
	if c := tables.Collector(); c != nil {
		metrics.Register(c)
	}
	srv := server.New(engine, server.Options{Logger: log, Progress: store, Follow: server.FollowOptions{
		PollInterval:      cfg.Follow.PollInterval,
		HeartbeatInterval: cfg.Follow.HeartbeatInterval,
		MaxBackoff:        cfg.Follow.MaxBackoff,
	}, Authenticator: authn, Authorizer: authz, Metrics: metrics, Limits: server.Limits{
		MaxStreams:             cfg.Limits.MaxStreams,
		MaxStreamsPerPrincipal: cfg.Limits.MaxStreamsPerPrincipal,
		CallsPerSecond:         cfg.Limits.CallsPerSecond,
		StallTimeout:           cfg.Limits.StallTimeout,
	}, Replicas: server.Replicas{Advertise: cfg.Replicas.Advertise, Peers: cfg.Replicas.Peers},
		DecodeCacheBytes: cfg.Engine.DecodeCacheBytes, DecodeCacheTTL: cfg.Engine.DecodeCacheTTL,
		Guard: consumerGuard(guard)})
	// The retention watch of protected consumers runs until flightd stops.
	watchCtx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		srv.WatchRetention(watchCtx, cfg.Protect.RetentionCheck)
	}()
	defer func() {
		stopWatch()
		<-watchDone
	}()

	opts := srv.ServerOptions()
	if tlsConfig != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsConfig)))
	}
	if cfg.Limits.KeepaliveTime > 0 {
		opts = append(opts, grpc.KeepaliveParams(keepalive.ServerParameters{Time: cfg.Limits.KeepaliveTime,
			Timeout: 20 * time.Second}), grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime: 10 * time.Second, PermitWithoutStream: true}))
	}
	gs := grpc.NewServer(opts...)
	srv.Register(gs)
	healthSrv := health.NewServer()
	healthpb.RegisterHealthServer(gs, healthSrv)
	if cfg.Reflection {
		reflection.Register(gs)
	}
	if exposed := cfg.publicMetrics(); exposed != "" {
		log.Warn("metrics served on an address that is not loopback (--allow-public-metrics)",
			"metrics_listen", cfg.MetricsListen, "exposes", exposed)
	}
	// Every listener is bound before anything is served or logged as
	// served: a port in use stops flightd with no "serving" line.
	lis, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", cfg.Listen, listenError(err))
	}
	sites, err := httpServices{cfg: cfg, metrics: metrics, srv: srv, authn: authn, tlsConfig: tlsConfig,
		log: log}.bindHTTP()
	if err != nil {
		lis.Close()
		return err
	}
	defer sites.stop()

	addr := lis.Addr().String()
	serveErr := make(chan error, 1)
	go func() { serveErr <- gs.Serve(lis) }()
	consoleURL := sites.serve()

	log.Info("serving", "address", addr, "catalog", cfg.Catalog.Type, "warehouse", cfg.Catalog.Warehouse,
		"progress", progress.Redact(dsn), "progress_store", store.Dialect())
	if cfg.ReadyFile != "" {
		if err := writeReadyFile(cfg.ReadyFile, addr); err != nil {
			gs.Stop()
			return err
		}
	}
	uri := "grpc://" + addr
	if tlsConfig != nil {
		uri = "grpc+tls://" + addr
	}
	if cfg.Demo {
		printDemo(out, uri, demoPython())
	} else {
		fmt.Fprintf(out, "flightd serving on %s\n", uri)
	}
	if consoleURL != "" {
		fmt.Fprintf(out, "web console on %s\n", consoleURL)
	}

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("stopping", "timeout", cfg.ShutdownTimeout)
	healthSrv.Shutdown() // health checks now answer NOT_SERVING
	// Follow streams never end by themselves: end them (Unavailable "server
	// shutting down") so that GracefulStop waits only for bounded reads.
	srv.Shutdown()
	sites.stop() // the console's live streams end with the follow streams
	stopped := make(chan struct{})
	go func() {
		gs.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(cfg.ShutdownTimeout):
		log.Warn("shutdown timeout reached; cancelling running calls")
		gs.Stop()
		<-stopped
	}
	if err := engine.Close(); err != nil {
		log.Warn("reads left running at shutdown", "error", err.Error())
	}
	return nil
}

// serveSpark routes the tables of the Spark configuration to their
// servers; the servers are asked about each table when it is first loaded.
func serveSpark(cfg Config, tables *registry.Tables, log *slog.Logger) error {
	sc, err := cfg.SparkServers()
	if err != nil {
		return configError{err}
	}
	if err := tables.ServeSpark(sc, memory.DefaultAllocator, log); err != nil {
		return configError{err}
	}
	for _, s := range sc.Servers {
		r, _ := spark.ParseRemote(s.Remote) // checked by Validate; String leaves the token out
		log.Info("serving tables through a Spark Connect server", "remote", r.String(),
			"tables", len(s.Tables), "namespaces", len(s.Namespaces), "backend", s.Backend)
	}
	return nil
}

// listenError is the reason of a failed listen, without the address that
// the net package repeats ("listen tcp 127.0.0.1:8815: bind: address
// already in use").
func listenError(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	return err
}

// tuneRuntime applies the collector settings, unless GOGC or GOMEMLIMIT
// set them.
func tuneRuntime(cfg Config) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(cfg.GCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" && cfg.MemoryLimitMiB > 0 {
		debug.SetMemoryLimit(cfg.MemoryLimitMiB << 20)
	}
}

// writeReadyFile writes the address atomically, so that a reader never sees
// a partial one.
func writeReadyFile(path, addr string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ready-*")
	if err != nil {
		return fmt.Errorf("ready file: %w", err)
	}
	if _, err := tmp.WriteString(addr + "\n"); err != nil {
		tmp.Close()
		return fmt.Errorf("ready file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("ready file: %w", err)
	}
	return os.Rename(tmp.Name(), path)
}

func newLogger(cfg Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
