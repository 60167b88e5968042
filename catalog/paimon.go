package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/sluicefeed/sluice/internal/lib/storage"
)

// PaimonNamespace is the first part of the names of the tables of a
// Paimon warehouse: the table t of database d is "paimon.d.t".
const PaimonNamespace = "paimon"

// paimonDBSuffix ends the folder of a database in a Paimon filesystem
// catalog's warehouse (<warehouse>/<db>.db/<table>).
const paimonDBSuffix = ".db"

// PaimonConfig says where Paimon tables are.
type PaimonConfig struct {
	// Warehouse is the warehouse of a Paimon filesystem catalog
	// (--paimon-warehouse, SLUICE_PAIMON_WAREHOUSE; paimon.warehouse in
	// YAML): every table folder <warehouse>/<db>.db/<table> holding a
	// schema/ folder is served as "paimon.<db>.<table>". A local folder, or
	// an object-store URL (s3://bucket/prefix, gs://, abfs(s)://) read
	// with the catalog's storage properties. Tables are looked for again
	// on every listing, so tables created later appear. Default: none.
	Warehouse string `yaml:"warehouse"`
	// FollowSymlinks reads what symbolic links in a local warehouse point
	// to outside it (--paimon-follow-symlinks,
	// SLUICE_PAIMON_FOLLOW_SYMLINKS; paimon.follow_symlinks in YAML).
	// Default false: a read of a file that resolves out of the warehouse
	// fails with FAILED_PRECONDITION, naming the file and this setting.
	FollowSymlinks bool `yaml:"follow_symlinks"`
}

// Enabled reports whether a Paimon warehouse is configured.
func (c PaimonConfig) Enabled() bool { return c.Warehouse != "" }

// Validate checks the configuration: a local warehouse must be a folder;
// one on object storage is only parsed here (PaimonTables.Check asks the
// storage at start).
func (c PaimonConfig) Validate() error {
	switch {
	case c.Warehouse == "":
		return nil
	case storage.IsURL(c.Warehouse):
		if err := checkURL(c.Warehouse); err != nil {
			return fmt.Errorf("%w: --paimon-warehouse %v", ErrInvalidConfig, err)
		}
		return nil
	}
	st, err := os.Stat(c.Warehouse)
	if err != nil {
		return fmt.Errorf("%w: --paimon-warehouse %s: %v", ErrInvalidConfig, c.Warehouse, unwrapPathError(err))
	}
	if !st.IsDir() {
		return fmt.Errorf("%w: --paimon-warehouse %s is not a folder", ErrInvalidConfig, c.Warehouse)
	}
	return nil
}

// PaimonTables finds the tables of a Paimon warehouse. It is safe for
// concurrent use.
type PaimonTables struct {
	cfg PaimonConfig
	// root is the warehouse on object storage (nil otherwise), local the
	// local one (nil otherwise), rootErr why it could not be opened.
	root    *storage.FS
	local   *storage.Local
	rootErr error
}

// NewPaimonTables serves the tables of the Paimon warehouse of cfg. One
// on object storage is read with the storage properties props; ctx bounds
// its requests, so it must last as long as the tables are served.
func NewPaimonTables(ctx context.Context, cfg PaimonConfig, props map[string]string) *PaimonTables {
	p := &PaimonTables{cfg: cfg}
	switch {
	case storage.IsURL(cfg.Warehouse):
		p.root, p.rootErr = storage.Open(ctx, strings.TrimRight(cfg.Warehouse, "/"), props)
	case cfg.Warehouse != "":
		p.local, p.rootErr = storage.OpenLocal(cfg.Warehouse, cfg.Warehouse,
			storage.LocalOptions{FollowSymlinks: cfg.FollowSymlinks, Setting: "paimon.follow_symlinks"})
	}
	return p
}

