package feed_test

// Fixture tests: real Iceberg tables written by other engines (Spark with
// Iceberg's Spark runtime, pyiceberg), committed under testdata/fixtures
// with the table state at every snapshot as the writing engine itself reads
// it (EXPECTED.json), and for the copy-on-write Spark table also Spark's own
// changelog view. The generators and how to rerun them are in
// testdata/fixtures/gen; this test only reads the committed files.
//
// The tables were written under the fixed root /sluice-fixtures: every path
// inside their metadata, manifest lists and manifests starts with the
// fixture's root_prefix, which fxIO maps onto the fixture's directory here.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/feed"
)

// fxNames are the fixtures under testdata/fixtures.
var fxNames = []string{"spark_mor_v2", "spark_dv_v3", "spark_cow_v2", "pyiceberg_v2"}

// fxExpected is a fixture's EXPECTED.json.
type fxExpected struct {
	Fixture string `json:"fixture"`
	Writer  string `json:"writer"`
	// MetadataLocation is the current metadata file, relative to the
	// fixture directory.
	MetadataLocation string `json:"metadata_location"`
	// RootPrefix is the table location as written into the metadata.
	RootPrefix string       `json:"root_prefix"`
	Snapshots  []fxSnapshot `json:"snapshots"`
}

// fxSnapshot is one snapshot of the lineage with the full table state the
// writing engine reads at it.
type fxSnapshot struct {
	SnapshotID int64  `json:"snapshot_id"`
	ParentID   *int64 `json:"parent_id"`
	SchemaID   *int   `json:"schema_id"`
	Operation  string `json:"operation"`
	Statement  string `json:"statement"`
	// Columns and Rows are the engine's read of the snapshot, in the
	// snapshot's schema.
	Columns []string         `json:"columns"`
	Rows    []map[string]any `json:"rows"`
	// SparkChangelog / SparkChangelogIdentity are Spark's changelog view of
	// the window (parent, snapshot], without and with identifier_columns
	// => array('id') (spark_cow_v2 only).
	SparkChangelog         []map[string]any `json:"spark_changelog"`
	SparkChangelogIdentity []map[string]any `json:"spark_changelog_identity"`
}

// fxIO reads a fixture's files: it maps the root prefix the writer put into
// the metadata onto the fixture directory, and refuses any other path. It
// is read-only.
type fxIO struct {
	prefix string // the root prefix, without a file: scheme
	dir    string // the fixture directory
}

// fxPlainPath strips a file: scheme: file:///x, file:/x and /x are all /x.
func fxPlainPath(name string) string {
	switch {
	case strings.HasPrefix(name, "file://"):
		return strings.TrimPrefix(name, "file://")
	case strings.HasPrefix(name, "file:"):
		return strings.TrimPrefix(name, "file:")
	}
	return name
}

func (f fxIO) resolve(op, name string) (string, error) {
	p := fxPlainPath(name)
	rest, ok := strings.CutPrefix(p, f.prefix)
	if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
		return "", &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("%w: not under the fixture root %s", fs.ErrNotExist, f.prefix)}
	}
	return filepath.Join(f.dir, filepath.FromSlash(rest)), nil
}

func (f fxIO) Open(name string) (iceio.File, error) {
	p, err := f.resolve("open", name)
	if err != nil {
		return nil, err
	}
	return os.Open(p)
}

func (f fxIO) ReadFile(name string) ([]byte, error) {
	p, err := f.resolve("read", name)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(p)
}

func (f fxIO) Stat(name string) (fs.FileInfo, error) {
	p, err := f.resolve("stat", name)
	if err != nil {
		return nil, err
	}
	return os.Stat(p)
}

func (f fxIO) Remove(name string) error {
	return &fs.PathError{Op: "remove", Path: name, Err: errors.New("fixtures are read-only")}
}

var (
	_ iceio.ReadFileIO = fxIO{}
	_ iceio.StatIO     = fxIO{}
)

// fxTables serves fixture tables to the engine, without a catalog.
type fxTables map[string]*table.Table

func (ts fxTables) LoadTable(_ context.Context, name string) (*table.Table, error) {
	if tbl, ok := ts[name]; ok {
		return tbl, nil
	}
	return nil, fmt.Errorf("%w: %s", catalog.ErrTableNotFound, name)
}

