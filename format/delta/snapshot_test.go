package delta

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// snapshotWants are, per test table, the live file and row counts of each
// readable version from its earliest state on. They were worked out
// independently of this package by replaying the JSON commits the way
// delta-kernel-rs does (newest first, the first (path, deletion vector id)
// seen wins), and for checkpoint-cdf-table from the checkpoint's
// numOfAddFiles and the commits after it. Rows are the adds' numRecords
// less their deletion vectors' cardinality.
var snapshotWants = []struct {
	table string
	first int64
	files []int
	rows  []int64
}{
	{"cdc_ict_table", 0, []int{0, 4, 2, 2}, []int64{0, 4, 2, 2}},
	{"cdf-table", 0, []int{10, 10, 10, 9}, []int64{10, 10, 10, 9}},
	{"cdf-table-data-change", 0, []int{2, 1}, []int64{10, 10}},
	{"cdf-table-non-partitioned", 0, []int{10, 10, 10, 9, 11}, []int64{10, 10, 10, 9, 11}},
	{"cdf-table-partitioned", 0, []int{4, 3, 1}, []int64{6, 5, 2}},
	{"cdf-table-simple", 0, []int{2, 0, 0}, []int64{10, 0, 0}},
	{"cdf-table-update-ops", 0, []int{2, 2, 2}, []int64{10, 10, 10}},
	{"cdf-table-with-dv", 0, []int{1, 1, 1, 1, 1, 1, 1}, []int64{10, 8, 10, 6, 8, 9, 10}},
	{"checkpoint-cdf-table", 3, []int{9, 13, 13}, []int64{9, 13, 13}},
	{"checkpoint-v2-table", 0, []int{0, 1, 2, 3, 4, 4, 5, 6, 7, 8}, []int64{0, 10, 11, 21, 22, 22, 32, 33, 43, 44}},
	{"simple_table_with_cdc", 0, []int{0, 1, 1}, []int64{0, 1, 1}},
	{"table-with-dv-small", 0, []int{1, 1}, []int64{10, 8}},
	{"table_with_column_mapping", 0, []int{2}, []int64{5}},
	{"v1-multi-part-partitioned-struct-stats-only", 0, []int{0, 1, 2, 3, 4, 5}, []int64{0, 1, 2, 3, 4, 5}},
	{"v2-checkpoints-json-with-sidecars", 0, []int{1, 2, 11, 20, 31, 100, 101}, []int64{1, 2, 32, 132, 232, 1232, 1233}},
	{"v2-classic-checkpoint-parquet", 0, []int{2, 4}, []int64{10, 20}},
}

// liveRows returns the rows of a snapshot's files: numRecords less the
// deletion vectors' cardinality.
func liveRows(t *testing.T, s *Snapshot) int64 {
	t.Helper()
	var n int64
	for _, a := range s.Files {
		r := numRecords(t, a)
		if r < 0 {
			t.Fatalf("%s has no numRecords", a.Path)
		}
		n += r
		if a.DeletionVector != nil {
			n -= a.DeletionVector.Cardinality
		}
	}
	return n
}

// TestSnapshotFixtures reads every readable version of every test table,
// each from a fresh Table (from the newest checkpoint) and from one Table
// version after version (rolled forward from the cached previous state),
// and checks the live files and rows.
func TestSnapshotFixtures(t *testing.T) {
	ctx := context.Background()
	for _, tc := range snapshotWants {
		t.Run(tc.table, func(t *testing.T) {
			follower := openTestTable(t, tc.table)
			for i, wantFiles := range tc.files {
				v := tc.first + int64(i)
				fresh, err := openTestTable(t, tc.table).Snapshot(ctx, v)
				if err != nil {
					t.Fatalf("version %d: %v", v, err)
				}
				followed, err := follower.Snapshot(ctx, v)
				if err != nil {
					t.Fatalf("version %d, rolled forward: %v", v, err)
				}
				for _, s := range []*Snapshot{fresh, followed} {
					if s.Version != v {
						t.Errorf("version %d: Snapshot.Version = %d", v, s.Version)
					}
					if len(s.Files) != wantFiles {
						t.Errorf("version %d: %d files, want %d", v, len(s.Files), wantFiles)
					}
					if got := liveRows(t, s); got != tc.rows[i] {
						t.Errorf("version %d: %d rows, want %d", v, got, tc.rows[i])
					}
					if !slices.IsSortedFunc(s.Files, byPath) {
						t.Errorf("version %d: files not sorted by path", v)
					}
				}
				if got, want := filePaths(followed), filePaths(fresh); !slices.Equal(got, want) {
					t.Errorf("version %d: rolled forward %v, fresh %v", v, got, want)
				}
			}
			if _, err := follower.Snapshot(ctx, tc.first+int64(len(tc.files))); err == nil {
				t.Errorf("version %d after the latest: no error", tc.first+int64(len(tc.files)))
			}
		})
	}
}

