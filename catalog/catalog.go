package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/hadoop"
	icesql "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	_ "modernc.org/sqlite" // the pure-Go "sqlite" database/sql driver

	icebergformat "github.com/sluicefeed/sluice/format/iceberg"
	"github.com/sluicefeed/sluice/internal/lib/storage"
	"github.com/sluicefeed/sluice/lake"
)

// sqliteBusyTimeoutMs is how long a SQLite catalog call waits for a lock
// held by a concurrent writer (pyiceberg, iceberg-go) before failing.
const sqliteBusyTimeoutMs = 10000

// Catalog loads tables from one iceberg-go catalog. It is safe for
// concurrent use.
//
// An sql catalog holds its SQLite file open. Every call first checks that
// the file is still there, and still the file it opened: a file moved away
// or deleted fails the call with ErrUnavailable (the open connections would
// otherwise go on reading the vanished file), and a file replaced by
// another one (a restore from a backup, a new file renamed into place) is
// opened anew, so that the catalog never serves a state its file no longer
// holds.
type Catalog struct {
	cfg Config
	// file is the SQLite file of an sql catalog ("" for the other types);
	// props are the properties it is opened with.
	file  string
	props iceberg.Properties

	// mu guards ice, opened and locDB.
	mu  sync.Mutex
	ice icecatalog.Catalog
	// opened identifies the file ice has open (sql catalogs).
	opened os.FileInfo
	// locDB reads the metadata locations of an sql catalog's tables from
	// the file ice has open (nil: other types, or it could not be opened),
	// and loaded keeps the tables it loaded (see loadedTables).
	locDB  *sql.DB
	loaded *loadedTables
	// plans keeps what the engine's planning read of the tables'
	// snapshots, across loads (see Load).
	plans *icebergformat.Cache
}

// Open opens the catalog that cfg describes. For the embedded default (a
// SQLite file at its default place in a local warehouse) it creates the
// warehouse directory and the catalog file when they are absent; a catalog
// file named explicitly must exist, unless cfg.Create. Open is what a
// writer calls; a server calls Preflight first, which refuses to create
// anything by mistake.
func Open(ctx context.Context, cfg Config) (*Catalog, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	resolved, err := cfg.properties()
	if err != nil {
		return nil, err
	}
	props := iceberg.Properties(maps.Clone(resolved))
	cfg.Properties, cfg.PropertiesFile = resolved, ""
	c := &Catalog{cfg: cfg, plans: icebergformat.NewCache(), loaded: newLoadedTables()}
	if cfg.Type == TypeREST {
		ice, err := openREST(ctx, cfg, props)
		if err != nil {
			return nil, err
		}
		c.ice = ice
		return c, nil
	}
	warehouse, err := cfg.warehouseURL()
	if err != nil {
		return nil, err
	}
	if warehouse != "" {
		props["warehouse"] = warehouse
	}

	var ice icecatalog.Catalog
	switch cfg.Type {
	case TypeSQL:
		ice, err = c.openSQL(ctx, props)
	case TypeHadoop:
		if dir, ok := cfg.LocalWarehouse(); ok {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("%w: create warehouse %s: %v", ErrInvalidConfig, dir, err)
			}
		}
		ice, err = hadoop.NewCatalog(cfg.Name, warehouse, props)
	}
	if err != nil {
		if errors.Is(err, ErrInvalidConfig) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: open %s catalog %q: %v", ErrUnavailable, cfg.Type, cfg.Name, err)
	}
	c.ice = ice
	return c, nil
}

// openSQL opens the SQLite catalog file, creating it first for the
// embedded default.
func (c *Catalog) openSQL(ctx context.Context, props iceberg.Properties) (icecatalog.Catalog, error) {
	path, isDefault, err := c.cfg.sqliteFile()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: catalog file %s: %v", ErrUnavailable, path, err)
		}
		if !isDefault && !c.cfg.Create {
			return nil, fmt.Errorf("%w: catalog file %s does not exist", ErrInvalidConfig, path)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("%w: create warehouse %s: %v", ErrInvalidConfig, filepath.Dir(path), err)
		}
		// An empty file is an empty SQLite database.
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("%w: create catalog file %s: %v", ErrInvalidConfig, path, err)
		}
		f.Close()
	}
	if dir, ok := c.cfg.LocalWarehouse(); ok && c.cfg.Create {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("%w: create warehouse %s: %v", ErrInvalidConfig, dir, err)
		}
	}
	c.file = path
	c.props = maps.Clone(props)
	ice, opened, err := loadSQLFile(ctx, c.cfg.Name, c.props, path)
	c.opened = opened
	if err == nil {
		// Without it, every load reads the table's metadata file.
		c.locDB, _ = openLocationDB(path)
	}
	return ice, err
}

