package feed_test

// The fixture tables and their EXPECTED.json as the tests load them.

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

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/feed"
	icebergformat "github.com/sluicefeed/sluice/format/iceberg"
)

// fxExpected is a fixture's EXPECTED.json.
type fxExpected struct {
	Fixture string `json:"fixture"`
	Writer  string `json:"writer"`
	// MetadataLocation is the current metadata file, relative to the
	// fixture directory.
	MetadataLocation string `json:"metadata_location"`
	// RootPrefix is the table location as written into the metadata.
	RootPrefix string        `json:"root_prefix"`
	Statements []fxStatement `json:"statements"`
	// Expiry is what the writer's snapshot expiry left; nil for a fixture
	// with its whole history. With it, Snapshots is the retained lineage.
	Expiry    *fxExpiry    `json:"expiry"`
	Snapshots []fxSnapshot `json:"snapshots"`
	// Refs are the table's branches and tags as the writer left them
	// (pyiceberg_refs, whose Snapshots are every snapshot of every
	// branch, in commit order).
	Refs map[string]struct {
		Type       string `json:"type"`
		SnapshotID int64  `json:"snapshot_id"`
	} `json:"refs"`
}

// fxStatement is one statement the generator ran.
type fxStatement struct {
	Label string `json:"label"`
	// Snapshots are the snapshots the statement committed (none for DDL).
	Snapshots []int64 `json:"snapshots"`
	// Noop marks a statement that rewrote rows with every value unchanged
	// (UPDATE t SET c = c).
	Noop bool `json:"noop"`
}

// fxExpiry is the writer's own snapshot expiry, as it left the metadata.
type fxExpiry struct {
	// WriterCall is the expiry call the generator made.
	WriterCall string `json:"writer_call"`
	// Expired are the snapshots the expiry removed, oldest first.
	Expired []struct {
		SnapshotID     int64 `json:"snapshot_id"`
		SequenceNumber int64 `json:"sequence_number"`
	} `json:"expired"`
	// OldestKept is the oldest snapshot left on the lineage: its parent
	// link after the expiry (nil where the writer dropped it) and before.
	OldestKept struct {
		SnapshotID         int64  `json:"snapshot_id"`
		SequenceNumber     int64  `json:"sequence_number"`
		ParentSnapshotID   *int64 `json:"parent_snapshot_id"`
		ParentBeforeExpiry *int64 `json:"parent_snapshot_id_before_expiry"`
	} `json:"oldest_kept"`
	// SnapshotLog is the metadata's snapshot-log after the expiry.
	SnapshotLog []struct {
		SnapshotID  int64 `json:"snapshot_id"`
		TimestampMs int64 `json:"timestamp_ms"`
	} `json:"snapshot_log"`
	// FilesDeleted are the table files the expiry deleted, relative to
	// the table directory.
	FilesDeleted []string `json:"files_deleted"`
}

