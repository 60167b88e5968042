package feed

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/internal/pqread"
)

// This file decodes Iceberg data files with the engine's own Parquet reader
// (internal/pqread), in the engine's goroutines: pqread turns a panic of
// arrow-go's decoder on a corrupt file into ErrCorrupt (ErrUnreadable for
// the read), and the engine's guard any other panic into ErrInternal.
// (iceberg-go's scan decodes in worker goroutines of its own, where no
// recover of the engine's reaches: a corrupt file ended the process.)
//
// It finds an Iceberg table's columns in its Parquet data files the way
// iceberg-go's scan does (table/arrow_scanner.go prepareToRead and
// ToRequestedSchema, table/internal/parquet_files.go pruneParquetColumns
// and GetRecords):
//
//   - a column is the file's column with the same Iceberg field id, at every
//     level (struct fields; list elements and map keys and values by
//     position, as pqread matches them); a field id written in the file is
//     authoritative;
//   - a file column without a field id (a file of a table migrated from
//     plain Parquet, or added with add_files) takes the id that the table's
//     name mapping (schema.name-mapping.default) gives its name, and is read
//     by that name;
//   - a column the file lacks is its initial-default (Iceberg v3) on every
//     row, else null (a required column without either fails the read, as
//     iceberg-go's does);
//   - types are widened by pqread's rules (int to long, float to double, a
//     decimal's precision, date to timestamp, string and binary variants),
//     into table.SchemaToArrowSchema of the columns: the types changeSchema
//     gives the images.
//
// The row lineage columns of Iceberg v3 (_row_id,
// _last_updated_sequence_number) are metadata columns, not fields of a
// table schema, and the engine selects fields of the window's end schema
// only: they are never read (a file that holds them, as compactions of v3
// tables write, keeps them under reserved field ids no schema field has).
//
// iceberg-go keeps what it does well: planning (manifests, which delete
// files apply to which data file, the byte ranges of tasks). Its scan still
// reads a data file that is not Parquet, and one whose columns have no
// field ids when the table has no name mapping (see fileColumns).

// errUseScan marks a data file the engine leaves to iceberg-go's scan.
var errUseScan = errors.New("feed: data file left to iceberg-go's scan")

// decode reads data file df into t's columns: the row groups pick chooses
// given its footer (nil: all); keep keeps the footer for the rest of the
// plan's read (see meta). It hands fn each batch with the file
// position of its first row (fn takes the batch over; its error ends the
// read and is returned as is), and returns the number of row groups read;
// errUseScan for a file that is iceberg-go's to read (nothing read then).
// Its errors are classified (readError): a corrupt file, on which the
// decoder may panic, is ErrUnreadable.
func (f *icebergFiles) decode(ctx context.Context, snapshot int64, df iceberg.DataFile, t *icebergTarget, keep bool,
	pick func(*pqread.Meta) ([]int, error), fn func(rec arrow.RecordBatch, first int64) error) (int, error) {
	if df.FileFormat() != iceberg.ParquetFile {
		return 0, errUseScan
	}
	what := "data file " + df.FilePath()
	fh, err := f.fs.Open(df.FilePath())
	if err != nil {
		return 0, readError(f.name, snapshot, what, err)
	}
	defer fh.Close()
	m, err := f.meta(df.FilePath(), fh, keep)
	if err != nil {
		return 0, readError(f.name, snapshot, what, err)
	}
	if m.Rows != df.Count() {
		return 0, readError(f.name, snapshot, what,
			fmt.Errorf("its footer holds %d rows where its manifest entry says %d", m.Rows, df.Count()))
	}
	cols, ok, err := t.fileColumns(m, f.mapping)
	switch {
	case errors.Is(err, ErrUnsupported):
		return 0, fmt.Errorf("snapshot %d of table %s: %s: %w", snapshot, f.name, what, err)
	case err != nil:
		return 0, readError(f.name, snapshot, what, err)
	case !ok:
		return 0, errUseScan
	}
	rgs, err := pick(m)
	if err != nil {
		return 0, readError(f.name, snapshot, what, err)
	}
	var fnErr error
	// The columns of a batch decode in parallel, as iceberg-go's scan
	// decodes them: the files read ahead of the one the consumer takes
	// hold two batches each, so the file being taken is the one decoding,
	// and it has the cores (in goroutines pqread owns, and recovers).
	err = pqread.Read(ctx, fh, t.schema, cols, pqread.Options{Allocator: f.mem, BatchRows: f.batchRows,
		RowGroups: rgs, Meta: m, Path: df.FilePath(), Parallelism: runtime.GOMAXPROCS(0)},
		func(rec arrow.RecordBatch, first int64) error {
			fnErr = fn(rec, first)
			return fnErr
		})
	switch {
	case fnErr != nil:
		return 0, fnErr
	case err != nil:
		return 0, readError(f.name, snapshot, what, err)
	case rgs == nil:
		return len(m.RowGroups), nil
	}
	return len(rgs), nil
}

