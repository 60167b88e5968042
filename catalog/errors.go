package catalog

import "errors"

// Sentinel errors returned (wrapped, with the table name) by this package.
var (
	// ErrTableNotFound reports that the catalog has no table of that name.
	ErrTableNotFound = errors.New("catalog: table not found")
	// ErrInvalidName reports a table name that is not "namespace.table".
	ErrInvalidName = errors.New("catalog: invalid table name")
	// ErrUnavailable reports that the catalog or its storage could not be
	// reached or read.
	ErrUnavailable = errors.New("catalog: unavailable")
	// ErrInvalidConfig reports a configuration that cannot open a catalog.
	ErrInvalidConfig = errors.New("catalog: invalid configuration")
	// ErrAmbiguous reports a table name that two sources serve (a Delta
	// table and a table of the Iceberg catalog): neither is served under it.
	ErrAmbiguous = errors.New("catalog: table name served twice")
)
