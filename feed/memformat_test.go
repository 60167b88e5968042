package feed_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/lake"
)

// This file tests the engine against an in-memory table format, through
// the format seam alone (package lake): no Iceberg or Delta code runs.

// memRow is a row of the in-memory format's table (id long, name string).
type memRow struct {
	id   int64
	name string
}

// memFile is a data file of the in-memory format: its rows, in position
// order, in one row group.
type memFile struct {
	path string
	rows []memRow
	// ids and seqs are the rows' row lineage, for a table that keeps it
	// (nil: the file has none, its rows' lineage is null).
	ids, seqs []int64
}

// memCommit is a commit of the in-memory format with its file-level
// change: appended files, or file diffs (a file with the positions its
// deletes delete before and after the commit).
type memCommit struct {
	commit   lake.Commit
	appended []*memFile
	diffs    []memDiff
	strategy string
	// lineage and lineageReason are the commit's lake.Change.Lineage and
	// LineageReason.
	lineage       bool
	lineageReason string
}

// memTable is a loaded in-memory table.
type memTable struct {
	schema  *lake.Schema
	commits []memCommit
	// lineage is set for a table that keeps row lineage.
	lineage bool
}

// KeepsLineage implements lake.LineageKeeper.
func (t *memTable) KeepsLineage() bool { return t.lineage }

func (t *memTable) Format() string     { return "memory" }
func (t *memTable) FormatVersion() int { return 1 }

func (t *memTable) History(head *int64) lake.History {
	h := lake.History{CountsCommits: true, TimeOrdered: true}
	for _, c := range t.commits {
		h.Commits = append(h.Commits, c.commit)
		if head != nil && c.commit.ID == *head {
			break
		}
	}
	return h
}

func (t *memTable) HasCommit(id int64) bool {
	return slices.ContainsFunc(t.commits, func(c memCommit) bool { return c.commit.ID == id })
}

// Ref fails: an in-memory table has no refs.
func (t *memTable) Ref(context.Context, string) (lake.Ref, lake.Table, error) {
	return lake.Ref{}, nil, lake.ErrNoRefs
}

func (t *memTable) Schema(context.Context, *lake.Commit) (*lake.Schema, error) { return t.schema, nil }

func (t *memTable) Planner(context.Context, lake.PlanOptions) (lake.Planner, error) { return t, nil }

// Plan is the memTable's own planner: each commit's change is stored.
func (t *memTable) Plan(_ context.Context, c lake.Commit) (lake.Change, error) {
	for _, mc := range t.commits {
		if mc.commit.ID != c.ID {
			continue
		}
		ch := lake.Change{Strategy: mc.strategy, Files: []lake.FilePlan{}, Lineage: mc.lineage,
			LineageReason: mc.lineageReason}
		if mc.appended != nil {
			ch.Appended = memLive{t: t, files: mc.appended}
		}
		for _, d := range mc.diffs {
			d.t = t
			ch.Diffs = append(ch.Diffs, d)
			ch.Rewrites = ch.Rewrites || d.absentBefore // an added file may re-insert rows
		}
		for _, f := range mc.appended {
			ch.Files = append(ch.Files, lake.FilePlan{Path: f.path, Content: lake.ContentData, Role: lake.RoleAdded,
				RecordCount: int64(len(f.rows))})
		}
		return ch, nil
	}
	return lake.Change{}, fmt.Errorf("%w: no commit %d", lake.ErrSnapshotNotFound, c.ID)
}

func (t *memTable) State(context.Context, lake.StateOptions, lake.Commit) (lake.LiveFiles, error) {
	return nil, fmt.Errorf("%w: the in-memory format reads no state", lake.ErrUnsupported)
}

// batch decodes rows into the given columns of the table's schema.
func (t *memTable) batch(mem memory.Allocator, columns []string, rows []memRow) (arrow.RecordBatch, error) {
	sub, err := t.schema.Select(columns...)
	if err != nil {
		return nil, err
	}
	schema := sub.ToArrow()
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i, f := range schema.Fields() {
		for _, r := range rows {
			switch f.Name {
			case "id":
				b.Field(i).(*array.Int64Builder).Append(r.id)
			case "name":
				b.Field(i).(*array.StringBuilder).Append(r.name)
			}
		}
	}
	return b.NewRecordBatch(), nil
}

// read decodes file f into the given columns, with its rows' lineage
// when the read asks for it of a table that keeps it.
func (t *memTable) read(r *lake.Read, columns []string, f *memFile) (arrow.RecordBatch, error) {
	rec, err := t.batch(r.Allocator, columns, f.rows)
	if err != nil || !r.Lineage || !t.lineage {
		return rec, err
	}
	var ids, seqs arrow.Array
	if f.ids != nil {
		b := array.NewInt64Builder(r.Allocator)
		defer b.Release()
		b.AppendValues(f.ids, nil)
		ids = b.NewArray()
		defer ids.Release()
		b.AppendValues(f.seqs, nil)
		seqs = b.NewArray()
		defer seqs.Release()
	}
	return lake.WithLineage(r.Allocator, rec, 0, ids, seqs, lake.FileLineage{})
}

// memLive are appended files, every row live.
type memLive struct {
	t     *memTable
	files []*memFile
}

