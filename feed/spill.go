package feed

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// spillDir holds the temporary files of one read: a directory created on
// first use under the engine's spill root and removed whole by close,
// which every read defers, so no exit path leaves files behind.
type spillDir struct {
	root  string
	mem   memory.Allocator
	stats *counters
	// mu guards dir and n.
	mu  sync.Mutex
	dir string
	n   int
}

func newSpillDir(root string, mem memory.Allocator, stats *counters) *spillDir {
	return &spillDir{root: root, mem: mem, stats: stats}
}

// create opens a new file in the directory, creating the directory first.
func (s *spillDir) create() (*os.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir == "" {
		if err := os.MkdirAll(s.root, 0o700); err != nil {
			return nil, fmt.Errorf("%w: spill directory %s: %v", ErrSpill, s.root, err)
		}
		dir, err := os.MkdirTemp(s.root, "read-")
		if err != nil {
			return nil, fmt.Errorf("%w: spill directory %s: %v", ErrSpill, s.root, err)
		}
		s.dir = dir
	}
	s.n++
	s.stats.spillFiles.Add(1)
	f, err := os.OpenFile(filepath.Join(s.dir, fmt.Sprintf("run-%06d.arrow", s.n)), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSpill, err)
	}
	return f, nil
}

// close removes the directory and every file in it.
func (s *spillDir) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir == "" {
		return nil
	}
	err := os.RemoveAll(s.dir)
	s.dir = ""
	return err
}

// runWriter writes record batches of one schema to an Arrow IPC file.
type runWriter struct {
	f       *os.File
	bw      *bufio.Writer
	w       *ipc.FileWriter
	schema  *arrow.Schema
	mem     memory.Allocator
	batches int
	rows    int64
}

// newRun starts a run file of the given schema.
func (s *spillDir) newRun(schema *arrow.Schema) (*runWriter, error) {
	f, err := s.create()
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	w, err := ipc.NewFileWriter(bw, ipc.WithSchema(schema), ipc.WithAllocator(s.mem))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %v", ErrSpill, err)
	}
	return &runWriter{f: f, bw: bw, w: w, schema: schema, mem: s.mem}, nil
}

// write appends a batch (which stays the caller's).
func (w *runWriter) write(rec arrow.RecordBatch) error {
	if rec.NumRows() == 0 {
		return nil
	}
	if err := w.w.Write(rec); err != nil {
		return fmt.Errorf("%w: %v", ErrSpill, err)
	}
	w.batches++
	w.rows += rec.NumRows()
	return nil
}

// finish closes the writer and opens the run for reading.
func (w *runWriter) finish() (*run, error) {
	err := w.w.Close()
	if err == nil {
		err = w.bw.Flush()
	}
	if err != nil {
		w.f.Close()
		return nil, fmt.Errorf("%w: %v", ErrSpill, err)
	}
	r, err := ipc.NewFileReader(w.f, ipc.WithAllocator(w.mem), ipc.WithSchema(w.schema))
	if err != nil {
		w.f.Close()
		return nil, fmt.Errorf("%w: %v", ErrSpill, err)
	}
	return &run{f: w.f, r: r, batches: w.batches, rows: w.rows}, nil
}

// abort closes the writer without reading it (the spill directory removes
// the file).
func (w *runWriter) abort() {
	_ = w.w.Close()
	w.f.Close()
}

// run is a finished run file, read batch by batch.
type run struct {
	f       *os.File
	r       *ipc.FileReader
	batches int
	rows    int64
}

// batch reads batch i; the caller releases it.
func (r *run) batch(i int) (arrow.RecordBatch, error) {
	rec, err := r.r.RecordBatchAt(i)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSpill, err)
	}
	return rec, nil
}

func (r *run) close() {
	if r == nil {
		return
	}
	r.r.Close()
	r.f.Close()
}
