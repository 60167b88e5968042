package iceberg

import (
	"context"
	"io"
	"io/fs"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/internal/lib/storage"
	"github.com/sluicefeed/sluice/lake"
)

// guardTable returns the table with its file IO wrapped by safeIO, so that
// a panic in a storage client, in whatever goroutine reads (the engine's
// own or iceberg-go's scan workers), ends the read that met it instead of
// the process, and the storage's errors name their cause.
func guardTable(tbl *table.Table) *table.Table {
	fsF := func(ctx context.Context) (iceio.IO, error) {
		fsys, err := tbl.FS(ctx)
		if err != nil {
			return nil, err
		}
		storage.Prepare(fsys) // bounded GCS retries: unreachable storage fails a read
		return safeIO{fsys}, nil
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), fsF, nil)
}

// safeIO is a read-only file IO that turns a panic of the IO it wraps into
// an error, and classifies its errors (storage.Classify: a missing object
// whose bucket is missing too is storage.ErrBucketNotFound, not a file
// gone; a 403 is storage.ErrAccessDenied).
type safeIO struct{ io iceio.IO }

func (s safeIO) Open(name string) (f iceio.File, err error) {
	defer lake.RecoverTo(&err)
	f, err = s.io.Open(name)
	if err != nil {
		return nil, storage.Classify(s.io, name, err)
	}
	return safeFile{f: f, io: s.io, name: name}, nil
}

func (s safeIO) Remove(name string) (err error) {
	defer lake.RecoverTo(&err)
	return s.io.Remove(name)
}

// ReadFile reads a whole file (iceberg-go reads metadata this way when the
// IO offers it).
func (s safeIO) ReadFile(name string) (b []byte, err error) {
	defer lake.RecoverTo(&err)
	if rf, ok := s.io.(iceio.ReadFileIO); ok {
		b, err = rf.ReadFile(name)
		return b, storage.Classify(s.io, name, err)
	}
	f, err := s.io.Open(name)
	if err != nil {
		return nil, storage.Classify(s.io, name, err)
	}
	defer f.Close()
	b, err = io.ReadAll(f)
	return b, storage.Classify(s.io, name, err)
}

// safeFile is a file whose every method turns a panic into an error, and
// whose read errors are classified.
type safeFile struct {
	f    iceio.File
	io   iceio.IO
	name string
}

func (s safeFile) Stat() (fi fs.FileInfo, err error) {
	defer lake.RecoverTo(&err)
	return s.f.Stat()
}

func (s safeFile) Read(p []byte) (n int, err error) {
	defer lake.RecoverTo(&err)
	n, err = s.f.Read(p)
	return n, s.classify(err)
}

func (s safeFile) ReadAt(p []byte, off int64) (n int, err error) {
	defer lake.RecoverTo(&err)
	n, err = s.f.ReadAt(p, off)
	return n, s.classify(err)
}

func (s safeFile) Seek(offset int64, whence int) (n int64, err error) {
	defer lake.RecoverTo(&err)
	return s.f.Seek(offset, whence)
}

func (s safeFile) Close() (err error) {
	defer lake.RecoverTo(&err)
	return s.f.Close()
}

// classify classifies a read's error; the ends of the file pass as they
// are (readers test them with ==).
func (s safeFile) classify(err error) error {
	if err == nil || err == io.EOF || err == io.ErrUnexpectedEOF {
		return err
	}
	return storage.Classify(s.io, s.name, err)
}
