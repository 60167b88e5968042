package lake

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
)

// Table formats (Table.Format).
const (
	FormatIceberg = "iceberg"
	FormatDelta   = "delta"
	FormatPaimon  = "paimon"
)

// Table is one loaded state of a table as its format presents it to the
// engine: the seam between the format-neutral engine (windows, lineage
// rules, carry-over, pairing, net changes, projection, filters, batching,
// read-ahead) and a table format. A format supplies its lineage of
// commits, per commit its file-level change (a Planner), and readers of its
// files (LiveFiles, FileDiff, ChangeFile). A Table is immutable and safe for
// concurrent use.
type Table interface {
	// Format names the table's format: FormatIceberg, FormatDelta or
	// FormatPaimon.
	Format() string
	// FormatVersion is the table's format version (Iceberg's
	// format-version, Delta's minReaderVersion, the version of Paimon's
	// latest snapshot).
	FormatVersion() int
	// History returns the retained lineage of the commit head (nil: the
	// main branch's current one) with what is known of its expired part.
	History(head *int64) History
	// HasCommit reports whether id is a retained commit of any branch.
	HasCommit(id int64) bool
	// Ref returns the branch or tag name of the table and the table as
	// seen on it: a Table whose History(nil) is the lineage of the ref's
	// head (empty for a branch without commits), the rest as the table's
	// own. It fails with ErrRefNotFound when the table has no such ref,
	// and with ErrNoRefs when its format has none.
	Ref(ctx context.Context, name string) (Ref, Table, error)
	// Schema returns the logical schema of commit c (nil: the table's
	// current schema).
	Schema(ctx context.Context, c *Commit) (*Schema, error)
	// Planner returns the planner of the commits of one window.
	Planner(ctx context.Context, opts PlanOptions) (Planner, error)
	// State lists the live files of commit c, whose every live row a state
	// read streams.
	State(ctx context.Context, opts StateOptions, c Commit) (LiveFiles, error)
}

// PlanOptions are what a format's planner is told of a window's plan.
type PlanOptions struct {
	// Table is the table's name, for errors.
	Table string
	// Prune, when set, rules out appended files and row groups whose
	// statistics no row the filter keeps can have (nil: no filter to push
	// down).
	Prune Pruner
	// Stats counts the planner's cache lookups (nil: not counted).
	Stats PlanStats
}

// StateOptions are what a format is told of a state read's plan.
type StateOptions struct {
	// Table is the table's name, for errors.
	Table string
	// Columns are the top-level columns the read decodes.
	Columns []string
	// Concurrency bounds the metadata files planning reads at once.
	Concurrency int
}

// Planner plans the commits of one window, in lineage order: how each
// commit's changes are computed and which files that reads. It may keep
// what it read for the next commit of the window; it is used by one
// goroutine.
type Planner interface {
	// Plan plans commit c.
	Plan(ctx context.Context, c Commit) (Change, error)
}

// Pruner decides from statistics whether a file or row group may hold a
// row a filter keeps (package filter's Pruner). It is conservative:
// anything the statistics do not rule out may match.
type Pruner interface {
	MayMatch(st Stats) bool
}

// Column is a column a filter reads: a primitive field of the window's end
// schema, top-level or nested in structs only.
type Column struct {
	// FieldID is the field's id in the schema the filter was bound to.
	FieldID int
	// Path is the field's full dotted name (addr.city).
	Path string
	// Type is the field's type, a primitive one.
	Type Type
}

// Stats is what a file's or row group's statistics say of its columns.
// Each format implements it over its own statistics.
type Stats interface {
	// Bounds returns the least and greatest non-null values of the column,
	// as values of its type (or of a type held as its values are, see
	// Value); ok is false when the statistics do not say. A truncated
	// bound must still bound: a lower bound no greater, an upper bound no
	// less than every value.
	Bounds(c Column) (lo, hi Value, ok bool)
	// Counts returns the number of values of the column, nulls included,
	// and of nulls; ok is false when the statistics do not say.
	Counts(c Column) (values, nulls int64, ok bool)
}

// PlanStats counts what planning reads.
type PlanStats interface {
	// CacheLookup counts a lookup of a format's cache of planned commits.
	CacheLookup(hit bool)
}

// ReadStats counts what reads decode.
type ReadStats interface {
	// FileRead counts one data file read: the rows decoded, and the row
	// groups they came from.
	FileRead(rows, rowGroups int64)
}

// LiveFiles is a set of data files (or file ranges) whose every live row a
// read streams as an insert: a commit's appended files, or the live files
// of a state.
type LiveFiles interface {
	// Len is the number of files (or file ranges) read.
	Len() int
	// Size returns the files, bytes and records reading them decodes.
	Size() (files, bytes, records int64)
	// Path is the path of file i.
	Path(i int) string
	// Slice returns the files [lo, hi).
	Slice(lo, hi int) LiveFiles
	// Read decodes file i in r's columns, without the rows its deletes
	// delete, and hands each batch to fn, which takes it over.
	Read(ctx context.Context, r *Read, commit int64, i int, fn func(arrow.RecordBatch) error) error
}

// FileDiff is one data file whose live rows a commit changed: present
// before the commit, after it, or both (with different deletes). The
// engine reads the rows that change live status between the two masks.
type FileDiff interface {
	// Path is the file's path.
	Path() string
	// KeyFields are the field ids of the equality deletes that apply to
	// the file on either side (they must be decoded to evaluate them).
	KeyFields() []int
	// Masks returns what the file's deletes hide before and after the
	// commit: nil for a side on which the file is absent.
	Masks(ctx context.Context, r *Read) (before, after *Mask, err error)
	// Candidates returns the row groups of the file, present on both
	// sides, whose rows may change live status given its masks before and
	// after (sorted; empty: none). total is the file's number of row
	// groups.
	Candidates(ctx context.Context, r *Read, before, after *Mask) (rgs []int, total int, err error)
	// Batches decodes the file, or its row groups rgs (sorted; nil: all),
	// without applying any delete, and hands each batch to fn with the
	// file position of its first row; whole selects every column of the
	// end schema instead of r's diff columns. fn takes over each batch.
	Batches(ctx context.Context, r *Read, commit int64, rgs []int, whole bool,
		fn func(rec arrow.RecordBatch, first int) error) error
}

// ChangeFile is a change file of a format that records changed rows
// (Delta's cdc files).
type ChangeFile interface {
	// Path is the file's path.
	Path() string
	// Rows reads the file, handing each batch of its rows to emit with the
	// side of the change (SideDeleted for deletes and update pre-images,
	// SideInserted for inserts and update post-images); whole selects every
	// column of the end schema instead of r's diff columns. emit takes
	// over each batch.
	Rows(ctx context.Context, r *Read, commit int64, whole bool,
		emit func(side int, rec arrow.RecordBatch) error) error
}

// StatBounds are a column's lower and upper statistics, decoded into
// their comparison domain (an int64 for booleans, integers, dates, times
// and timestamps; a float64 for floats; a string for strings), as values
// that compare (Compare) with the column's values. ok is false when either
// is of another Go type, or NaN.
func StatBounds(lo, hi any) (Value, Value, bool) {
	l, ok1 := statValue(lo)
	h, ok2 := statValue(hi)
	return l, h, ok1 && ok2
}

func statValue(v any) (Value, bool) {
	switch v := v.(type) {
	case int64:
		return LongValue(v), true
	case float64:
		return DoubleValue(v), v == v
	case string:
		return StringValue(v), true
	}
	return Value{}, false
}