// meta returns a data file's footer: the one read before in this plan's
// read, else read now, and kept when keep is true (a file the diff path
// reads row groups of, which snapshots of the window may read again; a
// file read whole is read once, and holding the footers of every file of a
// large state would hold much memory).
func (f *icebergFiles) meta(path string, r parquet.ReaderAtSeeker, keep bool) (*pqread.Meta, error) {
	f.mu.Lock()
	m, ok := f.metas[path]
	f.mu.Unlock()
	if ok {
		return m, nil
	}
	m, err := pqread.Footer(r)
	if err != nil {
		return nil, err
	}
	if keep {
		f.mu.Lock()
		f.metas[path] = m
		f.mu.Unlock()
	}
	return m, nil
}

// footerOf is the engine's footer of a data file (row groups and their
// statistics, as readFooter reads them) from its pqread footer.
func footerOf(m *pqread.Meta, df iceberg.DataFile) *footer {
	ft := &footer{meta: m.File, colByID: map[int]int{}, fileSize: m.File.GetSourceFileSize()}
	for i, rg := range m.RowGroups {
		ft.rows = append(ft.rows, rg.Rows)
		ft.first = append(ft.first, rg.First)
		ft.offsets = append(ft.offsets, splitOffset(m.File.RowGroup(i)))
	}
	// iceberg-go selects row groups by the data file's split offsets when
	// they are valid, as readFooter does.
	if so := df.SplitOffsets(); len(so) == len(ft.rows) && slices.IsSorted(so) && (len(so) == 0 || so[0] >= 0) {
		ft.offsets = slices.Clone(so)
	}
	sc := m.File.Schema
	for i := range sc.NumColumns() {
		col := sc.Column(i)
		if col.ColumnPath().String() == col.Name() { // a top-level column
			ft.colByID[int(col.SchemaNode().FieldID())] = i
		}
	}
	return ft
}

// liveTask streams the live rows of a file scan task to send: the row
// groups its byte range selects (taskRowGroups), without the rows its
// delete files delete, by the engine's own masks (as the diff path applies
// them). send takes over each batch.
func (f *icebergFiles) liveTask(ctx context.Context, snapshot int64, task table.FileScanTask,
	send func(arrow.RecordBatch) error) error {
	var dels *fileDeletes
	if len(task.DeleteFiles)+len(task.EqualityDeleteFiles)+len(task.DeletionVectorFiles) > 0 {
		var err error
		if dels, err = f.index.forTask(ctx, &task, int(task.File.Count())); err != nil {
			return readError(f.name, snapshot, "the delete files of data file "+task.File.FilePath(), err)
		}
	}
	t, keyCol, ok, err := f.keyTarget(dels)
	if err != nil {
		return err
	}
	if !ok {
		return f.scanTask(ctx, snapshot, task, send)
	}
	n := f.scan.schema.NumFields()
	_, err = f.decode(ctx, snapshot, task.File, t, false,
		func(m *pqread.Meta) ([]int, error) { return taskRowGroups(task, m) },
		func(rec arrow.RecordBatch, first int64) error {
			if dels != nil {
				deleted, err := dels.deleted(rec, int(first), keyCol)
				if err != nil {
					rec.Release()
					return err
				}
				kept, err := selectRows(ctx, f.mem, rec, func(r int) bool { return !deleted[r] })
				rec.Release()
				if err != nil || kept == nil {
					return err
				}
				rec = kept
			}
			if t != f.scan {
				// Without the key columns added for the equality deletes.
				scanCols := array.NewRecordBatch(f.scan.schema, rec.Columns()[:n], rec.NumRows())
				rec.Release()
				rec = scanCols
			}
			return send(rec)
		})
	if err == errUseScan {
		return f.scanTask(ctx, snapshot, task, send)
	}
	return err
}

