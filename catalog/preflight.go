package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// sqliteExts are the extensions of the files a warehouse may hold SQLite
// catalogs in (pyiceberg's examples say pyiceberg_catalog.db).
var sqliteExts = []string{".db", ".sqlite", ".sqlite3", ".db3"}

// maxNamed is how many folders a message names before "and N more".
const maxNamed = 5

// Preflight checks, before a server opens the catalog cfg describes, that
// it would serve what its operator means rather than nothing, or another
// catalog's tables, in silence. It refuses, with an error wrapping
// ErrInvalidConfig that says what it found and what to pass:
//
//   - a local warehouse that does not exist (a mistyped --warehouse),
//     unless cfg.Create;
//   - for the sql catalog, a catalog file named by URI that does not
//     exist, unless cfg.Create;
//   - for the sql catalog at its default place, absent, a warehouse that
//     already holds table folders or other catalog files (Open would
//     create an empty catalog.db beside them), unless cfg.Create;
//   - a SQLite file that is not an Iceberg catalog;
//   - a catalog file that holds tables only under catalog names other than
//     cfg.Name: the SQL catalog keeps each table under the name of the
//     catalog that wrote it, and serves only those of its own name.
//
// For every catalog type, it refuses properties whose references
// (${env:NAME}, ${file:PATH}) cannot be resolved, and an unreadable
// properties file. It only reads. A REST catalog's server is not asked:
// Open does.
func Preflight(ctx context.Context, cfg Config) error {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	if _, err := cfg.properties(); err != nil {
		return err
	}
	if cfg.Type == TypeREST {
		return nil
	}
	dir, local := cfg.LocalWarehouse()
	if local {
		fi, err := os.Stat(dir)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if !cfg.Create {
				return fmt.Errorf("%w: the warehouse %s does not exist: check --warehouse (or pass --create-catalog to create it, with an empty catalog)",
					ErrInvalidConfig, shownPath(cfg.Warehouse, dir))
			}
		case err != nil:
			return fmt.Errorf("%w: warehouse %s: %v", ErrInvalidConfig, shownPath(cfg.Warehouse, dir), err)
		case !fi.IsDir():
			return fmt.Errorf("%w: the warehouse %s is not a directory: check --warehouse", ErrInvalidConfig,
				shownPath(cfg.Warehouse, dir))
		}
	}
	if cfg.Type != TypeSQL {
		return nil
	}
	path, isDefault, err := cfg.sqliteFile()
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); err != nil {
		switch {
		case !errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("%w: catalog file %s: %v", ErrUnavailable, path, err)
		case cfg.Create:
			return nil
		case !isDefault:
			return fmt.Errorf("%w: the catalog file %s does not exist: check --catalog-uri (or pass --create-catalog to create an empty catalog there)",
				ErrInvalidConfig, path)
		}
		return checkFresh(ctx, cfg, dir)
	}
	return checkCatalogName(ctx, path, cfg.Name)
}

// shownPath is a path as the user gave it, with its absolute form when that
// differs.
func shownPath(given, abs string) string {
	if filepath.Clean(given) == abs {
		return given
	}
	return given + " (" + abs + ")"
}

// sqliteContents is what a SQLite file holds, as Preflight sees it.
type sqliteContents struct {
	// tables counts the database's tables of any kind.
	tables int
	// catalogs counts the Iceberg tables under each catalog name; nil when
	// the database has no iceberg_tables table.
	catalogs map[string]int
}

