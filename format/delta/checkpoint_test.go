package delta

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"testing"
)

// replayJSON rebuilds the state at version from the JSON commits alone,
// ignoring every checkpoint.
func replayJSON(t *testing.T, tbl *Table, version int64) *Snapshot {
	t.Helper()
	s, err := tbl.replayFromCheckpoint(context.Background(), nil, version)
	if err != nil {
		t.Fatalf("replaying commits 0 to %d: %v", version, err)
	}
	return s
}

// comparable returns an add as a checkpoint and a commit both record it:
// checkpoint writers set dataChange=false, and some keep only stats_parsed
// (of which the decoder keeps numRecords).
func comparable(t *testing.T, a *Add) Add {
	c := *a
	c.DataChange = false
	c.Stats = fmt.Sprint(numRecords(t, a))
	return c
}

// TestCheckpointMatchesReplay compares, at every version with a
// checkpoint at or before it, the state read from the checkpoint (classic,
// multi-part, V2 with sidecars in JSON or Parquet manifests) with the state
// replayed from the JSON commits alone.
func TestCheckpointMatchesReplay(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		table       string
		checkpoints []int64
		latest      int64
	}{
		{"checkpoint-v2-table", []int64{6, 8}, 9},
		{"v2-checkpoints-json-with-sidecars", []int64{1, 2, 3, 4, 5, 6}, 6},
		{"v1-multi-part-partitioned-struct-stats-only", []int64{5}, 5},
		{"v2-classic-checkpoint-parquet", []int64{1}, 1},
	} {
		t.Run(tc.table, func(t *testing.T) {
			tbl := openTestTable(t, tc.table)
			l, err := tbl.list(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, cp := range l.checkpoints {
				got = append(got, cp.version)
			}
			if !reflect.DeepEqual(got, tc.checkpoints) {
				t.Fatalf("checkpoints %v, want %v", got, tc.checkpoints)
			}
			for v := tc.checkpoints[0]; v <= tc.latest; v++ {
				fromCheckpoint, err := openTestTable(t, tc.table).Snapshot(ctx, v)
				if err != nil {
					t.Fatal(err)
				}
				replayed := replayJSON(t, tbl, v)
				if len(fromCheckpoint.Files) != len(replayed.Files) || len(replayed.Files) == 0 {
					t.Fatalf("version %d: %d files from the checkpoint, %d replayed", v, len(fromCheckpoint.Files), len(replayed.Files))
				}
				for i := range replayed.Files {
					got, want := comparable(t, fromCheckpoint.Files[i]), comparable(t, replayed.Files[i])
					if !reflect.DeepEqual(got, want) {
						t.Errorf("version %d: file %d from the checkpoint\n%+v\nreplayed\n%+v", v, i, got, want)
					}
				}
				if !reflect.DeepEqual(fromCheckpoint.Protocol, replayed.Protocol) {
					t.Errorf("version %d: protocol %+v from the checkpoint, %+v replayed", v, fromCheckpoint.Protocol, replayed.Protocol)
				}
				if !reflect.DeepEqual(fromCheckpoint.Metadata, replayed.Metadata) {
					t.Errorf("version %d: metadata %+v from the checkpoint, %+v replayed", v, fromCheckpoint.Metadata, replayed.Metadata)
				}
				if fromCheckpoint.TimestampMs != replayed.TimestampMs {
					t.Errorf("version %d: timestamp %d from the checkpoint, %d replayed", v, fromCheckpoint.TimestampMs, replayed.TimestampMs)
				}
			}
		})
	}
}

