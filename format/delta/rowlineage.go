package delta

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/sluicefeed/sluice/internal/lib/pqread"
	"github.com/sluicefeed/sluice/lake"
)

// Row tracking (PROTOCOL.md "Row Tracking"): with the rowTracking writer
// feature and delta.enableRowTracking, every row has a stable id and the
// version that last changed it. An add action carries baseRowId (the id
// of the file's first row) and defaultRowCommitVersion; a row's id is its
// value in the materialized row id column (named by
// delta.rowTracking.materializedRowIdColumnName) when the file has one
// that is not null, else baseRowId plus its position in the file; its
// commit version likewise, from the column named by
// delta.rowTracking.materializedRowCommitVersionColumnName, else
// defaultRowCommitVersion. Writers that rewrite rows (UPDATE, MERGE,
// DELETE without deletion vectors) materialize both for the rows they
// keep, so a kept row keeps its id and commit version.

// Table configuration keys of row tracking.
const (
	confEnableRowTracking   = "delta.enableRowTracking"
	confMaterializedRowID   = "delta.rowTracking.materializedRowIdColumnName"
	confMaterializedVersion = "delta.rowTracking.materializedRowCommitVersionColumnName"
)

// rowTracking is a version's row tracking.
type rowTracking struct {
	// enabled is set when rows have stable ids: the rowTracking feature
	// with delta.enableRowTracking=true.
	enabled bool
	// idColumn and versionColumn are the physical names of the
	// materialized columns ("" when the configuration names none).
	idColumn, versionColumn string
}

// rowTrackingOf reads the row tracking of a version's protocol and
// metadata.
func rowTrackingOf(p Protocol, m Metadata) rowTracking {
	if !slices.Contains(p.WriterFeatures, "rowTracking") || m.Configuration[confEnableRowTracking] != "true" {
		return rowTracking{}
	}
	return rowTracking{enabled: true, idColumn: m.Configuration[confMaterializedRowID],
		versionColumn: m.Configuration[confMaterializedVersion]}
}

// rowTrackingKey is what of row tracking a parsed schema depends on.
func rowTrackingKey(p Protocol, m Metadata) string {
	rt := rowTrackingOf(p, m)
	return fmt.Sprint(rt.enabled) + "\x00" + rt.idColumn + "\x00" + rt.versionColumn
}

// KeepsLineage reports whether the table's latest version has row
// tracking (lake.LineageKeeper).
func (t *deltaTable) KeepsLineage() bool { return t.keepsLineage }

// planLineage says whether a commit's rows pair by row tracking, and why
// some cannot: files without a baseRowId (written before row tracking was
// enabled).
func planLineage(out *lake.Change, sc *deltaSchema) {
	if !sc.rows.enabled {
		return
	}
	out.Lineage = true
	without := 0
	for _, fd := range out.Diffs {
		if d, ok := fd.(*deltaDiff); ok && d.file.baseRowID == nil {
			without++
		}
	}
	if without > 0 {
		out.LineageReason = fmt.Sprintf("%d of the %d data files it changes have no baseRowId (written before row "+
			"tracking was enabled): their rows pair by identity columns or not at all", without, len(out.Diffs))
	}
}

// lineageColumns are the materialized row tracking columns a read of a
// table with row tracking decodes after the target's columns (null where
// a file has none), under the names of lake.LineageFields.
func (f *deltaFiles) lineageColumns() ([]pqread.Column, []arrow.Field) {
	rt := f.schema.rows
	return []pqread.Column{{Name: rt.idColumn}, {Name: rt.versionColumn}}, lake.LineageFields()
}

// withLineage replaces the two materialized columns at the end of rec by
// the rows' lineage, for a batch whose first row is at position first of
// file. It takes over rec.
func (f *deltaFiles) withLineage(rec arrow.RecordBatch, first int64, file deltaFile) (arrow.RecordBatch, error) {
	n := int(rec.NumCols())
	meta := rec.Schema().Metadata()
	base := array.NewRecordBatch(arrow.NewSchema(rec.Schema().Fields()[:n-2], &meta), rec.Columns()[:n-2], rec.NumRows())
	ids, versions := rec.Column(n-2), rec.Column(n-1)
	ids.Retain()
	versions.Retain()
	defer ids.Release()
	defer versions.Release()
	rec.Release()
	return lake.WithLineage(f.mem, base, first, ids, versions,
		lake.FileLineage{FirstRowID: file.baseRowID, Seq: file.rowVersion})
}
