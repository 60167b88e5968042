// Package paimon reads Apache Paimon tables for Sluice's change engine,
// with no JVM and no Python: snapshots and tags (JSON), schemas by field id,
// manifest lists, manifests and index manifests (Avro), data files in
// Parquet, deletion vectors, and the merge on read of primary-key tables
// over their LSM levels (deduplicate merge engine).
//
// A Table is opened on an fs.FS rooted at the table's folder. Its
// snapshots are listed with their parents, times and commit kinds; for a
// snapshot the package gives its schema, its live data files grouped into
// splits (one partition and bucket each), the data files it added and
// removed (its delta manifest list) and its changelog files; a split is
// read as Arrow record batches of the merged state. Errors wrap the
// sentinels of errors.go.
//
// Only what this package reads is supported: ORC and Avro data files,
// the partial-update, aggregation and first-row merge engines, and
// sequence fields are refused with sentinels naming them.
package paimon
