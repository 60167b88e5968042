package paimon

import (
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func openFixture(t *testing.T, db, name string) *Table {
	t.Helper()
	tbl, err := Open(context.Background(), os.DirFS(filepath.Join(fixtureRoot, "warehouse", db+".db", name)), db+"."+name)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func TestOpenNotTable(t *testing.T) {
	_, err := Open(context.Background(), fstest.MapFS{"x": {Data: []byte("y")}}, "t")
	if !errors.Is(err, ErrNotTable) {
		t.Fatalf("got %v, want ErrNotTable", err)
	}
}

func TestSnapshotsAndErrors(t *testing.T) {
	ctx := context.Background()
	tbl := openFixture(t, "java", "pk_expire")
	r, err := tbl.Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Earliest <= 1 || r.Latest < r.Earliest {
		t.Fatalf("range %+v: want expired snapshots before the earliest", r)
	}
	if _, err := tbl.Snapshot(ctx, r.Earliest-1); !errors.Is(err, ErrSnapshotExpired) {
		t.Errorf("snapshot %d: got %v, want ErrSnapshotExpired", r.Earliest-1, err)
	}
	if _, err := tbl.Snapshot(ctx, r.Latest+1); !errors.Is(err, ErrSnapshotNotFound) {
		t.Errorf("snapshot %d: got %v, want ErrSnapshotNotFound", r.Latest+1, err)
	}
	latest, err := tbl.Latest(ctx)
	if err != nil || latest.ID != r.Latest {
		t.Fatalf("latest: %v %v", latest, err)
	}
	for id := r.Earliest; id <= r.Latest; id++ {
		s, err := tbl.Snapshot(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		at, err := tbl.SnapshotAt(ctx, s.Time())
		if err != nil || at.ID < id || at.TimeMillis != s.TimeMillis {
			t.Errorf("SnapshotAt(%s) = %v, %v; want snapshot %d (or a later one of the same millisecond)", s.Time(), at, err, id)
		}
	}
	first, _ := tbl.Snapshot(ctx, r.Earliest)
	if _, err := tbl.SnapshotAt(ctx, first.Time().Add(-time.Hour)); !errors.Is(err, ErrSnapshotExpired) {
		t.Errorf("SnapshotAt before the earliest: got %v, want ErrSnapshotExpired", err)
	}
}

// TestSnapshotHints reads the range from EARLIEST and LATEST when
// snapshot/ cannot be listed, moving past a stale LATEST.
func TestSnapshotHints(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(fixtureRoot, "warehouse", "py.db", "pk_dedup")
	fsys := noList{os.DirFS(src)}
	tbl, err := Open(ctx, fsys, "hints")
	if err != nil {
		t.Fatal(err)
	}
	want, err := openFixture(t, "py", "pk_dedup").Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tbl.Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Latest != want.Latest {
		t.Fatalf("from hints: %+v, listing: %+v", got, want)
	}
}

// noList fails to list snapshot/, as a store without listing rights.
type noList struct{ fsys fs.FS }

func (n noList) Open(name string) (fs.File, error) {
	if name == snapshotDir {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return n.fsys.Open(name)
}

func TestTags(t *testing.T) {
	ctx := context.Background()
	tbl := openFixture(t, "java", "pk_compact")
	tags, err := tbl.Tags(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tags) != 1 || tags[0].Name != "tag-3" {
		t.Fatalf("tags %+v, want tag-3", tags)
	}
	s, err := tbl.Snapshot(ctx, tags[0].Snapshot.ID)
	if err != nil || s.TimeMillis != tags[0].Snapshot.TimeMillis {
		t.Fatalf("tag snapshot %+v, snapshot %+v, %v", tags[0].Snapshot, s, err)
	}
	if _, err := tbl.Tag(ctx, "nope"); !errors.Is(err, ErrSnapshotNotFound) {
		t.Errorf("missing tag: got %v", err)
	}
	if _, err := tbl.Tag(ctx, "../x"); !errors.Is(err, ErrSnapshotNotFound) {
		t.Errorf("tag outside tag/: got %v", err)
	}
}

// TestDeltaAndCompaction checks what manifests say of commits: an APPEND
// adds APPEND files, a COMPACT deletes files and adds COMPACT ones that
// change no row.
func TestDeltaAndCompaction(t *testing.T) {
	ctx := context.Background()
	tbl := openFixture(t, "java", "pk_compact")
	r, err := tbl.Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	compacts := 0
	for id := r.Earliest; id <= r.Latest; id++ {
		s, err := tbl.Snapshot(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		delta, err := tbl.Delta(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range delta {
			switch {
			case s.CommitKind == CommitAppend && (e.Kind != KindAdd || e.File.Source != SourceAppend):
				t.Errorf("snapshot %d (APPEND): entry %v of source %v", id, e.Kind, e.File.Source)
			case s.CommitKind == CommitCompact && e.Kind == KindAdd && e.File.Source != SourceCompact:
				t.Errorf("snapshot %d (COMPACT): added file of source %v", id, e.File.Source)
			}
		}
		if s.CommitKind == CommitCompact {
			compacts++
		}
	}
	if compacts == 0 {
		t.Fatal("no COMPACT snapshot in the fixture")
	}
}

func TestUnsupportedFormat(t *testing.T) {
	ctx := context.Background()
	tbl := openFixture(t, "java", "pk_compact")
	s, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	live, err := tbl.LiveFiles(ctx, s)
	if err != nil || len(live) == 0 {
		t.Fatalf("live files: %d, %v", len(live), err)
	}
	sch, err := tbl.SnapshotSchema(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	e := live[0]
	e.File.FileName = "data-x.orc"
	err = tbl.ReadFile(ctx, sch, &e, ReadOptions{}, func(b arrow.RecordBatch) error { b.Release(); return nil })
	if !errors.Is(err, ErrUnsupportedFormat) {
		t.Fatalf("got %v, want ErrUnsupportedFormat", err)
	}
}

func TestDeletionVectorsApplied(t *testing.T) {
	ctx := context.Background()
	tbl := openFixture(t, "java", "pk_dv")
	r, err := tbl.Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vectors, deleted := 0, uint64(0)
	for id := r.Earliest; id <= r.Latest; id++ {
		s, err := tbl.Snapshot(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		splits, err := tbl.Splits(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, sp := range splits {
			for name, d := range sp.DeletionVectors {
				bm, err := tbl.ReadDeletionVector(ctx, d.IndexFile, d.Vector)
				if err != nil {
					t.Fatalf("snapshot %d: %s: %v", id, name, err)
				}
				if d.Vector.Cardinality >= 0 && int64(bm.GetCardinality()) != d.Vector.Cardinality {
					t.Errorf("snapshot %d: %s: %d deleted rows, manifest says %d", id, name, bm.GetCardinality(), d.Vector.Cardinality)
				}
				vectors++
				deleted += bm.GetCardinality()
			}
		}
	}
	if vectors == 0 || deleted == 0 {
		t.Fatalf("%d deletion vectors deleting %d rows in the fixture: want some", vectors, deleted)
	}
}

func TestBinaryRow(t *testing.T) {
	// arity 3: INT 7, STRING "2026-01-01" (long), DECIMAL(20,4) -1.5000 (long)
	row := make([]byte, 4+8+3*8)
	binary.BigEndian.PutUint32(row, 3)
	base := 4
	fixed := 8 + 3*8
	binary.LittleEndian.PutUint32(row[base+8:], 7)
	str := []byte("2026-01-01")
	binary.LittleEndian.PutUint64(row[base+16:], uint64(fixed)<<32|uint64(len(str)))
	row = append(row, str...)
	row = append(row, make([]byte, 6)...)
	neg := []byte{0xc5, 0x68} // -15000 in two's complement
	binary.LittleEndian.PutUint64(row[base+24:], uint64(fixed+16)<<32|uint64(len(neg)))
	row = append(row, neg...)
	r, err := DecodeBinaryRow(row)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := r.Values([]DataType{{Root: TypeInt}, {Root: TypeVarChar}, {Root: TypeDecimal, Precision: 20, Scale: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if vals[0] != int32(7) || vals[1] != "2026-01-01" || vals[2].(*big.Rat).FloatString(4) != "-1.5000" {
		t.Fatalf("values %v", vals)
	}
	// A pointer past the end is corrupt, not a panic.
	binary.LittleEndian.PutUint64(row[base+16:], uint64(1000)<<32|5)
	if r, err = DecodeBinaryRow(row); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Value(1, DataType{Root: TypeVarChar}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v, want ErrCorrupt", err)
	}
	if _, err := DecodeBinaryRow([]byte{0, 0, 0, 9, 1}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short row: got %v, want ErrCorrupt", err)
	}
}

func TestReadLeavesNoMemory(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	tbl, err := Open(ctx, os.DirFS(filepath.Join(fixtureRoot, "warehouse", "java.db", "pk_dv")), "dv", WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	s, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	err = tbl.ReadSnapshot(ctx, s, func(b arrow.RecordBatch) error { b.Release(); return stop })
	if !errors.Is(err, stop) {
		t.Fatalf("got %v, want the callback's error", err)
	}
}

func TestPartitionString(t *testing.T) {
	ts := DataType{Root: TypeTimestamp, Precision: 6}
	day := DataType{Root: TypeDate}
	for _, c := range []struct {
		v      any
		t      DataType
		legacy bool
		want   string
	}{
		{time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC), ts, true, "2026-01-02T03:04"},
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), ts, true, "2026-01-02T03:04:05"},
		{time.Date(2026, 1, 2, 3, 4, 5, 120000000, time.UTC), ts, true, "2026-01-02T03:04:05.120"},
		{time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC), ts, true, "2026-01-02T03:04:05.123456"},
		{time.Date(1970, 1, 11, 0, 0, 0, 0, time.UTC), day, true, "10"},
		{time.Date(1970, 1, 11, 0, 0, 0, 0, time.UTC), day, false, "1970-01-11"},
		{big.NewRat(-5, 4), DataType{Root: TypeDecimal, Precision: 5, Scale: 2}, true, "-1.25"},
		{int32(7), DataType{Root: TypeInt}, true, "7"},
	} {
		if got := partitionString(c.v, c.t, c.legacy); got != c.want {
			t.Errorf("partitionString(%v, %s, %v) = %q, want %q", c.v, c.t, c.legacy, got, c.want)
		}
	}
	if got := escapePathName("a/b=c%d e"); got != "a%2Fb%3Dc%25d e" {
		t.Errorf("escapePathName: %q", got)
	}
}

func TestMergeEngineRefusals(t *testing.T) {
	tbl := &Table{name: "t"}
	base := func(opts map[string]string) *Schema {
		return &Schema{Fields: []Field{{ID: 0, Name: "k", Type: DataType{Root: TypeInt}}, {ID: 1, Name: "v", Type: DataType{Root: TypeVarChar, Nullable: true}}},
			PrimaryKeys: []string{"k"}, Options: opts}
	}
	for _, c := range []struct {
		opts map[string]string
		want error
	}{
		{map[string]string{"merge-engine": "first-row"}, ErrUnsupportedMergeEngine},
		{map[string]string{"merge-engine": "aggregation", "fields.v.aggregate-function": "listagg"}, ErrUnsupportedMergeEngine},
		{map[string]string{"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}, ErrUnsupportedMergeEngine},
		{map[string]string{"merge-engine": "partial-update", "fields.v.sequence-group": "k"}, ErrUnsupportedMergeEngine},
		{map[string]string{"merge-engine": "nope"}, ErrUnsupportedMergeEngine},
		{map[string]string{"sequence.field": "v"}, ErrUnsupported},
		{map[string]string{"merge-engine": "aggregation", "fields.v.aggregate-function": "max"}, nil},
		{map[string]string{"merge-engine": "partial-update"}, nil},
		{map[string]string{}, nil},
	} {
		s := base(c.opts)
		o, err := s.TableOptions()
		if err != nil {
			t.Fatal(err)
		}
		err = tbl.checkReadable(s, o)
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%v: got %v, want %v", c.opts, err, c.want)
		}
	}
}
