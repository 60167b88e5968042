package delta

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCommit(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		table                 string
		version               int64
		adds, removes, cdcs   int
		protocol, metadata    bool
		operation             string
		timestampMs           int64
		firstAdd, firstRemove string
	}{
		{table: "cdf-table-non-partitioned", version: 0, adds: 10, protocol: true, metadata: true, operation: "WRITE", timestampMs: 1713110306249,
			firstAdd: "part-00000-a9118234-f574-4613-b674-deb4d1b82aee-c000.snappy.parquet"},
		{table: "cdf-table-non-partitioned", version: 1, adds: 3, removes: 3, cdcs: 3, operation: "UPDATE", timestampMs: 1713110309393,
			firstAdd: "part-00000-47bab5c8-9d0c-41b6-9f56-d45f47d5dea5.c000.snappy.parquet", firstRemove: "part-00002-fce8caa1-4b6f-47af-a2df-a50985051257-c000.snappy.parquet"},
		// inCommitTimestamp wins over timestamp (1783874206883).
		{table: "cdc_ict_table", version: 1, adds: 4, operation: "WRITE", timestampMs: 1683874206883,
			firstAdd: "birthyear=1986/part-00000-519aea05-1b52-43d5-a82d-c02771989707.c000.snappy.parquet"},
		{table: "cdc_ict_table", version: 2, removes: 2, cdcs: 2, operation: "DELETE", timestampMs: 1783874212175,
			firstRemove: "birthyear=1995/part-00002-447012a2-6468-4283-8994-a83d6e53dd3e.c000.snappy.parquet"},
		{table: "cdf-table-simple", version: 2, cdcs: 2, operation: "Manual Update", timestampMs: 1734480106177},
		{table: "checkpoint-v2-table", version: 5, metadata: true, operation: "SET TBLPROPERTIES", timestampMs: 1754751112347},
		// The commit at the checkpoint's version outlived cleanup.
		{table: "checkpoint-cdf-table", version: 3, removes: 1, cdcs: 1, operation: "DELETE", timestampMs: 1704559499570,
			firstRemove: "birthday=2023-12-29/part-00000-1ca113cd-a94c-46a8-9c5b-b99e676ddd06.c000.snappy.parquet"},
	} {
		t.Run(fmt.Sprintf("%s@%d", tc.table, tc.version), func(t *testing.T) {
			c, err := openTestTable(t, tc.table).Commit(ctx, tc.version)
			if err != nil {
				t.Fatal(err)
			}
			if c.Version != tc.version || len(c.Adds) != tc.adds || len(c.Removes) != tc.removes || len(c.CDCs) != tc.cdcs {
				t.Errorf("version %d, %d adds, %d removes, %d cdcs; want %d, %d, %d, %d",
					c.Version, len(c.Adds), len(c.Removes), len(c.CDCs), tc.version, tc.adds, tc.removes, tc.cdcs)
			}
			if (c.Protocol != nil) != tc.protocol || (c.Metadata != nil) != tc.metadata {
				t.Errorf("protocol %v, metadata %v", c.Protocol, c.Metadata)
			}
			if c.CommitInfo == nil || c.CommitInfo.Operation != tc.operation {
				t.Errorf("commitInfo %+v, want operation %q", c.CommitInfo, tc.operation)
			}
			if got := c.TimestampMs(); got != tc.timestampMs {
				t.Errorf("TimestampMs = %d, want %d", got, tc.timestampMs)
			}
			if tc.firstAdd != "" && c.Adds[0].Path != tc.firstAdd {
				t.Errorf("first add %q, want %q", c.Adds[0].Path, tc.firstAdd)
			}
			if tc.firstRemove != "" && c.Removes[0].Path != tc.firstRemove {
				t.Errorf("first remove %q, want %q", c.Removes[0].Path, tc.firstRemove)
			}
			if c.ModTime.IsZero() {
				t.Error("no ModTime")
			}
		})
	}
}

