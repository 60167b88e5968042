package delta

import "github.com/sluicefeed/sluice/internal/lib/errclass"

// Sentinel errors of the package. Errors returned by this package wrap one
// of these (with %w) together with the table, the version and the file
// concerned, so callers classify them with errors.Is. Each has its class of
// failure (errclass), as the engine's sentinel it maps to (a Source wraps
// them in package lake's) has.
var (
	// ErrNotTable reports a folder that is not a Delta table: it has no
	// _delta_log folder, or that folder holds no commit and no checkpoint.
	ErrNotTable = errclass.New(errclass.FailedPrecondition, "delta: not a Delta table")
	// ErrVersionNotFound reports a version the table never had: negative,
	// or newer than its latest commit.
	ErrVersionNotFound = errclass.New(errclass.NotFound, "delta: version not found")
	// ErrLogCleaned reports a version whose commit, or whose state, is no
	// longer readable because log cleanup removed the files it needs: a
	// reader must start again from a version still readable.
	ErrLogCleaned = errclass.New(errclass.FailedPrecondition, "delta: version removed by log cleanup")
	// ErrUnsupportedFeature reports a table whose protocol requires a
	// reader version or reader features this package does not implement.
	ErrUnsupportedFeature = errclass.New(errclass.FailedPrecondition, "delta: unsupported table feature")
	// ErrUnsupported reports something valid in a Delta table that this
	// package does not read yet, such as a file outside the table's root.
	ErrUnsupported = errclass.New(errclass.FailedPrecondition, "delta: unsupported")
	// ErrCorrupt reports a malformed log: a commit line that is not JSON, a
	// gap in the commit versions a state needs, a checkpoint with missing
	// parts or sidecars, or a state without protocol or metadata.
	ErrCorrupt = errclass.New(errclass.FailedPrecondition, "delta: corrupt log")
)
