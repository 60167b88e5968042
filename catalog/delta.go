package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sluicefeed/sluice/internal/lib/storage"
)

// DeltaNamespace is the namespace of the tables found under a Delta root:
// the sub-folder t of the root is the table "delta.t".
const DeltaNamespace = "delta"

// DeltaConfig says where Delta tables are.
type DeltaConfig struct {
	// Root is a folder whose every direct sub-folder holding a _delta_log
	// folder is served as the table "delta.<sub-folder name>" (--delta-root,
	// SLUICE_DELTA_ROOT): a local folder, or an object-store URL
	// (s3://bucket/prefix, gs://, abfs(s)://). Sub-folders are looked for
	// again on every listing, so tables created later appear. Default:
	// none.
	Root string `yaml:"root"`
	// Tables names Delta tables one by one: "namespace.table" to the table's
	// root folder, as a local path, a file:// URL or an object-store URL
	// (YAML only).
	Tables map[string]string `yaml:"tables"`
	// FollowSymlinks reads what symbolic links in a local Delta root, or
	// in the folder of a local table of Tables, point to outside them
	// (--delta-follow-symlinks, SLUICE_DELTA_FOLLOW_SYMLINKS). Default
	// false: a sub-folder of the root that links out of it is not served
	// (flightd warns at start, naming it), and a read of a log or data
	// file that resolves out of its root fails with FAILED_PRECONDITION,
	// naming the file and this setting. Links that stay inside the root
	// are followed either way.
	FollowSymlinks bool `yaml:"follow_symlinks"`
}

// FollowSymlinksSetting is the name of DeltaConfig.FollowSymlinks in
// messages.
const FollowSymlinksSetting = "delta.follow_symlinks"

// localOptions are the options of the local roots' files.
func (c DeltaConfig) localOptions() storage.LocalOptions {
	return storage.LocalOptions{FollowSymlinks: c.FollowSymlinks, Setting: FollowSymlinksSetting}
}

// Enabled reports whether any Delta table is configured.
func (c DeltaConfig) Enabled() bool { return c.Root != "" || len(c.Tables) > 0 }

// Validate checks the configuration: a local root must be a folder, and
// each local named table a folder holding a _delta_log folder. Locations
// on object storage are only parsed here: (*DeltaTables).Check asks the
// storage at start.
func (c DeltaConfig) Validate() error {
	if c.Root != "" && storage.IsURL(c.Root) {
		if err := checkURL(c.Root); err != nil {
			return fmt.Errorf("%w: --delta-root %v", ErrInvalidConfig, err)
		}
	} else if c.Root != "" {
		st, err := os.Stat(c.Root)
		if err != nil {
			return fmt.Errorf("%w: --delta-root %s: %v", ErrInvalidConfig, c.Root, unwrapPathError(err))
		}
		if !st.IsDir() {
			return fmt.Errorf("%w: --delta-root %s is not a folder", ErrInvalidConfig, c.Root)
		}
	}
	for _, name := range c.names() {
		if _, err := ParseName(name); err != nil {
			return fmt.Errorf("%w: delta.tables: %v", ErrInvalidConfig, err)
		}
		if loc := c.Tables[name]; storage.IsURL(loc) {
			if err := checkURL(loc); err != nil {
				return fmt.Errorf("%w: delta.tables %s: %v", ErrInvalidConfig, name, err)
			}
			continue
		}
		dir, err := localPath(c.Tables[name])
		if err != nil {
			return fmt.Errorf("%w: delta.tables %s: %v", ErrInvalidConfig, name, err)
		}
		if st, err := os.Stat(filepath.Join(dir, "_delta_log")); err != nil || !st.IsDir() {
			return fmt.Errorf("%w: delta.tables %s: %s holds no _delta_log folder, so it is not a Delta table",
				ErrInvalidConfig, name, dir)
		}
		if folder, ok := strings.CutPrefix(name, DeltaNamespace+"."); ok && c.Root != "" && !storage.IsURL(c.Root) {
			if st, err := os.Stat(filepath.Join(c.Root, folder, "_delta_log")); err == nil && st.IsDir() {
				return fmt.Errorf("%w: delta.tables %s names %s, and the Delta root %s serves its folder %s under "+
					"the same name: name one of them otherwise", ErrInvalidConfig, name, dir, c.Root, folder)
			}
		}
	}
	return nil
}

