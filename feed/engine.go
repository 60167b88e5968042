package feed

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Tables is what the engine needs from a catalog: tables of any format by
// name, as their formats present them (catalog.Catalog for an Iceberg
// catalog; format/iceberg.NewTable and format/delta.Source make them).
type Tables interface {
	// Load loads the current state of the table "namespace.table".
	Load(ctx context.Context, name string) (Table, error)
	// ListTables returns the names of every table.
	ListTables(ctx context.Context) ([]string, error)
}

// Defaults of Options.
const (
	// DefaultMaxBatchBytes is the default target size of a batch's buffers.
	DefaultMaxBatchBytes = 2 << 20
	// DefaultMaxBatchRows is the default largest number of rows in a batch.
	DefaultMaxBatchRows = 64 << 10
	// DefaultReadConcurrency is the default number of data files decoded
	// ahead of the consumer.
	DefaultReadConcurrency = 2
	// HardMaxBatchBytes bounds MaxBatchBytes: encoded batches must stay under
	// the 4 MiB default message limit of gRPC clients, with room for the
	// IPC metadata and padding.
	HardMaxBatchBytes = 3 << 20
	// DefaultMemoryBudget is the default memory the engine's reads may hold
	// for changes they must see whole before emitting them (see
	// Options.MemoryBudget).
	DefaultMemoryBudget = 32 << 20
)

// Options configures an Engine. The zero value is valid: every unset field
// takes its default.
type Options struct {
	// Allocator allocates the Arrow memory of decoded and assembled batches.
	// Default: arrow-go's Go allocator, under which a value taken from a
	// batch (a String.Value kept as a map key) stays valid after the batch
	// is released. flightd passes the process's pool of Arrow buffers
	// (arrowpool.Shared), which gives the buffers of a released batch to the
	// next and is faster, at the price that nothing may point into a batch's
	// buffers once it is released (package arrowpool).
	Allocator memory.Allocator
	// MaxBatchBytes is the target size of a batch's buffers (both images
	// included). Default DefaultMaxBatchBytes; at most HardMaxBatchBytes.
	MaxBatchBytes int64
	// MaxBatchRows is the largest number of rows in a batch. Default
	// DefaultMaxBatchRows.
	MaxBatchRows int
	// ReadConcurrency is how many data files are decoded ahead of the
	// consumer. Default DefaultReadConcurrency.
	ReadConcurrency int
	// MemoryBudget bounds, in bytes and for all reads of the engine
	// together, the rows held by the computations that must see many
	// changes before emitting any: net changes over a window, and the
	// carry-over cancellation and update pairing of a snapshot that both
	// deletes and inserts rows. Past it, a read spills those rows to
	// SpillDir and processes them partition by partition. Default
	// DefaultMemoryBudget.
	MemoryBudget int64
	// SpillDir is the directory under which reads spill (each in its own
	// temporary directory, removed when the read ends). Default: the
	// sluice-spill directory under the system's temporary directory.
	SpillDir string
}

func (o Options) withDefaults() Options {
	if o.Allocator == nil {
		o.Allocator = defaultAllocator
	}
	if o.MaxBatchBytes <= 0 {
		o.MaxBatchBytes = DefaultMaxBatchBytes
	}
	o.MaxBatchBytes = min(o.MaxBatchBytes, HardMaxBatchBytes)
	if o.MaxBatchRows <= 0 {
		o.MaxBatchRows = DefaultMaxBatchRows
	}
	if o.ReadConcurrency <= 0 {
		o.ReadConcurrency = DefaultReadConcurrency
	}
	if o.MemoryBudget <= 0 {
		o.MemoryBudget = DefaultMemoryBudget
	}
	if o.SpillDir == "" {
		o.SpillDir = filepath.Join(os.TempDir(), "sluice-spill")
	}
	return o
}

// Engine plans and reads change windows. It is safe for concurrent use.
// defaultAllocator is Options.Allocator's default; the package's tests
// set it to the poisoned shared pool (main_test.go).
var defaultAllocator memory.Allocator = memory.DefaultAllocator

type Engine struct {
	tables Tables
	opts   Options
	stats  counters
	budget *budget
	// reads counts the reads running (see Close).
	reads atomic.Int64

	// watchMu guards watchers: the running table watchers, by table.
	watchMu  sync.Mutex
	watchers map[string]*watcher
	// loadsMu guards loads: the catalog loads of each table that loaded.
	loadsMu sync.Mutex
	loads   map[string]int64
}

// counters are the engine's running totals (see Stats).
type counters struct {
	filesRead, rowGroupsRead, rowsDecoded atomic.Int64
	cacheHits, cacheMisses                atomic.Int64
	spillFiles                            atomic.Int64
	tableLoads, tableLoadFailures         atomic.Int64
}

// FileRead counts a data file read (lake.ReadStats).
func (c *counters) FileRead(rows, rowGroups int64) {
	c.filesRead.Add(1)
	c.rowsDecoded.Add(rows)
	c.rowGroupsRead.Add(rowGroups)
}