// fxSnapshot is one snapshot of the lineage with the full table state the
// writing engine reads at it.
type fxSnapshot struct {
	SnapshotID     int64  `json:"snapshot_id"`
	ParentID       *int64 `json:"parent_id"`
	SequenceNumber int64  `json:"sequence_number"`
	SchemaID       *int   `json:"schema_id"`
	Operation      string `json:"operation"`
	Statement      string `json:"statement"`
	// Columns and Rows are the engine's read of the snapshot, in the
	// snapshot's schema.
	Columns []string         `json:"columns"`
	Rows    []map[string]any `json:"rows"`
	// SparkChangelog / SparkChangelogIdentity are Spark's changelog view of
	// the window (parent, snapshot], without and with identifier_columns
	// => array('id') (spark_cow_v2 only).
	SparkChangelog         []map[string]any `json:"spark_changelog"`
	SparkChangelogIdentity []map[string]any `json:"spark_changelog_identity"`
	// Lineage is each row's id, _row_id and _last_updated_sequence_number
	// as the writer reads them (the row-lineage fixtures only).
	Lineage []map[string]any `json:"lineage"`
	// SparkChangelogUpdates is Spark's changelog view of the window with
	// compute_updates by id, for the copy-on-write snapshots of the
	// row-lineage fixtures.
	SparkChangelogUpdates []map[string]any `json:"spark_changelog_updates"`
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

// Load serves the table as the engine reads an Iceberg table.
func (ts fxTables) Load(ctx context.Context, name string) (feed.Table, error) {
	tbl, err := ts.LoadTable(ctx, name)
	if err != nil {
		return nil, err
	}
	return icebergformat.NewTable(tbl, nil), nil
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
	dir  string // the fixture directory
	tbl  *table.Table
	exp  fxExpected
}

// fxLoad loads a fixture table as its writer left it.
func fxLoad(t *testing.T, name string) *fxFixture {
	t.Helper()
	return fxOpen(t, name, false)
}

// fxLoadWithoutIdentifierFields loads a fixture table with the identifier
// fields taken out of every schema of its metadata, so that a request
// without identity columns has none.
func fxLoadWithoutIdentifierFields(t *testing.T, name string) *fxFixture {
	t.Helper()
	return fxOpen(t, name, true)
}

func fxOpen(t *testing.T, name string, noIdentifierFields bool) *fxFixture {
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
	if noIdentifierFields {
		metaBytes = fxStripIdentifierFields(t, metaBytes)
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
	return &fxFixture{name: "fixtures." + name, dir: dir, tbl: tbl, exp: exp}
}

// fxStripIdentifierFields removes identifier-field-ids from every schema of
// a table metadata file.
func fxStripIdentifierFields(t *testing.T, metaBytes []byte) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(metaBytes))
	dec.UseNumber() // snapshot ids exceed float64's integers
	var meta map[string]any
	if err := dec.Decode(&meta); err != nil {
		t.Fatalf("metadata: %v", err)
	}
	schemas, _ := meta["schemas"].([]any)
	for _, sc := range schemas {
		if m, ok := sc.(map[string]any); ok {
			delete(m, "identifier-field-ids")
		}
	}
	out, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// start is the index in exp.Snapshots of the state a window can start
// from: -1, the empty table before the first snapshot, for a fixture with
// its whole history; 0, the oldest retained snapshot, for an expired one.
func (fx *fxFixture) start() int {
	if fx.exp.Expiry != nil {
		return 0
	}
	return -1
}

// checkExpiry checks that the metadata holds what EXPECTED.json says the
// writer's expiry left: the expired snapshots gone, the oldest kept
// snapshot first on the lineage with its parent link and sequence number,
// the snapshot log, and the deleted files absent.
func (fx *fxFixture) checkExpiry(t *testing.T) {
	t.Helper()
	x, meta := fx.exp.Expiry, fx.tbl.Metadata()
	if len(x.Expired) == 0 {
		t.Fatal("EXPECTED.json records an expiry of no snapshot")
	}
	for _, e := range x.Expired {
		if meta.SnapshotByID(e.SnapshotID) != nil {
			t.Errorf("expired snapshot %d is still in the metadata", e.SnapshotID)
		}
	}
	kept := x.OldestKept
	if len(fx.exp.Snapshots) == 0 || fx.exp.Snapshots[0].SnapshotID != kept.SnapshotID {
		t.Fatalf("the retained lineage does not start at the oldest kept snapshot %d", kept.SnapshotID)
	}
	s := meta.SnapshotByID(kept.SnapshotID)
	if s == nil {
		t.Fatalf("oldest kept snapshot %d is not in the metadata", kept.SnapshotID)
	}
	if !fxSameID(s.ParentSnapshotID, kept.ParentSnapshotID) {
		t.Errorf("oldest kept snapshot %d: parent %s in the metadata, %s in EXPECTED.json",
			s.SnapshotID, fxID(s.ParentSnapshotID), fxID(kept.ParentSnapshotID))
	}
	if s.SequenceNumber != kept.SequenceNumber {
		t.Errorf("oldest kept snapshot %d: sequence number %d, EXPECTED.json %d",
			s.SnapshotID, s.SequenceNumber, kept.SequenceNumber)
	}
	var log, want []string
	for e := range meta.SnapshotLogs() {
		log = append(log, fmt.Sprintf("%d@%d", e.SnapshotID, e.TimestampMs))
	}
	for _, e := range x.SnapshotLog {
		want = append(want, fmt.Sprintf("%d@%d", e.SnapshotID, e.TimestampMs))
	}
	if !slices.Equal(log, want) {
		t.Errorf("snapshot log %v, EXPECTED.json %v", log, want)
	}
	for _, f := range x.FilesDeleted {
		if _, err := os.Stat(filepath.Join(fx.dir, filepath.FromSlash(f))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s, deleted by the expiry, is in the fixture (err %v)", f, err)
		}
	}
}

func fxSameID(a, b *int64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func fxID(id *int64) string {
	if id == nil {
		return "none"
	}
	return strconv.FormatInt(*id, 10)
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
