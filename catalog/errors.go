package catalog

import (
	"errors"

	"github.com/sluicefeed/sluice/internal/lib/errclass"
)

// Sentinel errors returned (wrapped, with the table name) by this package.
// Each that a request can meet has its class of failure (errclass), which
// the server maps to a gRPC code.
var (
	// ErrTableNotFound reports that the catalog has no table of that name.
	ErrTableNotFound = errclass.New(errclass.NotFound, "catalog: table not found")
	// ErrInvalidName reports a table name that is not "namespace.table".
	ErrInvalidName = errclass.New(errclass.InvalidArgument, "catalog: invalid table name")
	// ErrUnavailable reports that the catalog or its storage could not be
	// reached or read.
	ErrUnavailable = errclass.New(errclass.Unavailable, "catalog: unavailable")
	// ErrInvalidConfig reports a configuration that cannot open a catalog.
	ErrInvalidConfig = errors.New("catalog: invalid configuration")
	// ErrAmbiguous reports a table name that two sources serve (a Delta
	// table and a table of the Iceberg catalog): neither is served under it.
	ErrAmbiguous = errclass.New(errclass.FailedPrecondition, "catalog: table name served twice")
	// ErrReadOnly reports a catalog or storage that refuses Sluice's
	// writes (a consumer's tag or consumer file, see --protect-consumers).
	ErrReadOnly = errclass.New(errclass.FailedPrecondition, "catalog: read only")
	// ErrConflict reports a write that lost to a concurrent one.
	ErrConflict = errclass.New(errclass.Unavailable, "catalog: concurrent commit")
)
