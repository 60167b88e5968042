package feed

import (
	"errors"

	"github.com/sluicefeed/sluice/filter"
	"github.com/sluicefeed/sluice/internal/lib/errclass"
	"github.com/sluicefeed/sluice/lake"
)

// Sentinel errors of the engine. Errors returned by this package wrap one of
// these (with %w) together with the table, snapshot or column concerned, so
// callers classify them with errors.Is. Each that a request can meet has
// its class of failure (errclass), which the server maps to a gRPC code.
// Those a table format also reports are package lake's, under the same
// names.
var (
	// ErrInvalidRequest reports a malformed request: a missing table, a
	// window given both as a snapshot and a timestamp, duplicate columns.
	ErrInvalidRequest = errclass.New(errclass.InvalidArgument, "feed: invalid request")
	// ErrUnknownColumn reports a projected, identity or filter column that
	// the window's end schema does not have.
	ErrUnknownColumn = lake.ErrUnknownColumn
	// ErrInvalidFilter reports a filter that does not parse or does not
	// type-check against the schema.
	ErrInvalidFilter = filter.ErrInvalidFilter
	// ErrNotAncestor reports a window whose start is not an ancestor of its
	// end on the table's lineage.
	ErrNotAncestor = errclass.New(errclass.InvalidArgument, "feed: from snapshot is not an ancestor of to snapshot")
	// ErrSnapshotNotFound reports a snapshot id that the table's metadata
	// does not hold, or a timestamp before the table's first snapshot.
	ErrSnapshotNotFound = lake.ErrSnapshotNotFound
	// ErrResyncRequired reports a window that starts before the table's
	// retained history, or whose manifests or data files are gone: the
	// consumer must re-read the table from a snapshot still readable.
	ErrResyncRequired = lake.ErrResyncRequired
	// ErrUnsupported reports a snapshot or table feature that this version
	// of the engine cannot turn into exact row changes. The engine fails
	// rather than skip a snapshot or emit wrong rows.
	ErrUnsupported = lake.ErrUnsupported
	// ErrInconsistentSnapshot reports a snapshot whose manifests disagree
	// with its summary (the files it added or removed): the engine fails
	// rather than emit a feed that does not add up.
	ErrInconsistentSnapshot = lake.ErrInconsistentSnapshot
	// ErrUnreadable reports a manifest, data or delete file that exists but
	// cannot be decoded: damaged, truncated, or not what its metadata says.
	ErrUnreadable = lake.ErrUnreadable
	// ErrStorageUnavailable reports storage that could not be reached.
	ErrStorageUnavailable = lake.ErrStorageUnavailable
	// ErrInternal reports a bug met during a read: a panic, contained to the
	// read it happened in (see PanicError).
	ErrInternal = lake.ErrInternal
	// ErrSpill reports a failure to write or read the temporary files of a
	// read whose changes exceeded the memory budget (a full or unwritable
	// spill directory).
	ErrSpill = errclass.New(errclass.ResourceExhausted, "feed: spill to disk failed")
	// ErrLeakedReads reports, from Engine.Close, reads still running.
	ErrLeakedReads = errors.New("feed: reads still running")
	// ErrTooLarge reports a single row too large to fit in one batch.
	ErrTooLarge = errclass.New(errclass.ResourceExhausted, "feed: row too large")
	// ErrSchemaChanged ends a stream when the table's schema changes under
	// it: a stream has one schema, so the changes from then on must be read
	// by a new stream.
	ErrSchemaChanged = errclass.New(errclass.FailedPrecondition, "feed: schema changed")
)
