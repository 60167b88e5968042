package delta

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// checkpointBatchRows is the number of checkpoint rows decoded at a time.
const checkpointBatchRows = 8192

// readParquetActions reads the actions of a Parquet checkpoint file (a
// classic, multi-part or V2 checkpoint, or a sidecar), calling fn for each
// row with one of the action columns tops set. Only the columns of tops are
// read, and of the add column neither stats_parsed (except its numRecords)
// nor partitionValues_parsed. It returns the file's modification time.
func (t *Table) readParquetActions(ctx context.Context, version int64, name string, tops []string, fn func(*Action) error) (mt time.Time, err error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	f, err := t.fsys.Open(name)
	if err != nil {
		return time.Time{}, fmt.Errorf("table %q, version %d: %w", t.name, version, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return time.Time{}, fmt.Errorf("table %q, version %d: %s: %w", t.name, version, name, err)
	}
	r, ok := f.(parquet.ReaderAtSeeker)
	if !ok {
		data, err := io.ReadAll(f)
		if err != nil {
			return time.Time{}, fmt.Errorf("table %q, version %d: %s: %w", t.name, version, name, err)
		}
		r = bytes.NewReader(data)
	}
	corrupt := func(err error) error {
		return fmt.Errorf("%w: table %q, version %d: checkpoint file %s: %w", ErrCorrupt, t.name, version, name, err)
	}
	// The Parquet and Arrow decoders may panic on malformed input.
	defer func() {
		if p := recover(); p != nil {
			err = corrupt(fmt.Errorf("decoding failed: %v", p))
		}
	}()
	pf, err := file.NewParquetReader(r, file.WithReadProps(parquet.NewReaderProperties(t.mem)))
	if err != nil {
		return time.Time{}, corrupt(err)
	}
	defer pf.Close()
	leaves := checkpointLeaves(pf, tops)
	if len(leaves) == 0 {
		return info.ModTime(), nil // none of the actions sought
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: checkpointBatchRows}, t.mem)
	if err != nil {
		return time.Time{}, corrupt(err)
	}
	rr, err := fr.GetRecordReader(ctx, leaves, nil)
	if err != nil {
		return time.Time{}, corrupt(err)
	}
	defer rr.Release()
	dec, err := newActionDecoder(rr.Schema())
	if err != nil {
		return time.Time{}, corrupt(err)
	}
	for rr.Next() {
		if err := ctx.Err(); err != nil {
			return time.Time{}, err
		}
		rec := rr.RecordBatch()
		dec.reset(rec)
		for i := 0; i < int(rec.NumRows()); i++ {
			var a Action
			if !dec.decode(i, &a) {
				continue
			}
			if err := fn(&a); err != nil {
				return time.Time{}, err
			}
		}
	}
	if err := rr.Err(); err != nil && err != io.EOF {
		return time.Time{}, corrupt(err)
	}
	return info.ModTime(), nil
}

// checkpointLeaves returns the indexes of the Parquet leaf columns to read
// for the action columns tops.
func checkpointLeaves(pf *file.Reader, tops []string) []int {
	sc := pf.MetaData().Schema
	var leaves []int
	for i := 0; i < sc.NumColumns(); i++ {
		p := sc.Column(i).ColumnPath()
		if len(p) < 2 || !slices.Contains(tops, p[0]) {
			continue
		}
		switch p[1] {
		case "partitionValues_parsed":
			continue
		case "stats_parsed":
			if len(p) != 3 || p[2] != "numRecords" {
				continue
			}
		}
		leaves = append(leaves, i)
	}
	return leaves
}

// actionDecoder turns the rows of checkpoint record batches into actions.
// It accepts the types writers use for each field (any string, binary or
// integer width) and fails on others when built.
type actionDecoder struct {
	schema *arrow.Schema
	// The columns of the current batch, by action.
	add, metaData, protocol, sidecar, checkpointMetadata structCol
	addDV, addStatsParsed, metaDataFormat                structCol
}

func newActionDecoder(sc *arrow.Schema) (*actionDecoder, error) {
	for _, f := range sc.Fields() {
		want, ok := checkpointFields[f.Name]
		if !ok {
			continue
		}
		if err := checkType(f.Name, f.Type, want); err != nil {
			return nil, err
		}
	}
	return &actionDecoder{schema: sc}, nil
}