// keyTarget returns the target a task with deletes dels is read in: the
// scan columns, and after them the key columns of its equality deletes
// that they lack; keyCol resolves a key's field id to its column. ok is
// false when a key is not a top-level field of the window's end schema (a
// nested field, or one dropped since): the engine's masks compare
// top-level columns only (as in the diff path), so iceberg-go's scan, which
// matches keys by field id in the file, reads that task as it did before.
func (f *icebergFiles) keyTarget(dels *fileDeletes) (t *icebergTarget, keyCol func(id int) (int, error), ok bool,
	err error) {
	idx := map[int]int{}
	for i, fl := range f.scan.fields {
		idx[fl.ID] = i
	}
	keyCol = func(id int) (int, error) {
		if i, ok := idx[id]; ok {
			return i, nil
		}
		return 0, fmt.Errorf("%w: field %d is not a column read", ErrInternal, id)
	}
	if dels == nil || len(dels.eq) == 0 {
		return f.scan, keyCol, true, nil
	}
	var extra []iceberg.NestedField
	for _, eq := range dels.eq {
		for _, id := range eq.fields {
			if _, ok := idx[id]; ok {
				continue
			}
			i := slices.IndexFunc(f.end.Fields(), func(fl iceberg.NestedField) bool { return fl.ID == id })
			if i < 0 {
				return nil, nil, false, nil
			}
			idx[id] = len(f.scan.fields) + len(extra)
			extra = append(extra, f.end.Field(i))
		}
	}
	if t, err = f.scan.withFields(extra); err != nil {
		return nil, nil, false, err
	}
	return t, keyCol, true, nil
}

// scanTask is liveTask with iceberg-go's scan (which applies the task's
// deletes itself), for a task the engine leaves to it.
func (f *icebergFiles) scanTask(ctx context.Context, snapshot int64, task table.FileScanTask,
	send func(arrow.RecordBatch) error) error {
	what := "data file " + task.File.FilePath()
	_, records, err := f.scan.fallback.ReadTasks(ctx, []table.FileScanTask{task})
	if err != nil {
		return readError(f.name, snapshot, what, err)
	}
	for rec, err := range records {
		if err != nil {
			return readError(f.name, snapshot, what, err)
		}
		if err := send(rec); err != nil {
			return err
		}
	}
	return nil
}

// icebergTarget is a set of top-level columns of a window's end schema that
// a read decodes.
type icebergTarget struct {
	// schema is the Arrow schema of the batches.
	schema *arrow.Schema
	// fields are the end schema's fields of the columns, in schema order.
	fields []iceberg.NestedField
	// fallback reads the same columns with iceberg-go's scan: for a data
	// file the engine cannot match columns in (see fileColumns), and one
	// that is not Parquet.
	fallback *table.Scan
}