// Check asks the object storage of the warehouse what Validate cannot:
// that the bucket exists and the credentials are accepted. Its errors
// wrap ErrInvalidConfig, or the storage's.
func (p *PaimonTables) Check(ctx context.Context) error {
	if p.rootErr != nil {
		return fmt.Errorf("%w: --paimon-warehouse %v", ErrInvalidConfig, p.rootErr)
	}
	if p.root == nil {
		return nil
	}
	err := p.root.Check(ctx)
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist):
		// Nothing stored yet: tables may be created later.
		return nil
	}
	return fmt.Errorf("--paimon-warehouse %s: %w", p.root.Root(), storageError(err))
}

// fsys is the warehouse's files.
func (p *PaimonTables) fsys() (fs.FS, error) {
	switch {
	case p.rootErr != nil:
		return nil, fmt.Errorf("%w: --paimon-warehouse %v", ErrInvalidConfig, p.rootErr)
	case p.root != nil:
		return p.root, nil
	case p.local != nil:
		return p.local, nil
	}
	return nil, fmt.Errorf("%w: no Paimon warehouse", ErrTableNotFound)
}

// ListTables returns the names of the warehouse's tables, sorted.
func (p *PaimonTables) ListTables(context.Context) ([]string, error) {
	fsys, err := p.fsys()
	if err != nil {
		return nil, err
	}
	dbs, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("list the Paimon warehouse %s: %w", p.cfg.Warehouse, storageError(err))
	}
	var names []string
	for _, d := range dbs {
		db, ok := strings.CutSuffix(d.Name(), paimonDBSuffix)
		if !ok || db == "" || !d.IsDir() {
			continue
		}
		tables, err := fs.ReadDir(fsys, d.Name())
		if err != nil {
			return nil, fmt.Errorf("list the Paimon database %s: %w", db, storageError(err))
		}
		for _, t := range tables {
			if !t.IsDir() {
				continue
			}
			if ok, err := p.isTable(fsys, d.Name()+"/"+t.Name()); err != nil {
				return nil, err
			} else if ok {
				names = append(names, PaimonNamespace+"."+db+"."+t.Name())
			}
		}
	}
	slices.Sort(names)
	return names, nil
}

// isTable reports whether the folder dir of the warehouse holds a Paimon
// table (a schema/ folder).
func (p *PaimonTables) isTable(fsys fs.FS, dir string) (bool, error) {
	if p.root != nil {
		ok, err := p.root.HasDir(dir + "/schema")
		if err != nil {
			return false, storageError(err)
		}
		return ok, nil
	}
	st, err := fs.Stat(fsys, dir+"/schema")
	return err == nil && st.IsDir(), nil
}

// folder returns the folder (<db>.db/<table>) of the table name, false
// when name is no name of a Paimon table.
func paimonFolder(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, PaimonNamespace+".")
	if !ok {
		return "", false
	}
	db, table, ok := strings.Cut(rest, ".")
	if !ok || db == "" || table == "" || strings.ContainsAny(rest, `/\`) || strings.Contains(table, ".") ||
		db == ".." || table == ".." {
		return "", false
	}
	return path.Join(db+paimonDBSuffix, table), true
}

// Has reports whether name is a table of the warehouse. When the storage
// cannot say, it reports true: loading the table then names the cause.
func (p *PaimonTables) Has(name string) bool {
	dir, ok := paimonFolder(name)
	if !ok {
		return false
	}
	fsys, err := p.fsys()
	if err != nil {
		return true
	}
	has, err := p.isTable(fsys, dir)
	return has || err != nil
}

// Locate returns the files of the table name, rooted at its folder
// (ErrTableNotFound when the warehouse has no such table).
func (p *PaimonTables) Locate(name string) (fs.FS, error) {
	dir, ok := paimonFolder(name)
	if !ok || !p.Has(name) {
		return nil, fmt.Errorf("%w: %s", ErrTableNotFound, name)
	}
	fsys, err := p.fsys()
	if err != nil {
		return nil, err
	}
	if p.local != nil {
		sub, err := p.local.Sub(dir)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalidConfig, name, err)
		}
		return sub, nil
	}
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidConfig, name, err)
	}
	return sub, nil
}
