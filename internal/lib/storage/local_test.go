package storage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// TestLocalSymlinks: a Local reads what lies in its root, through links
// that stay inside it (relative or absolute), and refuses, naming the
// path, where it leads and the setting, every path that a link leads out
// of the root: a linked file, a linked folder, a link in the middle of a
// path. With FollowSymlinks it reads them all, as os.DirFS does.
func TestLocalSymlinks(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "elsewhere")
	for _, d := range []string{filepath.Join(root, "t", "sub"), filepath.Join(root, "other"), filepath.Join(outside, "table")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, content string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		t.Helper()
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "t", "own.txt"), "own")
	write(filepath.Join(root, "t", "sub", "deep.txt"), "deep")
	write(filepath.Join(root, "other", "sibling.txt"), "sibling")
	write(filepath.Join(outside, "secret.txt"), "secret")
	write(filepath.Join(outside, "table", "data.txt"), "outside data")
	link("../other/sibling.txt", filepath.Join(root, "t", "relative-in.txt"))
	link(filepath.Join(root, "other", "sibling.txt"), filepath.Join(root, "t", "absolute-in.txt"))
	link(filepath.Join(outside, "secret.txt"), filepath.Join(root, "t", "absolute-out.txt"))
	link("../../elsewhere/secret.txt", filepath.Join(root, "t", "relative-out.txt"))
	link(filepath.Join(outside, "table"), filepath.Join(root, "t", "linked-dir"))
	link(filepath.Join(outside, "table"), filepath.Join(root, "symtab"))

	l, err := OpenLocal(root, filepath.Join(root, "t"), LocalOptions{Setting: "delta.follow_symlinks"})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"own.txt": "own", "sub/deep.txt": "deep", "relative-in.txt": "sibling", "absolute-in.txt": "sibling",
	} {
		b, err := fs.ReadFile(l, name)
		if err != nil || string(b) != want {
			t.Errorf("read %s: %q, %v; want %q", name, b, err, want)
		}
	}
	for _, name := range []string{"absolute-out.txt", "relative-out.txt", "linked-dir/data.txt", "linked-dir"} {
		_, err := fs.ReadFile(l, name)
		if name == "linked-dir" {
			_, err = l.ReadDir(name)
		}
		if !errors.Is(err, ErrOutsideRoot) || errors.Is(err, fs.ErrNotExist) {
			t.Errorf("read %s: %v; want ErrOutsideRoot", name, err)
			continue
		}
		for _, want := range []string{filepath.Join(root, "t", name), outside, "delta.follow_symlinks"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("read %s: %v; want it to name %s", name, err, want)
			}
		}
	}
	if _, err := l.Stat("missing.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stat missing.txt: %v; want fs.ErrNotExist", err)
	}
	top, err := OpenLocal(root, root, LocalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := top.Check("symtab/data.txt"); !errors.Is(err, ErrOutsideRoot) {
		t.Errorf("check symtab/data.txt: %v; want ErrOutsideRoot", err)
	}
	if err := top.Check("t/own.txt"); err != nil {
		t.Errorf("check t/own.txt: %v", err)
	}
	if sub, err := top.Sub("symtab"); err != nil {
		t.Error(err)
	} else if _, err := sub.ReadDir("."); !errors.Is(err, ErrOutsideRoot) {
		t.Errorf("list symtab: %v; want ErrOutsideRoot", err)
	}

	// Following links, everything reads, as os.DirFS.
	follow, err := OpenLocal(root, filepath.Join(root, "t"), LocalOptions{FollowSymlinks: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(follow, "own.txt", "sub/deep.txt", "absolute-out.txt"); err != nil {
		t.Error(err)
	}
	if b, err := fs.ReadFile(follow, "linked-dir/data.txt"); err != nil || string(b) != "outside data" {
		t.Errorf("read linked-dir/data.txt following links: %q, %v", b, err)
	}
	if _, err := OpenLocal(filepath.Join(root, "t"), root, LocalOptions{}); !errors.Is(err, ErrOutsideRoot) {
		t.Errorf("OpenLocal of a folder outside its root: %v; want ErrOutsideRoot", err)
	}
}

// TestLocalFS: a Local without links is an fs.FS as testing/fstest checks
// one.
func TestLocalFS(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a/one.txt", "a/b/two.txt"} {
		if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(p)), []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := OpenLocal(root, root, LocalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(l, "a/one.txt", "a/b/two.txt"); err != nil {
		t.Error(err)
	}
}

// TestReadDirAfter lists a Delta log folder after a name on a Local and,
// through the fallback of ReadDirAfter, on an fs.FS without the method.
func TestReadDirAfter(t *testing.T) {
	root := t.TempDir()
	files := fstest.MapFS{}
	for _, name := range []string{"00000000000000000001.json", "00000000000000000000.json"} {
		p := filepath.Join(root, "t", "_delta_log", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		files["t/_delta_log/"+name] = &fstest.MapFile{Data: []byte("{}")}
	}
	l, err := OpenLocal(root, root, LocalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testReadDirAfter(t, l)
	testReadDirAfter(t, plainFS{files})
	if _, err := l.ReadDirAfter("nope", ""); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadDirAfter of a missing folder: %v, want fs.ErrNotExist", err)
	}
}

// plainFS is an fs.FS that lists through ReadDirAfter's fallback.
type plainFS struct{ fsys fs.FS }

func (p plainFS) Open(name string) (fs.File, error) { return p.fsys.Open(name) }

func (p plainFS) ReadDirAfter(name, after string) ([]fs.DirEntry, error) {
	return ReadDirAfter(p.fsys, name, after)
}
