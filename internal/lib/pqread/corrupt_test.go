package pqread

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// nestedBytes is the file of nestedRows, as bytes.
func nestedBytes(t testing.TB) []byte {
	f := nestedFile(t, memory.DefaultAllocator)
	b, err := io.ReadAll(io.NewSectionReader(f, 0, f.Size()))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readBytes reads b whole with the nested file's own schema.
func readBytes(t testing.TB, mem memory.Allocator, b []byte) error {
	t.Helper()
	fields := withoutMetadata(nestedSchema.Fields())
	cols := make([]Column, len(fields))
	for i, f := range fields {
		cols[i] = Column{Name: f.Name}
	}
	res, err := readAll(t, bytes.NewReader(b), arrow.NewSchema(fields, nil), cols, Options{Allocator: mem, Path: "bad.parquet"})
	res.release()
	return err
}

// readRowsBytes reads the column s of a rowsFile's bytes.
func readRowsBytes(t testing.TB, mem memory.Allocator, b []byte) error {
	t.Helper()
	target := arrow.NewSchema([]arrow.Field{field("s", arrow.BinaryTypes.String)}, nil)
	res, err := readAll(t, bytes.NewReader(b), target, []Column{{Name: "s"}}, Options{Allocator: mem, Path: "bad.parquet"})
	res.release()
	return err
}

// TestReadCorrupt: a file with bad bytes fails with ErrCorrupt naming it,
// without a panic and without leaking.
func TestReadCorrupt(t *testing.T) {
	good := nestedBytes(t)
	meta, err := Footer(bytes.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	// Where the pages of the list column (leaf 5) start.
	cc, err := meta.File.RowGroup(0).ColumnChunk(5)
	if err != nil {
		t.Fatal(err)
	}
	listStart, _ := chunkRange(cc)
	tests := []struct {
		name   string
		bytes  func() []byte
		footer bool // Footer fails too
		says   string
		rows   bool // a rowsFile, not a nestedFile
	}{
		{"truncated", func() []byte { return good[:len(good)-3] }, true, "bad.parquet", false},
		{"not parquet", func() []byte { return []byte(strings.Repeat("not parquet ", 10)) }, true, "bad.parquet", false},
		{"empty", func() []byte { return nil }, true, "bad.parquet", false},
		{"a garbled footer", func() []byte {
			b := bytes.Clone(good)
			footerLen := int(b4(b[len(b)-8:]))
			for i := len(b) - 8 - footerLen; i < len(b)-8; i += 3 {
				b[i] ^= 0x5a
			}
			return b
		}, true, "bad.parquet", false},
		{"a garbled page header", func() []byte {
			b := bytes.Clone(good)
			for i := range 8 {
				b[listStart+int64(i)] = 0xff
			}
			return b
		}, false, `column "l"`, false},
		{"pages cut out: chunks past the end", func() []byte {
			// A file of many rows without its pages: the footer's offsets
			// point beyond the end.
			big := rowsFileBytes(t, 5000)
			footerLen := int(b4(big[len(big)-8:]))
			return append(bytes.Clone(big[:4]), big[len(big)-8-footerLen:]...)
		}, false, "outside a file", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			b := tc.bytes()
			if _, err := Footer(bytes.NewReader(b)); (err != nil) != tc.footer || (err != nil && !errors.Is(err, ErrCorrupt)) {
				t.Errorf("Footer: %v", err)
			}
			read := readBytes
			if tc.rows {
				read = readRowsBytes
			}
			err := read(t, mem, b)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %v, want ErrCorrupt saying %s", err, tc.says)
			}
		})
	}
}