// TestCommitTimestampFallback checks the time of commits without
// commitInfo (cdf-table-with-dv has none): the file's modification time.
func TestCommitTimestampFallback(t *testing.T) {
	dir := copyTestTable(t, "cdf-table-with-dv")
	when := time.UnixMilli(1700000000123)
	if err := os.Chtimes(logPath(dir, "00000000000000000002.json"), when, when); err != nil {
		t.Fatal(err)
	}
	tbl := openDir(t, dir, "cdf-table-with-dv")
	c, err := tbl.Commit(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if c.CommitInfo != nil || c.TimestampMs() != when.UnixMilli() {
		t.Errorf("commitInfo %v, TimestampMs %d, want %d", c.CommitInfo, c.TimestampMs(), when.UnixMilli())
	}
	s, err := tbl.Snapshot(context.Background(), 2)
	if err != nil || s.TimestampMs != when.UnixMilli() {
		t.Errorf("Snapshot(2).TimestampMs = %v, %v", s, err)
	}
	for _, tc := range []struct {
		ci   *CommitInfo
		want int64
	}{
		{&CommitInfo{}, when.UnixMilli()},
		{&CommitInfo{Timestamp: new(int64(5))}, 5},
		{&CommitInfo{Timestamp: new(int64(5)), InCommitTimestamp: new(int64(7))}, 7},
	} {
		if got := (&Commit{ModTime: when, CommitInfo: tc.ci}).TimestampMs(); got != tc.want {
			t.Errorf("TimestampMs with %+v = %d, want %d", tc.ci, got, tc.want)
		}
	}
}

func TestCommitErrors(t *testing.T) {
	ctx := context.Background()
	tbl := openTestTable(t, "checkpoint-cdf-table")
	for _, tc := range []struct {
		version int64
		want    error
		parts   []string
	}{
		{0, ErrLogCleaned, []string{`"checkpoint-cdf-table"`, "version 0", "oldest commit retained is 3", "earliest readable version is 3"}},
		{2, ErrLogCleaned, []string{"version 2", "00000000000000000002.json"}},
		{6, ErrVersionNotFound, []string{"version 6", "latest version is 5"}},
		{-3, ErrVersionNotFound, []string{"version -3"}},
	} {
		t.Run(fmt.Sprint(tc.version), func(t *testing.T) {
			_, err := tbl.Commit(ctx, tc.version)
			wantErr(t, err, tc.want, tc.parts...)
		})
	}
}

// TestCommitWrittenLater checks that a version missing at first is read
// once written (nothing negative is cached).
func TestCommitWrittenLater(t *testing.T) {
	ctx := context.Background()
	dir := copyTestTable(t, "simple_table_with_cdc")
	next := logPath(dir, "00000000000000000002.json")
	data, err := os.ReadFile(next)
	if err != nil {
		t.Fatal(err)
	}
	mustRemove(t, next)
	tbl := openDir(t, dir, "simple_table_with_cdc")
	_, err = tbl.Commit(ctx, 2)
	wantErr(t, err, ErrVersionNotFound)
	_, err = tbl.Snapshot(ctx, 2)
	wantErr(t, err, ErrVersionNotFound)
	if vs, _ := tbl.Versions(ctx); vs.Latest != 1 {
		t.Errorf("Latest = %d, want 1", vs.Latest)
	}
	mustWrite(t, next, string(data))
	if c, err := tbl.Commit(ctx, 2); err != nil || len(c.Adds) != 1 {
		t.Fatalf("Commit(2) = %v, %v", c, err)
	}
	if s, err := tbl.Snapshot(ctx, 2); err != nil || len(s.Files) != 1 {
		t.Fatalf("Snapshot(2) = %v, %v", s, err)
	}
	if vs, _ := tbl.Versions(ctx); vs.Latest != 2 {
		t.Errorf("Latest = %d, want 2", vs.Latest)
	}
}

func TestParseCommit(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		adds       int
		wantErr    string
	}{
		{name: "empty file", data: ""},
		{name: "blank lines", data: "\n\n  \r\n" + `{"add":{"path":"a","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}` + "\r\n\n", adds: 1},
		{name: "no final newline", data: `{"add":{"path":"a"}}`, adds: 1},
		{name: "unknown actions and fields", data: `{"newAction":{"x":1}}` + "\n" + `{"add":{"path":"a","future":[1,2]}}` + "\n" + `{}` + "\n" + `{"txn":{"appId":"x","version":3}}`, adds: 1},
		{name: "null action", data: `{"add":null}`},
		{name: "not JSON", data: `{"add":{"path":"a"}}` + "\n" + `{"add":{"path":"b"}` + "\n", wantErr: "line 2"},
		{name: "not an object", data: "\n\n[1,2]\n", wantErr: "line 3: not a JSON object"},
		{name: "JSON null line", data: "null", wantErr: "line 1: not a JSON object"},
		{name: "wrong type", data: `{"add":{"path":"a","size":"big"}}`, wantErr: "line 1"},
		{name: "add without path", data: `{"add":{"size":1}}`, wantErr: "line 1: file action without a path"},
		{name: "remove without path", data: "\n" + `{"remove":{"deletionTimestamp":1}}`, wantErr: "line 2: file action without a path"},
		{name: "trailing data", data: `{"add":{"path":"a"}} {"add":{"path":"b"}}`, wantErr: "line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseCommit(7, []byte(tc.data))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Version != 7 || len(c.Adds) != tc.adds {
				t.Errorf("version %d, %d adds; want 7, %d", c.Version, len(c.Adds), tc.adds)
			}
		})
	}
}

