package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	iceio "github.com/apache/iceberg-go/io"
)

// FS is the files under a folder of an object store, addressed by URL
// (s3://bucket/prefix, gs://bucket/prefix,
// abfs://container@account.dfs.core.windows.net/prefix), as an io/fs.FS:
// it implements fs.ReadDirFS and fs.StatFS, and its files io.ReaderAt and
// io.Seeker. It reads through iceberg-go's file IO for the URL's scheme,
// configured by the same properties as the catalog's (s3.endpoint,
// s3.region, s3.access-key-id, ...), so both table formats read storage
// the same way. Its errors are classified (see Classify). It is safe for
// concurrent use.
//
// An object store has no folders: a folder is a key prefix ending in "/"
// that some object has. A folder is listed with one delimited listing
// (with its pages), never a walk of the keys below it, and a file is
// opened with one HEAD request; its bytes are read when asked for, by
// range.
type FS struct {
	// ctx bounds every request of the FS (fs.FS has no context per
	// call): the context of the IO's whole use, flightd's lifetime.
	ctx  context.Context
	root string // the root URL, without a trailing "/"
	io   iceio.IO
	st   store
	// prefix is the key prefix of the root: "" or "path/to/table/".
	prefix string
}

// Open returns the files under root, an object-store URL, read with the
// storage properties props. ctx bounds every request the FS makes. It
// makes no request: (*FS).Check does.
func Open(ctx context.Context, root string, props map[string]string) (*FS, error) {
	u, err := url.Parse(root)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("%w: %s is not a storage URL (scheme://bucket/path)", ErrMisconfigured, root)
	}
	root = strings.TrimRight(root, "/")
	fsys, err := iceio.LoadFS(ctx, props, root)
	if errors.Is(err, iceio.ErrIOSchemeNotFound) {
		return nil, fmt.Errorf("%w: %s: flightd does not read %s:// URLs (s3, s3a, gs, abfs, abfss, wasb and wasbs "+
			"are supported)", ErrMisconfigured, root, u.Scheme)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMisconfigured, root, err)
	}
	Prepare(fsys)
	f := &FS{ctx: ctx, root: root, io: fsys, st: storeOf(fsys, root+"/")}
	if k := keyOf(root); k != "" {
		f.prefix = k + "/"
	}
	return f, nil
}

// Root returns the FS's root URL.
func (f *FS) Root() string { return f.root }

// IsURL reports whether loc is a URL of an object store rather than a
// local path or a file: URL.
func IsURL(loc string) bool {
	scheme, _, ok := strings.Cut(loc, "://")
	return ok && scheme != "" && !strings.EqualFold(scheme, "file")
}

// Check asks the storage whether the root can be read: its bucket exists,
// the credentials are accepted, and it holds at least one object. It
// fails with a classified error (an *Error), or fs.ErrNotExist when the
// bucket exists but nothing is under the root.
func (f *FS) Check(ctx context.Context) error {
	if f.st.b == nil {
		entries, err := f.walk(".")
		if err == nil && len(entries) == 0 {
			err = &fs.PathError{Op: "list", Path: f.root, Err: fs.ErrNotExist}
		}
		return err
	}
	objs, err := f.listPage(ctx, f.prefix, 1)
	if err != nil {
		if e := classify(ctx, f.st, f.root, err); e != err {
			return e
		}
		return &fs.PathError{Op: "list", Path: f.root, Err: err}
	}
	if len(objs) == 0 {
		remember(f.st, true)
		return &fs.PathError{Op: "list", Path: f.root, Err: fs.ErrNotExist}
	}
	remember(f.st, true)
	return nil
}

// url returns the URL of name, a path under the root.
func (f *FS) url(name string) string {
	if name == "." {
		return f.root
	}
	return f.root + "/" + name
}

// key returns the object key of name.
func (f *FS) key(name string) string {
	if name == "." {
		return strings.TrimSuffix(f.prefix, "/")
	}
	return f.prefix + name
}

// fail returns the error of op on name: classified when its cause is
// known, else an *fs.PathError.
func (f *FS) fail(op, name string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &fs.PathError{Op: op, Path: f.url(name), Err: err}
	}
	if e := classify(f.ctx, f.st, f.url(name), err); e != err {
		return e
	}
	if isNotFound(err) {
		err = fs.ErrNotExist
	}
	return &fs.PathError{Op: op, Path: f.url(name), Err: err}
}

