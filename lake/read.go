package lake

import (
	"context"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Read is one read of a plan's files, as the engine describes it to the
// formats' readers: what to decode, with what, and what to count. The
// engine makes one per read and closes it when the read ends; a format
// keeps its readers' state for the read in it (Memo). It is safe for
// concurrent use.
type Read struct {
	// Table is the table's name, for errors.
	Table string
	// End is the window's end commit: batches take its schema's types.
	End Commit
	// Columns are the top-level columns of the end schema that appended
	// and live files are read in.
	Columns []string
	// DiffColumns are the top-level columns that diffs and change files
	// are read in when no whole-row comparison is needed.
	DiffColumns []string
	// Allocator allocates the batches.
	Allocator memory.Allocator
	// BatchRows bounds the rows of a decoded batch.
	BatchRows int
	// Concurrency is how many files the engine reads at once.
	Concurrency int
	// Stats counts what the read decodes.
	Stats ReadStats
	// Lineage asks the readers of a format that keeps row lineage to
	// append the lineage columns (RowIDColumn, RowSeqColumn, see
	// WithLineage) to every batch they decode; a format without lineage
	// appends nothing.
	Lineage bool

	// ctx is the context of the whole read (Start), under which Memo
	// builds what serves every file of the read.
	ctx context.Context
	// mu guards memo and closers.
	mu      sync.Mutex
	memo    map[any]*memoEntry
	closers []func()
	closed  bool
}

type memoEntry struct {
	once sync.Once
	v    any
	err  error
}

// Start begins the read under ctx, the context of the whole read (not of
// one file's): what formats build for the read with Memo is built under
// it, since it serves every file (an object store's file IO keeps the
// context it was opened with). The engine calls Start once, before any
// reader runs.
func (r *Read) Start(ctx context.Context) { r.ctx = ctx }

// Memo returns the value of key for read r, built by build the first time
// it is asked for (concurrent callers wait for that build; its error is
// every caller's), under the read's context (Start). A format keeps in it
// what its readers share for the length of one read (file IO, footers,
// delete files, column targets); key is a value of a type of the format's
// own, so that formats never meet each other's values.
func Memo[T any](r *Read, key any, build func(ctx context.Context) (T, error)) (T, error) {
	r.mu.Lock()
	if r.memo == nil {
		r.memo = map[any]*memoEntry{}
	}
	e, ok := r.memo[key]
	if !ok {
		e = &memoEntry{}
		r.memo[key] = e
	}
	r.mu.Unlock()
	e.once.Do(func() {
		ctx := r.ctx
		if ctx == nil {
			ctx = context.Background() // a read the engine did not start: a format's own test
		}
		e.v, e.err = build(ctx)
	})
	if e.err != nil {
		var zero T
		return zero, e.err
	}
	return e.v.(T), nil
}

// OnClose registers fn to run when the read ends (Close); fn runs at once
// when it has ended already.
func (r *Read) OnClose(fn func()) {
	r.mu.Lock()
	if !r.closed {
		r.closers = append(r.closers, fn)
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	fn()
}

// Close ends the read: what the formats registered with OnClose runs, in
// reverse order. The engine calls it once every reader of the read has
// returned.
func (r *Read) Close() {
	r.mu.Lock()
	closers := r.closers
	r.closers, r.closed, r.memo = nil, true, nil
	r.mu.Unlock()
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i]()
	}
}
