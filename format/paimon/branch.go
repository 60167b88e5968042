package paimon

import (
	"io/fs"
	"path"
	"strings"
)

// branchFS is a table's folder as one of its branches sees it: the
// branch's own snapshot/, schema/ and tag/ folders under
// branch/branch-NAME, and the table's manifests, indexes and data files,
// which every branch shares. It reads through the table's file system, so
// that whatever that one offers (ReadFileFS, StatFS, files that read at an
// offset) stays.
type branchFS struct {
	root fs.FS
	// dir is the branch's folder, branch/branch-NAME.
	dir string
}

// path maps a name of the branch's view onto the table's folder.
func (b branchFS) path(name string) string {
	first, _, _ := strings.Cut(name, "/")
	switch first {
	case snapshotDir, schemaDir, tagDir:
		return path.Join(b.dir, name)
	}
	return name
}

func (b branchFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	return b.root.Open(b.path(name))
}

func (b branchFS) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrInvalid}
	}
	return fs.ReadFile(b.root, b.path(name))
}

func (b branchFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	return fs.ReadDir(b.root, b.path(name))
}

func (b branchFS) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrInvalid}
	}
	return fs.Stat(b.root, b.path(name))
}

var (
	_ fs.ReadFileFS = branchFS{}
	_ fs.ReadDirFS  = branchFS{}
	_ fs.StatFS     = branchFS{}
)
