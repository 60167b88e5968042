package storage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestLocalWrite: WriteFile creates the folders on its way and replaces a
// file whole, never leaves the root (an invalid path, a link out), and
// Remove of a file that is not there is no error.
func TestLocalWrite(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLocal(root, root, LocalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{"first", "2"} {
		if err := l.WriteFile("t/consumer/c-1", []byte(data)); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(root, "t", "consumer", "c-1"))
		if err != nil || string(b) != data {
			t.Fatalf("after writing %q: %q %v", data, b, err)
		}
	}
	entries, err := os.ReadDir(filepath.Join(root, "t", "consumer"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("the folder holds %v %v, want the file alone (no temporary left)", entries, err)
	}
	for _, bad := range []string{"../x", "/abs", ".", "out/escaped"} {
		if err := l.WriteFile(bad, []byte("x")); err == nil {
			t.Errorf("WriteFile(%q): no error", bad)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a write through a link left the root: %v", err)
	}
	for range 2 {
		if err := l.Remove("t/consumer/c-1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.CheckWritable(); err != nil {
		t.Fatal(err)
	}
}
