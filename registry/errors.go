package registry

import "errors"

// ErrConfig is returned, wrapped, by Tables.CheckDelta and CheckPaimon when the tables
// configured cannot be served as configured: a Delta table whose name the
// Iceberg catalog also serves, a location that does not hold a table, a
// bucket that does not exist or refuses the credentials.
var ErrConfig = errors.New("invalid configuration")

// configError is a configuration error whose message says it all: it
// wraps ErrConfig without repeating its text.
type configError struct{ err error }

func (e configError) Error() string   { return e.err.Error() }
func (e configError) Unwrap() []error { return []error{ErrConfig, e.err} }