// Open opens the file or folder name.
func (f *FS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	info, err := f.stat("open", name)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		entries, err := f.ReadDir(name)
		if err != nil {
			return nil, err
		}
		return &dirFile{info: info, entries: entries}, nil
	}
	if f.st.b == nil {
		fh, err := f.io.Open(f.url(name))
		if err != nil {
			return nil, f.fail("open", name, err)
		}
		return ioFile{File: fh, info: info}, nil
	}
	return &file{fs: f, name: name, info: info}, nil
}

// Stat returns the FileInfo of the file or folder name.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrInvalid}
	}
	return f.stat("stat", name)
}

func (f *FS) stat(op, name string) (fs.FileInfo, error) {
	if name == "." {
		return &entry{name: ".", dir: true}, nil
	}
	if f.st.b == nil {
		fh, err := f.io.Open(f.url(name))
		if errors.Is(err, fs.ErrNotExist) {
			// Not a file: a folder when something is under it.
			if entries, werr := f.walk(name); werr == nil && len(entries) > 0 {
				return &entry{name: path.Base(name), dir: true}, nil
			}
		}
		if err != nil {
			return nil, f.fail(op, name, err)
		}
		defer fh.Close()
		info, err := fh.Stat()
		if err != nil {
			return nil, f.fail(op, name, err)
		}
		return &entry{name: path.Base(name), size: info.Size(), mod: info.ModTime()}, nil
	}
	size, mod, err := f.attributes(f.ctx, f.key(name))
	if err == nil {
		return &entry{name: path.Base(name), size: size, mod: mod}, nil
	}
	if !isNotFound(err) {
		return nil, f.fail(op, name, err)
	}
	// Not an object: a folder when some key is under it.
	objs, lerr := f.listPage(f.ctx, f.key(name)+"/", 1)
	if lerr != nil {
		return nil, f.fail(op, name, lerr)
	}
	if len(objs) > 0 {
		return &entry{name: path.Base(name), dir: true}, nil
	}
	return nil, f.fail(op, name, err)
}

// ReadDir lists the folder name, sorted by file name: one delimited
// listing of its keys.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	var out []fs.DirEntry
	var err error
	if f.st.b != nil {
		out, err = f.list(name, "")
	} else {
		out, err = f.walk(name)
	}
	if err != nil {
		return nil, err
	}
	if len(out) == 0 && name != "." {
		return nil, f.fail("readdir", name, fs.ErrNotExist)
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// list lists a folder with the bucket's delimited listing (from after,
// when the store can; see listDir).
func (f *FS) list(name, after string) ([]fs.DirEntry, error) {
	prefix := f.prefix
	if name != "." {
		prefix = f.key(name) + "/"
	}
	objs, err := f.listDir(f.ctx, prefix, after)
	if err != nil {
		return nil, f.fail("readdir", name, err)
	}
	var out []fs.DirEntry
	for _, obj := range objs {
		base := strings.TrimSuffix(strings.TrimPrefix(obj.Key, prefix), "/")
		if base == "" {
			continue // the folder's own marker object
		}
		out = append(out, &entry{name: base, dir: obj.IsDir, size: obj.Size, mod: obj.ModTime})
	}
	return out, nil
}

// walk lists a folder of an IO that is not gocloud's with its WalkDir,
// skipping every sub-folder.
func (f *FS) walk(name string) ([]fs.DirEntry, error) {
	lio, ok := f.io.(iceio.ListableIO)
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: f.url(name), Err: errors.ErrUnsupported}
	}
	dir := f.url(name)
	var out []fs.DirEntry
	err := lio.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.TrimRight(p, "/") == dir {
			return nil
		}
		e := &entry{name: d.Name(), dir: d.IsDir()}
		if info, err := d.Info(); err == nil && !e.dir {
			e.size, e.mod = info.Size(), info.ModTime()
		}
		out = append(out, e)
		if d.IsDir() {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, f.fail("readdir", name, err)
	}
	return out, nil
}

// entry is a listed file or folder: an fs.DirEntry and its fs.FileInfo.
type entry struct {
	name string
	dir  bool
	size int64
	mod  time.Time
}

