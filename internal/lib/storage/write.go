package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	iceio "github.com/apache/iceberg-go/io"
)

// ErrReadOnly reports storage that Sluice cannot write: a local folder
// without write permission, or an object store whose file IO writes
// nothing.
var ErrReadOnly = errors.New("storage: read only")

// WriteFile writes data to the file name (a slash path under the folder),
// replacing it atomically: a reader sees the old file or the new one,
// never a part. The folders on its way are created. Writes never leave
// the root: os.Root confines them, links or not.
func (l *Local) WriteFile(name string, data []byte) error {
	if !fs.ValidPath(name) || name == "." {
		return &fs.PathError{Op: "write", Path: name, Err: fs.ErrInvalid}
	}
	root, err := os.OpenRoot(l.root)
	if err != nil {
		return err
	}
	defer root.Close()
	rel := path.Join(l.dir, name)
	if err := root.MkdirAll(path.Dir(rel), 0o755); err != nil {
		return err
	}
	tmp := path.Join(path.Dir(rel), "."+path.Base(rel)+".sluice-tmp")
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		_ = root.Remove(tmp)
		return err
	}
	return root.Rename(tmp, rel)
}

// Remove removes the file name; a file that is not there is no error.
func (l *Local) Remove(name string) error {
	if !fs.ValidPath(name) || name == "." {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrInvalid}
	}
	root, err := os.OpenRoot(l.root)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.Remove(path.Join(l.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// CheckWritable reports whether files can be written in the folder: an
// error wrapping ErrReadOnly when it is not writable by this process.
func (l *Local) CheckWritable() error {
	dir := l.Dir()
	f, err := os.CreateTemp(dir, ".sluice-write-check-*")
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrReadOnly, dir, unwrapPath(err))
	}
	name := f.Name()
	return errors.Join(f.Close(), os.Remove(filepath.Clean(name)))
}

// WriteFile writes data to the object name (a slash path under the root),
// which object stores replace whole.
func (f *FS) WriteFile(name string, data []byte) error {
	w, ok := f.io.(iceio.WriteFileIO)
	if !ok {
		return fmt.Errorf("%w: %s: its file IO cannot write", ErrReadOnly, f.root)
	}
	if err := w.WriteFile(f.url(name), data); err != nil {
		return f.fail("write", name, err)
	}
	return nil
}

// Remove removes the object name; one that is not there is no error.
func (f *FS) Remove(name string) error {
	if err := f.io.Remove(f.url(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return f.fail("remove", name, err)
	}
	return nil
}

// unwrapPath is a path error's cause.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
