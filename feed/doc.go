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
// Tables come in any format behind one seam ([Table], package lake's):
// the engine asks a format for its commits in lineage order, each commit's
// file-level change, and readers of its files, and does the rest itself:
// windows and lineage rules, carry-over, update pairing, net changes,
// filters (package filter), batching, read-ahead and spilling. Iceberg
// (format/iceberg) and Delta Lake (format/delta) implement the seam; the
// engine imports neither, nor iceberg-go. A [Tables] (catalog.Catalog, or
// the daemon's registry of both formats) loads tables by name.
package feed
