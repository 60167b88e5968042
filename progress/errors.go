package progress

import (
	"errors"

	"github.com/sluicefeed/sluice/internal/lib/errclass"
)

// Sentinel errors of the package, wrapped with the consumer and table
// concerned. Each that a request can meet has its class of failure
// (errclass), which the server maps to a gRPC code.
var (
	// ErrNotFound reports a consumer without progress on a table.
	ErrNotFound = errclass.New(errclass.NotFound, "progress: no progress")
	// ErrUnavailable reports a database that could not be reached or
	// written.
	ErrUnavailable = errclass.New(errclass.Unavailable, "progress: store unavailable")
	// ErrInvalidDSN reports a DSN that names no supported database.
	ErrInvalidDSN = errors.New("progress: invalid DSN")
	// ErrNotOwner reports an acknowledgement or reset of a consumer whose
	// progress another principal recorded.
	ErrNotOwner = errclass.New(errclass.PermissionDenied, "progress: consumer of another principal")
)
