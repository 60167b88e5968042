package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicefeed/sluice/auth"
	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/format/delta"
	"github.com/sluicefeed/sluice/format/paimon"
	"github.com/sluicefeed/sluice/internal/lib/errclass"
	"github.com/sluicefeed/sluice/internal/lib/storage"
)

// Options are the parts of a Tables beside its Iceberg catalog.
type Options struct {
	// Authorizer filters the tables suggested for a name that is not
	// found to those the caller may read (nil: nothing is suggested).
	Authorizer *auth.Authorizer
	// Delta serves the Delta tables (nil: none).
	Delta *catalog.DeltaTables
	// Paimon serves the tables of a Paimon warehouse (nil: none).
	Paimon *catalog.PaimonTables
	// Notify tells of the commits to followed tables from file
	// notifications (nil: none, polling alone finds them).
	Notify *FileNotifier
}

// New returns the tables of cat, of opts.Delta and of opts.Paimon.
func New(cat *catalog.Catalog, opts Options) *Tables {
	return &Tables{Catalog: cat, authz: opts.Authorizer, delta: opts.Delta, paimon: opts.Paimon, notify: opts.Notify,
		sources: map[string]*delta.Source{}, paimonSources: map[string]*paimon.Source{},
		checked: map[string]time.Time{}}
}

// Tables is the catalog as the engine reads it: the error of a
// table that is not found names up to catalog.MaxSuggestions nearest
// tables that the caller may read. The caller is the principal in the
// call's context (the server's interceptors put it there); without one,
// nothing is suggested.
type Tables struct {
	*catalog.Catalog
	authz *auth.Authorizer
	// delta serves the Delta tables (nil: none), each through its one
	// long-lived source.
	delta *catalog.DeltaTables
	// paimon serves the tables of a Paimon warehouse (nil: none), each
	// through its one long-lived source.
	paimon *catalog.PaimonTables
	mu     sync.Mutex // guards sources, paimonSources and checked
	// sources are the Delta tables' sources, by name.
	sources map[string]*delta.Source
	// paimonSources are the Paimon tables' sources, by name.
	paimonSources map[string]*paimon.Source
	// checked is when each Delta or Paimon table's name was last found
	// free in the Iceberg catalog.
	checked map[string]time.Time
	// notify tells of the commits to followed tables from file
	// notifications (nil: --watch-files=false).
	notify *FileNotifier
	// spark routes the tables of the Spark configuration (nil: none).
	spark *sparkRouter
}

