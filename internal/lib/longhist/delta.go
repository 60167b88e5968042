package longhist

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// The checkpoint schema of Delta's PROTOCOL.md ("Checkpoint Schema"),
// with the deletion vector and row tracking fields of add and remove.
var (
	stringMap = arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)
	dvType    = arrow.StructOf(
		arrow.Field{Name: "storageType", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "pathOrInlineDv", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "offset", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "sizeInBytes", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "cardinality", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "maxRowIndex", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	)
	// DeltaCheckpointSchema is the schema of a classic Delta checkpoint
	// file.
	DeltaCheckpointSchema = arrow.NewSchema([]arrow.Field{
		{Name: "txn", Nullable: true, Type: arrow.StructOf(
			arrow.Field{Name: "appId", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "version", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		)},
		{Name: "add", Nullable: true, Type: arrow.StructOf(
			arrow.Field{Name: "path", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "partitionValues", Type: stringMap, Nullable: true},
			arrow.Field{Name: "size", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			arrow.Field{Name: "modificationTime", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			arrow.Field{Name: "dataChange", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
			arrow.Field{Name: "stats", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "tags", Type: stringMap, Nullable: true},
			arrow.Field{Name: "deletionVector", Type: dvType, Nullable: true},
			arrow.Field{Name: "baseRowId", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			arrow.Field{Name: "defaultRowCommitVersion", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		)},
		{Name: "remove", Nullable: true, Type: arrow.StructOf(
			arrow.Field{Name: "path", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "deletionTimestamp", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			arrow.Field{Name: "dataChange", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
			arrow.Field{Name: "deletionVector", Type: dvType, Nullable: true},
		)},
		{Name: "metaData", Nullable: true, Type: arrow.StructOf(
			arrow.Field{Name: "id", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "description", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "format", Nullable: true, Type: arrow.StructOf(
				arrow.Field{Name: "provider", Type: arrow.BinaryTypes.String, Nullable: true},
				arrow.Field{Name: "options", Type: stringMap, Nullable: true},
			)},
			arrow.Field{Name: "schemaString", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "partitionColumns", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
			arrow.Field{Name: "configuration", Type: stringMap, Nullable: true},
			arrow.Field{Name: "createdTime", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		)},
		{Name: "protocol", Nullable: true, Type: arrow.StructOf(
			arrow.Field{Name: "minReaderVersion", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "minWriterVersion", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "readerFeatures", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
			arrow.Field{Name: "writerFeatures", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		)},
	}, nil)
)

// DeltaParams shape a long Delta history: Versions commits (version 0
// creates the table) that add Files data files between them, spread
// evenly, with a classic checkpoint every CheckpointEvery versions. The
// last commit removes a file of version 1 and adds one (a copy-on-write
// rewrite, dataChange=true); the others are appends.
type DeltaParams struct {
	Versions        int `json:"versions"`
	Files           int `json:"files"`
	CheckpointEvery int `json:"checkpoint_every"`
}

// Validate checks that the parameters make a history.
func (p DeltaParams) Validate() error {
	if p.Versions < 4 || p.Files < p.Versions-2 || p.CheckpointEvery < 1 {
		return fmt.Errorf("%w: %d versions of %d files, checkpoints every %d: want at least 4 versions, a file "+
			"per append and a checkpoint interval", ErrInvalidParams, p.Versions, p.Files, p.CheckpointEvery)
	}
	return nil
}

// Delta is a written long Delta history.
type Delta struct {
	DeltaParams
	// Latest is the last version.
	Latest int64 `json:"latest"`
}

// LastAppend is the one-commit window of the last append.
func (d *Delta) LastAppend() (from, to int64) { return d.Latest - 2, d.Latest - 1 }

// LastRewrite is the one-commit window of the closing rewrite.
func (d *Delta) LastRewrite() (from, to int64) { return d.Latest - 1, d.Latest }

// deltaFileRecords is the record count every data file's stats claim.
const deltaFileRecords = 100

// WriteDelta writes the long history of p as a Delta table in the folder
// dir (created): its commits and checkpoints. The data files they name are
// not written (planning reads none).
func WriteDelta(dir string, p DeltaParams, createdMs int64) (*Delta, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	logDir := filepath.Join(dir, "_delta_log")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	schema, err := json.Marshal(map[string]any{"type": "struct", "fields": []map[string]any{
		{"name": "id", "type": "long", "nullable": false, "metadata": map[string]any{}},
		{"name": "v", "type": "string", "nullable": true, "metadata": map[string]any{}},
	}})
	if err != nil {
		return nil, err
	}
	protocol := map[string]any{"minReaderVersion": 1, "minWriterVersion": 2}
	metaData := map[string]any{"id": "00000000-0000-0000-0000-000000000001", "format": map[string]any{
		"provider": "parquet", "options": map[string]any{}}, "schemaString": string(schema),
		"partitionColumns": []string{}, "configuration": map[string]any{}, "createdTime": createdMs}
	// live are the live files' add actions, in the order added.
	var live []map[string]any
	appends, written := p.Versions-2, 0
	for v := 0; v < p.Versions; v++ {
		ts := createdMs + int64(v)
		op := "WRITE"
		var actions []map[string]any
		switch {
		case v == 0:
			op = "CREATE TABLE"
			actions = append(actions, map[string]any{"protocol": protocol}, map[string]any{"metaData": metaData})
		case v <= appends:
			n := (v*p.Files)/appends - written
			written += n
			for i := range n {
				add := deltaAdd(v, i, ts)
				live = append(live, add)
				actions = append(actions, map[string]any{"add": add})
			}
		default:
			op = "DELETE"
			gone := live[0]
			live = live[1:]
			add := deltaAdd(v, 0, ts)
			live = append(live, add)
			actions = append(actions,
				map[string]any{"remove": map[string]any{"path": gone["path"], "deletionTimestamp": ts, "dataChange": true,
					"size": gone["size"], "partitionValues": map[string]any{}, "extendedFileMetadata": true}},
				map[string]any{"add": add})
		}
		actions = append([]map[string]any{{"commitInfo": map[string]any{"timestamp": ts, "operation": op}}},
			actions...)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for _, a := range actions {
			if err := enc.Encode(a); err != nil {
				return nil, err
			}
		}
		if err := os.WriteFile(filepath.Join(logDir, fmt.Sprintf("%020d.json", v)), buf.Bytes(), 0o644); err != nil {
			return nil, err
		}
		if v > 0 && v%p.CheckpointEvery == 0 {
			if err := writeDeltaCheckpoint(logDir, v, protocol, metaData, live); err != nil {
				return nil, fmt.Errorf("checkpoint of version %d: %w", v, err)
			}
		}
	}
	return &Delta{DeltaParams: p, Latest: int64(p.Versions - 1)}, nil
}

func deltaAdd(v, i int, ts int64) map[string]any {
	return map[string]any{"path": fmt.Sprintf("part-%06d-%04d.parquet", v, i), "partitionValues": map[string]any{},
		"size": 1024, "modificationTime": ts, "dataChange": true,
		"stats": fmt.Sprintf(`{"numRecords":%d}`, deltaFileRecords)}
}

// checkpointRows is how many add rows go into one Arrow batch.
const checkpointRows = 16384

// writeDeltaCheckpoint writes the classic checkpoint of version v (its
// protocol, metaData and live files' add actions) and points
// _last_checkpoint at it.
func writeDeltaCheckpoint(logDir string, v int, protocol, metaData map[string]any, live []map[string]any) error {
	name := filepath.Join(logDir, fmt.Sprintf("%020d.checkpoint.parquet", v))
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	defer f.Close()
	fw, err := pqarrow.NewFileWriter(DeltaCheckpointSchema, f, parquet.NewWriterProperties(),
		pqarrow.DefaultWriterProps())
	if err != nil {
		return err
	}
	// The protocol and metaData rows, from JSON (maps as lists of entries).
	md := map[string]any{}
	for k, val := range metaData {
		md[k] = val
	}
	md["format"] = map[string]any{"provider": "parquet", "options": []any{}}
	md["configuration"] = []any{}
	js, err := json.Marshal([]map[string]any{{"protocol": protocol}, {"metaData": md}})
	if err != nil {
		return err
	}
	head, _, err := array.RecordFromJSON(memory.DefaultAllocator, DeltaCheckpointSchema, bytes.NewReader(js))
	if err != nil {
		return err
	}
	err = fw.WriteBuffered(head)
	head.Release()
	if err != nil {
		return err
	}
	// The add rows, built column by column.
	for lo := 0; lo < len(live); lo += checkpointRows {
		if err := writeAdds(fw, live[lo:min(lo+checkpointRows, len(live))]); err != nil {
			return err
		}
	}
	if err := fw.Close(); err != nil {
		return err
	}
	last, err := json.Marshal(map[string]any{"version": v, "size": len(live) + 2})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(logDir, "_last_checkpoint"), last, 0o644)
}

// writeAdds writes the add actions adds (as deltaAdd makes them, with
// dataChange=false as a checkpoint keeps them) as one batch.
func writeAdds(fw *pqarrow.FileWriter, adds []map[string]any) error {
	b := array.NewRecordBuilder(memory.DefaultAllocator, DeltaCheckpointSchema)
	defer b.Release()
	add := b.Field(1).(*array.StructBuilder)
	path := add.FieldBuilder(0).(*array.StringBuilder)
	parts := add.FieldBuilder(1).(*array.MapBuilder)
	size := add.FieldBuilder(2).(*array.Int64Builder)
	mod := add.FieldBuilder(3).(*array.Int64Builder)
	change := add.FieldBuilder(4).(*array.BooleanBuilder)
	stats := add.FieldBuilder(5).(*array.StringBuilder)
	for _, a := range adds {
		for i := range b.Fields() {
			if i != 1 {
				b.Field(i).AppendNull()
			}
		}
		add.Append(true)
		path.Append(a["path"].(string))
		parts.Append(true) // no partition values
		size.Append(int64(a["size"].(int)))
		mod.Append(a["modificationTime"].(int64))
		change.Append(false)
		stats.Append(a["stats"].(string))
		for i := 6; i < add.NumField(); i++ {
			add.FieldBuilder(i).AppendNull()
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return fw.WriteBuffered(rec)
}
