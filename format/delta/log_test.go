package delta

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// testTables is the folder of the Delta test tables (see its README.md).
const testTables = "../../testdata/delta"

// openTestTable opens a test table read-only, decoding with a checked
// allocator that must end empty.
func openTestTable(t *testing.T, name string, opts ...Option) *Table {
	t.Helper()
	return openDir(t, filepath.Join(testTables, name), name, opts...)
}

// openDir opens the table in dir with a checked allocator.
func openDir(t *testing.T, dir, name string, opts ...Option) *Table {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	tbl, err := Open(context.Background(), os.DirFS(dir), name, append([]Option{WithAllocator(mem)}, opts...)...)
	if err != nil {
		t.Fatalf("Open(%s): %v", name, err)
	}
	return tbl
}

// copyTestTable copies a test table into a temporary folder a test may
// change, and returns the folder.
func copyTestTable(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	src := filepath.Join(testTables, name)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// logPath returns the path of a file of a table folder's log.
func logPath(dir, name string) string { return filepath.Join(dir, logDir, name) }

func mustRemove(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// wantErr fails unless err wraps want and its message holds every part.
func wantErr(t *testing.T, err, want error, parts ...string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

func TestOpenNotTable(t *testing.T) {
	ctx := context.Background()
	empty := t.TempDir()
	onlyCRC := t.TempDir()
	if err := os.MkdirAll(filepath.Join(onlyCRC, logDir, "_sidecars"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, logPath(onlyCRC, "00000000000000000000.crc"), "{}")
	mustWrite(t, logPath(onlyCRC, "00000000000000000000.00000000000000000001.compacted.json"), "{}")
	mustWrite(t, logPath(onlyCRC, "_last_checkpoint"), `{"version":0}`)
	logIsFile := t.TempDir()
	mustWrite(t, filepath.Join(logIsFile, logDir), "")
	for _, tc := range []struct{ name, dir string }{
		{"no _delta_log", empty},
		{"no commit nor checkpoint", onlyCRC},
		{"_delta_log is a file", logIsFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(ctx, os.DirFS(tc.dir), "orders")
			wantErr(t, err, ErrNotTable, `"orders"`)
		})
	}
}

func TestVersions(t *testing.T) {
	for _, tc := range []struct {
		table string
		want  Versions
	}{
		{"cdc_ict_table", Versions{Latest: 3, EarliestStart: -1}},
		{"cdf-table", Versions{Latest: 3, EarliestStart: -1}},
		// Commits 0-2 were cleaned up; the checkpoint at 3 is the oldest
		// state.
		{"checkpoint-cdf-table", Versions{Latest: 5, EarliestStart: 3, FirstCommit: 3}},
		{"checkpoint-v2-table", Versions{Latest: 9, EarliestStart: -1}},
		{"v2-checkpoints-json-with-sidecars", Versions{Latest: 6, EarliestStart: -1}},
		{"v1-multi-part-partitioned-struct-stats-only", Versions{Latest: 5, EarliestStart: -1}},
		{"table_with_column_mapping", Versions{Latest: 0, EarliestStart: -1}},
	} {
		t.Run(tc.table, func(t *testing.T) {
			got, err := openTestTable(t, tc.table).Versions(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			// Origin names the log's oldest file; the rest is compared.
			if !strings.HasPrefix(got.Origin, "000000000") {
				t.Errorf("Versions.Origin = %q, want the oldest log file's name, size and time", got.Origin)
			}
			got.Origin = ""
			if got != tc.want {
				t.Errorf("Versions = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestVersionsAfterCleanup(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		table   string
		remove  []string
		want    Versions
		wantErr error
	}{
		{
			// Cleanup kept the V2 checkpoint at 2 and the commits after it.
			name: "V2 checkpoints", table: "v2-checkpoints-json-with-sidecars",
			remove: []string{"00000000000000000000.json", "00000000000000000001.json"},
			want:   Versions{Latest: 6, EarliestStart: 1, FirstCommit: 2},
		},
		{
			// The checkpoint at 5 is the oldest followed by every commit
			// when commit 4 is gone as well.
			name: "V2 checkpoints, commit at the checkpoint gone", table: "v2-checkpoints-json-with-sidecars",
			remove: []string{"00000000000000000000.json", "00000000000000000001.json", "00000000000000000002.json",
				"00000000000000000003.json", "00000000000000000004.json"},
			want: Versions{Latest: 6, EarliestStart: 4, FirstCommit: 5},
		},
		{
			name: "gap without a checkpoint after it", table: "cdf-table-non-partitioned",
			remove:  []string{"00000000000000000002.json"},
			wantErr: ErrCorrupt,
		},
		{
			name: "only the last commit", table: "cdf-table",
			remove:  []string{"00000000000000000000.json", "00000000000000000001.json", "00000000000000000002.json"},
			wantErr: ErrCorrupt,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTestTable(t, tc.table)
			for _, f := range tc.remove {
				mustRemove(t, logPath(dir, f))
			}
			got, err := openDir(t, dir, tc.table).Versions(ctx)
			if tc.wantErr != nil {
				wantErr(t, err, tc.wantErr, tc.table)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Origin names the log's oldest file; the rest is compared.
			if !strings.HasPrefix(got.Origin, "000000000") {
				t.Errorf("Versions.Origin = %q, want the oldest log file's name, size and time", got.Origin)
			}
			got.Origin = ""
			if got != tc.want {
				t.Errorf("Versions = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestFilePath(t *testing.T) {
	for _, tc := range []struct {
		name, root, raw, want string
		wantErr               error
	}{
		{name: "relative", raw: "part-00000.parquet", want: "part-00000.parquet"},
		{name: "partition folder", raw: "birthday=2023-12-22/part-1.parquet", want: "birthday=2023-12-22/part-1.parquet"},
		{name: "percent encoded", raw: "test%25file%25prefix-part-1.parquet", want: "test%file%prefix-part-1.parquet"},
		{name: "space and colon encoded", raw: "ts=2020-01-01%2000%3A00%3A00/p.parquet", want: "ts=2020-01-01 00:00:00/p.parquet"},
		{name: "plus is not a space", raw: "a+b.parquet", want: "a+b.parquet"},
		{name: "leaves the table", raw: "../other/p.parquet", wantErr: ErrCorrupt},
		{name: "encoded dot dot", raw: "%2E%2E/p.parquet", wantErr: ErrCorrupt},
		{name: "bad escape", raw: "p%zz.parquet", wantErr: ErrCorrupt},
		{name: "empty", raw: "", wantErr: ErrCorrupt},
		{name: "s3 URI", raw: "s3://bucket/t/p.parquet", wantErr: ErrUnsupported},
		{name: "file URI without a root", raw: "file:///data/t/p.parquet", wantErr: ErrUnsupported},
		{name: "absolute path without a root", raw: "/data/t/p.parquet", wantErr: ErrUnsupported},
		{name: "file URI under the root", root: "file:///data/t", raw: "file:///data/t/x%20y/p.parquet", want: "x y/p.parquet"},
		{name: "Hadoop file URI under the root", root: "/data/t/", raw: "file:/data/t/p.parquet", want: "p.parquet"},
		{name: "absolute path under the root", root: "/data/t", raw: "/data/t/p.parquet", want: "p.parquet"},
		{name: "file URI outside the root", root: "file:///data/t", raw: "file:///data/t2/p.parquet", wantErr: ErrUnsupported},
		{name: "escaping the root", root: "file:///data/t", raw: "file:///data/t/../u/p.parquet", wantErr: ErrUnsupported},
		{name: "other scheme than the root", root: "file:///data/t", raw: "s3://data/t/p.parquet", wantErr: ErrUnsupported},
		{name: "s3 URI under an s3 root", root: "s3://bucket/t", raw: "s3://bucket/t/p.parquet", want: "p.parquet"},
		{name: "other bucket", root: "s3://bucket/t", raw: "s3://other/t/p.parquet", wantErr: ErrUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl := &Table{name: "orders", root: tc.root}
			got, err := tbl.FilePath(tc.raw)
			if tc.wantErr != nil {
				wantErr(t, err, tc.wantErr, `"orders"`)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("FilePath(%q) = %q, want %q", tc.raw, got, tc.want)
			}
		})
	}
}

// TestFilePathEncoded checks that the URL-encoded paths of cdf-table-simple
// ("%25" for the "%" in its file names) name files that exist.
func TestFilePathEncoded(t *testing.T) {
	ctx := context.Background()
	tbl := openTestTable(t, "cdf-table-simple")
	fsys := os.DirFS(filepath.Join(testTables, "cdf-table-simple"))
	s, err := tbl.Snapshot(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := tbl.Commit(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	raw := []string{s.Files[0].Path, s.Files[1].Path, c.CDCs[0].Path, c.CDCs[1].Path}
	for _, r := range raw {
		if !strings.Contains(r, "%25") {
			t.Errorf("path %q is not URL-encoded", r)
		}
		p, err := tbl.FilePath(r)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(p, "test%file%prefix-part-") {
			t.Errorf("FilePath(%q) = %q", r, p)
		}
		if _, err := fs.Stat(fsys, p); err != nil {
			t.Errorf("FilePath(%q) = %q: %v", r, p, err)
		}
	}
}

// TestConcurrentReads reads the same versions from many goroutines (run
// with -race).
func TestConcurrentReads(t *testing.T) {
	ctx := context.Background()
	tbl := openTestTable(t, "checkpoint-v2-table")
	want := map[int64]int{}
	for v := int64(0); v <= 9; v++ {
		s, err := openTestTable(t, "checkpoint-v2-table").Snapshot(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		want[v] = len(s.Files)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for i := 0; i < 10; i++ {
				v := int64((g + i) % 10)
				s, err := tbl.Snapshot(ctx, v)
				if err != nil {
					errs <- err
					return
				}
				if len(s.Files) != want[v] {
					errs <- errors.New("wrong file count")
				}
				if _, _, err := tbl.Metadata(ctx, v); err != nil {
					errs <- err
				}
				if _, err := tbl.Commit(ctx, v); err != nil {
					errs <- err
				}
				if _, err := tbl.Versions(ctx); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// numRecords returns the numRecords of an add's stats, -1 without stats.
func numRecords(t *testing.T, a *Add) int64 {
	t.Helper()
	if a.Stats == "" {
		return -1
	}
	var st struct {
		NumRecords *int64 `json:"numRecords"`
	}
	if err := json.Unmarshal([]byte(a.Stats), &st); err != nil {
		t.Fatalf("%s: stats %q: %v", a.Path, a.Stats, err)
	}
	if st.NumRecords == nil {
		return -1
	}
	return *st.NumRecords
}