// CacheLookup counts a lookup of a format's plan cache (lake.PlanStats).
func (c *counters) CacheLookup(hit bool) {
	if hit {
		c.cacheHits.Add(1)
	} else {
		c.cacheMisses.Add(1)
	}
}

// Stats are running totals of the engine's reads since it was created.
type Stats struct {
	// FilesRead counts data files read (whole or in part).
	FilesRead int64
	// RowGroupsRead counts the row groups of the data files that snapshots
	// deleting rows read (appended files are read whole and not counted).
	RowGroupsRead int64
	// RowsDecoded counts the rows decoded from data files.
	RowsDecoded int64
	// PlanCacheHits and PlanCacheMisses count the snapshot plans served
	// from the cache and read from manifests.
	PlanCacheHits, PlanCacheMisses int64
	// SpillFiles counts the temporary files reads wrote because their
	// changes did not fit the memory budget.
	SpillFiles int64
	// MemoryBudgetInUse is the part of the memory budget reads hold now.
	MemoryBudgetInUse int64
	// TableLoads counts the loads of a table's metadata from the catalog
	// (see TableLoads for them by table); TableLoadFailures those that
	// failed (the table unknown, the catalog unreachable, ...).
	TableLoads, TableLoadFailures int64
}

// Stats returns the engine's running totals.
// Allocator returns the allocator of the engine's batches.
func (e *Engine) Allocator() memory.Allocator { return e.opts.Allocator }

func (e *Engine) Stats() Stats {
	return Stats{FilesRead: e.stats.filesRead.Load(), RowGroupsRead: e.stats.rowGroupsRead.Load(),
		RowsDecoded: e.stats.rowsDecoded.Load(), PlanCacheHits: e.stats.cacheHits.Load(),
		PlanCacheMisses: e.stats.cacheMisses.Load(), SpillFiles: e.stats.spillFiles.Load(),
		MemoryBudgetInUse: e.budget.inUse(), TableLoads: e.stats.tableLoads.Load(),
		TableLoadFailures: e.stats.tableLoadFailures.Load()}
}

// TableLoads returns the count of successful loads of each table's
// metadata from the catalog since the engine was created (failed loads
// are counted in Stats only: their names may be anything a client sent).
// A table followed by any number of streams is loaded about once per poll
// interval (see Stream).
func (e *Engine) TableLoads() map[string]int64 {
	e.loadsMu.Lock()
	defer e.loadsMu.Unlock()
	return maps.Clone(e.loads)
}

// New returns an engine that reads the tables of tables.
func New(tables Tables, opts Options) *Engine {
	e := &Engine{tables: tables, opts: opts.withDefaults(), watchers: map[string]*watcher{},
		loads: map[string]int64{}}
	e.budget = newBudget(e.opts.MemoryBudget)
	return e
}

// TableStatus is a table's current commit position.
type TableStatus struct {
	Table string `json:"table"`
	// CommitSeq is the commit sequence of the current snapshot of the main
	// branch, 0 for a table without snapshots.
	CommitSeq int64 `json:"commit_seq"`
	// Snapshot is the current snapshot of the main branch, nil for a table
	// without snapshots.
	Snapshot *int64 `json:"snapshot"`
	// TimestampMs is the current snapshot's commit time (0 without one).
	TimestampMs int64 `json:"timestamp_ms"`
	// Ref is the branch or tag the position is of (StatusOn); nil for the
	// main branch of a call that named no ref.
	Ref *Ref `json:"ref,omitempty"`
}

// TableInfo describes one table.
type TableInfo struct {
	Name            string `json:"name"`
	Format          string `json:"format"`
	FormatVersion   int    `json:"format_version"`
	CurrentSnapshot *int64 `json:"current_snapshot"`
	CommitSeq       int64  `json:"commit_seq"`
	// Backend is the verdict of a table a WindowBackend may serve.
	Backend *Verdict `json:"backend,omitempty"`
}

// load returns the table: the state pinned in ctx for it (see withTable),
// else its current state loaded from the catalog.
func (e *Engine) load(ctx context.Context, name string) (Table, error) {
	if p, ok := ctx.Value(pinnedKey{}).(pinned); ok && p.name == name {
		return p.tbl, nil
	}
	return e.loadTable(ctx, name)
}

// loadTable loads a table's current state from the catalog, and counts
// the load.
func (e *Engine) loadTable(ctx context.Context, name string) (Table, error) {
	tbl, err := e.tables.Load(ctx, name)
	e.stats.tableLoads.Add(1)
	if err != nil {
		e.stats.tableLoadFailures.Add(1)
		return nil, err
	}
	e.loadsMu.Lock()
	e.loads[name]++
	e.loadsMu.Unlock()
	return tbl, nil
}

// pinnedKey is the context key of a pinned table state.
type pinnedKey struct{}

// pinned is a table state that the engine's calls made with the context
// use instead of loading the table again.
type pinned struct {
	name string
	tbl  Table
}