// TestReadRandomCorruption corrupts a file at random (flipped bytes,
// boundary integers, bytes cut out and put in): every read returns, with
// ErrCorrupt or ErrCast or without error, none panics (the decoder's
// panics on some files are recovered), none leaks, and every batch it
// yields is valid (readAll concatenates them, which checks).
func TestReadRandomCorruption(t *testing.T) {
	good := nestedBytes(t)
	rng := rand.New(rand.NewPCG(1, 2))
	boundary := []uint32{0, 1, 0x7f, 0x80, 0xff, 0x7fff, 0xffff, 1 << 20, 0x7fffffff, 0x80000000, 0xffffffff}
	failed, panicked := 0, 0
	const n = 1000
	for range n {
		b := bytes.Clone(good)
		for range 1 + rng.IntN(3) {
			pos := rng.IntN(len(b) - 4)
			switch rng.IntN(4) {
			case 0:
				b[pos] ^= byte(1 + rng.IntN(255))
			case 1:
				binary.LittleEndian.PutUint32(b[pos:], boundary[rng.IntN(len(boundary))])
			case 2:
				b = append(b[:pos:pos], b[min(len(b), pos+1+rng.IntN(32)):]...)
			case 3:
				ins := make([]byte, 1+rng.IntN(16))
				for i := range ins {
					ins[i] = byte(rng.IntN(256))
				}
				b = append(b[:pos:pos], append(ins, b[pos:]...)...)
			}
			if len(b) < 8 {
				break
			}
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		err := readBytes(t, mem, b)
		if err != nil {
			failed++
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrCast) {
				t.Errorf("error %v, want ErrCorrupt", err)
			}
			if strings.Contains(err.Error(), "panic: ") {
				panicked++
			}
		}
		mem.AssertSize(t, 0)
	}
	t.Logf("%d of %d corrupted files failed to read, %d with a recovered panic", failed, n, panicked)
}

// faultyFile is a file whose reads, once armed, panic or fail.
type faultyFile struct {
	*bytes.Reader
	armed atomic.Bool
	err   error // nil: panic
}

func (f *faultyFile) ReadAt(p []byte, off int64) (int, error) {
	if f.armed.Load() {
		if f.err == nil {
			panic("injected: storage client bug")
		}
		return 0, f.err
	}
	return f.Reader.ReadAt(p, off)
}

// TestReadFaultySource: the file's own errors pass through (they may be
// transient: not ErrCorrupt), and its panics become errors, also where
// pqarrow reads a struct's children in goroutines of its own.
func TestReadFaultySource(t *testing.T) {
	offline := errors.New("injected: storage offline")
	for _, tc := range []struct {
		name string
		err  error
	}{{"panic", nil}, {"error", offline}} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			f := &faultyFile{Reader: nestedFile(t, mem), err: tc.err}
			m, err := Footer(f)
			if err != nil {
				t.Fatal(err)
			}
			f.armed.Store(true)
			target := arrow.NewSchema(withoutMetadata(nestedSchema.Fields()[1:2]), nil)
			err = Read(context.Background(), f, target, []Column{{Name: "s"}}, Options{Allocator: mem, Meta: m},
				func(rec arrow.RecordBatch, _ int64) error {
					rec.Release()
					return errors.New("a batch from a failing file")
				})
			if err == nil || errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v, want the source's, not ErrCorrupt", err)
			}
			if tc.err != nil && !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if _, err := Footer(f); err == nil || errors.Is(err, ErrCorrupt) {
				t.Fatalf("Footer: %v", err)
			}
		})
	}
}

// FuzzRead: no bytes make Read panic.
func FuzzRead(f *testing.F) {
	good := nestedBytes(f)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(rowsFileBytes(f, 50))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = readBytes(t, memory.NewGoAllocator(), b)
	})
}

// rowsFileBytes is rowsFile of n rows in row groups of 10, as bytes.
func rowsFileBytes(t testing.TB, n int) []byte {
	f := rowsFile(t, memory.DefaultAllocator, n, 10)
	b, err := io.ReadAll(io.NewSectionReader(f, 0, f.Size()))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// b4 is a little-endian uint32.
func b4(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }
