package spark

import (
	"fmt"
	"testing"

	"github.com/sluicefeed/sluice/internal/lib/errclass"
)

// TestErrorClasses: each sentinel has the class its doc comment names, as
// it is and wrapped, and an *Error from the server has the class of the
// sentinel it unwraps to.
func TestErrorClasses(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want errclass.Class
	}{
		{"ErrInvalidRequest", ErrInvalidRequest, errclass.InvalidArgument},
		{"ErrTableNotFound", ErrTableNotFound, errclass.NotFound},
		{"ErrVersionNotFound", ErrVersionNotFound, errclass.NotFound},
		{"ErrHistoryExpired", ErrHistoryExpired, errclass.FailedPrecondition},
		{"ErrNoChangeEngine", ErrNoChangeEngine, errclass.FailedPrecondition},
		{"ErrQuery", ErrQuery, errclass.FailedPrecondition},
		{"ErrUnknownChangeType", ErrUnknownChangeType, errclass.Internal},
		{"ErrUnavailable", ErrUnavailable, errclass.Unavailable},
		{"an unknown table", &Error{Class: "TABLE_OR_VIEW_NOT_FOUND", Message: "no db.t"}, errclass.NotFound},
		{"an Iceberg unknown table", &Error{Exception: "org.apache.iceberg.exceptions.NoSuchTableException"},
			errclass.NotFound},
		{"a refused statement", &Error{Class: "DELTA_CHANGELOG_REQUIRES_ROW_TRACKING", Message: "no"},
			errclass.FailedPrecondition},
	} {
		for _, err := range []error{c.err, fmt.Errorf("table db.t: %w", c.err)} {
			if got, ok := errclass.Of(err); got != c.want || !ok {
				t.Errorf("%s: Of(%v) = %v, %v; want %v", c.name, err, got, ok, c.want)
			}
		}
	}
}
