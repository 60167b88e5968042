package feed

import (
	"context"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
)

// Table formats a table can have (TableInfo.Format, Table.Format).
const (
	FormatIceberg = "iceberg"
	FormatDelta   = "delta"
)

// Table is one table as its format presents it to the engine: the seam
// between the format-neutral engine (windows, lineage rules, carry-over,
// pairing, net changes, projection, filters, batching, read-ahead) and a
// table format. A format supplies
//
//   - its lineage of commits (History): ids, parents, sequence, commit
//     time, operation, schema;
//   - per commit, the file-level change (a planner): the data files added
//     and removed with what their deletes hide before and after, the change
//     files where the format has them, whether the commit changes data at
//     all, and the strategy that follows;
//   - file readers (a fileSource) that decode data files with projection by
//     column identity and apply deletion masks.
//
// The engine's logical schema is an iceberg-go Schema: iceberg-go is used as
// a neutral schema and expression library, and each format converts its own
// schema to it (field identity inside files stays the format reader's
// concern). Values come from IcebergTable and DeltaTable; a Table is one
// loaded state of its table, immutable, and safe for concurrent use.
type Table interface {
	// Format names the table's format: FormatIceberg or FormatDelta.
	Format() string
	// FormatVersion is the table's format version (Iceberg's format-version,
	// Delta's minReaderVersion).
	FormatVersion() int

	// history returns the retained lineage of the commit head (nil: the
	// main branch's current one) with what is known of its expired part.
	history(head *int64) History
	// hasSnapshot reports whether id is a retained commit of any branch.
	hasSnapshot(id int64) bool
	// schemaOf returns the logical schema of commit s (nil: the table's
	// current schema).
	schemaOf(ctx context.Context, s *Snapshot) (*iceberg.Schema, error)
	// planner plans the commits of the window of plan p.
	planner(ctx context.Context, p *Plan, prune *pruner, cache *planCache) (commitPlanner, error)
	// files opens the file readers of plan p's reads.
	files(ctx context.Context, e *Engine, p *Plan) (fileSource, error)
	// planState lists the live files of commit s, whose every live row a
	// state read streams.
	planState(ctx context.Context, e *Engine, p *Plan, s Snapshot) (liveFiles, error)
}

// FormatTables is implemented by a Tables that serves tables of any format:
// the engine then loads tables with Load instead of LoadTable.
type FormatTables interface {
	Tables
	// Load loads the current state of the table "namespace.table".
	Load(ctx context.Context, name string) (Table, error)
}

// commitPlanner plans the commits of one window: how each commit's changes
// are computed and which files that reads. It may keep what it read for the
// next commit of the window.
type commitPlanner interface {
	plan(ctx context.Context, s Snapshot) (SnapshotPlan, error)
}

// liveFiles is a set of data files whose every live row a read streams as
// an insert: a commit's appended files, or the live files of a state. It is
// opaque to the engine: the format that planned it reads it.
type liveFiles interface {
	// count is the number of files (or file ranges) read.
	count() int
	// size returns the files, bytes and records reading them decodes.
	size() (files, bytes, records int64)
}

// fileSource reads the data files of one plan for the engine, in the
// plan's scan columns (or every column of the end schema where a whole-row
// comparison is needed): a format's file readers.
type fileSource interface {
	// live streams the rows of files, every one live. The caller releases
	// each batch.
	live(ctx context.Context, snapshot int64, files liveFiles) iter.Seq2[arrow.RecordBatch, error]
	// deletes returns what the deletes of fd's file hide before and after
	// the commit: nil for a side on which the file is absent.
	deletes(ctx context.Context, fd fileDiff) (before, after *fileDeletes, err error)
	// candidates returns the row groups of fd's file, present on both sides,
	// whose rows may change live status, given what its deletes hide before
	// and after (sorted; empty: none).
	// total is the file's number of row groups.
	candidates(ctx context.Context, fd fileDiff, before, after *fileDeletes) (rgs []int, total int, err error)
	// batches decodes fd's file, or its row groups rgs (sorted; nil: all),
	// without applying any delete, and hands each batch to fn with the file
	// position of its first row; whole selects every column of the end
	// schema instead of the plan's. fn takes over each batch.
	batches(ctx context.Context, snapshot int64, fd fileDiff, rgs []int, whole bool,
		fn func(rec arrow.RecordBatch, first int) error) error
	// changeRows reads a change file (fd.changes), handing each batch of
	// its rows to emit with the side of the change (sideDeleted for
	// deletes and update pre-images, sideInserted for inserts and update
	// post-images). emit takes over each batch.
	changeRows(ctx context.Context, snapshot int64, fd fileDiff, whole bool,
		emit func(side int, rec arrow.RecordBatch) error) error
	close()
}

// fileDiff is one data file whose live rows a commit changed, as the
// format's planner describes it: present before the commit, after it, or
// both (with different deletes).
type fileDiff struct {
	path string
	// rows is the file's row count.
	rows int64
	// keyFields are the field ids of the equality deletes that apply to the
	// file on either side (they must be decoded to evaluate them).
	keyFields []int
	// changes marks a change file of a format that records changed rows
	// (Delta's cdc files): its rows are the changes, each with its kind.
	changes bool
	// src is the format's description of the file, for its fileSource.
	src any
}