func filePaths(s *Snapshot) []string {
	var out []string
	for _, a := range s.Files {
		out = append(out, a.Path+"#"+dvID(a.DeletionVector))
	}
	return out
}

func TestSnapshotFiles(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		table   string
		version int64
		want    []string // path#deletion vector id
	}{
		// The UPDATE of version 2 replaced the table's only file.
		{"simple_table_with_cdc", 2, []string{"part-00000-7444aec4-710a-4a4c-8abe-3323499043e9.c000.snappy.parquet#"}},
		{"cdc_ict_table", 3, []string{
			"birthyear=1986/part-00000-3abf7009-9786-4927-a502-256082acae29.c000.snappy.parquet#",
			"birthyear=1995/part-00001-675aa666-c3ad-4593-9747-ce3c3814eb6b.c000.snappy.parquet#",
		}},
		// The DELETE of version 1 gave the file a deletion vector.
		{"table-with-dv-small", 1, []string{"part-00000-fae5310a-a37d-4e51-827b-c3d5516560ca-c000.snappy.parquet#uvBn[lx{q8@P<9BNH/isA@1"}},
		{"cdf-table-with-dv", 5, []string{"part-00000-fae5310a-a37d-4e51-827b-c3d5516560ca-c000.snappy.parquet#i^Bg9^0rr910000000000iXQKl0rr91000005c8Xg##093"}},
		{"cdf-table-with-dv", 6, []string{"part-00000-fae5310a-a37d-4e51-827b-c3d5516560ca-c000.snappy.parquet#"}},
		// OPTIMIZE (dataChange=false) compacted two files into one.
		{"cdf-table-data-change", 1, []string{"test%25file%25prefix-part-00000-a95afa7d-81c4-4ad3-812d-1cd190b2997d-c000.snappy.parquet#"}},
		{"cdf-table-partitioned", 2, []string{"part=1/test%25file%25prefix-part-00000-0d75e3a6-013f-4f2d-9a0f-c5230f469c1b.c000.snappy.parquet#"}},
	} {
		t.Run(fmt.Sprintf("%s@%d", tc.table, tc.version), func(t *testing.T) {
			s, err := openTestTable(t, tc.table).Snapshot(ctx, tc.version)
			if err != nil {
				t.Fatal(err)
			}
			if got := filePaths(s); !slices.Equal(got, tc.want) {
				t.Errorf("files %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSnapshotProtocolAndMetadata(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		table          string
		version        int64
		reader, writer int
		readerFeatures []string
		partitions     []string
		config         map[string]string
	}{
		{"cdf-table", 3, 1, 4, nil, []string{"birthday"}, map[string]string{"delta.enableChangeDataFeed": "true"}},
		// Protocol and metaData exist only in the checkpoint.
		{"checkpoint-cdf-table", 3, 1, 4, nil, []string{"birthday"}, map[string]string{"delta.enableChangeDataFeed": "true"}},
		{"checkpoint-cdf-table", 5, 1, 4, nil, []string{"birthday"}, map[string]string{"delta.enableChangeDataFeed": "true"}},
		{"cdc_ict_table", 2, 1, 7, nil, []string{"birthyear"}, map[string]string{"delta.enableChangeDataFeed": "true", "delta.enableInCommitTimestamps": "true"}},
		{"table-with-dv-small", 1, 3, 7, []string{"deletionVectors"}, []string{}, map[string]string{"delta.enableDeletionVectors": "true", "delta.columnMapping.mode": "none"}},
		{"table_with_column_mapping", 0, 2, 5, nil, []string{"Company Very Short"}, map[string]string{"delta.columnMapping.mode": "name"}},
		// Version 5 changed the table's properties (a metaData action).
		{"checkpoint-v2-table", 4, 3, 7, []string{"v2Checkpoint"}, []string{}, map[string]string{"delta.checkpointPolicy": "v2"}},
		{"checkpoint-v2-table", 9, 3, 7, []string{"v2Checkpoint"}, []string{}, map[string]string{"delta.checkpointPolicy": "v2", "delta.checkpointInterval": "2"}},
		{"v1-multi-part-partitioned-struct-stats-only", 5, 3, 7, []string{"deletionVectors"}, []string{"part"}, map[string]string{"delta.checkpoint.writeStatsAsJson": "false"}},
		{"v2-classic-checkpoint-parquet", 1, 3, 7, []string{"v2Checkpoint"}, []string{}, map[string]string{"delta.checkpointPolicy": "v2"}},
	} {
		t.Run(fmt.Sprintf("%s@%d", tc.table, tc.version), func(t *testing.T) {
			tbl := openTestTable(t, tc.table)
			p, m, err := tbl.Metadata(ctx, tc.version)
			if err != nil {
				t.Fatal(err)
			}
			s, err := openTestTable(t, tc.table).Snapshot(ctx, tc.version)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Protocol, p) || !reflect.DeepEqual(s.Metadata, m) {
				t.Errorf("Metadata and Snapshot disagree:\n%+v %+v\n%+v %+v", p, m, s.Protocol, s.Metadata)
			}
			if p.MinReaderVersion != tc.reader || p.MinWriterVersion != tc.writer || !slices.Equal(p.ReaderFeatures, tc.readerFeatures) {
				t.Errorf("protocol %+v, want %d/%d %v", p, tc.reader, tc.writer, tc.readerFeatures)
			}
			if !slices.Equal(m.PartitionColumns, tc.partitions) {
				t.Errorf("partition columns %q, want %q", m.PartitionColumns, tc.partitions)
			}
			for k, v := range tc.config {
				if m.Configuration[k] != v {
					t.Errorf("configuration %s = %q, want %q", k, m.Configuration[k], v)
				}
			}
			if _, ok := m.Configuration["delta.checkpointInterval"]; ok != (tc.config["delta.checkpointInterval"] != "") && strings.HasPrefix(tc.table, "checkpoint-v2") {
				t.Errorf("configuration %v: delta.checkpointInterval present = %v", m.Configuration, ok)
			}
			if m.ID == "" || m.SchemaString == "" || m.Format.Provider != "parquet" {
				t.Errorf("metadata %+v", m)
			}
		})
	}
}

func TestSnapshotTimestamp(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		table   string
		version int64
		want    int64
	}{
		// inCommitTimestamp, edited upstream to be before commitInfo's
		// timestamp (1783874206883).
		{"cdc_ict_table", 1, 1683874206883},
		{"cdc_ict_table", 3, 1783874213881},
		{"cdf-table-non-partitioned", 1, 1713110309393},
		// From a checkpoint: the commit at its version still exists.
		{"checkpoint-cdf-table", 3, 1704559499570},
		{"checkpoint-v2-table", 8, 1754751131798},
	} {
		t.Run(fmt.Sprintf("%s@%d", tc.table, tc.version), func(t *testing.T) {
			s, err := openTestTable(t, tc.table).Snapshot(ctx, tc.version)
			if err != nil {
				t.Fatal(err)
			}
			if s.TimestampMs != tc.want {
				t.Errorf("TimestampMs = %d, want %d", s.TimestampMs, tc.want)
			}
		})
	}
}

func TestSnapshotErrors(t *testing.T) {
	ctx := context.Background()
	tbl := openTestTable(t, "checkpoint-cdf-table")
	for _, tc := range []struct {
		version int64
		want    error
		parts   []string
	}{
		{2, ErrLogCleaned, []string{`"checkpoint-cdf-table"`, "version 2", "earliest readable version is 3"}},
		{0, ErrLogCleaned, []string{"version 0", "00000000000000000000.json"}},
		{6, ErrVersionNotFound, []string{"version 6", "latest version is 5"}},
		{-1, ErrVersionNotFound, []string{"version -1"}},
	} {
		t.Run(fmt.Sprint(tc.version), func(t *testing.T) {
			_, err := tbl.Snapshot(ctx, tc.version)
			wantErr(t, err, tc.want, tc.parts...)
			_, _, err = tbl.Metadata(ctx, tc.version)
			wantErr(t, err, tc.want, tc.parts...)
		})
	}
}

// TestSnapshotGap checks that a commit missing between retained ones is a
// corrupt log for the states that need it, and not for the others.
func TestSnapshotGap(t *testing.T) {
	ctx := context.Background()
	dir := copyTestTable(t, "cdf-table-non-partitioned")
	mustRemove(t, logPath(dir, "00000000000000000002.json"))
	tbl := openDir(t, dir, "cdf-table-non-partitioned")
	if s, err := tbl.Snapshot(ctx, 1); err != nil || len(s.Files) != 10 {
		t.Fatalf("Snapshot(1) = %v, %v", s, err)
	}
	_, err := tbl.Snapshot(ctx, 3)
	wantErr(t, err, ErrCorrupt, "version 3", "00000000000000000002.json")
	_, err = tbl.Commit(ctx, 2)
	wantErr(t, err, ErrCorrupt, "version 2", "00000000000000000002.json")
}

// TestSnapshotAfterCleanup reads a table, then removes the commits before
// a checkpoint as log cleanup does: a Table that cached the old state must
// read the new one from the checkpoint, and the old versions are gone.
func TestSnapshotAfterCleanup(t *testing.T) {
	ctx := context.Background()
	const table = "v2-checkpoints-json-with-sidecars"
	dir := copyTestTable(t, table)
	tbl := openDir(t, dir, table)
	if s, err := tbl.Snapshot(ctx, 1); err != nil || len(s.Files) != 2 {
		t.Fatalf("Snapshot(1) = %v, %v", s, err)
	}
	if _, err := tbl.Commit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for v := 0; v < 5; v++ {
		mustRemove(t, logPath(dir, fmt.Sprintf("%020d.json", v)))
	}
	cps, err := filepath.Glob(logPath(dir, "0000000000000000000[123].checkpoint.*.json"))
	if err != nil || len(cps) != 3 {
		t.Fatalf("checkpoints %v, %v", cps, err)
	}
	mustRemove(t, cps...)
	for _, v := range []int64{6, 5} {
		s, err := tbl.Snapshot(ctx, v)
		if err != nil {
			t.Fatalf("Snapshot(%d): %v", v, err)
		}
		if want := []int{100, 101}[v-5]; len(s.Files) != want {
			t.Errorf("Snapshot(%d): %d files, want %d", v, len(s.Files), want)
		}
	}
	vs, err := tbl.Versions(ctx)
	if err != nil || vs.Latest != 6 || vs.EarliestStart != 4 {
		t.Errorf("Versions = %+v, %v", vs, err)
	}
	// Cached versions stay readable: they are immutable.
	if s, err := tbl.Snapshot(ctx, 1); err != nil || len(s.Files) != 2 {
		t.Errorf("cached Snapshot(1) = %v, %v", s, err)
	}
	_, err = tbl.Snapshot(ctx, 3)
	wantErr(t, err, ErrLogCleaned, "version 3", "earliest readable version is 4")
	_, err = tbl.Commit(ctx, 2)
	wantErr(t, err, ErrLogCleaned, "version 2", "oldest commit retained is 5")
}

// TestSnapshotIgnoresCompaction adds log compaction files with wrong
// content: they must change nothing.
func TestSnapshotIgnoresCompaction(t *testing.T) {
	ctx := context.Background()
	const table = "cdf-table-non-partitioned"
	dir := copyTestTable(t, table)
	bogus := `{"remove":{"path":"part-00000-a9118234-f574-4613-b674-deb4d1b82aee-c000.snappy.parquet","dataChange":true}}
{"add":{"path":"not-a-file.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}
{"metaData":{"id":"bogus","format":{"provider":"csv"},"schemaString":"{}","partitionColumns":["x"],"configuration":{}}}
`
	mustWrite(t, logPath(dir, "00000000000000000000.00000000000000000003.compacted.json"), bogus)
	mustWrite(t, logPath(dir, "00000000000000000001.00000000000000000004.compacted.json"), "not JSON at all")
	mustWrite(t, logPath(dir, "00000000000000000004.00000000000000000009.compacted.json"), bogus)
	changed, orig := openDir(t, dir, table), openTestTable(t, table)
	for v := int64(0); v <= 4; v++ {
		got, err := changed.Snapshot(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		want, err := orig.Snapshot(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Files, want.Files) || !reflect.DeepEqual(got.Metadata, want.Metadata) {
			t.Errorf("version %d: the compaction files changed the snapshot", v)
		}
	}
	vs, err := changed.Versions(ctx)
	if err != nil || vs.Latest != 4 || vs.EarliestStart != -1 {
		t.Errorf("Versions = %+v, %v", vs, err)
	}
}

// TestSnapshotReconciliation checks the protocol's action reconciliation on
// hand-written commits: a remove drops a file only with the same deletion
// vector, an add with a new deletion vector replaces the old one, in
// either order within a commit, and the latest protocol and metadata win.
func TestSnapshotReconciliation(t *testing.T) {
	ctx := context.Background()
	const (
		proto = `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}}`
		meta  = `{"metaData":{"id":"t","format":{"provider":"parquet"},"schemaString":"{\"type\":\"struct\",\"fields\":[]}","partitionColumns":[],"configuration":{"v":"%d"}}}`
		dv1   = `{"storageType":"i","pathOrInlineDv":"wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L","sizeInBytes":40,"cardinality":1}`
		dv2   = `{"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","offset":4,"sizeInBytes":40,"cardinality":2}`
	)
	add := func(path, dv string) string {
		s := `{"add":{"path":"` + path + `","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":5}"`
		if dv != "" {
			s += `,"deletionVector":` + dv
		}
		return s + "}}"
	}
	remove := func(path, dv string) string {
		s := `{"remove":{"path":"` + path + `","dataChange":true`
		if dv != "" {
			s += `,"deletionVector":` + dv
		}
		return s + "}}"
	}
	commits := [][]string{
		{proto, fmt.Sprintf(meta, 0), add("a", ""), add("b", ""), add("c", "")},
		// a gets a DV (remove listed first); b gets one (add listed first).
		{remove("a", ""), add("a", dv1), add("b", dv1), remove("b", "")},
		// A remove of a DV that is not a's leaves a; c is removed.
		{remove("a", dv2), remove("c", ""), fmt.Sprintf(meta, 2)},
		// b's DV replaced without a remove; a re-added with its DV (a
		// metadata update); d added.
		{add("b", dv2), add("a", dv1), add("d", "")},
		// d removed and added again in one commit.
		{remove("d", ""), add("d", "")},
	}
	want := [][]string{
		{"a#", "b#", "c#"},
		{"a#" + dvID(&DeletionVector{StorageType: "i", PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"}), "b#iwi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", "c#"},
		{"a#iwi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", "b#iwi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"},
		{"a#iwi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", "b#uab^-aqEH.-t@S}K{vb[*k^@4", "d#"},
		{"a#iwi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", "b#uab^-aqEH.-t@S}K{vb[*k^@4", "d#"},
	}
	dir := writeLog(t, commits)
	follower := openDir(t, dir, "hand-written")
	for v := range commits {
		for _, tbl := range []*Table{follower, openDir(t, dir, "hand-written")} {
			s, err := tbl.Snapshot(ctx, int64(v))
			if err != nil {
				t.Fatal(err)
			}
			if got := filePaths(s); !slices.Equal(got, want[v]) {
				t.Errorf("version %d: files %v, want %v", v, got, want[v])
			}
			if wantConf := fmt.Sprint(min(v, 2) / 2 * 2); s.Metadata.Configuration["v"] != wantConf {
				t.Errorf("version %d: metadata %v, want v=%s", v, s.Metadata.Configuration, wantConf)
			}
		}
	}
}

// writeLog writes a table whose commits hold the given lines and returns
// its folder.
func writeLog(t *testing.T, commits [][]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, logDir), 0o755); err != nil {
		t.Fatal(err)
	}
	for v, lines := range commits {
		mustWrite(t, logPath(dir, fmt.Sprintf("%020d.json", v)), strings.Join(lines, "\n")+"\n")
	}
	return dir
}

// ExampleTable_Snapshot reads a table whose commits before its checkpoint
// at version 3 were removed by log cleanup.
func ExampleTable_Snapshot() {
	ctx := context.Background()
	tbl, err := Open(ctx, os.DirFS("../../testdata/delta/checkpoint-cdf-table"), "checkpoint-cdf-table")
	if err != nil {
		fmt.Println(err)
		return
	}
	vs, err := tbl.Versions(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("latest", vs.Latest, "earliest start", vs.EarliestStart)
	s, err := tbl.Snapshot(ctx, vs.Latest)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(s.Files), "files, partitioned by", s.Metadata.PartitionColumns)
	_, err = tbl.Snapshot(ctx, 2)
	fmt.Println("version 2 cleaned up:", errors.Is(err, ErrLogCleaned))
	// Output:
	// latest 5 earliest start 3
	// 13 files, partitioned by [birthday]
	// version 2 cleaned up: true
}
