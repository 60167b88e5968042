package spark

import (
	"fmt"

	"github.com/sluicefeed/sluice/internal/lib/errclass"
)

// Sentinel errors of the Spark backend. Errors returned by this package wrap
// one of these (with %w) together with the table or statement concerned, so
// callers classify them with errors.Is. Each has the class of failure
// (errclass) named in its comment, which the server maps to a gRPC code.
var (
	// ErrInvalidRequest reports a request that cannot be turned into
	// Spark SQL: a bad remote URI, an empty table name, a column name
	// that is empty, a filter value that has no SQL form (NaN, a malformed
	// decimal), a window given both as versions and as timestamps, or a
	// window whose start is after its end. (InvalidArgument.)
	ErrInvalidRequest = errclass.New(errclass.InvalidArgument, "spark: invalid request")
	// ErrTableNotFound reports a table that the Spark server does not
	// know. (NotFound.)
	ErrTableNotFound = errclass.New(errclass.NotFound, "spark: table not found")
	// ErrVersionNotFound reports a window bound that names a version or
	// snapshot the table's history does not hold. (NotFound.)
	ErrVersionNotFound = errclass.New(errclass.NotFound, "spark: version not found")
	// ErrHistoryExpired reports a window that starts before the table's
	// retained history: the consumer must re-read the table.
	// (FailedPrecondition.)
	ErrHistoryExpired = errclass.New(errclass.FailedPrecondition, "spark: history expired")
	// ErrNoChangeEngine reports a table that neither of Spark's change
	// engines serves and that Sluice cannot read natively; the Verdict
	// says why, with Spark's own error text. (FailedPrecondition.)
	ErrNoChangeEngine = errclass.New(errclass.FailedPrecondition, "spark: no change engine for table")
	// ErrQuery reports a statement that the Spark server refused or
	// failed; it comes as an *Error with Spark's error class and message.
	// (FailedPrecondition: the table or window is not one Spark can
	// serve.)
	ErrQuery = errclass.New(errclass.FailedPrecondition, "spark: query failed")
	// ErrUnknownChangeType reports a row whose _change_type is none of
	// the values of Spark's CHANGES or Iceberg's changelog view: the read
	// fails rather than drop the row. (Internal.)
	ErrUnknownChangeType = errclass.New(errclass.Internal, "spark: unknown change type")
	// ErrUnsupportedType reports a column of a Spark type that Sluice does
	// not serve (an interval, a variant, a user-defined type, ...), met
	// when describing a table that Spark alone serves.
	// (FailedPrecondition.)
	ErrUnsupportedType = errclass.New(errclass.FailedPrecondition, "spark: unsupported column type")
	// ErrUnavailable reports a Spark server that could not be reached, or
	// that went away before a result was complete. A read that ends with
	// it is incomplete. (Unavailable.)
	ErrUnavailable = errclass.New(errclass.Unavailable, "spark: server unavailable")
)

// Error is an error that the Spark server reported for a statement: its
// error class (TABLE_OR_VIEW_NOT_FOUND, DELTA_CHANGELOG_REQUIRES_ROW_TRACKING,
// ...), SQL state, exception class and message. It wraps ErrTableNotFound
// for an unknown table, else ErrQuery.
type Error struct {
	// Class is Spark's error class; empty for an exception without one.
	Class string
	// SQLState is the error's SQLSTATE, when Spark gave one.
	SQLState string
	// Exception is the JVM exception's class name.
	Exception string
	// Message is Spark's message, as the server sent it.
	Message string
}

// Error returns Spark's message with its class.
func (e *Error) Error() string {
	if e.Class != "" && !containsClass(e.Message, e.Class) {
		return fmt.Sprintf("spark: [%s] %s", e.Class, e.Message)
	}
	return "spark: " + e.Message
}

// Unwrap returns the sentinel the error belongs to.
func (e *Error) Unwrap() error {
	switch e.Class {
	case "TABLE_OR_VIEW_NOT_FOUND", "TABLE_NOT_FOUND", "DELTA_TABLE_NOT_FOUND", "DELTA_MISSING_DELTA_TABLE":
		return ErrTableNotFound
	}
	if e.Exception == "org.apache.iceberg.exceptions.NoSuchTableException" {
		return ErrTableNotFound
	}
	return ErrQuery
}

func containsClass(msg, class string) bool {
	return len(msg) >= len(class)+2 && (msg[:len(class)+2] == "["+class+"]")
}
