package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/auth"
	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/format/delta"
	"github.com/sluicefeed/sluice/internal/lib/storage"
)

// prepareWarehouse checks the catalog configuration before it is opened
// (catalog.Preflight: a missing warehouse, an empty catalog about to be
// created beside another catalog's files, tables under another catalog
// name), after creating the warehouse directory of --demo when it is
// absent: the demo starts from nothing.
func prepareWarehouse(ctx context.Context, cfg Config) error {
	if cfg.Demo && cfg.Catalog.Type != catalog.TypeREST {
		if dir, ok := cfg.Catalog.LocalWarehouse(); ok {
			if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return fmt.Errorf("demo: create the warehouse %s: %w", dir, err)
				}
			}
		}
	}
	return catalog.Preflight(ctx, cfg.Catalog)
}

// checkProgressDir names the directory of the default consumer progress
// store when it does not exist, rather than let SQLite say "unable to open
// database file". (The default is in the warehouse, which the catalog's
// preflight checks too; a REST catalog's warehouse is not checked there.)
func checkProgressDir(cfg Config) error {
	if cfg.Progress.DSN != "" {
		return nil
	}
	dsn := cfg.ProgressDSN()
	dir := filepath.Dir(dsn)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: the consumer progress store's default place is %s, but the warehouse directory %s does not exist: check --warehouse, or set --progress-dsn",
			ErrConfig, dsn, dir)
	}
	return nil
}

// storageProperties returns the catalog's properties as its tables' file
// IO gets them: merged with its properties file, references resolved.
func storageProperties(cfg Config) (map[string]string, error) {
	props, err := cfg.Catalog.MergedProperties()
	if err == nil {
		props, err = catalog.ResolveProperties(props)
	}
	if err != nil {
		return nil, configError{err}
	}
	return props, nil
}

// checkWarehouseStorage asks the object storage of a warehouse given as a
// URL (s3://bucket/path) whether it can be read, before the catalog is
// opened: a bucket that does not exist, refused credentials or a missing
// region stop flightd, naming the cause (its tables could not be read);
// storage that cannot be reached may come back: a warning. A REST
// catalog's warehouse is the server's, and its tables are read with the
// locations and credentials it gives per table: not checked.
func checkWarehouseStorage(ctx context.Context, cfg Config, log *slog.Logger) error {
	wh := cfg.Catalog.Warehouse
	if !storage.IsURL(wh) || cfg.Catalog.Type == catalog.TypeREST {
		return nil
	}
	props, err := storageProperties(cfg)
	if err != nil {
		return err
	}
	fsys, err := storage.Open(ctx, wh, props)
	if err == nil {
		err = fsys.Check(ctx)
	}
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist):
		return nil // nothing under it yet is a new warehouse
	case errors.Is(err, storage.ErrUnavailable):
		log.Warn("the warehouse's storage cannot be read now; reads of its tables fail until it can",
			"warehouse", wh, "error", err)
		return nil
	}
	return fmt.Errorf("%w: warehouse %s: %w", ErrConfig, wh, err)
}

// newDeltaTables returns the Delta tables of cfg. Those on object storage
// are read with the catalog's storage properties, as the catalog's own
// tables are.
func newDeltaTables(ctx context.Context, cfg Config) (*catalog.DeltaTables, error) {
	props, err := storageProperties(cfg)
	if err != nil {
		return nil, err
	}
	// Their requests outlive ctx: a stop lets running reads finish
	// (ShutdownTimeout) rather than cut their storage requests short.
	return catalog.NewDeltaTables(context.WithoutCancel(ctx), cfg.Delta, props), nil
}