// loadSQLFile opens the catalog in an existing SQLite file and returns it
// with the file's identity as it was opened.
func loadSQLFile(ctx context.Context, name string, props iceberg.Properties, path string) (icecatalog.Catalog, os.FileInfo, error) {
	// Stat before the open: a replacement in between is seen by the next
	// call, which opens the file again.
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: catalog file %s: %v", ErrUnavailable, path, err)
	}
	// mode=rw: a connection opened while the file is gone fails, rather
	// than create an empty catalog in its place.
	dsn := (&url.URL{Scheme: "file", Opaque: filepath.ToSlash(path),
		RawQuery: fmt.Sprintf("mode=rw&_pragma=busy_timeout(%d)", sqliteBusyTimeoutMs)}).String()
	props = maps.Clone(props)
	props["type"] = TypeSQL
	props["uri"] = dsn
	props[icesql.DriverKey] = "sqlite"
	props[icesql.DialectKey] = string(icesql.SQLite)
	ice, err := icecatalog.Load(ctx, name, props)
	return ice, fi, err
}

// current returns the iceberg-go catalog to call: for an sql catalog, after
// checking its file (see Catalog).
func (c *Catalog) current(ctx context.Context) (icecatalog.Catalog, error) {
	c.mu.Lock()
	ice, replaced, err := c.check(ctx)
	c.mu.Unlock()
	if replaced != nil {
		// The replaced file's connections: Close waits for the queries
		// running on them. Its error is no concern of this call, which the
		// new file serves.
		_ = closeIceberg(replaced)
	}
	return ice, err
}

// check returns the catalog of the file now at the catalog's path, opening
// it when it is not the one open, and then the replaced catalog to close.
// c.mu must be held.
func (c *Catalog) check(ctx context.Context) (ice, replaced icecatalog.Catalog, err error) {
	if c.file == "" {
		return c.ice, nil, nil
	}
	fi, err := os.Stat(c.file)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: catalog file %s: %v", ErrUnavailable, c.file, err)
	}
	if os.SameFile(fi, c.opened) {
		return c.ice, nil, nil
	}
	ice, opened, err := loadSQLFile(ctx, c.cfg.Name, c.props, c.file)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: open the new catalog file %s: %v", ErrUnavailable, c.file, err)
	}
	replaced = c.ice
	c.ice, c.opened = ice, opened
	if c.locDB != nil {
		_ = c.locDB.Close()
	}
	c.locDB, _ = openLocationDB(c.file)
	return ice, replaced, nil
}

func closeIceberg(ice icecatalog.Catalog) error {
	if closer, ok := ice.(interface{ Close() error }); ok {
		return closer.Close()
	}
	return nil
}

// Config returns the configuration the catalog was opened with, defaults
// applied, and its Properties as they were given to iceberg-go: the
// properties file's merged in (PropertiesFile is then ""), references
// resolved. It holds the secrets: never log it (see RedactProperties).
func (c *Catalog) Config() Config {
	cfg := c.cfg
	cfg.Properties = maps.Clone(c.cfg.Properties)
	return cfg
}

// File returns the SQLite file of an sql catalog (a local path), "" for
// the other types.
func (c *Catalog) File() string { return c.file }

// Iceberg returns the underlying iceberg-go catalog, for writers (the demo,
// tests) that create and commit to tables.
func (c *Catalog) Iceberg() icecatalog.Catalog {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ice
}

// Load loads the current state of the table named "namespace.table" as
// the change engine reads it (format/iceberg.NewTable), with one cache of
// what planning read of its snapshots for every load: a Catalog is the
// engine's feed.Tables.
func (c *Catalog) Load(ctx context.Context, name string) (lake.Table, error) {
	tbl, err := c.LoadTable(ctx, name)
	if err != nil {
		return nil, err
	}
	return c.EngineTable(tbl), nil
}

