package registry

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"strconv"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/filter"
	"github.com/sluicefeed/sluice/internal/lib/errclass"
	"github.com/sluicefeed/sluice/spark"
)

// sparkRouter routes the tables of its configuration to their Spark
// Connect servers: per table, the verdict of spark.Session.Detect, cached
// while the table stays loaded and detected again after a failed read.
type sparkRouter struct {
	cfg      SparkConfig
	sessions []*spark.Session // by server, as in cfg
	log      *slog.Logger
	verdicts *prometheus.GaugeVec

	mu sync.Mutex // guards cached, described and labels
	// cached are the verdicts of Spark-routed tables, by Sluice name.
	cached map[string]spark.Verdict
	// described are the descriptions of the tables Spark alone serves, by
	// Sluice name.
	described map[string]spark.Description
	// labels are the metric labels set for each table, to delete when its
	// verdict changes.
	labels map[string]prometheus.Labels
}

// newSparkRouter opens a session on each server of cfg (connections are
// made on first use: a server down at start is found by the first
// detection, and its tables then fall back or fail as their backend says).
func newSparkRouter(cfg SparkConfig, mem memory.Allocator, log *slog.Logger) (*sparkRouter, error) {
	r := &sparkRouter{cfg: cfg, log: log, cached: map[string]spark.Verdict{},
		described: map[string]spark.Description{}, labels: map[string]prometheus.Labels{},
		verdicts: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_table_backend",
			Help: "The backend verdict of each table configured for a Spark Connect server (1 per table)."},
			[]string{"table", "backend", "chosen", "fell_back"})}
	for _, s := range cfg.Servers {
		sess, err := spark.Dial(s.Remote, spark.Options{Allocator: mem, Logger: log})
		if err != nil {
			r.close()
			return nil, fmt.Errorf("%w: spark server %s: %w", ErrConfig, redactRemote(s.Remote), err)
		}
		r.sessions = append(r.sessions, sess)
	}
	return r, nil
}

// close releases the sessions.
func (r *sparkRouter) close() {
	for _, s := range r.sessions {
		ctx, cancel := context.WithTimeout(context.Background(), 5e9)
		_ = s.Close(ctx) // best effort: the server forgets idle sessions
		cancel()
	}
}

// route returns native, loaded by Sluice, routed as the configuration and
// the verdict say; native itself for a table that no server routes.
func (r *sparkRouter) route(ctx context.Context, name string, native feed.Table) (feed.Table, error) {
	rt, ok := r.cfg.lookup(name)
	if !ok {
		return native, nil
	}
	sess := r.sessions[rt.server]
	remote := sess.Remote()
	if rt.backend == BackendNative {
		v := feed.Verdict{Backend: feed.BackendNative, Remote: remote, Chosen: string(spark.EngineNative),
			Reason: "backend: native in the configuration: Spark is not asked"}
		r.setMetric(name, v)
		return feed.Routed(native, feed.Route{Verdict: v, Native: true}), nil
	}
	t := spark.Table{Name: rt.name, Format: sparkFormat(native.Format()), NativeReadable: true}
	verdict, err := r.verdict(ctx, name, sess, t)
	if err != nil {
		if rt.backend == BackendSpark || !fallsBack(err) {
			return nil, fmt.Errorf("table %s through Spark (%s): %w", name, remote, err)
		}
		// auto: serve natively, and say why; detect again next load.
		v := feed.Verdict{Backend: feed.BackendNative, Remote: remote, Chosen: string(spark.EngineNative),
			FellBack: true, Reason: "Spark was not asked: " + err.Error()}
		r.log.Warn("spark: change engine fell back", "table", name, "remote", remote, "chosen", v.Chosen,
			"fell_back", true, "reason", v.Reason)
		r.setMetric(name, v)
		return feed.Routed(native, feed.Route{Verdict: v, Native: true}), nil
	}
	v := feed.Verdict{Backend: feed.BackendSpark, Remote: remote, Chosen: string(verdict.Chosen),
		ServerVersion: verdict.ServerVersion, NativeExpected: verdict.NativeExpected,
		NativeUsable: verdict.NativeUsable, FellBack: verdict.FellBack, Reason: verdict.Reason}
	route := feed.Route{Verdict: v, Native: true}
	if verdict.Chosen == spark.EngineNative {
		v.Backend = feed.BackendNative
		route.Verdict = v
		if rt.backend == BackendSpark {
			return nil, fmt.Errorf("%w: table %s has backend: spark, but no Spark engine serves it: %s",
				spark.ErrNoChangeEngine, name, verdict.Reason)
		}
	} else {
		route.Backend = &sparkWindows{router: r, name: name, sess: sess, table: t, engine: verdict.Chosen}
	}
	r.setMetric(name, route.Verdict)
	return feed.Routed(native, route), nil
}

