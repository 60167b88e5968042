// Package errclass sorts errors into the classes of failure that Sluice's
// wire contract tells apart (docs/PROTOCOL.md, "Errors"): a request the
// client must fix, a table or snapshot that does not exist, a table state
// that refuses the request, a limit reached, missing or refused
// credentials, a service that cannot be reached, a call not offered, a
// bug.
//
// Each package declares its sentinel errors with their class:
//
//	var ErrTableNotFound = errclass.New(errclass.NotFound, "catalog: table not found")
//
// A sentinel declared so is an ordinary error: its message is the one
// given, errors.Is matches it through any wrapping (with %w, errors.Join
// or an Unwrap method), and it compares equal only to itself. [Of] finds
// the class of an error that wraps one, so that the server maps classes,
// not every package's sentinels, to gRPC codes, and a new package
// (another table format, another backend) needs no change there.
//
// The package knows nothing of gRPC: the server owns the mapping of a
// class to a status code.
package errclass