// TestCommitCorruptLine checks that a bad line in a commit file names the
// table, the version, the file and the line, for Commit and Snapshot.
func TestCommitCorruptLine(t *testing.T) {
	ctx := context.Background()
	dir := copyTestTable(t, "cdf-table")
	p := logPath(dir, "00000000000000000002.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, p, string(data)+`{"add":{"path":"x", "size":}}`+"\n")
	lines := strings.Count(string(data), "\n") + 1
	tbl := openDir(t, dir, "cdf-table")
	parts := []string{`"cdf-table"`, "version 2", "_delta_log/00000000000000000002.json", fmt.Sprintf("line %d", lines)}
	_, err = tbl.Commit(ctx, 2)
	wantErr(t, err, ErrCorrupt, parts...)
	_, err = tbl.Snapshot(ctx, 3)
	wantErr(t, err, ErrCorrupt, parts...)
	if _, err := tbl.Snapshot(ctx, 1); err != nil {
		t.Errorf("Snapshot(1): %v", err)
	}
}

// FuzzParseCommit feeds commit files, real and mutated, to parseCommit: it
// must not panic, and what it accepts must hold file actions with paths.
func FuzzParseCommit(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(testTables, "*", logDir, "*.json"))
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"add":{"path":"a","deletionVector":{"storageType":"u","pathOrInlineDv":"x","offset":1,"sizeInBytes":2,"cardinality":3}}}`))
	f.Add([]byte("{\"commitInfo\":{\"inCommitTimestamp\":1}}\n\n{\"protocol\":{\"minReaderVersion\":3}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseCommit(1, data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") {
				t.Fatalf("error %q does not name its line", err)
			}
			return
		}
		for _, a := range c.Adds {
			if a == nil || a.Path == "" {
				t.Fatal("add without a path")
			}
		}
		for _, r := range c.Removes {
			if r == nil || r.Path == "" {
				t.Fatal("remove without a path")
			}
		}
		for _, d := range c.CDCs {
			if d == nil || d.Path == "" {
				t.Fatal("cdc without a path")
			}
		}
		_ = c.TimestampMs()
	})
}