// TestCheckpointMultiPart reads the real multi-part checkpoint of
// v1-multi-part-partitioned-struct-stats-only (3 parts at version 5, with
// stats_parsed and no JSON stats) and checks that a checkpoint with a
// missing part is never used.
func TestCheckpointMultiPart(t *testing.T) {
	ctx := context.Background()
	const (
		table = "v1-multi-part-partitioned-struct-stats-only"
		part2 = "00000000000000000005.checkpoint.0000000002.0000000003.parquet"
	)
	s, err := openTestTable(t, table).Snapshot(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range s.Files {
		// The checkpoint's adds keep stats_parsed only: their stats are
		// the record count taken from it (the commits' stats are longer).
		if a.Stats != `{"numRecords":1}` {
			t.Errorf("%s: stats %q, want those of the checkpoint", a.Path, a.Stats)
		}
		if a.PartitionValues["part"] == nil {
			t.Errorf("%s: no partition value", a.Path)
		}
	}

	t.Run("missing part", func(t *testing.T) {
		dir := copyTestTable(t, table)
		mustRemove(t, logPath(dir, part2))
		tbl := openDir(t, dir, table)
		s, err := tbl.Snapshot(ctx, 5)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Files) != 5 || s.Files[0].Stats == `{"numRecords":1}` {
			t.Errorf("the incomplete checkpoint was used: %d files, stats %q", len(s.Files), s.Files[0].Stats)
		}
	})

	t.Run("missing part and cleaned commits", func(t *testing.T) {
		dir := copyTestTable(t, table)
		mustRemove(t, logPath(dir, part2))
		for v := 0; v < 5; v++ {
			mustRemove(t, logPath(dir, fmt.Sprintf("%020d.json", v)))
		}
		tbl := openDir(t, dir, table)
		_, err := tbl.Snapshot(ctx, 5)
		wantErr(t, err, ErrLogCleaned, "version 5")
		_, err = tbl.Versions(ctx)
		wantErr(t, err, ErrCorrupt)
	})

	t.Run("empty checkpoint files skipped", func(t *testing.T) {
		dir := copyTestTable(t, table)
		// A UUID-named checkpoint would be preferred, a classic one not,
		// but a file of 0 bytes is a failed write.
		mustWrite(t, logPath(dir, "00000000000000000005.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json"), "")
		mustWrite(t, logPath(dir, "00000000000000000004.checkpoint.parquet"), "")
		s, err := openDir(t, dir, table).Snapshot(ctx, 5)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Files) != 5 || s.Files[0].Stats != `{"numRecords":1}` {
			t.Errorf("the multi-part checkpoint was not used: %d files, stats %q", len(s.Files), s.Files[0].Stats)
		}
	})
}

// TestCheckpointV2Sidecars checks the files a V2 checkpoint keeps in its
// sidecars.
func TestCheckpointV2Sidecars(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		table     string
		version   int64
		files     int
		firstPath string
	}{
		// JSON manifest, one sidecar.
		{"checkpoint-v2-table", 8, 7, "part-00000-247edc12-0eb3-44dc-9d39-42b50dbe6a6b.c000.snappy.parquet"},
		// JSON manifest, four sidecars.
		{"v2-checkpoints-json-with-sidecars", 4, 31, "test%25file%25prefix-part-00000-a55253d2"},
		// Parquet manifest under the classic name, one sidecar.
		{"v2-classic-checkpoint-parquet", 1, 4, "test%25file%25prefix-part-00000-"},
	} {
		t.Run(tc.table, func(t *testing.T) {
			tbl := openTestTable(t, tc.table)
			l, err := tbl.list(ctx)
			if err != nil {
				t.Fatal(err)
			}
			cp := l.checkpointAtOrBefore(tc.version)
			if cp == nil || cp.version != tc.version {
				t.Fatalf("no checkpoint at %d", tc.version)
			}
			cpa, err := tbl.readCheckpoint(ctx, cp, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(cpa.adds) != tc.files {
				t.Errorf("%d adds, want %d", len(cpa.adds), tc.files)
			}
			if cpa.protocol == nil || cpa.metadata == nil || cpa.protocol.MinReaderVersion != 3 {
				t.Errorf("protocol %+v, metadata %+v", cpa.protocol, cpa.metadata)
			}
			found := false
			for _, a := range cpa.adds {
				found = found || len(a.Path) >= len(tc.firstPath) && a.Path[:len(tc.firstPath)] == tc.firstPath
			}
			if !found {
				t.Errorf("no add of %s...", tc.firstPath)
			}
			// Without files, only the manifest is read.
			cpa, err = tbl.readCheckpoint(ctx, cp, false)
			if err != nil || len(cpa.adds) != 0 || cpa.metadata == nil {
				t.Errorf("readCheckpoint without files = %+v, %v", cpa, err)
			}
		})
	}
}

