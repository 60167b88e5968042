// Package paimon reads Apache Paimon tables for Sluice's change engine,
// with no JVM and no Python: snapshots and tags (JSON), schemas by field id,
// manifest lists, manifests and index manifests (Avro), data files in
// Parquet, deletion vectors, and the merge on read of primary-key tables
// over their LSM levels (deduplicate, partial-update and aggregation merge
// engines).
//
// A Table is opened on an fs.FS rooted at the table's folder. Its
// snapshots are listed with their parents, times and commit kinds; for a
// snapshot the package gives its schema, its live data files grouped into
// splits (one partition and bucket each), the data files it added and
// removed (its delta manifest list) and its changelog files; a split is
// read as Arrow record batches of the merged state. Errors wrap the
// sentinels of errors.go.
//
// Source serves a table to the change engine through the format seam
// (package lake): its snapshots as commits, per snapshot its change (an
// append table's added and removed files; a primary-key table's merged
// rows of the buckets the snapshot touched, before and after it), and
// readers of its files and buckets. docs/PAIMON.md describes what is read
// and how changes are computed.
//
// What it does not read is refused with sentinels naming it: ORC and Avro
// data files, the first-row merge engine, partial-update sequence groups,
// aggregate functions other than sum, min, max and the first/last value
// ones, retractions of aggregated rows, and sequence fields.
package paimon