// withTable returns ctx with tbl pinned as the state of table name: a
// stream plans its windows on the state its watcher loaded (which holds
// their snapshots), so that planning does not load the table again.
func withTable(ctx context.Context, name string, tbl Table) context.Context {
	return context.WithValue(ctx, pinnedKey{}, pinned{name: name, tbl: tbl})
}

// Status returns the table's current commit position: cheap enough to poll.
// While the table is watched (a follow stream or WatchCommits runs on it),
// Status answers from the watcher's last load when that is less than a
// poll interval old, so that it is as current as what the streams see;
// otherwise it loads the table.
func (e *Engine) Status(ctx context.Context, name string) (TableStatus, error) {
	return e.StatusOn(ctx, name, "")
}

// StatusOn returns the commit position of the table's branch or tag ref
// (empty: the main branch), as Status does: the head of the ref, its
// commit_seq and time. An unknown ref is ErrRefNotFound.
func (e *Engine) StatusOn(ctx context.Context, name, ref string) (TableStatus, error) {
	e.watchMu.Lock()
	w := e.watchers[name]
	e.watchMu.Unlock()
	if w != nil {
		if st := w.fresh(); st != nil {
			if ref == "" {
				return statusOf(name, st.history()), nil
			}
			return refStatus(ctx, name, st.tbl, ref)
		}
	}
	tbl, err := e.load(ctx, name)
	if err != nil {
		return TableStatus{}, err
	}
	return refStatus(ctx, name, tbl, ref)
}

// refStatus is the commit position of tbl's ref (empty: the main branch).
func refStatus(ctx context.Context, name string, tbl Table, ref string) (TableStatus, error) {
	view, r, err := onRef(ctx, name, tbl, ref)
	if err != nil {
		return TableStatus{}, err
	}
	st := status(name, view)
	st.Ref = r
	return st, nil
}

func status(name string, tbl Table) TableStatus { return statusOf(name, historyAt(tbl, nil)) }

// statusOf returns the commit position of a table whose history is hist.
func statusOf(name string, hist History) TableStatus {
	st := TableStatus{Table: name}
	lineage := hist.Snapshots
	if len(lineage) > 0 {
		cur := lineage[len(lineage)-1]
		st.CommitSeq, st.Snapshot, st.TimestampMs = cur.CommitSeq, &cur.ID, cur.TimestampMs
	}
	return st
}

// Snapshots returns the lineage of the table's main branch, oldest first.
func (e *Engine) Snapshots(ctx context.Context, name string) ([]Snapshot, error) {
	h, _, err := e.HistoryOn(ctx, name, "")
	return h.Snapshots, err
}

// History returns the retained lineage of the table's main branch, oldest
// first, with what the metadata tells of its expired part.
func (e *Engine) History(ctx context.Context, name string) (History, error) {
	h, _, err := e.HistoryOn(ctx, name, "")
	return h, err
}

// HistoryOn returns the retained lineage of the table's branch or tag ref
// (empty: the main branch), oldest first, with what the metadata tells of
// its expired part, and the ref (nil when ref is empty). An unknown ref is
// ErrRefNotFound.
func (e *Engine) HistoryOn(ctx context.Context, name, ref string) (History, *Ref, error) {
	tbl, err := e.load(ctx, name)
	if err != nil {
		return History{}, nil, err
	}
	view, r, err := onRef(ctx, name, tbl, ref)
	if err != nil {
		return History{}, nil, err
	}
	return historyAt(view, nil), r, nil
}

// TableError is a table that a listing left out, and why.
type TableError struct {
	Table string
	Err   error
}

// ListTables describes every table for which allow returns true (all
// tables when allow is nil). A table that cannot be loaded (its metadata
// file missing or damaged) is left out of tables and reported in skipped,
// so that one broken table does not hide the others; but when tables were
// to be listed and none could be loaded, the listing fails with the first
// one's error (the catalog's storage is then most likely unreachable).
func (e *Engine) ListTables(ctx context.Context, allow func(name string) bool) (tables []TableInfo,
	skipped []TableError, err error) {
	names, err := e.tables.ListTables(ctx)
	if err != nil {
		return nil, nil, err
	}
	tables = make([]TableInfo, 0, len(names))
	for _, name := range names {
		if allow != nil && !allow(name) {
			continue
		}
		tbl, err := e.load(ctx, name)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			skipped = append(skipped, TableError{Table: name, Err: err})
			continue
		}
		st := status(name, tbl)
		tables = append(tables, TableInfo{Name: name, Format: tbl.Format(), FormatVersion: tbl.FormatVersion(),
			CurrentSnapshot: st.Snapshot, CommitSeq: st.CommitSeq, Backend: verdictOf(tbl)})
	}
	if len(tables) == 0 && len(skipped) > 0 {
		return nil, skipped, fmt.Errorf("list tables: no table could be loaded: %w", skipped[0].Err)
	}
	return tables, skipped, nil
}
