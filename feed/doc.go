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
// snapshot, with projection and filter pushed into the Parquet reads.
//
// The engine reads tables through iceberg-go: it plans from manifests and
// reads data files with iceberg-go's scanner, which applies projection by
// field id, filters and deletes.
package feed