func (ts fxTables) ListTables(context.Context) ([]string, error) {
	names := make([]string, 0, len(ts))
	for n := range ts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// fxFixture is a loaded fixture table with its expectations.
type fxFixture struct {
	name string // the table name served to the engine: "fixtures.<fixture>"
	tbl  *table.Table
	exp  fxExpected
}

func fxLoad(t *testing.T, name string) *fxFixture {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "fixtures", name))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "EXPECTED.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // snapshot ids in changelog rows exceed float64's integers
	var exp fxExpected
	if err := dec.Decode(&exp); err != nil {
		t.Fatalf("EXPECTED.json: %v", err)
	}
	fsys := fxIO{prefix: strings.TrimSuffix(fxPlainPath(exp.RootPrefix), "/"), dir: dir}
	metaBytes, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(exp.MetadataLocation)))
	if err != nil {
		t.Fatal(err)
	}
	meta, err := table.ParseMetadataBytes(metaBytes)
	if err != nil {
		t.Fatalf("metadata %s: %v", exp.MetadataLocation, err)
	}
	if got := strings.TrimSuffix(meta.Location(), "/"); got != exp.RootPrefix {
		t.Fatalf("metadata location %q, EXPECTED.json root_prefix %q", got, exp.RootPrefix)
	}
	loc := exp.RootPrefix + "/" + exp.MetadataLocation
	tbl := table.New(table.Identifier{"fixtures", name}, meta, loc,
		func(context.Context) (iceio.IO, error) { return fsys, nil }, nil)
	return &fxFixture{name: "fixtures." + name, tbl: tbl, exp: exp}
}

// schema returns the schema of a snapshot of the fixture.
func (fx *fxFixture) schema(t *testing.T, s fxSnapshot) *iceberg.Schema {
	t.Helper()
	if s.SchemaID == nil {
		return fx.tbl.Metadata().CurrentSchema()
	}
	for _, sc := range fx.tbl.Metadata().Schemas() {
		if sc.ID == *s.SchemaID {
			return sc
		}
	}
	t.Fatalf("snapshot %d: schema %d not in the metadata", s.SnapshotID, *s.SchemaID)
	return nil
}

// fxState is a table state as a multiset of canonical rows.
type fxState map[string]int

// fxValue is the canonical text of a JSON value of the expected rows, read
// as the Iceberg type typ.
func fxValue(t *testing.T, v any, typ iceberg.Type) string {
	t.Helper()
	if v == nil {
		return "∅"
	}
	bad := func() string {
		t.Fatalf("expected value %#v (%T) does not fit the type %s", v, v, typ)
		return ""
	}
	switch typ.(type) {
	case iceberg.Int32Type, iceberg.Int64Type:
		n, ok := v.(json.Number)
		if !ok {
			return bad()
		}
		i, err := n.Int64()
		if err != nil {
			return bad()
		}
		return "i" + strconv.FormatInt(i, 10)
	case iceberg.Float32Type, iceberg.Float64Type:
		n, ok := v.(json.Number)
		if !ok {
			return bad()
		}
		f, err := n.Float64()
		if err != nil {
			return bad()
		}
		return "f" + strconv.FormatFloat(f, 'g', -1, 64)
	case iceberg.StringType:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		return strconv.Quote(s)
	case iceberg.BooleanType:
		b, ok := v.(bool)
		if !ok {
			return bad()
		}
		return strconv.FormatBool(b)
	case iceberg.DateType:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return bad()
		}
		return "d" + d.Format(time.DateOnly)
	case iceberg.TimestampType, iceberg.TimestampTzType:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		_, tz := typ.(iceberg.TimestampTzType)
		if tz != strings.HasSuffix(s, "Z") {
			return bad() // the generators write Z exactly for timestamptz
		}
		ts, err := time.Parse("2006-01-02T15:04:05.999999999Z07:00", s)
		if !tz {
			ts, err = time.Parse("2006-01-02T15:04:05.999999999", s)
		}
		if err != nil {
			return bad()
		}
		return fxTime(ts, tz)
	}
	t.Fatalf("fixture column type %s has no canonical form here", typ)
	return ""
}