// readSQLite reads what the SQLite file at path holds, read-only.
func readSQLite(ctx context.Context, path string) (sqliteContents, error) {
	var c sqliteContents
	dsn := (&url.URL{Scheme: "file", Opaque: filepath.ToSlash(path),
		RawQuery: fmt.Sprintf("mode=ro&_pragma=busy_timeout(%d)", sqliteBusyTimeoutMs)}).String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return c, err
	}
	defer db.Close()
	var iceberg int
	if err := db.QueryRowContext(ctx, `SELECT count(*), count(CASE WHEN name = 'iceberg_tables' THEN 1 END)
		FROM sqlite_master WHERE type = 'table'`).Scan(&c.tables, &iceberg); err != nil {
		return c, err
	}
	if iceberg == 0 {
		return c, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT catalog_name, count(*) FROM iceberg_tables GROUP BY catalog_name`)
	if err != nil {
		return c, err
	}
	defer rows.Close()
	c.catalogs = map[string]int{}
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			return c, err
		}
		c.catalogs[name] = n
	}
	return c, rows.Err()
}

// checkCatalogName refuses a catalog file that is not an Iceberg catalog,
// or whose tables are all under other catalog names than name.
func checkCatalogName(ctx context.Context, path, name string) error {
	c, err := readSQLite(ctx, path)
	if err != nil {
		return fmt.Errorf("%w: the catalog file %s is not a readable SQLite database (%v): check --catalog-uri",
			ErrInvalidConfig, path, err)
	}
	if c.catalogs == nil {
		if c.tables > 0 {
			return fmt.Errorf("%w: the file %s is a SQLite database but not an Iceberg catalog (it has no iceberg_tables table): check --catalog-uri",
				ErrInvalidConfig, path)
		}
		return nil // empty: a new catalog
	}
	if c.catalogs[name] > 0 || len(c.catalogs) == 0 {
		return nil
	}
	others := sortedNames(c.catalogs)
	fix := "pass --catalog-name " + others[0]
	if len(others) > 1 {
		fix = "pass --catalog-name with the name its writers used"
	}
	return fmt.Errorf("%w: the catalog file %s holds no table of the catalog %q, but %s: %s (the SQL catalog keeps each table under the name of the catalog that wrote it)",
		ErrInvalidConfig, path, name, describeCatalogs(c.catalogs), fix)
}

// sortedNames returns the catalog names, sorted.
func sortedNames(catalogs map[string]int) []string {
	names := make([]string, 0, len(catalogs))
	for n := range catalogs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// describeCatalogs says what tables a catalog file holds: `1 table of
// "lake"`, `tables of "a" (2), "b" (1)`.
func describeCatalogs(catalogs map[string]int) string {
	names := sortedNames(catalogs)
	switch {
	case len(names) == 0:
		return "no table"
	case len(names) == 1:
		return fmt.Sprintf("%s of %q", plural(catalogs[names[0]], "table"), names[0])
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%q (%d)", n, catalogs[n])
	}
	return "tables of " + strings.Join(parts, ", ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// foundCatalog is a catalog file found in a warehouse.
type foundCatalog struct {
	file     string
	catalogs map[string]int
}

// checkFresh refuses to create the default catalog file in a warehouse
// that holds table folders or catalog files: a server would serve an empty
// catalog beside them. dir is the warehouse directory (which may be absent:
// then it is fresh).
func checkFresh(ctx context.Context, cfg Config, dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: warehouse %s: %v", ErrInvalidConfig, dir, err)
	}
	var catalogs []foundCatalog
	var folders, unreadable []string
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, "."):
		case e.IsDir():
			folders = append(folders, name)
		case e.Type().IsRegular() && slices.Contains(sqliteExts, strings.ToLower(filepath.Ext(name))):
			c, err := readSQLite(ctx, filepath.Join(dir, name))
			switch {
			case err != nil:
				unreadable = append(unreadable, name)
			case c.catalogs != nil:
				catalogs = append(catalogs, foundCatalog{name, c.catalogs})
			}
			// A SQLite database that is no catalog (the consumer progress
			// store) is no concern of the catalog's.
		}
	}
	if len(catalogs)+len(folders)+len(unreadable) == 0 {
		return nil
	}

	var found []string
	for _, c := range catalogs {
		found = append(found, fmt.Sprintf("%s (%s)", c.file, describeCatalogs(c.catalogs)))
	}
	for _, u := range unreadable {
		found = append(found, u+" (not a readable SQLite file)")
	}
	if len(folders) > 0 {
		shown := folders[:min(len(folders), maxNamed)]
		f := "the folders " + strings.Join(shown, ", ")
		if len(folders) == 1 {
			f = "the folder " + shown[0]
		}
		if len(folders) > maxNamed {
			f += fmt.Sprintf(" and %d more", len(folders)-maxNamed)
		}
		found = append(found, f)
	}

	var fix string
	switch {
	case len(catalogs) == 1 && len(catalogs[0].catalogs) <= 1:
		c := catalogs[0]
		uri := (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(dir, c.file))}).String()
		fix = "pass --catalog-uri " + uri
		if names := sortedNames(c.catalogs); len(names) == 1 && names[0] != cfg.Name {
			fix += " --catalog-name " + names[0]
		}
		fix += " to serve it"
	case len(catalogs) > 0:
		fix = "pass --catalog-uri with the file its writers used (and --catalog-name with their catalog's name)"
	case hadoopLayout(dir):
		fix = "it looks like a Hadoop warehouse: pass --catalog-type hadoop"
	default:
		fix = "pass --catalog-uri with the catalog file its writers used"
	}
	return fmt.Errorf("%w: the warehouse %s has no %s but holds %s: %s, or --create-catalog to create an empty %s there",
		ErrInvalidConfig, shownPath(cfg.Warehouse, dir), DefaultCatalogFile, andList(found), fix, DefaultCatalogFile)
}

// hadoopLayout reports whether dir holds tables as a Hadoop catalog lays
// them out: <namespace>/<table>/metadata/version-hint.text.
func hadoopLayout(dir string) bool {
	for _, pattern := range []string{"*/*/metadata/version-hint.text", "*/*/*/metadata/version-hint.text"} {
		if m, _ := filepath.Glob(filepath.Join(dir, pattern)); len(m) > 0 {
			return true
		}
	}
	return false
}

// andList joins items as "a", "a and b", "a, b and c".
func andList(items []string) string {
	if len(items) == 1 {
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