// fallsBack reports whether a detection error lets auto serve the table
// natively, by its class (errclass): the server is unreachable
// (Unavailable), does not know the table (NotFound), or refused the probes
// (FailedPrecondition). A request Spark cannot be sent (InvalidArgument: a
// name that does not parse) or a bug fails the load.
func fallsBack(err error) bool {
	c, _ := errclass.Of(err)
	switch c {
	case errclass.Unavailable, errclass.NotFound, errclass.FailedPrecondition:
		return true
	}
	return false
}

// verdict returns the table's cached verdict, or detects it (logged by
// the session: info when chosen, warn when it fell back).
func (r *sparkRouter) verdict(ctx context.Context, name string, sess *spark.Session, t spark.Table) (spark.Verdict, error) {
	r.mu.Lock()
	v, ok := r.cached[name]
	r.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := sess.Detect(ctx, t, spark.Window{})
	if err != nil {
		return v, err
	}
	r.mu.Lock()
	r.cached[name] = v
	r.mu.Unlock()
	return v, nil
}

// forget drops a table's cached verdict (and description): the next load
// detects again.
func (r *sparkRouter) forget(name string) {
	r.mu.Lock()
	delete(r.cached, name)
	delete(r.described, name)
	r.mu.Unlock()
}

// setMetric sets the table's verdict metric, replacing its last one.
func (r *sparkRouter) setMetric(name string, v feed.Verdict) {
	l := prometheus.Labels{"table": name, "backend": v.Backend, "chosen": v.Chosen,
		"fell_back": strconv.FormatBool(v.FellBack)}
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.labels[name]; ok {
		r.verdicts.Delete(prev)
	}
	r.labels[name] = l
	r.verdicts.With(l).Set(1)
}

func sparkFormat(f string) spark.Format {
	switch f {
	case feed.FormatDelta:
		return spark.Delta
	case feed.FormatIceberg:
		return spark.Iceberg
	}
	return spark.Other
}

// sparkWindows answers a table's windows through its Spark engine.
type sparkWindows struct {
	router *sparkRouter
	name   string
	sess   *spark.Session
	table  spark.Table
	engine spark.Engine
}

// PushFilter reports how much of a filter Spark evaluates: what
// spark.FromFilter translates into its SQL.
func (w *sparkWindows) PushFilter(e filter.Expr) (pushed, exact bool) {
	x, exact := spark.FromFilter(e)
	return x != nil, exact
}

// ReadWindow reads the window through Spark, with the part of its filter
// that Spark's SQL can write. A failed read (but for the
// caller's cancellation) forgets the table's verdict, so that the next
// load detects again.
func (w *sparkWindows) ReadWindow(ctx context.Context, fw feed.Window) iter.Seq2[arrow.RecordBatch, error] {
	req := spark.Request{Table: w.table, Engine: w.engine, Window: spark.Window{To: spark.AtVersion(fw.To)},
		Columns: fw.Columns, Identity: fw.Identity}
	if fw.Filter != nil {
		req.Filter, _ = spark.FromFilter(fw.Filter)
	}
	if fw.From != nil {
		req.Window.From = spark.AtVersion(*fw.From)
	}
	return func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range w.sess.Read(ctx, req) {
			if err != nil {
				if ctx.Err() == nil {
					w.router.forget(w.name)
				}
				yield(nil, fmt.Errorf("table %s through Spark (%s, %s): %w", w.name, w.sess.Remote(), w.engine, err))
				return
			}
			rec.Retain() // the session releases it when yield returns; the engine releases ours
			if !yield(rec, nil) {
				return
			}
		}
	}
}