// newIcebergTarget prepares the read of the given fields (top-level fields
// of a schema), with iceberg-go's scan of them as its fallback.
func newIcebergTarget(fields []iceberg.NestedField, fallback *table.Scan) (*icebergTarget, error) {
	sch, err := table.SchemaToArrowSchema(iceberg.NewSchema(0, fields...), nil, false, false)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot convert the schema to Arrow: %v", ErrUnsupported, err)
	}
	if sch.NumFields() != len(fields) {
		return nil, fmt.Errorf("%w: %d fields converted to %d Arrow fields", ErrInternal, len(fields), sch.NumFields())
	}
	return &icebergTarget{schema: sch, fields: fields, fallback: fallback}, nil
}

// withFields returns the target with the given fields added after its own
// (nil: none added, t itself).
func (t *icebergTarget) withFields(extra []iceberg.NestedField) (*icebergTarget, error) {
	if len(extra) == 0 {
		return t, nil
	}
	return newIcebergTarget(append(append([]iceberg.NestedField(nil), t.fields...), extra...), t.fallback)
}

// fileColumns says where each column of t is in a data file whose footer
// is m. ok is false for a file with a column that has neither a field id
// nor a name in mapping: iceberg-go's scan fails on such a file (it has no
// id to match by), and it stays the one to say so, rather than the engine
// guessing columns by name.
func (t *icebergTarget) fileColumns(m *pqread.Meta, mapping iceberg.NameMapping) (cols []pqread.Column, ok bool, err error) {
	manifest, err := pqarrow.NewSchemaManifest(m.File.Schema, m.File.KeyValueMetadata(), &pqarrow.ArrowReadProperties{})
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", pqread.ErrCorrupt, err)
	}
	root := &iceberg.MappedField{Fields: mapping}
	if !identified(manifest.Fields, root) {
		return nil, false, nil
	}
	cols = make([]pqread.Column, len(t.fields))
	for i, fl := range t.fields {
		if cols[i], err = columnByID(manifest.Fields, root, fl, t.schema.Field(i).Type); err != nil {
			return nil, false, err
		}
	}
	return cols, true, nil
}

// mappedField is the name mapping of the field name in the mapping level m
// (nil: none).
func mappedField(m *iceberg.MappedField, name string) *iceberg.MappedField {
	if m == nil {
		return nil
	}
	return m.GetField(name)
}

// writtenID is the field id written in the file for sf, or -1. (Like
// iceberg-go, 0 and below are no id.)
func writtenID(sf *pqarrow.SchemaField) int {
	v, ok := sf.Field.Metadata.GetValue("PARQUET:field_id")
	if !ok {
		return -1
	}
	id, err := strconv.Atoi(v)
	if err != nil || id <= 0 {
		return -1
	}
	return id
}

// fieldID is the Iceberg field id of the file field sf, whose name mapping
// is m: the id written in the file, else the mapping's, else -1.
func fieldID(sf *pqarrow.SchemaField, m *iceberg.MappedField) int {
	if id := writtenID(sf); id >= 0 {
		return id
	}
	if m != nil && m.FieldID != nil {
		return *m.FieldID
	}
	return -1
}

// children returns the nested fields of the file field sf (a struct's
// fields, a list's element, a map's key and value) with the names their
// mappings have, as iceberg-go walks a file's schema.
func children(sf *pqarrow.SchemaField) (kids []*pqarrow.SchemaField, names []string) {
	switch sf.Field.Type.(type) {
	case *arrow.StructType:
		for i := range sf.Children {
			kids = append(kids, &sf.Children[i])
			names = append(names, sf.Children[i].Field.Name)
		}
	case *arrow.MapType:
		if len(sf.Children) == 1 && len(sf.Children[0].Children) == 2 {
			kv := &sf.Children[0]
			kids, names = []*pqarrow.SchemaField{&kv.Children[0], &kv.Children[1]}, []string{"key", "value"}
		}
	case arrow.ListLikeType:
		if len(sf.Children) == 1 {
			kids, names = []*pqarrow.SchemaField{&sf.Children[0]}, []string{"element"}
		}
	}
	return kids, names
}

