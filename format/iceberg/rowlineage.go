package iceberg

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"

	"github.com/sluicefeed/sluice/lake"
)

// Row lineage of format v3 (the spec's "Row Lineage"): every row has an id,
// `_row_id`, and the sequence number of the commit that last changed it,
// `_last_updated_sequence_number`. A data file stores them as the columns
// of the reserved field ids 2147483540 and 2147483539 when a writer
// materializes them (Spark's copy-on-write rewrites and updates keep a
// row's id that way); a null, or a file without the column, inherits: the
// id is the file's first_row_id (from its manifest entry, itself inherited
// from the manifest's) plus the row's position in the file, the sequence
// number the file's data sequence number. A file without a first_row_id
// (written before the table was upgraded to v3) has no ids.
//
// Asked for lineage (lake.Read.Lineage), the readers decode the two
// reserved columns after the requested ones and replace them by the
// inherited values (lake.WithLineage). A file left to iceberg-go's scan
// gets null lineage: its rows pair by identity or not at all.

// minLineageVersion is the first format version with row lineage.
const minLineageVersion = 3

// lineageFields are the reserved fields of the lineage columns, in the
// order lake.LineageFields names them.
func lineageFields() []iceberg.NestedField {
	return []iceberg.NestedField{iceberg.RowID(), iceberg.LastUpdatedSequenceNumber()}
}

// KeepsLineage reports whether the table keeps row lineage: its format
// version is 3 or later (lake.LineageKeeper).
func (t *icebergTable) KeepsLineage() bool { return t.meta.Version() >= minLineageVersion }

// planLineage says whether a snapshot's rows pair by row lineage: on a
// table that keeps it, unless the snapshot adds equality deletes (an
// upsert through them writes the new version of a row with a new id, so
// ids cannot meet). A snapshot that changes data files without row ids
// pairs the rows that have ids, and says why the others cannot
// (LineageReason).
func (t *icebergTable) planLineage(out *lake.Change, own ownChanges) {
	if !t.KeepsLineage() {
		return
	}
	for _, df := range own.addedDeletes {
		if df.ContentType() == iceberg.EntryContentEqDeletes {
			out.LineageReason = "the snapshot adds equality deletes, whose rows written again get new row ids: " +
				"rows pair by identity columns or not at all"
			return
		}
	}
	out.Lineage = true
	// A data file written before the table kept lineage has no row ids:
	// its rows fall back, while the others still pair by id.
	without := 0
	for _, fd := range out.Diffs {
		if d, ok := fd.(*icebergDiff); ok && d.file.FirstRowID() == nil {
			without++
		}
	}
	if without > 0 {
		out.LineageReason = fmt.Sprintf("%d of the %d data files it changes were written before the table kept "+
			"row lineage (no first_row_id): their rows pair by identity columns or not at all", without, len(out.Diffs))
	}
}

// lineageOf replaces the two decoded lineage columns at the end of rec
// (the materialized values, null where a row inherits) with the rows'
// lineage: their ids and sequence numbers with inheritance applied, for a
// batch whose first row is at file position first of a data file with
// that first row id and data sequence number. It takes over rec.
func (f *icebergFiles) lineageOf(rec arrow.RecordBatch, first int64, firstRowID, seq *int64) (arrow.RecordBatch, error) {
	n := int(rec.NumCols())
	if n < 2 || rec.Schema().Field(n-2).Name != iceberg.RowIDColumnName {
		rec.Release()
		return nil, fmt.Errorf("%w: a batch read for row lineage lacks its columns (has %s)", lake.ErrInternal,
			rec.Schema())
	}
	meta := rec.Schema().Metadata()
	base := array.NewRecordBatch(arrow.NewSchema(rec.Schema().Fields()[:n-2], &meta), rec.Columns()[:n-2], rec.NumRows())
	ids, seqs := rec.Column(n-2), rec.Column(n-1)
	ids.Retain()
	seqs.Retain()
	defer ids.Release()
	defer seqs.Release()
	rec.Release()
	return lake.WithLineage(f.mem, base, first, ids, seqs, lake.FileLineage{FirstRowID: firstRowID, Seq: seq})
}

// noLineage appends null lineage columns to a batch iceberg-go's scan read
// (it decodes the requested columns only). It takes over rec.
func (f *icebergFiles) noLineage(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	return lake.WithLineage(f.mem, rec, 0, nil, nil, lake.FileLineage{})
}
