// Package feed is Sluice's change engine: it turns a window of a table's
// snapshot history into the ordered row changes that transform the table
// state at the window's start into the state at its end.
//
// A [Request] names a table and a window (from, to]. [Engine.Plan] resolves
// and validates the window against the table's lineage, pins its end
// snapshot and decides, per snapshot, which files must be read; the
// resulting [Plan] is what the explain action shows. [Engine.Read] streams
// the plan as [Batch]es of renderable change rows
// (op, before, after, snapshot, ts), each batch holding the changes of one
// snapshot, with projection and filter pushed into the Parquet reads; a
// request with Layout [LayoutFlat] gets the same rows flat (the image's
// data columns, _change_type, _commit_version, _commit_timestamp), the
// shape of Delta's change data feed.
//
// Tables come in two formats behind one seam ([Table]): Iceberg, whose
// snapshots the engine plans from manifests with iceberg-go, and Delta Lake
// ([DeltaSource]), whose versions it reads from the log with
// format/delta. Either way the engine decodes data files itself, with
// internal/lib/pqread (columns by field id, physical name or name mapping,
// widened to the window's end schema), in goroutines it owns and guards,
// and applies deletes, deletion vectors and filters with its own masks.
package feed