func fxTime(ts time.Time, tz bool) string {
	s := "t" + ts.UTC().Format("2006-01-02T15:04:05.000000")
	if tz {
		s += "Z"
	}
	return s
}

// fxArrowValue is the canonical text of row i of an Arrow column of an
// image, in the same form as fxValue.
func fxArrowValue(col arrow.Array, i int) string {
	if col.IsNull(i) {
		return "∅"
	}
	switch c := col.(type) {
	case *array.Int32:
		return "i" + strconv.FormatInt(int64(c.Value(i)), 10)
	case *array.Int64:
		return "i" + strconv.FormatInt(c.Value(i), 10)
	case *array.Float32:
		return "f" + strconv.FormatFloat(float64(c.Value(i)), 'g', -1, 32)
	case *array.Float64:
		return "f" + strconv.FormatFloat(c.Value(i), 'g', -1, 64)
	case *array.String:
		return strconv.Quote(c.Value(i))
	case *array.LargeString:
		return strconv.Quote(c.Value(i))
	case *array.Boolean:
		return strconv.FormatBool(c.Value(i))
	case *array.Date32:
		return "d" + c.Value(i).ToTime().Format(time.DateOnly)
	case *array.Timestamp:
		typ := c.DataType().(*arrow.TimestampType)
		return fxTime(c.Value(i).ToTime(typ.Unit), typ.TimeZone != "")
	}
	return fmt.Sprintf("?%s:%s", col.DataType(), col.ValueStr(i))
}

// fxImage is the canonical row of row i of an image struct.
func fxImage(img *array.Struct, i int) string {
	var b strings.Builder
	for f := range img.NumField() {
		b.WriteString(fxArrowValue(img.Field(f), i))
		b.WriteByte('|')
	}
	return b.String()
}

// fxRow is the canonical row of an expected row read at a snapshot with
// schema from, projected by field id onto the schema end: renamed columns
// keep their values, columns the row's schema lacks are null.
func fxRow(t *testing.T, row map[string]any, from, end *iceberg.Schema) string {
	t.Helper()
	var b strings.Builder
	for _, f := range end.Fields() {
		var v any
		if old, ok := from.FindFieldByID(f.ID); ok {
			v = row[old.Name]
		}
		b.WriteString(fxValue(t, v, f.Type))
		b.WriteByte('|')
	}
	return b.String()
}

// state is the expected state at snapshot index i (-1: before the first
// snapshot) projected onto end.
func (fx *fxFixture) state(t *testing.T, i int, end *iceberg.Schema) fxState {
	t.Helper()
	st := fxState{}
	if i < 0 {
		return st
	}
	s := fx.exp.Snapshots[i]
	sc := fx.schema(t, s)
	var names []string
	for _, f := range sc.Fields() {
		names = append(names, f.Name)
	}
	if !slices.Equal(names, s.Columns) {
		t.Fatalf("snapshot %d: the engine read columns %v, its schema %d has %v", s.SnapshotID, s.Columns, sc.ID, names)
	}
	for _, r := range s.Rows {
		st[fxRow(t, r, sc, end)]++
	}
	return st
}

// fxChange is one change row of the feed, canonically.
type fxChange struct {
	op       string
	snapshot int64
	before   string
	after    string
}