// ServeSpark routes the tables that cfg names to their Spark Connect
// servers (see SparkConfig), logging each verdict to log; Close ends the
// sessions. Call it before the tables are served.
func (s *Tables) ServeSpark(cfg SparkConfig, mem memory.Allocator, log *slog.Logger) error {
	if !cfg.Enabled() {
		return nil
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	r, err := newSparkRouter(cfg, mem, log)
	if err != nil {
		return err
	}
	s.spark = r
	return nil
}

// Collector returns the metric of the Spark verdicts,
// sluice_table_backend{table, backend, chosen, fell_back} (nil without
// Spark servers).
func (s *Tables) Collector() prometheus.Collector {
	if s.spark == nil {
		return nil
	}
	return s.spark.verdicts
}

// Close ends the Spark sessions.
func (s *Tables) Close() error {
	if s.spark != nil {
		s.spark.close()
	}
	return nil
}

// nameCheckInterval is how often a Delta or Paimon table's name is looked up in the
// Iceberg catalog: a table created there under the same name stops both
// from being served within this time.
const nameCheckInterval = 10 * time.Second

// Load loads a table of any format, routed to its Spark Connect
// server when the Spark configuration names it (see ServeSpark). A routed
// table that Sluice does not find (NotFound) is served by Spark alone,
// with its history as Spark reports it.
func (s *Tables) Load(ctx context.Context, name string) (feed.Table, error) {
	if s.spark == nil {
		return s.loadNative(ctx, name, true)
	}
	// A name Spark may serve alone is not suggested others when Sluice
	// does not find it: that would list Spark's namespaces on every load.
	tbl, err := s.loadNative(ctx, name, !s.spark.mayServeAlone(name))
	if err != nil {
		if c, _ := errclass.Of(err); c != errclass.NotFound {
			return nil, err
		}
		only, ok, serr := s.spark.sparkOnly(ctx, name)
		if !ok {
			return nil, err
		}
		return only, serr
	}
	return s.spark.route(ctx, name, tbl)
}

// loadNative loads a table of any format as Sluice reads it; suggest
// names the nearest tables in the error of an Iceberg table not found.
func (s *Tables) loadNative(ctx context.Context, name string, suggest bool) (feed.Table, error) {
	if s.paimon != nil && s.paimon.Has(name) {
		if err := s.checkName(ctx, name, func() string { return "a Paimon table" }, ""); err != nil {
			return nil, err
		}
		src, err := s.paimonSource(ctx, name)
		if err != nil {
			return nil, err
		}
		return src.Load(ctx)
	}
	if s.delta != nil && s.delta.Has(name) {
		what := func() string {
			if loc, _ := s.delta.Locate(name); loc != nil {
				return "a Delta table (folder " + loc.Dir + ")"
			}
			return "a Delta table"
		}
		if err := s.checkName(ctx, name, what, ", or name the Delta table otherwise in delta.tables"); err != nil {
			return nil, err
		}
		src, err := s.deltaSource(ctx, name)
		if err != nil {
			return nil, err
		}
		return src.Load(ctx)
	}
	if !suggest {
		tbl, err := s.Catalog.LoadTable(ctx, name)
		if err != nil {
			return nil, err
		}
		return s.EngineTable(s.Confine(tbl)), nil
	}
	tbl, err := s.LoadTable(ctx, name)
	if err != nil {
		return nil, err
	}
	return s.EngineTable(tbl), nil
}

// checkName refuses a Delta or Paimon table (what, with how else to
// resolve the clash) whose name the Iceberg catalog also serves (created
// there, or the table's folder created, after start): which one a client
// meant cannot be known.
func (s *Tables) checkName(ctx context.Context, name string, what func() string, otherwise string) error {
	s.mu.Lock()
	last, ok := s.checked[name]
	s.mu.Unlock()
	if ok && time.Since(last) < nameCheckInterval {
		return nil
	}
	if _, err := s.Catalog.LoadTable(ctx, name); err == nil {
		return fmt.Errorf("%w: %s is both %s and a table of the Iceberg catalog, so neither is "+
			"served: rename one%s", catalog.ErrAmbiguous, name, what(), otherwise)
	} else if !errors.Is(err, catalog.ErrTableNotFound) {
		// The catalog cannot say: serve the Delta table, and ask again
		// next time.
		return nil
	}
	s.mu.Lock()
	s.checked[name] = time.Now()
	s.mu.Unlock()
	return nil
}

// deltaSource returns the source of the Delta table name.
func (s *Tables) deltaSource(ctx context.Context, name string) (*delta.Source, error) {
	s.mu.Lock()
	src, ok := s.sources[name]
	s.mu.Unlock()
	if ok {
		return src, nil
	}
	loc, err := s.delta.Locate(name)
	if err != nil {
		return nil, err
	}
	src, err = delta.NewSource(ctx, loc.FS, name, delta.WithRoot(loc.Root))
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := s.sources[name]; ok {
		return prev, nil
	}
	s.sources[name] = src
	return src, nil
}

// paimonSource returns the source of the Paimon table name.
func (s *Tables) paimonSource(ctx context.Context, name string) (*paimon.Source, error) {
	s.mu.Lock()
	src, ok := s.paimonSources[name]
	s.mu.Unlock()
	if ok {
		return src, nil
	}
	fsys, err := s.paimon.Locate(name)
	if err != nil {
		return nil, err
	}
	if src, err = paimon.NewSource(ctx, fsys, name); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := s.paimonSources[name]; ok {
		return prev, nil
	}
	s.paimonSources[name] = src
	return src, nil
}

// ListTables lists the tables of every format, sorted.
func (s *Tables) ListTables(ctx context.Context) ([]string, error) {
	names, err := s.Catalog.ListTables(ctx)
	if err != nil {
		return names, err
	}
	var more []string
	if s.delta != nil {
		if more, err = s.delta.ListTables(ctx); err != nil {
			return nil, err
		}
	}
	if s.paimon != nil {
		pm, err := s.paimon.ListTables(ctx)
		if err != nil {
			return nil, err
		}
		more = append(more, pm...)
	}
	if s.spark != nil {
		more = append(more, s.spark.list(ctx)...)
	}
	// A name both serve is listed once; loading it says why it is not
	// served.
	names = append(names, more...)
	slices.Sort(names)
	return slices.Compact(names), nil
}

// CheckDelta checks the Delta tables at start: their locations on object
// storage (catalog.DeltaTables.Check: a bucket that does not exist, refused
// credentials, a missing region, a root or table with nothing there), then
// refuses Delta tables whose names the catalog also serves: one of them
// would be hidden. Storage that cannot be reached may come back: it is
// logged, and the checks that need it are left to each read.
func (s *Tables) CheckDelta(ctx context.Context, log *slog.Logger) error {
	if s.delta == nil {
		return nil
	}
	if err := s.delta.Check(ctx); err != nil {
		if errors.Is(err, storage.ErrUnavailable) || errors.Is(err, catalog.ErrUnavailable) {
			log.Warn("the storage of the Delta tables cannot be reached; their reads fail until it can",
				"error", err)
			return nil
		}
		return configError{err}
	}
	ice, err := s.Catalog.ListTables(ctx)
	if err != nil {
		return err
	}
	sv, err := s.delta.Survey(ctx)
	if err != nil {
		return err
	}
	logSurvey(log, sv)
	for _, n := range slices.Concat(sv.Tables, sv.Named) {
		if _, found := slices.BinarySearch(ice, n); found {
			return fmt.Errorf("%w: %s is both a Delta table and a table of the Iceberg catalog: rename one, or "+
				"name the Delta table otherwise in delta.tables", ErrConfig, n)
		}
	}
	return nil
}

// CheckPaimon checks the Paimon warehouse at start: its storage
// (catalog.PaimonTables.Check), then refuses Paimon tables whose names the
// Iceberg catalog also serves. Storage that cannot be reached may come
// back: it is logged, and the checks that need it are left to each read.
func (s *Tables) CheckPaimon(ctx context.Context, log *slog.Logger) error {
	if s.paimon == nil {
		return nil
	}
	if err := s.paimon.Check(ctx); err != nil {
		if errors.Is(err, storage.ErrUnavailable) || errors.Is(err, catalog.ErrUnavailable) {
			log.Warn("the storage of the Paimon warehouse cannot be reached; its tables' reads fail until it can",
				"error", err)
			return nil
		}
		return configError{err}
	}
	names, err := s.paimon.ListTables(ctx)
	if err != nil {
		return err
	}
	ice, err := s.Catalog.ListTables(ctx)
	if err != nil {
		return err
	}
	for _, n := range names {
		if _, found := slices.BinarySearch(ice, n); found {
			return fmt.Errorf("%w: %s is both a Paimon table and a table of the Iceberg catalog: rename one",
				ErrConfig, n)
		}
	}
	log.Info("serving the tables of a Paimon warehouse", "tables", len(names))
	return nil
}

// logSurvey logs what the Delta root holds at start: how many tables, the
// root that is itself a table's folder, the sub-folders that links lead
// out of (not served).
func logSurvey(log *slog.Logger, sv catalog.Survey) {
	switch {
	case sv.RootTable != "":
		log.Info("the Delta root is a table's own folder (it holds _delta_log): serving it as "+sv.RootTable+
			"; to serve every table of a folder, give --delta-root the folder that holds the tables' folders",
			"root", sv.Root, "table", sv.RootTable)
	case sv.Root != "" && len(sv.Tables) == 0:
		log.Info("the Delta root holds no table yet (no sub-folder holds a _delta_log folder); tables created "+
			"under it are served as they appear", "root", sv.Root, "tables", 0)
	case sv.Root != "":
		log.Info("serving the Delta tables of a root", "root", sv.Root, "tables", len(sv.Tables))
	}
	if len(sv.Named) > 0 {
		log.Info("serving the Delta tables of delta.tables", "tables", len(sv.Named))
	}
	for _, sk := range sv.Skipped {
		log.Warn("not serving "+sk.Name+": its folder is a symbolic link out of the Delta root (set "+
			catalog.FollowSymlinksSetting+": true to serve it)", "table", sk.Name, "reason", sk.Reason)
	}
}

// LoadTable loads the table for reading (its files in a local warehouse
// confined to it: catalog.Confine), and suggests others, of both formats,
// when it is not found.
func (s *Tables) LoadTable(ctx context.Context, name string) (*table.Table, error) {
	tbl, err := s.Catalog.LoadTable(ctx, name)
	if err == nil {
		return s.Confine(tbl), nil
	}
	if !errors.Is(err, catalog.ErrTableNotFound) {
		return tbl, err
	}
	p, ok := auth.FromContext(ctx)
	if !ok || s.authz == nil {
		return nil, err
	}
	names, serr := s.ListTables(ctx)
	if serr != nil {
		return nil, err // the suggestion is a courtesy: the error stays the NotFound
	}
	names = slices.DeleteFunc(names, func(t string) bool { return !s.authz.CanRead(p, t) })
	return nil, catalog.DidYouMean(err, catalog.Nearest(name, names, catalog.MaxSuggestions))
}
