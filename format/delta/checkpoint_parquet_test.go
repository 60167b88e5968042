package delta

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/sluicefeed/sluice/internal/lib/longhist"
)

// checkpointSchema is the checkpoint schema of PROTOCOL.md, which the
// long histories' writer writes too.
var checkpointSchema = longhist.DeltaCheckpointSchema

// arrowMap returns a map as Arrow's JSON reader takes a map value.
func arrowMap[V any](m map[string]V) any {
	if m == nil {
		return nil
	}
	out := []map[string]any{}
	for k, v := range m {
		out = append(out, map[string]any{"key": k, "value": v})
	}
	return out
}

// checkpointRow returns an action as a row of checkpointSchema in Arrow's
// JSON form.
func checkpointRow(a Action) map[string]any {
	switch {
	case a.Add != nil:
		return map[string]any{"add": map[string]any{
			"path": a.Add.Path, "partitionValues": arrowMap(a.Add.PartitionValues), "size": a.Add.Size,
			"modificationTime": a.Add.ModificationTime, "dataChange": false, "stats": a.Add.Stats,
			"tags": arrowMap(a.Add.Tags), "deletionVector": a.Add.DeletionVector,
			"baseRowId": a.Add.BaseRowID, "defaultRowCommitVersion": a.Add.DefaultRowCommitVersion,
		}}
	case a.Remove != nil:
		return map[string]any{"remove": map[string]any{
			"path": a.Remove.Path, "deletionTimestamp": a.Remove.DeletionTimestamp,
			"dataChange": false, "deletionVector": a.Remove.DeletionVector,
		}}
	case a.MetaData != nil:
		m := a.MetaData
		return map[string]any{"metaData": map[string]any{
			"id": m.ID, "name": m.Name, "description": m.Description,
			"format":       map[string]any{"provider": m.Format.Provider, "options": arrowMap(m.Format.Options)},
			"schemaString": m.SchemaString, "partitionColumns": m.PartitionColumns,
			"configuration": arrowMap(m.Configuration), "createdTime": m.CreatedTime,
		}}
	case a.Protocol != nil:
		return map[string]any{"protocol": a.Protocol}
	}
	return map[string]any{"txn": a.Txn}
}