// readFeed plans and reads a window, checking the stream's shape: batches
// in plan order, one complete batch ending each snapshot, the snapshot
// column equal to the batch's snapshot, images in the end schema's columns.
func (fx *fxFixture) readFeed(t *testing.T, eng *feed.Engine, req feed.Request, end *iceberg.Schema) (*feed.Plan, []fxChange) {
	t.Helper()
	ctx := context.Background()
	req.Table = fx.name
	p, err := eng.Plan(ctx, req)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	var endNames []string
	for _, f := range end.Fields() {
		endNames = append(endNames, f.Name)
	}
	if !slices.Equal(p.Columns, endNames) {
		t.Fatalf("plan columns %v, want the end schema's %v", p.Columns, endNames)
	}
	var out []fxChange
	var order []int64
	var last int64
	complete := true
	for b, err := range eng.Read(ctx, p) {
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		rec := b.Record
		if b.Snapshot.ID != last {
			if !complete {
				t.Errorf("snapshot %d ended without a complete batch", last)
			}
			order = append(order, b.Snapshot.ID)
			last = b.Snapshot.ID
		}
		complete = b.SnapshotComplete
		ops := rec.Column(0).(*array.String)
		before, after := rec.Column(1).(*array.Struct), rec.Column(2).(*array.Struct)
		snaps := rec.Column(3).(*array.Int64)
		for i := range int(rec.NumRows()) {
			if snaps.IsNull(i) || snaps.Value(i) != b.Snapshot.ID {
				t.Errorf("row of snapshot %s in a batch of snapshot %d", snaps.ValueStr(i), b.Snapshot.ID)
			}
			c := fxChange{op: ops.Value(i), snapshot: b.Snapshot.ID}
			if !before.IsNull(i) {
				c.before = fxImage(before, i)
			}
			if !after.IsNull(i) {
				c.after = fxImage(after, i)
			}
			out = append(out, c)
		}
		rec.Release()
	}
	if !complete {
		t.Errorf("snapshot %d ended without a complete batch", last)
	}
	var planned []int64
	for _, sp := range p.Snapshots {
		planned = append(planned, sp.ID)
	}
	// Snapshots appear in plan order, each at most once (a snapshot with no
	// change still sends its complete batch).
	if !slices.Equal(order, planned) {
		t.Errorf("snapshots streamed %v, planned %v", order, planned)
	}
	return p, out
}

// fxApply applies a feed to a copy of st, reporting every change that
// breaks the contract's order or deletes a row that is not there.
func fxApply(t *testing.T, st fxState, changes []fxChange) fxState {
	t.Helper()
	out := fxCopy(st)
	rank := map[string]int{feed.OpDelete: 0, feed.OpUpdateBefore: 1, feed.OpUpdateAfter: 1, feed.OpUpdate: 1, feed.OpInsert: 2}
	var snap int64
	phase := 0
	for i, c := range changes {
		if c.snapshot != snap {
			snap, phase = c.snapshot, 0
		}
		r, ok := rank[c.op]
		if !ok {
			t.Errorf("snapshot %d: unknown op %q", c.snapshot, c.op)
			continue
		}
		if r < phase {
			t.Errorf("snapshot %d: %s after a later kind of change", c.snapshot, c.op)
		}
		phase = r
		if c.op == feed.OpUpdateBefore && (i+1 == len(changes) || changes[i+1].op != feed.OpUpdateAfter) {
			t.Errorf("snapshot %d: update_before %s not followed by its update_after", c.snapshot, c.before)
		}
		if c.op == feed.OpUpdateAfter && (i == 0 || changes[i-1].op != feed.OpUpdateBefore) {
			t.Errorf("snapshot %d: update_after %s without its update_before", c.snapshot, c.after)
		}
		if c.op == feed.OpDelete || c.op == feed.OpUpdateBefore || c.op == feed.OpUpdate {
			switch {
			case c.before == "":
				t.Errorf("snapshot %d: %s without a before-image", c.snapshot, c.op)
			case out[c.before] == 0:
				t.Errorf("snapshot %d: %s of a row that is not there: %s", c.snapshot, c.op, c.before)
			default:
				if out[c.before]--; out[c.before] == 0 {
					delete(out, c.before)
				}
			}
		}
		if c.op == feed.OpInsert || c.op == feed.OpUpdateAfter || c.op == feed.OpUpdate {
			if c.after == "" {
				t.Errorf("snapshot %d: %s without an after-image", c.snapshot, c.op)
				continue
			}
			out[c.after]++
		}
	}
	return out
}

func fxCopy(st fxState) fxState {
	out := make(fxState, len(st))
	for k, v := range st {
		out[k] = v
	}
	return out
}

