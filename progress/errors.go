package progress

import "errors"

// Sentinel errors of the package, wrapped with the consumer and table
// concerned.
var (
	// ErrNotFound reports a consumer without progress on a table.
	ErrNotFound = errors.New("progress: no progress")
	// ErrUnavailable reports a database that could not be reached or
	// written.
	ErrUnavailable = errors.New("progress: store unavailable")
	// ErrInvalidDSN reports a DSN that names no supported database.
	ErrInvalidDSN = errors.New("progress: invalid DSN")
	// ErrNotOwner reports an acknowledgement or reset of a consumer whose
	// progress another principal recorded.
	ErrNotOwner = errors.New("progress: consumer of another principal")
)