// suggestingTables is the catalog as the engine reads it: the error of a
// table that is not found names up to catalog.MaxSuggestions nearest
// tables that the caller may read. The caller is the principal in the
// call's context (the server's interceptors put it there); without one,
// nothing is suggested.
type suggestingTables struct {
	*catalog.Catalog
	authz *auth.Authorizer
	// delta serves the Delta tables (nil: none), each through its one
	// long-lived source.
	delta *catalog.DeltaTables
	mu    sync.Mutex // guards sources and checked
	// sources are the Delta tables' sources, by name.
	sources map[string]*delta.Source
	// checked is when each Delta table's name was last found free in the
	// Iceberg catalog.
	checked map[string]time.Time
	// notify tells of the commits to followed tables from file
	// notifications (nil: --watch-files=false).
	notify *fileNotifier
}

// nameCheckInterval is how often a Delta table's name is looked up in the
// Iceberg catalog: a table created there under the same name stops both
// from being served within this time.
const nameCheckInterval = 10 * time.Second

// Load loads a table of either format.
func (s *suggestingTables) Load(ctx context.Context, name string) (feed.Table, error) {
	if s.delta != nil && s.delta.Has(name) {
		if err := s.checkName(ctx, name); err != nil {
			return nil, err
		}
		src, err := s.deltaSource(ctx, name)
		if err != nil {
			return nil, err
		}
		return src.Load(ctx)
	}
	tbl, err := s.LoadTable(ctx, name)
	if err != nil {
		return nil, err
	}
	return s.EngineTable(tbl), nil
}

// checkName refuses a Delta table whose name the Iceberg catalog also
// serves (created there, or the Delta folder created, after start): which
// one a client meant cannot be known.
func (s *suggestingTables) checkName(ctx context.Context, name string) error {
	s.mu.Lock()
	last, ok := s.checked[name]
	s.mu.Unlock()
	if ok && time.Since(last) < nameCheckInterval {
		return nil
	}
	if _, err := s.Catalog.LoadTable(ctx, name); err == nil {
		loc, _ := s.delta.Locate(name)
		dir := ""
		if loc != nil {
			dir = " (folder " + loc.Dir + ")"
		}
		return fmt.Errorf("%w: %s is both a Delta table%s and a table of the Iceberg catalog, so neither is "+
			"served: rename one, or name the Delta table otherwise in delta.tables", catalog.ErrAmbiguous, name, dir)
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
func (s *suggestingTables) deltaSource(ctx context.Context, name string) (*delta.Source, error) {
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

// ListTables lists the tables of both formats, sorted.
func (s *suggestingTables) ListTables(ctx context.Context) ([]string, error) {
	names, err := s.Catalog.ListTables(ctx)
	if err != nil || s.delta == nil {
		return names, err
	}
	more, err := s.delta.ListTables(ctx)
	if err != nil {
		return nil, err
	}
	// A name both serve is listed once; loading it says why it is not
	// served.
	names = append(names, more...)
	slices.Sort(names)
	return slices.Compact(names), nil
}

// checkDelta checks the Delta tables at start: their locations on object
// storage (catalog.DeltaTables.Check: a bucket that does not exist, refused
// credentials, a missing region, a root or table with nothing there), then
// refuses Delta tables whose names the catalog also serves: one of them
// would be hidden. Storage that cannot be reached may come back: it is
// logged, and the checks that need it are left to each read.
func (s *suggestingTables) checkDelta(ctx context.Context, log *slog.Logger) error {
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
func (s *suggestingTables) LoadTable(ctx context.Context, name string) (*table.Table, error) {
	tbl, err := s.Catalog.LoadTable(ctx, name)
	if err == nil {
		return s.Confine(tbl), nil
	}
	if !errors.Is(err, catalog.ErrTableNotFound) {
		return tbl, err
	}
	p, ok := auth.FromContext(ctx)
	if !ok {
		return nil, err
	}
	names, serr := s.ListTables(ctx)
	if serr != nil {
		return nil, err // the suggestion is a courtesy: the error stays the NotFound
	}
	names = slices.DeleteFunc(names, func(t string) bool { return !s.authz.CanRead(p, t) })
	return nil, catalog.DidYouMean(err, catalog.Nearest(name, names, catalog.MaxSuggestions))
}
