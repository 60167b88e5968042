package storage

import (
	"io/fs"
	"slices"
	"strings"
)

// ReadDirAfterFS is an fs.FS that lists the part of a folder whose names
// sort after a given name, without listing the rest when it can: an
// object store lists from that key (S3's start-after). Both Local and FS
// implement it.
type ReadDirAfterFS interface {
	fs.FS
	// ReadDirAfter lists the entries of the folder name whose names sort
	// after after (in byte order), sorted by name.
	ReadDirAfter(name, after string) ([]fs.DirEntry, error)
}

// ReadDirAfter lists the entries of the folder name of fsys whose names
// sort after after (in byte order), sorted by name: through fsys's own
// ReadDirAfter when it has one, else by listing the whole folder and
// keeping the entries after. A folder that does not exist fails with an
// error wrapping fs.ErrNotExist, as fs.ReadDir does; one with no entry
// after the name is an empty list.
func ReadDirAfter(fsys fs.FS, name, after string) ([]fs.DirEntry, error) {
	if f, ok := fsys.(ReadDirAfterFS); ok {
		return f.ReadDirAfter(name, after)
	}
	entries, err := fs.ReadDir(fsys, name)
	return keepAfter(entries, after), err
}

// keepAfter returns the entries, sorted by name, whose names sort after
// after.
func keepAfter(entries []fs.DirEntry, after string) []fs.DirEntry {
	out := slices.DeleteFunc(entries, func(e fs.DirEntry) bool { return e.Name() <= after })
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

// ReadDirAfter lists the entries of the folder name whose names sort after
// after, sorted by name. The folder is read whole (a directory cannot be
// read from a name), but only the entries after are kept and sorted.
func (l *Local) ReadDirAfter(name, after string) ([]fs.DirEntry, error) {
	f, err := l.open("readdir", name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	return keepAfter(entries, after), err
}

// ReadDirAfter lists the entries of the folder name whose names sort after
// after, sorted by name: on S3, one delimited listing that starts after
// that key (its pages hold only the entries after it); on other stores,
// the folder's listing, filtered. Unlike ReadDir, a folder with no entry
// after the name is an empty list, not fs.ErrNotExist: its earlier
// entries are not listed to tell.
func (f *FS) ReadDirAfter(name, after string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	if f.st.b == nil {
		entries, err := f.ReadDir(name)
		return keepAfter(entries, after), err
	}
	entries, err := f.list(name, after)
	if err != nil {
		return nil, err
	}
	return keepAfter(entries, after), nil
}