// names returns the names of delta.tables, sorted.
func (c DeltaConfig) names() []string {
	names := make([]string, 0, len(c.Tables))
	for name := range c.Tables {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// checkURL checks the form of an object-store location.
func checkURL(loc string) error {
	u, err := url.Parse(loc)
	if err != nil {
		return fmt.Errorf("%s: %v", loc, err)
	}
	if u.Host == "" {
		return fmt.Errorf("%s: no bucket: write %s://bucket/path", loc, u.Scheme)
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
	return filepath.Abs(loc)
}

// DeltaTables finds the Delta tables a DeltaConfig names. It is safe for
// concurrent use.
type DeltaTables struct {
	cfg DeltaConfig
	// ctx bounds the requests to object storage (fs.FS has no context per
	// call): the tables' whole use.
	ctx context.Context
	// props are the storage properties of tables on object storage.
	props map[string]string
	// root is the Delta root when it is on object storage (nil
	// otherwise), rootErr why it could not be opened.
	root    *storage.FS
	rootErr error
	// local is the Delta root when it is a local folder (nil otherwise).
	local *storage.Local
	// rootTable is the name of the table the root itself holds ("": the
	// root holds tables in its sub-folders). Set by NewDeltaTables for a
	// local root, by Check for one on object storage; read-only after.
	rootTable string
}

// DeltaLocation is where a Delta table is: its name, its root folder and
// the files under it.
type DeltaLocation struct {
	Name string
	// Dir is the table's root folder (a local path, or the URL of a table
	// on object storage), Root the same as a URL.
	Dir, Root string
	FS        fs.FS
}

// NewDeltaTables serves the Delta tables of cfg. Tables on object storage
// are read with the storage properties props (the catalog's: s3.endpoint,
// s3.region, s3.access-key-id, ...); ctx bounds their requests, so it
// must last as long as the tables are served.
func NewDeltaTables(ctx context.Context, cfg DeltaConfig, props map[string]string) *DeltaTables {
	d := &DeltaTables{cfg: cfg, ctx: ctx, props: props}
	switch {
	case storage.IsURL(cfg.Root):
		d.root, d.rootErr = storage.Open(ctx, cfg.Root, props)
	case cfg.Root != "":
		d.local, d.rootErr = storage.OpenLocal(cfg.Root, cfg.Root, cfg.localOptions())
		if d.rootErr == nil {
			if st, err := d.local.Stat(logDirName); err == nil && st.IsDir() {
				d.rootTable = DeltaNamespace + "." + filepath.Base(d.local.Root())
			}
		}
	}
	return d
}

// logDirName is the folder that makes a folder a Delta table.
const logDirName = "_delta_log"

// Check asks the object storage of the Delta root and of the delta.tables
// on it what Validate cannot: that the bucket exists and the credentials
// are accepted, that something is under the root, that each named table
// holds a _delta_log folder, and that no named table is also served by
// the root. Its errors wrap ErrInvalidConfig, or the storage's (an
// unreachable storage: storage.ErrUnavailable). Local locations were
// checked by Validate.
func (d *DeltaTables) Check(ctx context.Context) error {
	if d.rootErr != nil {
		return fmt.Errorf("%w: --delta-root %v", ErrInvalidConfig, d.rootErr)
	}
	if d.root != nil {
		err := d.root.Check(ctx)
		switch {
		case errors.Is(err, fs.ErrNotExist) && d.root.IsBucket():
			// An empty bucket: tables may be created in it later.
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%w: --delta-root %s: nothing is stored under it (no object has this prefix): "+
				"check the path", ErrInvalidConfig, d.root.Root())
		case err != nil:
			return fmt.Errorf("--delta-root %s: %w", d.root.Root(), storageError(err))
		}
		if !d.root.IsBucket() {
			self, err := d.root.HasDir(logDirName)
			if err != nil {
				return fmt.Errorf("--delta-root %s: %w", d.root.Root(), storageError(err))
			}
			if self {
				d.rootTable = DeltaNamespace + "." + path.Base(d.root.Root())
			}
		}
	}
	for _, name := range d.cfg.names() {
		loc := d.cfg.Tables[name]
		if storage.IsURL(loc) {
			fsys, err := storage.Open(ctx, loc, d.props)
			if err != nil {
				return fmt.Errorf("%w: delta.tables %s: %v", ErrInvalidConfig, name, err)
			}
			ok, err := fsys.HasDir("_delta_log")
			if err != nil {
				return fmt.Errorf("delta.tables %s: %w", name, storageError(err))
			}
			if !ok {
				return fmt.Errorf("%w: delta.tables %s: %s holds no _delta_log folder, so it is not a Delta table",
					ErrInvalidConfig, name, fsys.Root())
			}
		}
		folder, ok := strings.CutPrefix(name, DeltaNamespace+".")
		if !ok || d.cfg.Root == "" || d.root == nil && !storage.IsURL(loc) {
			continue // no root to clash with, or both local: Validate checked
		}
		has, err := d.rootHas(folder)
		if err != nil {
			return fmt.Errorf("--delta-root %s: %w", d.cfg.Root, storageError(err))
		}
		if has {
			return fmt.Errorf("%w: delta.tables %s names %s, and the Delta root %s serves its folder %s under "+
				"the same name: name one of them otherwise", ErrInvalidConfig, name, loc, d.cfg.Root, folder)
		}
	}
	return nil
}

// storageError returns err of the storage as this package's: an error the
// storage classified keeps its cause, any other is ErrUnavailable.
func storageError(err error) error {
	for _, kind := range []error{storage.ErrBucketNotFound, storage.ErrAccessDenied, storage.ErrMisconfigured,
		storage.ErrUnavailable} {
		if errors.Is(err, kind) {
			return err
		}
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// rootHas reports whether the Delta root's sub-folder folder holds a
// _delta_log folder.
func (d *DeltaTables) rootHas(folder string) (bool, error) {
	if d.root != nil {
		return d.root.HasDir(folder + "/_delta_log")
	}
	if d.rootErr != nil {
		return false, d.rootErr
	}
	st, err := d.local.Stat(folder + "/" + logDirName)
	return err == nil && st.IsDir(), nil
}

// SkippedTable is a sub-folder of a local Delta root that is not served.
type SkippedTable struct {
	// Name is the name it would be served under, Reason why it is not.
	Name, Reason string
}

// locations returns the location of every Delta table, by name: a local
// folder, or a URL; and the sub-folders of a local root that links lead
// out of, which are not served.
func (d *DeltaTables) locations() (map[string]string, []SkippedTable, error) {
	out := map[string]string{}
	var skipped []SkippedTable
	switch {
	case d.rootErr != nil:
		return nil, nil, fmt.Errorf("%w: --delta-root %v", ErrInvalidConfig, d.rootErr)
	case d.rootTable != "":
		if d.root != nil {
			out[d.rootTable] = d.root.Root()
		} else {
			out[d.rootTable] = d.local.Root()
		}
	case d.root != nil:
		entries, err := d.root.ReadDir(".")
		if err != nil {
			return nil, nil, fmt.Errorf("list the Delta root %s: %w", d.root.Root(), storageError(err))
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			ok, err := d.root.HasDir(e.Name() + "/_delta_log")
			if err != nil {
				return nil, nil, fmt.Errorf("list the Delta root %s: %w", d.root.Root(), storageError(err))
			}
			if ok {
				out[DeltaNamespace+"."+e.Name()] = d.root.Root() + "/" + e.Name()
			}
		}
	case d.local != nil:
		entries, err := d.local.ReadDir(".")
		if err != nil {
			return nil, nil, fmt.Errorf("%w: list the Delta root %s: %v", ErrUnavailable, d.cfg.Root, err)
		}
		for _, e := range entries {
			name := DeltaNamespace + "." + e.Name()
			st, err := d.local.Stat(e.Name() + "/" + logDirName)
			switch {
			case errors.Is(err, storage.ErrOutsideRoot):
				skipped = append(skipped, SkippedTable{Name: name, Reason: err.Error()})
			case err == nil && st.IsDir():
				out[name] = filepath.Join(d.cfg.Root, e.Name())
			}
		}
	}
	for name, loc := range d.cfg.Tables {
		if storage.IsURL(loc) {
			out[name] = strings.TrimRight(loc, "/")
			continue
		}
		dir, err := localPath(loc)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: delta.tables %s: %v", ErrInvalidConfig, name, err)
		}
		out[name] = dir
	}
	return out, skipped, nil
}

// Survey is what a listing of the Delta tables found, for the log at
// start.
type Survey struct {
	// Root is the Delta root as configured ("": none).
	Root string
	// RootTable is the table the root itself holds, when it is a table's
	// folder rather than a folder of tables ("" otherwise).
	RootTable string
	// Tables are the tables the root serves, Named those of delta.tables;
	// both sorted.
	Tables, Named []string
	// Skipped are the root's sub-folders that links lead out of it.
	Skipped []SkippedTable
}

// Survey lists the Delta tables, telling the root's from the named ones,
// and the sub-folders of the root that are not served.
func (d *DeltaTables) Survey(context.Context) (Survey, error) {
	locs, skipped, err := d.locations()
	if err != nil {
		return Survey{}, err
	}
	sv := Survey{Root: d.cfg.Root, RootTable: d.rootTable, Skipped: skipped}
	for name := range locs {
		if _, named := d.cfg.Tables[name]; named {
			sv.Named = append(sv.Named, name)
		} else {
			sv.Tables = append(sv.Tables, name)
		}
	}
	slices.Sort(sv.Tables)
	slices.Sort(sv.Named)
	return sv, nil
}

// ListTables returns the names of the Delta tables, sorted.
func (d *DeltaTables) ListTables(context.Context) ([]string, error) {
	locs, _, err := d.locations()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(locs))
	for n := range locs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// Has reports whether name is a Delta table. When the root's storage
// cannot say, it reports true: loading the table then names the cause.
func (d *DeltaTables) Has(name string) bool {
	if _, ok := d.cfg.Tables[name]; ok {
		return true
	}
	if d.cfg.Root == "" || !strings.HasPrefix(name, DeltaNamespace+".") {
		return false
	}
	if d.rootTable != "" {
		return name == d.rootTable
	}
	folder := strings.TrimPrefix(name, DeltaNamespace+".")
	if folder == "" || strings.ContainsAny(folder, `/\`) || folder == "." || folder == ".." {
		return false
	}
	has, err := d.rootHas(folder)
	return has || err != nil
}

// LocalDir returns the root folder of the Delta table name when it is a
// local folder, asking no object storage; false for a table on object
// storage (or under a root there) and for a name that is no Delta table.
func (d *DeltaTables) LocalDir(name string) (string, bool) {
	if loc, ok := d.cfg.Tables[name]; ok {
		if storage.IsURL(loc) {
			return "", false
		}
		dir, err := localPath(loc)
		return dir, err == nil
	}
	if d.local == nil || !d.Has(name) {
		return "", false
	}
	if d.rootTable != "" {
		return d.local.Root(), true
	}
	return filepath.Join(d.cfg.Root, strings.TrimPrefix(name, DeltaNamespace+".")), true
}

// Locate returns where the Delta table name is (ErrTableNotFound when
// there is none).
func (d *DeltaTables) Locate(name string) (*DeltaLocation, error) {
	if !d.Has(name) {
		return nil, fmt.Errorf("%w: %s", ErrTableNotFound, name)
	}
	loc, named := d.cfg.Tables[name]
	var fsys *storage.Local
	if !named {
		folder := strings.TrimPrefix(name, DeltaNamespace+".")
		switch {
		case d.rootErr != nil:
			return nil, fmt.Errorf("%w: --delta-root %v", ErrInvalidConfig, d.rootErr)
		case d.root != nil && d.rootTable != "":
			loc = d.root.Root()
		case d.root != nil:
			loc = d.root.Root() + "/" + folder
		case d.rootTable != "":
			loc, fsys = d.local.Root(), d.local
		default:
			var err error
			if fsys, err = d.local.Sub(folder); err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrInvalidConfig, name, err)
			}
			loc = filepath.Join(d.cfg.Root, folder)
		}
	}
	if storage.IsURL(loc) {
		loc = strings.TrimRight(loc, "/")
		fsys, err := storage.Open(d.ctx, loc, d.props)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalidConfig, name, err)
		}
		return &DeltaLocation{Name: name, Dir: loc, Root: loc, FS: fsys}, nil
	}
	dir := loc
	if named {
		var err error
		if dir, err = localPath(loc); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalidConfig, name, err)
		}
		// A named table's folder is its own root.
		if fsys, err = storage.OpenLocal(dir, dir, d.cfg.localOptions()); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalidConfig, name, err)
		}
	}
	root := (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
	return &DeltaLocation{Name: name, Dir: dir, Root: root, FS: fsys}, nil
}
