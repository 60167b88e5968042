package catalog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/hadoop"
	"github.com/apache/iceberg-go/catalog/rest"
	icesql "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"

	_ "modernc.org/sqlite" // the pure-Go "sqlite" database/sql driver
)

// sqliteBusyTimeoutMs is how long a SQLite catalog call waits for a lock
// held by a concurrent writer (pyiceberg, iceberg-go) before failing.
const sqliteBusyTimeoutMs = 10000

// Catalog loads tables from one iceberg-go catalog. It is safe for
// concurrent use.
type Catalog struct {
	cfg Config
	ice icecatalog.Catalog
}

// Open opens the catalog that cfg describes. For the embedded default (a
// SQLite file at its default place in a local warehouse) it creates the
// warehouse directory and the catalog file when they are absent; a catalog
// file named explicitly must exist.
func Open(ctx context.Context, cfg Config) (*Catalog, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	warehouse, err := cfg.warehouseURL()
	if err != nil {
		return nil, err
	}
	props := iceberg.Properties{}
	maps.Copy(props, cfg.Properties)
	if warehouse != "" {
		props["warehouse"] = warehouse
	}

	var ice icecatalog.Catalog
	switch cfg.Type {
	case TypeSQL:
		ice, err = openSQL(ctx, cfg, props)
	case TypeREST:
		ice, err = rest.NewCatalog(ctx, cfg.Name, cfg.URI, rest.WithAdditionalProps(props))
	case TypeHadoop:
		if dir, ok := cfg.localWarehouse(); ok {
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
	return &Catalog{cfg: cfg, ice: ice}, nil
}

func openSQL(ctx context.Context, cfg Config, props iceberg.Properties) (icecatalog.Catalog, error) {
	path, isDefault, err := cfg.sqliteFile()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: catalog file %s: %v", ErrUnavailable, path, err)
		}
		if !isDefault {
			return nil, fmt.Errorf("%w: catalog file %s does not exist", ErrInvalidConfig, path)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("%w: create warehouse %s: %v", ErrInvalidConfig, filepath.Dir(path), err)
		}
	}
	dsn := (&url.URL{Scheme: "file", Opaque: filepath.ToSlash(path),
		RawQuery: fmt.Sprintf("_pragma=busy_timeout(%d)", sqliteBusyTimeoutMs)}).String()
	props = maps.Clone(props)
	props["type"] = TypeSQL
	props["uri"] = dsn
	props[icesql.DriverKey] = "sqlite"
	props[icesql.DialectKey] = string(icesql.SQLite)
	return icecatalog.Load(ctx, cfg.Name, props)
}

// Config returns the configuration the catalog was opened with, defaults
// applied.
func (c *Catalog) Config() Config { return c.cfg }

// Iceberg returns the underlying iceberg-go catalog, for writers (the demo,
// tests) that create and commit to tables.
func (c *Catalog) Iceberg() icecatalog.Catalog { return c.ice }

// LoadTable loads the current metadata of the table named
// "namespace.table".
func (c *Catalog) LoadTable(ctx context.Context, name string) (*table.Table, error) {
	ident, err := ParseName(name)
	if err != nil {
		return nil, err
	}
	tbl, err := c.ice.LoadTable(ctx, ident)
	if err != nil {
		return nil, c.classify(name, err)
	}
	return tbl, nil
}

// ListTables returns the names of every table in every namespace, sorted.
func (c *Catalog) ListTables(ctx context.Context) ([]string, error) {
	var names []string
	var walk func(parent table.Identifier) error
	walk = func(parent table.Identifier) error {
		namespaces, err := c.ice.ListNamespaces(ctx, parent)
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
			for ident, err := range c.ice.ListTables(ctx, ns) {
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
	if closer, ok := c.ice.(interface{ Close() error }); ok {
		return closer.Close()
	}
	return nil
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