// reset points the decoder at the columns of rec.
func (d *actionDecoder) reset(rec arrow.RecordBatch) {
	col := func(name string) structCol {
		if idx := d.schema.FieldIndices(name); len(idx) > 0 {
			return newStructCol(rec.Column(idx[0]))
		}
		return structCol{}
	}
	d.add, d.metaData, d.protocol = col("add"), col("metaData"), col("protocol")
	d.sidecar, d.checkpointMetadata = col("sidecar"), col("checkpointMetadata")
	d.addDV = d.add.child("deletionVector")
	d.addStatsParsed = d.add.child("stats_parsed")
	d.metaDataFormat = d.metaData.child("format")
}

// decode fills a with the actions of row i and reports whether it holds
// any. An action counts when its struct and its required key field (path,
// id, minReaderVersion, version) are set, as delta-kernel-rs does.
func (d *actionDecoder) decode(i int, a *Action) bool {
	found := false
	if path, ok := d.add.str("path", i); ok {
		a.Add = d.decodeAdd(i, path)
		found = true
	}
	if id, ok := d.metaData.str("id", i); ok {
		a.MetaData = d.decodeMetadata(i, id)
		found = true
	}
	if v, ok := d.protocol.int("minReaderVersion", i); ok {
		w, _ := d.protocol.int("minWriterVersion", i)
		a.Protocol = &Protocol{
			MinReaderVersion: int(v),
			MinWriterVersion: int(w),
			ReaderFeatures:   d.protocol.strList("readerFeatures", i),
			WriterFeatures:   d.protocol.strList("writerFeatures", i),
		}
		found = true
	}
	if path, ok := d.sidecar.str("path", i); ok {
		size, _ := d.sidecar.int("sizeInBytes", i)
		mt, _ := d.sidecar.int("modificationTime", i)
		a.Sidecar = &Sidecar{Path: path, SizeInBytes: size, ModificationTime: mt, Tags: d.sidecar.strMap("tags", i)}
		found = true
	}
	if v, ok := d.checkpointMetadata.int("version", i); ok {
		a.CheckpointMetadata = &CheckpointMetadata{Version: v, Tags: d.checkpointMetadata.strMap("tags", i)}
		found = true
	}
	return found
}

func (d *actionDecoder) decodeAdd(i int, path string) *Add {
	a := &Add{Path: path, PartitionValues: d.add.strPtrMap("partitionValues", i), Tags: d.add.strMap("tags", i)}
	a.Size, _ = d.add.int("size", i)
	a.ModificationTime, _ = d.add.int("modificationTime", i)
	a.DataChange, _ = d.add.bool("dataChange", i)
	a.Stats, _ = d.add.str("stats", i)
	if a.Stats == "" {
		// Writers with delta.checkpoint.writeStatsAsJson=false keep only
		// stats_parsed: keep its record count, which readers need.
		if n, ok := d.addStatsParsed.int("numRecords", i); ok {
			a.Stats = `{"numRecords":` + strconv.FormatInt(n, 10) + `}`
		}
	}
	a.BaseRowID = d.add.optInt("baseRowId", i)
	a.DefaultRowCommitVersion = d.add.optInt("defaultRowCommitVersion", i)
	if st, ok := d.addDV.str("storageType", i); ok {
		dv := &DeletionVector{StorageType: st, MaxRowIndex: d.addDV.optInt("maxRowIndex", i)}
		dv.PathOrInlineDv, _ = d.addDV.str("pathOrInlineDv", i)
		if off := d.addDV.optInt("offset", i); off != nil {
			o := int32(*off)
			dv.Offset = &o
		}
		size, _ := d.addDV.int("sizeInBytes", i)
		dv.SizeInBytes = int32(size)
		dv.Cardinality, _ = d.addDV.int("cardinality", i)
		a.DeletionVector = dv
	}
	return a
}

func (d *actionDecoder) decodeMetadata(i int, id string) *Metadata {
	m := &Metadata{ID: id, PartitionColumns: d.metaData.strList("partitionColumns", i)}
	m.Name, _ = d.metaData.str("name", i)
	m.Description, _ = d.metaData.str("description", i)
	m.SchemaString, _ = d.metaData.str("schemaString", i)
	m.CreatedTime = d.metaData.optInt("createdTime", i)
	m.Configuration = d.metaData.strMap("configuration", i)
	m.Format.Provider, _ = d.metaDataFormat.str("provider", i)
	m.Format.Options = d.metaDataFormat.strMap("options", i)
	return m
}