// writeCheckpointPart writes actions as one Parquet checkpoint file with
// pqarrow.
func writeCheckpointPart(t *testing.T, path string, actions []Action) {
	t.Helper()
	rows := make([]map[string]any, len(actions))
	for i, a := range actions {
		rows[i] = checkpointRow(a)
	}
	js, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, checkpointSchema, bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fw, err := pqarrow.NewFileWriter(checkpointSchema, f, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointWritten writes, with pqarrow, a two-part checkpoint of
// test tables with deletion vectors (on disk and inline), partition values
// and tombstones, removes the commits before it, and checks that the
// states read from it and from the commits after it are those replayed
// from the original commits.
func TestCheckpointWritten(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		table    string
		version  int64
		latest   int64
		removals []string // paths of tombstones to keep in the checkpoint
	}{
		{"cdf-table-with-dv", 3, 6, []string{"part-00000-fae5310a-a37d-4e51-827b-c3d5516560ca-c000.snappy.parquet"}},
		{"cdf-table-with-dv", 5, 6, nil},
		{"table-with-dv-small", 1, 1, nil},
		{"cdf-table", 2, 3, []string{"birthday=2023-12-22/part-00000-592a7e14-f790-4236-9c61-120d006eb3b8.c000.snappy.parquet"}},
		{"cdc_ict_table", 2, 3, nil},
	} {
		t.Run(fmt.Sprintf("%s@%d", tc.table, tc.version), func(t *testing.T) {
			orig := openTestTable(t, tc.table)
			state := replayJSON(t, orig, tc.version)
			p, m := state.Protocol, state.Metadata
			parts := [][]Action{
				{{Protocol: &p}, {Txn: &Txn{AppID: "app", Version: 3}}},
				{{MetaData: &m}},
			}
			for i, a := range state.Files {
				parts[i%2] = append(parts[i%2], Action{Add: a})
			}
			for _, path := range tc.removals {
				// A tombstone of the same path with another deletion vector
				// must not drop the live file.
				ts := int64(1)
				parts[1] = append(parts[1], Action{Remove: &Remove{Path: path, DeletionTimestamp: &ts,
					DeletionVector: &DeletionVector{StorageType: "i", PathOrInlineDv: "tombstone", SizeInBytes: 1, Cardinality: 1}}})
			}
			dir := copyTestTable(t, tc.table)
			for i, part := range parts {
				writeCheckpointPart(t, logPath(dir, fmt.Sprintf("%020d.checkpoint.%010d.%010d.parquet", tc.version, i+1, len(parts))), part)
			}
			for v := int64(0); v < tc.version; v++ {
				mustRemove(t, logPath(dir, fmt.Sprintf("%020d.json", v)))
			}
			tbl := openDir(t, dir, tc.table)
			vs, err := tbl.Versions(ctx)
			if err != nil || vs.EarliestStart != tc.version {
				t.Fatalf("Versions = %+v, %v; want EarliestStart %d", vs, err, tc.version)
			}
			for v := tc.version; v <= tc.latest; v++ {
				got, err := openDir(t, dir, tc.table).Snapshot(ctx, v)
				if err != nil {
					t.Fatal(err)
				}
				want := replayJSON(t, orig, v)
				if len(got.Files) != len(want.Files) {
					t.Fatalf("version %d: %d files, want %d", v, len(got.Files), len(want.Files))
				}
				for i := range want.Files {
					if g, w := comparable(t, got.Files[i]), comparable(t, want.Files[i]); !reflect.DeepEqual(g, w) {
						t.Errorf("version %d, file %d:\n%+v\nwant\n%+v", v, i, g, w)
					}
				}
				if !reflect.DeepEqual(got.Protocol, want.Protocol) || !reflect.DeepEqual(got.Metadata, want.Metadata) {
					t.Errorf("version %d: protocol or metadata differ:\n%+v %+v\n%+v %+v", v, got.Protocol, got.Metadata, want.Protocol, want.Metadata)
				}
				if pm, mm, err := openDir(t, dir, tc.table).Metadata(ctx, v); err != nil || !reflect.DeepEqual(pm, want.Protocol) || !reflect.DeepEqual(mm, want.Metadata) {
					t.Errorf("version %d: Metadata = %+v, %+v, %v", v, pm, mm, err)
				}
			}
		})
	}
}

// TestCheckpointDecodesAdd checks every field of an add read from a
// checkpoint, null partition values included.
func TestCheckpointDecodesAdd(t *testing.T) {
	ctx := context.Background()
	x, off, maxRow, base, commitV := "x", int32(7), int64(99), int64(1000), int64(4)
	want := &Add{
		Path: "p=__HIVE_DEFAULT_PARTITION__/q=x/part-1.parquet", PartitionValues: map[string]*string{"p": nil, "q": &x},
		Size: 123, ModificationTime: 456, Stats: `{"numRecords":10}`, Tags: map[string]string{"INSERTION_TIME": "1"},
		DeletionVector: &DeletionVector{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k^", Offset: &off,
			SizeInBytes: 34, Cardinality: 3, MaxRowIndex: &maxRow},
		BaseRowID: &base, DefaultRowCommitVersion: &commitV,
	}
	plain := &Add{Path: "part-2.parquet", PartitionValues: map[string]*string{}, Size: 1}
	p := Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors", "rowTracking"}}
	created := int64(5)
	m := Metadata{ID: "id", Name: "n", Description: "d", SchemaString: "{}", PartitionColumns: []string{"p", "q"},
		CreatedTime: &created, Configuration: map[string]string{"delta.enableDeletionVectors": "true"}}
	m.Format.Provider = "parquet"
	m.Format.Options = map[string]string{}
	dir := t.TempDir()
	if err := os.MkdirAll(logPath(dir, ""), 0o755); err != nil {
		t.Fatal(err)
	}
	writeCheckpointPart(t, logPath(dir, "00000000000000000000.checkpoint.parquet"),
		[]Action{{Protocol: &p}, {MetaData: &m}, {Add: want}, {Add: plain}})
	tbl := openDir(t, dir, "decode")
	s, err := tbl.Snapshot(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Files) != 2 || !reflect.DeepEqual(s.Files[0], want) || !reflect.DeepEqual(s.Files[1], plain) {
		t.Errorf("files\n%+v\n%+v\nwant\n%+v\n%+v", s.Files[0], s.Files[1], want, plain)
	}
	if !reflect.DeepEqual(s.Protocol, p) || !reflect.DeepEqual(s.Metadata, m) {
		t.Errorf("protocol %+v, metadata %+v; want %+v, %+v", s.Protocol, s.Metadata, p, m)
	}
}
