package catalog

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"
)

// Catalog types accepted in Config.Type.
const (
	TypeSQL    = "sql"
	TypeREST   = "rest"
	TypeHadoop = "hadoop"
)

// Defaults of Config.
const (
	DefaultType = TypeSQL
	DefaultName = "sluice"
	// DefaultWarehouse is the warehouse of the sql and hadoop catalogs. A
	// rest catalog has no default: its server knows its warehouses.
	DefaultWarehouse = "./warehouse"
	// DefaultStartTimeout is how long flightd retries a catalog that is
	// unavailable at start.
	DefaultStartTimeout = 3 * time.Minute
	// DefaultCatalogFile is the SQLite file of the embedded catalog, inside
	// the warehouse directory.
	DefaultCatalogFile = "catalog.db"
)

// Config selects and configures the catalog. The zero value, after
// WithDefaults, is the embedded default: a SQLite catalog named "sluice" in
// ./warehouse/catalog.db. The zero StartTimeout is not defaulted: it means
// "fail at once".
type Config struct {
	// Type is the catalog implementation: "sql" (default), "rest" or
	// "hadoop".
	Type string `yaml:"type"`
	// URI locates the catalog. For "sql" it is the SQLite file, as
	// file:///abs/path/catalog.db or a plain path (default
	// <warehouse>/catalog.db); for "rest" the server URL; unused for
	// "hadoop".
	URI string `yaml:"uri"`
	// Warehouse is the warehouse location: a local directory or a URL. New
	// tables are created below it; the Hadoop catalog reads tables from it.
	// For "rest" it is the warehouse identifier the server expects (a
	// location such as s3://bucket/wh, or a catalog name for Polaris or
	// Lakekeeper), sent as it is with the first request (GET
	// /v1/config?warehouse=...); it has no default there, and nothing
	// local is made of it.
	Warehouse string `yaml:"warehouse"`
	// Name is the catalog name. The SQL catalog stores it with every table,
	// so it must match the name the writers used (pyiceberg's and
	// iceberg-go's SqlCatalog take it as their first argument).
	Name string `yaml:"name"`
	// Properties are iceberg-go's catalog and file IO properties (REST
	// credentials, S3 settings: see KnownProperties). A value may be a
	// reference, ${env:NAME} or ${file:PATH}, resolved when the catalog is
	// opened (see ResolveProperties). They override PropertiesFile's.
	Properties map[string]string `yaml:"properties"`
	// PropertiesFile is a YAML file of more properties, a map of names to
	// values (a mounted Kubernetes Secret, say), read when the catalog is
	// opened (flightd's --catalog-properties-file).
	PropertiesFile string `yaml:"properties_file"`
	// StartTimeout is how long flightd retries, with a backoff, a catalog
	// that is unavailable at start before it gives up (flightd's
	// --catalog-start-timeout); 0: it gives up at once. A catalog that
	// refuses the configuration (bad credentials, not a REST catalog) is
	// never retried.
	StartTimeout time.Duration `yaml:"start_timeout"`
	// Create allows what Preflight otherwise refuses: a local warehouse
	// directory that does not exist, and the default catalog file created
	// in a warehouse that already holds tables or other catalog files. Open
	// then creates the warehouse directory and the catalog file. flightd's
	// --create-catalog.
	Create bool `yaml:"create"`
	// FollowSymlinks reads what symbolic links in a local warehouse point
	// to outside it (flightd's --catalog-follow-symlinks; YAML
	// catalog.follow_symlinks). Default false: a file of a table that lies
	// in the warehouse but resolves out of it fails its read with
	// FAILED_PRECONDITION naming it and this setting, as a Delta root's
	// files do (delta.follow_symlinks). Files a table's metadata names
	// outside the warehouse (a table created with a location of its own)
	// are read where they are.
	FollowSymlinks bool `yaml:"follow_symlinks"`
}

// FollowSymlinksSettingCatalog is the name of Config.FollowSymlinks in
// messages.
const FollowSymlinksSettingCatalog = "catalog.follow_symlinks"

// WithDefaults returns c with every unset field set to its default.
func (c Config) WithDefaults() Config {
	if c.Type == "" {
		c.Type = DefaultType
	}
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.Warehouse == "" && c.Type != TypeREST {
		c.Warehouse = DefaultWarehouse
	}
	return c
}

