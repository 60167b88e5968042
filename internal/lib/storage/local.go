package storage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/sluicefeed/sluice/internal/lib/storage/storageerr"
)

// ErrOutsideRoot reports a local file or folder that lies outside its root
// (storageerr.ErrOutsideRoot).
var ErrOutsideRoot = storageerr.ErrOutsideRoot

// LocalOptions configure a Local.
type LocalOptions struct {
	// FollowSymlinks reads what a symbolic link under the root points to
	// wherever it is, as os.DirFS does. Default false: a path that
	// resolves outside the root fails with ErrOutsideRoot.
	FollowSymlinks bool
	// Setting names the configuration setting that turns FollowSymlinks
	// on ("delta.follow_symlinks"), for the message of ErrOutsideRoot.
	Setting string
}

// Local is a folder of the local file system, inside a root the operator
// configured, as an io/fs.FS: it implements fs.StatFS and fs.ReadDirFS,
// and its files are *os.File (io.ReaderAt, io.Seeker). Unless
// LocalOptions.FollowSymlinks is set, no path read through it resolves
// outside the root: a symbolic link may point anywhere inside the root
// (relative or absolute), and one that leads out of it fails with
// ErrOutsideRoot, naming the path, where it leads and the setting that
// allows it. Files are opened through os.Root, so that a link changed
// between the check and the open cannot lead out either. Every format's
// local tables are read through one: Delta roots and tables, the files of
// a local Iceberg warehouse. It is safe for concurrent use.
type Local struct {
	// root is the configured root, absolute and clean; dir is the folder
	// served, as a slash path relative to root ("." for root itself).
	root, dir string
	opts      LocalOptions
}

// OpenLocal returns the folder dir, which lies in the configured root
// (dir may be root itself), as a Local. Both are local paths; dir relative
// to the working directory, as root is. It fails when dir is not inside
// root (by its path, before any link is resolved).
func OpenLocal(root, dir string, opts LocalOptions) (*Local, error) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(absRoot, absDir)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return nil, fmt.Errorf("%w: %s is not inside the root %s", ErrOutsideRoot, dir, root)
	}
	return &Local{root: absRoot, dir: filepath.ToSlash(rel), opts: opts}, nil
}

// Root returns the configured root, absolute.
func (l *Local) Root() string { return l.root }

// Dir returns the folder served, absolute.
func (l *Local) Dir() string { return filepath.Join(l.root, filepath.FromSlash(l.dir)) }

// Sub returns the folder name of l (a slash path) as a Local inside the
// same root with the same options.
func (l *Local) Sub(name string) (*Local, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "sub", Path: name, Err: fs.ErrInvalid}
	}
	return &Local{root: l.root, dir: path.Join(l.dir, name), opts: l.opts}, nil
}

// Open opens the file or folder name.
func (l *Local) Open(name string) (fs.File, error) {
	f, err := l.open("open", name)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Stat returns the FileInfo of name, its links followed.
func (l *Local) Stat(name string) (fs.FileInfo, error) {
	f, err := l.open("stat", name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}

// ReadDir lists the folder name, sorted by file name. Its entries are not
// resolved: a symbolic link is listed as one.
func (l *Local) ReadDir(name string) ([]fs.DirEntry, error) {
	f, err := l.open("readdir", name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

// Check reports whether name can be read without leaving the root: nil
// when it can (or FollowSymlinks is set), an error wrapping ErrOutsideRoot
// when it leads out, fs.ErrNotExist when it is not there.
func (l *Local) Check(name string) error {
	f, err := l.open("stat", name)
	if err != nil {
		return err
	}
	return f.Close()
}

// open opens name under the folder, within the root.
func (l *Local) open(op, name string) (*os.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	rel := filepath.FromSlash(path.Join(l.dir, name))
	full := filepath.Join(l.root, rel)
	if l.opts.FollowSymlinks {
		return os.Open(full)
	}
	f, err := os.OpenInRoot(l.root, rel)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return f, err
	}
	// os.Root refuses every link that leaves the root on its way, and
	// absolute links even when they lead back in: resolve the path to
	// tell where it leads, and open what lies inside the root by its
	// resolved path (through os.Root again).
	real, rerr := filepath.EvalSymlinks(full)
	if errors.Is(rerr, fs.ErrNotExist) {
		return nil, &fs.PathError{Op: op, Path: full, Err: fs.ErrNotExist}
	}
	if rerr != nil {
		return nil, err
	}
	realRoot, rerr := filepath.EvalSymlinks(l.root)
	if rerr != nil {
		return nil, err
	}
	inside, ierr := filepath.Rel(realRoot, real)
	if ierr != nil || !filepath.IsLocal(inside) && inside != "." {
		return nil, l.outside(full, real)
	}
	f, err2 := os.OpenInRoot(realRoot, inside)
	if err2 != nil {
		return nil, err
	}
	return f, nil
}

// outside is the error of the path full, which resolves to real outside
// the root.
func (l *Local) outside(full, real string) error {
	setting := l.opts.Setting
	if setting == "" {
		setting = "follow_symlinks"
	}
	return &Error{Kind: ErrOutsideRoot, Location: full,
		Reason: fmt.Sprintf("it resolves through a symbolic link to %s, outside the root %s, so it is not "+
			"read: set %s: true to follow symbolic links out of the root", real, l.root, setting)}
}

// ConfineIO returns fsys, a table's file IO, with the files that lie under
// the folder of l (by their path: an absolute path or a file: URL) read
// through l, so that none of them resolves outside l's root unless l
// follows links. Other files (on object storage, or local files outside
// the folder) are read through fsys as before. It is how the files of a
// local Iceberg warehouse are confined to it.
func ConfineIO(fsys iceio.IO, l *Local) iceio.IO { return confinedIO{io: fsys, l: l} }

// confinedIO is an IO whose files under a Local are read through it.
type confinedIO struct {
	io iceio.IO
	l  *Local
}

func (c confinedIO) Open(name string) (iceio.File, error) {
	rel, ok := c.l.under(name)
	if !ok {
		return c.io.Open(name)
	}
	f, err := c.l.open("open", rel)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (c confinedIO) Remove(name string) error { return c.io.Remove(name) }

// ReadFile reads a whole file (iceberg-go reads metadata this way when the
// IO offers it).
func (c confinedIO) ReadFile(name string) ([]byte, error) {
	if rel, ok := c.l.under(name); ok {
		return fs.ReadFile(c.l, rel)
	}
	if rf, ok := c.io.(iceio.ReadFileIO); ok {
		return rf.ReadFile(name)
	}
	f, err := c.io.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// under returns the path of name, an absolute local path or a file: URL,
// relative to the folder of l, when it lies under it.
func (l *Local) under(name string) (string, bool) {
	p := name
	if strings.HasPrefix(name, "file:") {
		u, err := url.Parse(name)
		if err != nil || u.Host != "" && u.Host != "localhost" {
			return "", false
		}
		p = u.Path
	}
	if !filepath.IsAbs(p) {
		return "", false
	}
	rel, err := filepath.Rel(l.Dir(), filepath.Clean(p))
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}
