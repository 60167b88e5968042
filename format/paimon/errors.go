package paimon

import "errors"

// Sentinel errors of the package. Errors returned by this package wrap one
// of these (with %w) together with the table, the snapshot and the file
// concerned, so callers classify them with errors.Is.
var (
	// ErrNotTable reports a folder that is not a Paimon table: it has no
	// schema in schema/.
	ErrNotTable = errors.New("paimon: not a Paimon table")
	// ErrSnapshotNotFound reports a snapshot id the table never had
	// (newer than its latest snapshot, or not positive), or a tag it does
	// not have.
	ErrSnapshotNotFound = errors.New("paimon: snapshot not found")
	// ErrSnapshotExpired reports a snapshot older than the table's
	// earliest one: snapshot expiration removed it (and may have removed
	// its files); a reader must start again from a snapshot still there.
	ErrSnapshotExpired = errors.New("paimon: snapshot expired")
	// ErrUnsupportedMergeEngine reports a primary-key table whose merge
	// engine (partial-update, aggregation, first-row) this package does not
	// implement; the error names the engine.
	ErrUnsupportedMergeEngine = errors.New("paimon: unsupported merge engine")
	// ErrUnsupportedFormat reports a data file in a format this package
	// does not read (ORC and Avro: no maintained Go reader is used); the
	// error names the format.
	ErrUnsupportedFormat = errors.New("paimon: unsupported file format")
	// ErrUnsupported reports something valid in a Paimon table that this
	// package does not read yet: a sequence field, a data type, a deletion
	// vector of an unknown version.
	ErrUnsupported = errors.New("paimon: unsupported")
	// ErrCorrupt reports malformed metadata or data: a snapshot or schema
	// that is not the JSON it should be, an Avro manifest that does not
	// decode, a binary row or deletion vector out of bounds, a data file
	// that does not hold the columns its schema says.
	ErrCorrupt = errors.New("paimon: corrupt table")
)
