package feed

import (
	"context"
	"io"
	"io/fs"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// guardTable returns the table with its file IO wrapped by safeIO, so that
// a panic in a storage client, in whatever goroutine reads (the engine's
// own or iceberg-go's scan workers), ends the read that met it instead of
// the process.
func guardTable(tbl *table.Table) *table.Table {
	fsF := func(ctx context.Context) (iceio.IO, error) {
		fsys, err := tbl.FS(ctx)
		if err != nil {
			return nil, err
		}
		return safeIO{fsys}, nil
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), fsF, nil)
}

// safeIO is a read-only file IO that turns a panic of the IO it wraps into
// an error.
type safeIO struct{ io iceio.IO }

func (s safeIO) Open(name string) (f iceio.File, err error) {
	defer recoverTo(&err)
	f, err = s.io.Open(name)
	if err != nil {
		return nil, err
	}
	return safeFile{f}, nil
}

func (s safeIO) Remove(name string) (err error) {
	defer recoverTo(&err)
	return s.io.Remove(name)
}

// ReadFile reads a whole file (iceberg-go reads metadata this way when the
// IO offers it).
func (s safeIO) ReadFile(name string) (b []byte, err error) {
	defer recoverTo(&err)
	if rf, ok := s.io.(iceio.ReadFileIO); ok {
		return rf.ReadFile(name)
	}
	f, err := s.io.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// safeFile is a file whose every method turns a panic into an error.
type safeFile struct{ f iceio.File }

func (s safeFile) Stat() (fi fs.FileInfo, err error) {
	defer recoverTo(&err)
	return s.f.Stat()
}

func (s safeFile) Read(p []byte) (n int, err error) {
	defer recoverTo(&err)
	return s.f.Read(p)
}

func (s safeFile) ReadAt(p []byte, off int64) (n int, err error) {
	defer recoverTo(&err)
	return s.f.ReadAt(p, off)
}

func (s safeFile) Seek(offset int64, whence int) (n int64, err error) {
	defer recoverTo(&err)
	return s.f.Seek(offset, whence)
}

func (s safeFile) Close() (err error) {
	defer recoverTo(&err)
	return s.f.Close()
}