// EngineTable presents a table of the catalog to the change engine
// (format/iceberg.NewTable) with the catalog's cache of what planning read
// of its snapshots: for callers that load tables their own way (a
// registry that confines them to a local root).
func (c *Catalog) EngineTable(tbl *table.Table) lake.Table {
	return icebergformat.NewTable(tbl, c.plans)
}

// LoadTable loads the current metadata of the table named
// "namespace.table".
func (c *Catalog) LoadTable(ctx context.Context, name string) (*table.Table, error) {
	ident, err := ParseName(name)
	if err != nil {
		return nil, err
	}
	ice, err := c.current(ctx)
	if err != nil {
		return nil, err
	}
	var tbl *table.Table
	if c.file != "" {
		tbl, err = c.loadCached(ctx, ice, name, ident)
	} else {
		tbl, err = ice.LoadTable(ctx, ident)
	}
	if err != nil {
		return nil, c.classify(name, err)
	}
	return tbl, nil
}

// Confine returns tbl, a table of the catalog, for reading: its files
// under a local warehouse are read inside it (storage.ConfineIO), so that
// none resolves out of the warehouse unless FollowSymlinks. The table it
// returns reads only (it has no catalog to commit to, and its file IO
// offers reads alone); writers use LoadTable's.
func (c *Catalog) Confine(tbl *table.Table) *table.Table {
	dir, ok := c.cfg.LocalWarehouse()
	if !ok || c.cfg.FollowSymlinks {
		return tbl
	}
	l, err := storage.OpenLocal(dir, dir, storage.LocalOptions{Setting: FollowSymlinksSettingCatalog})
	if err != nil {
		return tbl
	}
	fsF := func(ctx context.Context) (iceio.IO, error) {
		fsys, err := tbl.FS(ctx)
		if err != nil {
			return nil, err
		}
		return storage.ConfineIO(fsys, l), nil
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), fsF, nil)
}

// ListTables returns the names of every table in every namespace, sorted.
func (c *Catalog) ListTables(ctx context.Context) ([]string, error) {
	ice, err := c.current(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	var walk func(parent table.Identifier) error
	walk = func(parent table.Identifier) error {
		namespaces, err := ice.ListNamespaces(ctx, parent)
		if err != nil {
			if parent != nil && errors.Is(err, icecatalog.ErrNoSuchNamespace) {
				return nil
			}
			return err
		}
		for _, ns := range namespaces {
			if len(ns) <= len(parent) {
				continue // some catalogs list the parent itself
			}
			for ident, err := range ice.ListTables(ctx, ns) {
				if err != nil {
					if errors.Is(err, icecatalog.ErrNoSuchNamespace) {
						break
					}
					return err
				}
				names = append(names, FormatName(ident))
			}
			if err := walk(ns); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(nil); err != nil {
		return nil, fmt.Errorf("%w: list tables: %v", ErrUnavailable, err)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Close releases the catalog's connections.
func (c *Catalog) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.locDB != nil {
		_ = c.locDB.Close()
		c.locDB = nil
	}
	return closeIceberg(c.ice)
}

func (c *Catalog) classify(name string, err error) error {
	switch {
	case errors.Is(err, icecatalog.ErrNoSuchTable), errors.Is(err, icecatalog.ErrNoSuchNamespace):
		return fmt.Errorf("%w: %s", ErrTableNotFound, name)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	default:
		return fmt.Errorf("%w: load table %s: %v", ErrUnavailable, name, err)
	}
}

// ParseName splits "namespace.table" into an iceberg identifier. The last
// dot separates the table from its namespace.
func ParseName(name string) (table.Identifier, error) {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 || i == len(name)-1 {
		return nil, fmt.Errorf("%w: %q (want namespace.table)", ErrInvalidName, name)
	}
	ident := append(strings.Split(name[:i], "."), name[i+1:])
	for _, part := range ident {
		if part == "" || strings.TrimSpace(part) != part {
			return nil, fmt.Errorf("%w: %q (want namespace.table)", ErrInvalidName, name)
		}
	}
	return ident, nil
}

// FormatName joins an identifier into "namespace.table".
func FormatName(ident table.Identifier) string { return strings.Join(ident, ".") }