// identified reports whether every field of the file has a field id,
// written or mapped, as iceberg-go requires (it resolves every struct
// field, list element and map value; a map key may go without); m is the
// name mapping of fields' level.
func identified(fields []pqarrow.SchemaField, m *iceberg.MappedField) bool {
	for i := range fields {
		if !identifiedField(&fields[i], mappedField(m, fields[i].Field.Name), true) {
			return false
		}
	}
	return true
}

func identifiedField(sf *pqarrow.SchemaField, m *iceberg.MappedField, needID bool) bool {
	if needID && fieldID(sf, m) < 0 {
		return false
	}
	_, isMap := sf.Field.Type.(*arrow.MapType)
	kids, names := children(sf)
	for i, k := range kids {
		if !identifiedField(k, mappedField(m, names[i]), !isMap || names[i] != "key") {
			return false
		}
	}
	return true
}

// columnByID finds the column of the Iceberg field fl (of Arrow type at)
// among the file fields of one level, whose name mapping is m.
func columnByID(fields []pqarrow.SchemaField, m *iceberg.MappedField, fl iceberg.NestedField, at arrow.DataType) (pqread.Column, error) {
	for i := range fields {
		sf := &fields[i]
		fm := mappedField(m, sf.Field.Name)
		if fieldID(sf, fm) != fl.ID {
			continue
		}
		var c pqread.Column
		if id := writtenID(sf); id >= 0 {
			c.FieldID = &id
		} else {
			c.Name = sf.Field.Name
		}
		kids, err := nestedColumns(sf, fm, fl.Type, at)
		if err != nil {
			return pqread.Column{}, err
		}
		c.Children = kids
		return c, nil
	}
	return missingColumn(fl, at)
}

