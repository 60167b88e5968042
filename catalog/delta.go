package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DeltaNamespace is the namespace of the tables found under a Delta root:
// the sub-folder t of the root is the table "delta.t".
const DeltaNamespace = "delta"

// DeltaConfig says where Delta tables are.
type DeltaConfig struct {
	// Root is a folder whose every direct sub-folder holding a _delta_log
	// folder is served as the table "delta.<sub-folder name>" (--delta-root,
	// SLUICE_DELTA_ROOT). Sub-folders are looked for again on every listing,
	// so tables created later appear. Default: none.
	Root string `yaml:"root"`
	// Tables names Delta tables one by one: "namespace.table" to the table's
	// root folder, as a local path or a file:// URL (YAML only).
	Tables map[string]string `yaml:"tables"`
}

// Enabled reports whether any Delta table is configured.
func (c DeltaConfig) Enabled() bool { return c.Root != "" || len(c.Tables) > 0 }

// Validate checks the configuration against the file system: the root must
// be a folder, and each named table a folder holding a _delta_log folder.
func (c DeltaConfig) Validate() error {
	if c.Root != "" {
		st, err := os.Stat(c.Root)
		if err != nil {
			return fmt.Errorf("%w: --delta-root %s: %v", ErrInvalidConfig, c.Root, unwrapPathError(err))
		}
		if !st.IsDir() {
			return fmt.Errorf("%w: --delta-root %s is not a folder", ErrInvalidConfig, c.Root)
		}
	}
	names := make([]string, 0, len(c.Tables))
	for name := range c.Tables {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if _, err := ParseName(name); err != nil {
			return fmt.Errorf("%w: delta.tables: %v", ErrInvalidConfig, err)
		}
		dir, err := localPath(c.Tables[name])
		if err != nil {
			return fmt.Errorf("%w: delta.tables %s: %v", ErrInvalidConfig, name, err)
		}
		if st, err := os.Stat(filepath.Join(dir, "_delta_log")); err != nil || !st.IsDir() {
			return fmt.Errorf("%w: delta.tables %s: %s holds no _delta_log folder, so it is not a Delta table",
				ErrInvalidConfig, name, dir)
		}
		if folder, ok := strings.CutPrefix(name, DeltaNamespace+"."); ok && c.Root != "" {
			if st, err := os.Stat(filepath.Join(c.Root, folder, "_delta_log")); err == nil && st.IsDir() {
				return fmt.Errorf("%w: delta.tables %s names %s, and the Delta root %s serves its folder %s under "+
					"the same name: name one of them otherwise", ErrInvalidConfig, name, dir, c.Root, folder)
			}
		}
	}
	return nil
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// localPath turns a table location of delta.tables into a local folder.
func localPath(loc string) (string, error) {
	if strings.HasPrefix(loc, "file:") {
		u, err := url.Parse(loc)
		if err != nil {
			return "", err
		}
		return filepath.FromSlash(u.Path), nil
	}
	if i := strings.Index(loc, "://"); i > 0 {
		return "", fmt.Errorf("%s: %s URLs are not supported yet: serve Delta tables from a local folder",
			loc, loc[:i])
	}
	return filepath.Abs(loc)
}

// DeltaTables finds the Delta tables a DeltaConfig names. It is safe for
// concurrent use.
type DeltaTables struct {
	cfg DeltaConfig
}

// DeltaLocation is where a Delta table is: its name, its root folder and
// the files under it.
type DeltaLocation struct {
	Name string
	// Dir is the table's root folder, Root the same as a file:// URL.
	Dir, Root string
	FS        fs.FS
}

// NewDeltaTables serves the Delta tables of cfg.
func NewDeltaTables(cfg DeltaConfig) *DeltaTables {
	return &DeltaTables{cfg: cfg}
}

// dirs returns the folder of every Delta table, by name.
func (d *DeltaTables) dirs() (map[string]string, error) {
	out := map[string]string{}
	if d.cfg.Root != "" {
		entries, err := os.ReadDir(d.cfg.Root)
		if err != nil {
			return nil, fmt.Errorf("%w: list the Delta root %s: %v", ErrUnavailable, d.cfg.Root, err)
		}
		for _, e := range entries {
			dir := filepath.Join(d.cfg.Root, e.Name())
			if st, err := os.Stat(filepath.Join(dir, "_delta_log")); err == nil && st.IsDir() {
				out[DeltaNamespace+"."+e.Name()] = dir
			}
		}
	}
	for name, loc := range d.cfg.Tables {
		dir, err := localPath(loc)
		if err != nil {
			return nil, fmt.Errorf("%w: delta.tables %s: %v", ErrInvalidConfig, name, err)
		}
		out[name] = dir
	}
	return out, nil
}

// ListTables returns the names of the Delta tables, sorted.
func (d *DeltaTables) ListTables(context.Context) ([]string, error) {
	dirs, err := d.dirs()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(dirs))
	for n := range dirs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// Has reports whether name is a Delta table.
func (d *DeltaTables) Has(name string) bool {
	if _, ok := d.cfg.Tables[name]; ok {
		return true
	}
	if d.cfg.Root == "" || !strings.HasPrefix(name, DeltaNamespace+".") {
		return false
	}
	folder := strings.TrimPrefix(name, DeltaNamespace+".")
	if folder == "" || strings.ContainsAny(folder, `/\`) || folder == "." || folder == ".." {
		return false
	}
	st, err := os.Stat(filepath.Join(d.cfg.Root, folder, "_delta_log"))
	return err == nil && st.IsDir()
}

// Locate returns where the Delta table name is (ErrTableNotFound when
// there is none).
func (d *DeltaTables) Locate(name string) (*DeltaLocation, error) {
	if !d.Has(name) {
		return nil, fmt.Errorf("%w: %s", ErrTableNotFound, name)
	}
	dir := filepath.Join(d.cfg.Root, strings.TrimPrefix(name, DeltaNamespace+"."))
	if loc, ok := d.cfg.Tables[name]; ok {
		var err error
		if dir, err = localPath(loc); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalidConfig, name, err)
		}
	}
	root := (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
	return &DeltaLocation{Name: name, Dir: dir, Root: root, FS: os.DirFS(dir)}, nil
}
