package lake

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Row lineage: a row's stable id and the commit that last changed it, as
// the formats that keep them present them (Iceberg v3 `_row_id` and
// `_last_updated_sequence_number`; Delta row tracking's row id and row
// commit version). A reader asked for lineage (Read.Lineage) appends the
// two columns below to every batch it decodes, after the requested
// columns, with the format's inheritance rules already applied: a row's
// id is its materialized id when the file holds one, else the file's
// first row id plus the row's position in the file; its sequence is its
// materialized one, else the file's data sequence number (Delta: the
// file's default row commit version). A row of a file that has no row
// ids (written before the table kept lineage) is null in both.
const (
	// RowIDColumn is the column of a row's id (int64, nullable).
	RowIDColumn = "_row_id"
	// RowSeqColumn is the column of the sequence number (Iceberg) or
	// commit version (Delta) that last changed the row (int64, nullable).
	RowSeqColumn = "_last_updated_sequence_number"
)

// Pairings of a commit's deleted and inserted rows into updates, as a plan
// reports them.
const (
	// PairingRowLineage pairs rows by their row ids (and cancels a row
	// whose id and last-updated sequence are unchanged).
	PairingRowLineage = "row-lineage"
	// PairingIdentity pairs rows by identity columns.
	PairingIdentity = "identity"
	// PairingNone pairs no rows: a changed row is a delete and an insert.
	PairingNone = "none"
)

// LineageKeeper is implemented by the tables of a format that can keep row
// lineage.
type LineageKeeper interface {
	// KeepsLineage reports whether the table keeps row lineage (an Iceberg
	// table of format version 3 or later, a Delta table with row
	// tracking), so that its readers add the lineage columns when a read
	// asks for them (Read.Lineage).
	KeepsLineage() bool
}

// IsLineageColumn reports whether name is one of the lineage columns a
// reader appends (RowIDColumn, RowSeqColumn).
func IsLineageColumn(name string) bool { return name == RowIDColumn || name == RowSeqColumn }

// LineageFields are the Arrow fields of the lineage columns, in the order
// readers append them.
func LineageFields() []arrow.Field {
	return []arrow.Field{
		{Name: RowIDColumn, Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: RowSeqColumn, Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}
}

// FileLineage is what a data file says of the lineage of its rows when
// they do not materialize it: the id of its first row and the sequence
// (commit version) of rows it wrote.
type FileLineage struct {
	// FirstRowID is the id of the file's row at position 0 (nil: the file
	// has no row ids, its rows are null in both columns unless they
	// materialize them).
	FirstRowID *int64
	// Seq is the file's data sequence number (Delta: its default row
	// commit version); nil when unknown.
	Seq *int64
}

// WithLineage returns rec (whose first row is at file position first) with
// the two lineage columns appended: each row's materialized values, ids
// and seqs (nil: none materialized; else arrays of rec's length), with
// nulls filled by the file's inheritance (FileLineage). It releases rec;
// the caller owns the result.
func WithLineage(mem memory.Allocator, rec arrow.RecordBatch, first int64, ids, seqs arrow.Array,
	fl FileLineage) (arrow.RecordBatch, error) {
	defer rec.Release()
	n := int(rec.NumRows())
	for _, a := range []arrow.Array{ids, seqs} {
		if a != nil && a.Len() != n {
			return nil, fmt.Errorf("%w: a lineage column of %d rows for a batch of %d", ErrInternal, a.Len(), n)
		}
	}
	idCol, err := inherit(mem, ids, n, func(r int) (int64, bool) {
		if fl.FirstRowID == nil {
			return 0, false
		}
		return *fl.FirstRowID + first + int64(r), true
	})
	if err != nil {
		return nil, err
	}
	defer idCol.Release()
	// A row without an id has no lineage: its sequence is null too.
	seqCol, err := inherit(mem, seqs, n, func(r int) (int64, bool) {
		if fl.Seq == nil || idCol.IsNull(r) {
			return 0, false
		}
		return *fl.Seq, true
	})
	if err != nil {
		return nil, err
	}
	defer seqCol.Release()
	fields := append(append([]arrow.Field(nil), rec.Schema().Fields()...), LineageFields()...)
	meta := rec.Schema().Metadata()
	cols := append(append([]arrow.Array(nil), rec.Columns()...), idCol, seqCol)
	return array.NewRecordBatch(arrow.NewSchema(fields, &meta), cols, rec.NumRows()), nil
}

// inherit builds an int64 column of n rows: the materialized value where
// there is one (an integer column of any width), else what def gives
// (null when it gives nothing).
func inherit(mem memory.Allocator, mat arrow.Array, n int, def func(r int) (int64, bool)) (arrow.Array, error) {
	var get func(r int) int64
	switch a := mat.(type) {
	case nil:
	case *array.Int64:
		get = a.Value
	case *array.Int32:
		get = func(r int) int64 { return int64(a.Value(r)) }
	case *array.Null:
	default:
		return nil, fmt.Errorf("%w: a lineage column of type %s (want a long)", ErrUnsupported, mat.DataType())
	}
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.Reserve(n)
	for r := range n {
		if get != nil && mat.IsValid(r) {
			b.UnsafeAppend(get(r))
			continue
		}
		if v, ok := def(r); ok {
			b.UnsafeAppend(v)
			continue
		}
		b.UnsafeAppendBoolToBitmap(false)
	}
	return b.NewArray(), nil
}