// TestCheckpointErrors damages checkpoints in copies of test tables.
func TestCheckpointErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		table   string
		damage  func(t *testing.T, dir string)
		version int64
		want    error
		parts   []string
	}{
		{
			name: "missing sidecar", table: "checkpoint-v2-table", version: 9,
			damage: func(t *testing.T, dir string) {
				mustRemove(t, logPath(dir, "_sidecars/00000000000000000008.checkpoint.0000000001.0000000001.d55fb2cb-b8d3-4362-8572-c52142a9da1f.parquet"))
			},
			want:  ErrCorrupt,
			parts: []string{"version 8", "sidecar", "d55fb2cb-b8d3-4362-8572-c52142a9da1f.parquet"},
		},
		{
			name: "not Parquet", table: "checkpoint-cdf-table", version: 4,
			damage: func(t *testing.T, dir string) {
				mustWrite(t, logPath(dir, "00000000000000000003.checkpoint.parquet"), "PAR1 this is not a checkpoint")
			},
			want:  ErrCorrupt,
			parts: []string{`"checkpoint-cdf-table"`, "version 3", "00000000000000000003.checkpoint.parquet"},
		},
		{
			name: "truncated Parquet", table: "checkpoint-cdf-table", version: 3,
			damage: func(t *testing.T, dir string) {
				p := logPath(dir, "00000000000000000003.checkpoint.parquet")
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				mustWrite(t, p, string(data[:len(data)/2])+string(data[len(data)-8:]))
			},
			want:  ErrCorrupt,
			parts: []string{"00000000000000000003.checkpoint.parquet"},
		},
		{
			name: "manifest not JSON", table: "v2-checkpoints-json-with-sidecars", version: 6,
			damage: func(t *testing.T, dir string) {
				mustWrite(t, logPath(dir, "00000000000000000006.checkpoint.2a15d0c6-8b11-4a98-bab4-957905d62f7f.json"), "{\"checkpointMetadata\":{\"version\":6}}\n{oops\n")
			},
			want:  ErrCorrupt,
			parts: []string{"version 6", "2a15d0c6-8b11-4a98-bab4-957905d62f7f.json line 2"},
		},
		{
			name: "manifest of another version", table: "v2-checkpoints-json-with-sidecars", version: 6,
			damage: func(t *testing.T, dir string) {
				mustWrite(t, logPath(dir, "00000000000000000006.checkpoint.2a15d0c6-8b11-4a98-bab4-957905d62f7f.json"), "{\"checkpointMetadata\":{\"version\":5}}\n")
			},
			want:  ErrCorrupt,
			parts: []string{"checkpointMetadata says version 5"},
		},
		{
			name: "no metadata", table: "v2-checkpoints-json-with-sidecars", version: 6,
			damage: func(t *testing.T, dir string) {
				mustWrite(t, logPath(dir, "00000000000000000006.checkpoint.2a15d0c6-8b11-4a98-bab4-957905d62f7f.json"), "{\"checkpointMetadata\":{\"version\":6}}\n")
			},
			want:  ErrCorrupt,
			parts: []string{"no protocol or no metaData"},
		},
		{
			name: "sidecar outside the table", table: "v2-checkpoints-json-with-sidecars", version: 1,
			damage: func(t *testing.T, dir string) {
				mustWrite(t, logPath(dir, "00000000000000000001.checkpoint.ecdb7d35-9d52-4e80-ab08-b339ff8e9a82.json"),
					`{"sidecar":{"path":"s3://elsewhere/x.parquet","sizeInBytes":1,"modificationTime":1}}`+"\n")
			},
			want:  ErrUnsupported,
			parts: []string{"s3://elsewhere/x.parquet"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTestTable(t, tc.table)
			tc.damage(t, dir)
			_, err := openDir(t, dir, tc.table).Snapshot(ctx, tc.version)
			wantErr(t, err, tc.want, tc.parts...)
		})
	}
}

// TestCheckpointHintIgnored checks that _last_checkpoint is never trusted
// over the listing: v2-classic-checkpoint-parquet's names a checkpoint
// that is not there, and the others are rewritten to lie.
func TestCheckpointHintIgnored(t *testing.T) {
	ctx := context.Background()
	s, err := openTestTable(t, "v2-classic-checkpoint-parquet").Snapshot(ctx, 1)
	if err != nil || len(s.Files) != 4 {
		t.Fatalf("Snapshot(1) = %v, %v", s, err)
	}
	for _, hint := range []string{
		`{"version":5,"size":2,"parts":3}`,
		`{"version":0}`,
		`not JSON`,
	} {
		t.Run(hint, func(t *testing.T) {
			dir := copyTestTable(t, "checkpoint-cdf-table")
			mustWrite(t, logPath(dir, "_last_checkpoint"), hint)
			tbl := openDir(t, dir, "checkpoint-cdf-table")
			for v := int64(3); v <= 5; v++ {
				s, err := tbl.Snapshot(ctx, v)
				if err != nil {
					t.Fatal(err)
				}
				if want := []int{9, 13, 13}[v-3]; len(s.Files) != want {
					t.Errorf("version %d: %d files, want %d", v, len(s.Files), want)
				}
			}
		})
	}
}