func (e *entry) Name() string { return e.name }
func (e *entry) Size() int64  { return e.size }
func (e *entry) Mode() fs.FileMode {
	if e.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (e *entry) ModTime() time.Time         { return e.mod }
func (e *entry) IsDir() bool                { return e.dir }
func (e *entry) Sys() any                   { return nil }
func (e *entry) Type() fs.FileMode          { return e.Mode().Type() }
func (e *entry) Info() (fs.FileInfo, error) { return e, nil }

// ioFile is a file opened through an IO that is not gocloud's; its Stat is
// the FS's.
type ioFile struct {
	iceio.File
	info fs.FileInfo
}

func (f ioFile) Stat() (fs.FileInfo, error) { return f.info, nil }

// dirFile is an open folder.
type dirFile struct {
	info    fs.FileInfo
	entries []fs.DirEntry
	off     int
}

func (d *dirFile) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.Name(), Err: errors.New("is a directory")}
}
func (d *dirFile) Close() error { return nil }

func (d *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.entries[d.off:]
	if n <= 0 {
		d.off = len(d.entries)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(rest))
	d.off += n
	return rest[:n], nil
}

// file is an open object. It reads by range: ReadAt with a request per
// call (safe for concurrent use, as io.ReaderAt must be), Read with one
// request from the offset on, opened at the first Read after a Seek.
type file struct {
	fs   *FS
	name string
	info fs.FileInfo

	mu  sync.Mutex // guards off and r
	off int64
	r   io.ReadCloser // reading from off (nil: none open)
}

func (fh *file) Stat() (fs.FileInfo, error) { return fh.info, nil }

func (fh *file) Read(p []byte) (int, error) {
	fh.mu.Lock()
	defer fh.mu.Unlock()
	if fh.off >= fh.info.Size() {
		return 0, io.EOF
	}
	if fh.r == nil {
		r, err := fh.fs.rangeReader(fh.fs.ctx, fh.fs.key(fh.name), fh.off, -1)
		if err != nil {
			return 0, fh.fs.fail("read", fh.name, err)
		}
		fh.r = r
	}
	n, err := fh.r.Read(p)
	fh.off += int64(n)
	if err != nil && err != io.EOF {
		err = fh.fs.fail("read", fh.name, err)
	}
	return n, err
}

func (fh *file) Seek(offset int64, whence int) (int64, error) {
	fh.mu.Lock()
	defer fh.mu.Unlock()
	switch whence {
	case io.SeekCurrent:
		offset += fh.off
	case io.SeekEnd:
		offset += fh.info.Size()
	}
	if offset < 0 {
		return 0, &fs.PathError{Op: "seek", Path: fh.fs.url(fh.name), Err: fs.ErrInvalid}
	}
	if offset != fh.off && fh.r != nil {
		_ = fh.r.Close()
		fh.r = nil
	}
	fh.off = offset
	return offset, nil
}

func (fh *file) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &fs.PathError{Op: "readat", Path: fh.fs.url(fh.name), Err: fs.ErrInvalid}
	}
	size := fh.info.Size()
	if off >= size {
		return 0, io.EOF
	}
	want := min(int64(len(p)), size-off)
	r, err := fh.fs.rangeReader(fh.fs.ctx, fh.fs.key(fh.name), off, want)
	if err != nil {
		return 0, fh.fs.fail("read", fh.name, err)
	}
	defer r.Close()
	n, err := io.ReadFull(r, p[:want])
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			// The object is shorter than when it was opened.
			return n, io.ErrUnexpectedEOF
		}
		return n, fh.fs.fail("read", fh.name, err)
	}
	if want < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

func (fh *file) Close() error {
	fh.mu.Lock()
	defer fh.mu.Unlock()
	if fh.r != nil {
		err := fh.r.Close()
		fh.r = nil
		return err
	}
	return nil
}

// HasDir reports whether the folder name holds anything: one listing of
// one key below it.
func (f *FS) HasDir(name string) (bool, error) {
	if !fs.ValidPath(name) || name == "." {
		return false, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrInvalid}
	}
	if f.st.b == nil {
		info, err := f.Stat(name)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return err == nil && info.IsDir(), err
	}
	objs, err := f.listPage(f.ctx, f.key(name)+"/", 1)
	if err != nil {
		return false, f.fail("list", name, err)
	}
	return len(objs) > 0, nil
}

// IsBucket reports whether the root is a whole bucket (no key prefix).
func (f *FS) IsBucket() bool { return f.prefix == "" }