// nestedColumns maps the parts of the Iceberg type it onto the file field
// sf (whose name mapping is m): per struct field, the list element, the
// map key and value. Nil when the kinds differ (pqread then fails the read
// with ErrCast) or it is primitive.
func nestedColumns(sf *pqarrow.SchemaField, m *iceberg.MappedField, it iceberg.Type, at arrow.DataType) ([]pqread.Column, error) {
	kids, _ := children(sf)
	switch t := it.(type) {
	case *iceberg.StructType:
		st, ok := at.(*arrow.StructType)
		if _, isStruct := sf.Field.Type.(*arrow.StructType); !ok || !isStruct || st.NumFields() != len(t.FieldList) {
			return nil, nil
		}
		out := make([]pqread.Column, len(t.FieldList))
		for i, fl := range t.FieldList {
			c, err := columnByID(sf.Children, m, fl, st.Field(i).Type)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case *iceberg.ListType:
		lt, ok := at.(arrow.ListLikeType)
		if _, isMap := sf.Field.Type.(*arrow.MapType); !ok || isMap || len(kids) != 1 {
			return nil, nil
		}
		elem, err := nestedColumns(kids[0], mappedField(m, "element"), t.Element, lt.Elem())
		if err != nil {
			return nil, err
		}
		return []pqread.Column{{Children: elem}}, nil
	case *iceberg.MapType:
		mt, ok := at.(*arrow.MapType)
		if _, isMap := sf.Field.Type.(*arrow.MapType); !ok || !isMap || len(kids) != 2 {
			return nil, nil
		}
		key, err := nestedColumns(kids[0], mappedField(m, "key"), t.KeyType, mt.KeyType())
		if err != nil {
			return nil, err
		}
		val, err := nestedColumns(kids[1], mappedField(m, "value"), t.ValueType, mt.ItemType())
		if err != nil {
			return nil, err
		}
		return []pqread.Column{{Children: key}, {Children: val}}, nil
	}
	return nil, nil
}

// errMissingRequired is a file that lacks a required column without an
// initial default: not a file of the table's schema.
var errMissingRequired = errors.New("the file lacks a required column that has no initial-default")

// missingColumn is the column of a field the file lacks: its initial
// default (a primitive's) on every row, else nulls.
func missingColumn(fl iceberg.NestedField, at arrow.DataType) (pqread.Column, error) {
	if fl.InitialDefault == nil {
		if fl.Required {
			return pqread.Column{}, fmt.Errorf("%w: field %d %q", errMissingRequired, fl.ID, fl.Name)
		}
		return pqread.Column{}, nil
	}
	if _, ok := fl.Type.(iceberg.PrimitiveType); !ok {
		// A struct's default is null or the defaults of its fields (spec);
		// a list's and a map's are null.
		return pqread.Column{}, nil
	}
	v, err := defaultScalar(fl.InitialDefault, fl.Type, at)
	if err != nil {
		return pqread.Column{}, fmt.Errorf("%w: field %d %q: initial-default %v: %v", ErrUnsupported, fl.ID, fl.Name,
			fl.InitialDefault, err)
	}
	return pqread.Column{Constant: v}, nil
}

// defaultScalar converts a default value, as the metadata's JSON gives it
// (the spec's single-value JSON: numbers, ISO strings for dates and times,
// hex for binary) or as iceberg-go's API sets it (Go values), to a scalar
// of Arrow type at.
func defaultScalar(v any, t iceberg.Type, at arrow.DataType) (scalar.Scalar, error) {
	lit, err := defaultLiteral(v, t)
	if err != nil {
		return nil, err
	}
	if lit, err = lit.To(t); err != nil {
		return nil, err
	}
	switch l := lit.(type) {
	case iceberg.BoolLiteral:
		return scalar.NewBooleanScalar(bool(l)), nil
	case iceberg.Int32Literal:
		return scalar.NewInt32Scalar(int32(l)), nil
	case iceberg.Int64Literal:
		return scalar.NewInt64Scalar(int64(l)), nil
	case iceberg.Float32Literal:
		return scalar.NewFloat32Scalar(float32(l)), nil
	case iceberg.Float64Literal:
		return scalar.NewFloat64Scalar(float64(l)), nil
	case iceberg.DateLiteral:
		return scalar.NewDate32Scalar(arrow.Date32(l)), nil
	case iceberg.TimeLiteral:
		return scalar.NewTime64Scalar(arrow.Time64(l), arrow.FixedWidthTypes.Time64us), nil
	case iceberg.TimestampLiteral:
		return timestampScalar(int64(l), arrow.Microsecond, at), nil
	case iceberg.TimestampNsLiteral:
		return timestampScalar(int64(l), arrow.Nanosecond, at), nil
	case iceberg.StringLiteral:
		return scalar.NewStringScalar(string(l)), nil
	case iceberg.BinaryLiteral:
		return scalar.NewBinaryScalar(memory.NewBufferBytes(l), arrow.BinaryTypes.Binary), nil
	case iceberg.FixedLiteral:
		return scalar.NewFixedSizeBinaryScalar(memory.NewBufferBytes(l), &arrow.FixedSizeBinaryType{ByteWidth: len(l)}), nil
	case iceberg.UUIDLiteral:
		return scalar.NewFixedSizeBinaryScalar(memory.NewBufferBytes(l[:]), &arrow.FixedSizeBinaryType{ByteWidth: 16}), nil
	case iceberg.DecimalLiteral:
		dt, ok := at.(*arrow.Decimal128Type)
		if !ok {
			return nil, fmt.Errorf("a decimal for Arrow type %s", at)
		}
		return scalar.NewDecimal128Scalar(l.Val, dt), nil
	}
	return nil, fmt.Errorf("no default of type %s", t)
}

// timestampScalar is a timestamp of the given unit, in the zone of at.
func timestampScalar(v int64, unit arrow.TimeUnit, at arrow.DataType) scalar.Scalar {
	zone := ""
	if tt, ok := at.(*arrow.TimestampType); ok {
		zone = tt.TimeZone
	}
	return scalar.NewTimestampScalar(arrow.Timestamp(v), &arrow.TimestampType{Unit: unit, TimeZone: zone})
}

// defaultLiteral is the literal of a default value, before its conversion
// to the field's type.
func defaultLiteral(v any, t iceberg.Type) (iceberg.Literal, error) {
	switch x := v.(type) {
	case iceberg.Literal:
		return x, nil
	case bool:
		return iceberg.BoolLiteral(x), nil
	case int:
		return iceberg.Int64Literal(x), nil
	case int32:
		return iceberg.Int32Literal(x), nil
	case int64:
		return iceberg.Int64Literal(x), nil
	case float32:
		return iceberg.Float32Literal(x), nil
	case float64:
		// JSON numbers: integers for the integral types.
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			switch t.(type) {
			case iceberg.Float32Type, iceberg.Float64Type:
			default:
				return iceberg.Int64Literal(int64(x)), nil
			}
		}
		return iceberg.Float64Literal(x), nil
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return defaultLiteral(float64(i), t)
		}
		f, err := x.Float64()
		if err != nil {
			return nil, err
		}
		return iceberg.Float64Literal(f), nil
	case string:
		switch t.(type) {
		case iceberg.BinaryType, iceberg.FixedType:
			b, err := hex.DecodeString(x)
			if err != nil {
				return nil, fmt.Errorf("binary default is not hex: %w", err)
			}
			return iceberg.BinaryLiteral(b), nil
		}
		return iceberg.StringLiteral(x), nil
	case []byte:
		return iceberg.BinaryLiteral(x), nil
	case iceberg.Date:
		return iceberg.DateLiteral(x), nil
	case iceberg.Time:
		return iceberg.TimeLiteral(x), nil
	case iceberg.Timestamp:
		return iceberg.TimestampLiteral(x), nil
	case iceberg.TimestampNano:
		return iceberg.TimestampNsLiteral(x), nil
	case iceberg.Decimal:
		return iceberg.DecimalLiteral(x), nil
	case fmt.Stringer:
		// A uuid.UUID, as iceberg-go's API sets a UUID default: its string
		// form converts.
		if _, ok := t.(iceberg.UUIDType); ok {
			return iceberg.StringLiteral(x.String()), nil
		}
	}
	return nil, fmt.Errorf("a value of Go type %T", v)
}