func (ls memLive) Len() int                        { return len(ls.files) }
func (ls memLive) Path(i int) string               { return ls.files[i].path }
func (ls memLive) Slice(lo, hi int) lake.LiveFiles { return memLive{t: ls.t, files: ls.files[lo:hi]} }

func (ls memLive) Size() (files, bytes, records int64) {
	for _, f := range ls.files {
		files++
		records += int64(len(f.rows))
	}
	return files, 0, records
}

func (ls memLive) Read(_ context.Context, r *lake.Read, _ int64, i int, fn func(arrow.RecordBatch) error) error {
	rec, err := ls.t.read(r, r.Columns, ls.files[i])
	if err != nil {
		return err
	}
	return fn(rec)
}

// memDiff is a file whose live rows a commit changed.
type memDiff struct {
	t             *memTable
	file          *memFile
	before, after []uint32 // the positions deleted before and after
	// absentBefore and absentAfter mark a side without the file (added,
	// removed by the commit).
	absentBefore, absentAfter bool
}

func (d memDiff) Path() string     { return d.file.path }
func (d memDiff) KeyFields() []int { return nil }

func (d memDiff) Masks(context.Context, *lake.Read) (before, after *lake.Mask, err error) {
	if !d.absentBefore {
		before = &lake.Mask{Positions: roaring.BitmapOf(d.before...)}
	}
	if !d.absentAfter {
		after = &lake.Mask{Positions: roaring.BitmapOf(d.after...)}
	}
	return before, after, nil
}

func (d memDiff) Candidates(_ context.Context, _ *lake.Read, before, after *lake.Mask) ([]int, int, error) {
	return lake.ChangedRowGroups([]int64{0}, []int64{int64(len(d.file.rows))}, before.Positions,
		after.Positions), 1, nil
}

func (d memDiff) Batches(_ context.Context, r *lake.Read, _ int64, _ []int, whole bool,
	fn func(rec arrow.RecordBatch, first int) error) error {
	cols := r.DiffColumns
	if whole {
		cols = d.t.schema.Names()
	}
	rec, err := d.t.read(r, cols, d.file)
	if err != nil {
		return err
	}
	return fn(rec, 0)
}

// memTables serves one in-memory table.
type memTables struct{ t *memTable }

func (ts memTables) Load(_ context.Context, name string) (feed.Table, error) {
	if name != tableName {
		return nil, fmt.Errorf("no table %s", name)
	}
	return ts.t, nil
}

func (ts memTables) ListTables(context.Context) ([]string, error) { return []string{tableName}, nil }

// TestEngineOverInMemoryFormat reads the changes of an append, a position
// delete and a rewrite with carry-over from a format that only implements
// the seam: inserts, a delete, and an update pair whose unchanged row
// cancels.
func TestEngineOverInMemoryFormat(t *testing.T) {
	schema, err := lake.NewSchema(0, []int{1},
		lake.Field{ID: 1, Name: "id", Type: lake.LongType{}, Required: true},
		lake.Field{ID: 2, Name: "name", Type: lake.StringType{}})
	if err != nil {
		t.Fatal(err)
	}
	a := &memFile{path: "a", rows: []memRow{{1, "a"}, {2, "b"}, {3, "c"}}}
	b := &memFile{path: "b", rows: []memRow{{1, "a"}, {3, "C"}}}
	tbl := &memTable{schema: schema, commits: []memCommit{
		{commit: linearCommit(1), appended: []*memFile{a}, strategy: lake.StrategyAppend},
		{commit: linearCommit(2), diffs: []memDiff{{file: a, before: []uint32{}, after: []uint32{1}}},
			strategy: lake.StrategyPositionDelete},
		{commit: linearCommit(3), diffs: []memDiff{{file: a, before: []uint32{1}, absentAfter: true},
			{file: b, absentBefore: true, after: []uint32{}}}, strategy: lake.StrategyRewrite},
	}}
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	eng := feed.New(memTables{tbl}, feed.Options{Allocator: mem})

	p, got, _ := read(t, eng, feed.Request{Table: tableName})
	if p.Format != "memory" || len(p.Snapshots) != 3 {
		t.Fatalf("plan of format %q with %d snapshots", p.Format, len(p.Snapshots))
	}
	row := func(id int64, name string) map[string]any { return map[string]any{"id": id, "name": name} }
	sameChanges(t, got, []change{
		{Op: feed.OpInsert, After: row(1, "a"), Snapshot: 1},
		{Op: feed.OpInsert, After: row(2, "b"), Snapshot: 1},
		{Op: feed.OpInsert, After: row(3, "c"), Snapshot: 1},
		{Op: feed.OpDelete, Before: row(2, "b"), Snapshot: 2},
		{Op: feed.OpUpdateBefore, Before: row(3, "c"), Snapshot: 3},
		{Op: feed.OpUpdateAfter, After: row(3, "C"), Snapshot: 3},
	})
}

// linearCommit is commit id of a linear history of the in-memory format:
// sequence number, commit_seq and id alike, a second apart, the parent the
// id before.
func linearCommit(id int64) lake.Commit {
	c := lake.Commit{ID: id, SequenceNumber: id, CommitSeq: id, TimestampMs: id * 1000}
	if id > 1 {
		parent := id - 1
		c.ParentID = &parent
	}
	return c
}