// fxDiff lists the rows whose counts differ: missing (in want, not got) and
// extra (in got, not want).
func fxDiff(got, want fxState) string {
	var lines []string
	for k, w := range want {
		if g := got[k]; g < w {
			lines = append(lines, fmt.Sprintf("  missing %d× %s", w-g, k))
		}
	}
	for k, g := range got {
		if w := want[k]; g > w {
			lines = append(lines, fmt.Sprintf("  extra   %d× %s", g-w, k))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func fxOps(changes []fxChange) string {
	var b strings.Builder
	for _, c := range changes {
		fmt.Fprintf(&b, "\n    @%d %s %s -> %s", c.snapshot, c.op, c.before, c.after)
	}
	return b.String()
}

// TestFixtures checks the feed of every fixture against the writing
// engine's own reads: for every consecutive snapshot pair (the first from
// the start of history) and for the whole history, the feed applied to the
// state at `from` must give exactly the state at `to`.
func TestFixtures(t *testing.T) {
	for _, name := range fxNames {
		t.Run(name, func(t *testing.T) {
			fx := fxLoad(t, name)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			eng := feed.New(fxTables{fx.name: fx.tbl}, feed.Options{Allocator: mem, MaxBatchRows: 5})
			snaps := fx.exp.Snapshots

			t.Run("io", func(t *testing.T) {
				fsys, err := fx.tbl.FS(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if f, err := fsys.Open(fx.exp.RootPrefix + "/" + fx.exp.MetadataLocation); err != nil {
					t.Fatalf("open the metadata through the fixture IO: %v", err)
				} else {
					f.Close()
				}
				for _, p := range []string{"/etc/hostname", fx.exp.RootPrefix + "x/metadata", "s3://b" + fx.exp.RootPrefix} {
					if _, err := fsys.Open(p); !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("open %s outside the fixture root: err %v, want not-exist", p, err)
					}
				}
			})
			t.Run("lineage", func(t *testing.T) {
				lin, err := eng.Snapshots(context.Background(), fx.name)
				if err != nil {
					t.Fatal(err)
				}
				var got, want []string
				for _, s := range lin {
					got = append(got, fmt.Sprintf("%d:%s", s.ID, s.Operation))
				}
				for _, s := range snaps {
					want = append(want, fmt.Sprintf("%d:%s", s.SnapshotID, s.Operation))
				}
				if !slices.Equal(got, want) {
					t.Fatalf("lineage %v, the writer's %v", got, want)
				}
			})

			check := func(t *testing.T, from, to int, req feed.Request) []fxChange {
				t.Helper()
				end := fx.schema(t, snaps[to])
				if from >= 0 {
					req.FromSnapshot = &snaps[from].SnapshotID
				}
				req.ToSnapshot = &snaps[to].SnapshotID
				p, changes := fx.readFeed(t, eng, req, end)
				for _, sp := range p.Snapshots {
					t.Logf("snapshot %d (%s): strategy %s, %d files read", sp.ID, sp.Operation, sp.Strategy, len(sp.Files))
				}
				t.Logf("feed (%d changes):%s", len(changes), fxOps(changes))
				got := fxApply(t, fx.state(t, from, end), changes)
				if d := fxDiff(got, fx.state(t, to, end)); d != "" {
					t.Errorf("the feed applied to the state at %s is not the state at %d (missing: in the "+
						"writer's read, not in the feed's result; extra: the other way):\n%s",
						fx.label(from), snaps[to].SnapshotID, d)
				}
				return changes
			}

			for i, s := range snaps {
				t.Run(fmt.Sprintf("%02d_%s", i+1, s.Operation), func(t *testing.T) {
					changes := check(t, i-1, i, feed.Request{})
					if s.Operation == "replace" && len(changes) > 0 {
						t.Errorf("replace snapshot %d (%s) emits %d changes, want none:%s",
							s.SnapshotID, s.Statement, len(changes), fxOps(changes))
					}
					// No statement of these fixtures rewrites a row to
					// identical values, so a full image both deleted and
					// inserted by one snapshot is a carry-over row that
					// leaked.
					dels, ins := fxState{}, fxState{}
					for _, c := range changes {
						if c.before != "" {
							dels[c.before]++
						}
						if c.after != "" {
							ins[c.after]++
						}
					}
					for k := range dels {
						if ins[k] > 0 {
							t.Errorf("snapshot %d (%s) deletes and re-inserts the unchanged row %s (carry-over)",
								s.SnapshotID, s.Statement, k)
						}
					}
				})
			}
			last := len(snaps) - 1
			t.Run("whole_history", func(t *testing.T) { check(t, -1, last, feed.Request{}) })
			t.Run("from_first", func(t *testing.T) { check(t, 0, last, feed.Request{}) })
			t.Run("net_whole_history", func(t *testing.T) { check(t, -1, last, feed.Request{NetChanges: true}) })
			t.Run("folded_whole_history", func(t *testing.T) { check(t, -1, last, feed.Request{FoldUpdates: true}) })

			if slices.ContainsFunc(snaps, func(s fxSnapshot) bool { return s.SparkChangelogIdentity != nil }) {
				t.Run("spark_changelog", func(t *testing.T) { fx.checkSparkChangelog(t, eng) })
			}
		})
	}
}

func (fx *fxFixture) label(i int) string {
	if i < 0 {
		return "the start"
	}
	return strconv.FormatInt(fx.exp.Snapshots[i].SnapshotID, 10)
}

// checkSparkChangelog compares, per snapshot, the feed with Spark's
// changelog view of the window (parent, snapshot] (create_changelog_view),
// as multisets of (change type, snapshot, image):
//   - with identifier_columns => array('id') Spark computes updates; the
//     feed with identity [id] must give the same INSERT / DELETE /
//     UPDATE_BEFORE / UPDATE_AFTER rows;
//   - without, Spark gives only INSERT and DELETE rows; the feed's update
//     pairs count as a DELETE of the before-image and an INSERT of the
//     after-image there.
//
// Legitimate differences not compared: order (Spark sorts nothing; the
// feed puts deletes first and each update_after right after its
// update_before) and _change_ordinal (Spark's position of the snapshot in
// its window, always 0 for these one-snapshot windows).
func (fx *fxFixture) checkSparkChangelog(t *testing.T, eng *feed.Engine) {
	snaps := fx.exp.Snapshots
	sparkType := map[string]string{feed.OpInsert: "INSERT", feed.OpDelete: "DELETE",
		feed.OpUpdateBefore: "UPDATE_BEFORE", feed.OpUpdateAfter: "UPDATE_AFTER"}
	for i, s := range snaps {
		t.Run(fmt.Sprintf("%02d_%s", i+1, s.Operation), func(t *testing.T) {
			end := fx.schema(t, s)
			req := feed.Request{ToSnapshot: &s.SnapshotID, Identity: []string{"id"}}
			if i > 0 {
				req.FromSnapshot = &snaps[i-1].SnapshotID
			}
			_, changes := fx.readFeed(t, eng, req, end)
			feedRows, plainRows := fxState{}, fxState{}
			for _, c := range changes {
				img := c.after
				if c.op == feed.OpDelete || c.op == feed.OpUpdateBefore {
					img = c.before
				}
				feedRows[fmt.Sprintf("%s @%d %s", sparkType[c.op], c.snapshot, img)]++
				plain := "INSERT"
				if c.op == feed.OpDelete || c.op == feed.OpUpdateBefore {
					plain = "DELETE"
				}
				plainRows[fmt.Sprintf("%s @%d %s", plain, c.snapshot, img)]++
			}
			spark := func(rows []map[string]any) fxState {
				st := fxState{}
				for _, r := range rows {
					typ, _ := r["_change_type"].(string)
					n, _ := r["_commit_snapshot_id"].(json.Number)
					sid, err := n.Int64()
					if err != nil {
						t.Fatalf("changelog row without _commit_snapshot_id: %v", r)
					}
					st[fmt.Sprintf("%s @%d %s", typ, sid, fxRow(t, r, end, end))]++
				}
				return st
			}
			if d := fxDiff(feedRows, spark(s.SparkChangelogIdentity)); d != "" {
				t.Errorf("snapshot %d (%s): the feed with identity [id] is not Spark's changelog with "+
					"identifier_columns [id] (missing: in Spark's, not the feed; extra: in the feed only):\n%s",
					s.SnapshotID, s.Statement, d)
			}
			if d := fxDiff(plainRows, spark(s.SparkChangelog)); d != "" {
				t.Errorf("snapshot %d (%s): the feed, updates split, is not Spark's plain changelog:\n%s",
					s.SnapshotID, s.Statement, d)
			}
		})
	}
}