// taskRowGroups returns the row groups of a file scan task's data file
// (whose footer is m) that the task reads, as iceberg-go's reader selects
// them: every row group (nil) for a task that covers the file whole; for
// a byte range (the runs of row groups a filter's pushdown keeps, a split
// of a large file), the row groups whose offset lies in it: the data
// file's split offsets when they are one valid offset per row group, else
// each row group's first page.
func taskRowGroups(task table.FileScanTask, m *pqread.Meta) ([]int, error) {
	if task.Start == 0 && (task.Length == 0 || task.Length == task.File.FileSizeBytes()) {
		return nil, nil
	}
	size := m.File.GetSourceFileSize()
	start, length := task.Start, task.Length
	if size > 0 && start >= 0 && start <= size && length > size-start {
		length = size - start
	}
	if start < 0 || length <= 0 || start > size || length > size-start {
		return nil, fmt.Errorf("its scan task reads bytes %d+%d of a file of %d", task.Start, task.Length, size)
	}
	offsets := task.File.SplitOffsets()
	valid := len(offsets) == len(m.RowGroups)
	for i, off := range offsets {
		valid = valid && off >= 0 && off < size && (i == 0 || off > offsets[i-1])
	}
	if !valid {
		offsets = make([]int64, len(m.RowGroups))
		for i := range offsets {
			offsets[i] = splitOffset(m.File.RowGroup(i))
		}
	}
	rgs := []int{}
	for i, off := range offsets {
		if off >= start && off < start+length {
			rgs = append(rgs, i)
		}
	}
	return rgs, nil
}