// Validate reports whether the configuration can open a catalog.
func (c Config) Validate() error {
	switch c.Type {
	case TypeSQL, TypeHadoop:
	case TypeREST:
		if c.URI == "" {
			return fmt.Errorf("%w: the rest catalog needs a URI (the server URL)", ErrInvalidConfig)
		}
		if err := checkHTTPURL(c.URI); err != nil {
			return fmt.Errorf("%w: the rest catalog URI %q %v: pass the server's base URL, as http://host:8181 (without /v1)",
				ErrInvalidConfig, RedactURI(c.URI), err)
		}
	default:
		return fmt.Errorf("%w: unknown catalog type %q (want sql, rest or hadoop)", ErrInvalidConfig, c.Type)
	}
	if c.Name == "" {
		return fmt.Errorf("%w: empty catalog name", ErrInvalidConfig)
	}
	if c.Type != TypeREST && c.Warehouse == "" {
		return fmt.Errorf("%w: the %s catalog needs a warehouse", ErrInvalidConfig, c.Type)
	}
	if c.StartTimeout < 0 {
		return fmt.Errorf("%w: the catalog start timeout %s is negative", ErrInvalidConfig, c.StartTimeout)
	}
	return nil
}

// checkHTTPURL reports what makes uri no http(s) URL of a host.
func checkHTTPURL(uri string) error {
	u, err := url.Parse(uri)
	switch {
	case err != nil:
		return fmt.Errorf("is malformed (%v)", err.(*url.Error).Err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("is not an http:// or https:// URL")
	case u.Host == "":
		return fmt.Errorf("names no host")
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("has a query or a fragment")
	}
	return nil
}

// warehouseURL returns the warehouse as a URL: a local directory becomes
// file:///abs/dir.
func (c Config) warehouseURL() (string, error) {
	if c.Warehouse == "" {
		return "", nil
	}
	if strings.Contains(c.Warehouse, "://") {
		return strings.TrimRight(c.Warehouse, "/"), nil
	}
	abs, err := filepath.Abs(c.Warehouse)
	if err != nil {
		return "", fmt.Errorf("%w: warehouse %q: %v", ErrInvalidConfig, c.Warehouse, err)
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String(), nil
}

// LocalWarehouse returns the warehouse directory, absolute, when it is on
// the local filesystem. A rest catalog's warehouse is the server's, never
// a local directory.
func (c Config) LocalWarehouse() (string, bool) {
	w := c.Warehouse
	if c.Type == TypeREST || w == "" {
		return "", false
	}
	if strings.HasPrefix(w, "file://") {
		u, err := url.Parse(w)
		if err != nil {
			return "", false
		}
		return u.Path, true
	}
	if strings.Contains(w, "://") {
		return "", false
	}
	abs, err := filepath.Abs(w)
	if err != nil {
		return "", false
	}
	return abs, true
}

// sqliteFile returns the path of the SQLite catalog file and whether it is
// the default location inside the warehouse.
func (c Config) sqliteFile() (path string, isDefault bool, err error) {
	if c.URI == "" {
		dir, ok := c.LocalWarehouse()
		if !ok {
			return "", false, fmt.Errorf("%w: the sql catalog on a remote warehouse needs an explicit URI", ErrInvalidConfig)
		}
		return filepath.Join(dir, DefaultCatalogFile), true, nil
	}
	uri := c.URI
	switch {
	case strings.HasPrefix(uri, "file://"):
		u, err := url.Parse(uri)
		if err != nil {
			return "", false, fmt.Errorf("%w: catalog URI %q: %v", ErrInvalidConfig, uri, err)
		}
		if u.Host != "" && u.Host != "localhost" {
			return "", false, fmt.Errorf("%w: catalog URI %q: a file URI must be file:///absolute/path", ErrInvalidConfig, uri)
		}
		uri = u.Path
	case strings.HasPrefix(uri, "sqlite:///"):
		// SQLAlchemy's form, as pyiceberg users write it.
		uri = strings.TrimPrefix(uri, "sqlite:///")
		if !strings.HasPrefix(uri, "/") {
			uri = "./" + uri
		}
	case strings.Contains(uri, "://"):
		return "", false, fmt.Errorf("%w: catalog URI %q: the sql catalog takes a SQLite file (file:///abs/path/catalog.db)", ErrInvalidConfig, c.URI)
	}
	abs, err := filepath.Abs(uri)
	if err != nil {
		return "", false, fmt.Errorf("%w: catalog URI %q: %v", ErrInvalidConfig, c.URI, err)
	}
	return abs, false, nil
}
