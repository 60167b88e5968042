package auth

import (
	"errors"

	"github.com/sluicefeed/sluice/internal/lib/errclass"
)

// Sentinel errors of the package. Errors returned by this package wrap one
// of these (with %w) together with what was wrong, so callers classify them
// with errors.Is. No error ever contains a token, a password or a secret.
var (
	// ErrUnauthenticated reports a caller whose credentials are missing,
	// malformed, unknown or expired, or whose client certificate is not
	// known. The server maps it to the gRPC code Unauthenticated.
	ErrUnauthenticated = errclass.New(errclass.Unauthenticated, "auth: unauthenticated")
	// ErrPermissionDenied reports an authenticated principal that may not
	// read a table or a column. Its message names the principal and the
	// table asked for, and never another table. The server maps it to the
	// gRPC code PermissionDenied.
	ErrPermissionDenied = errclass.New(errclass.PermissionDenied, "auth: permission denied")
	// ErrInvalidConfig reports a configuration that cannot be used: an
	// unknown mode, a missing or malformed file, TLS material that does not
	// load, authentication off on a non-loopback address.
	ErrInvalidConfig = errors.New("auth: invalid configuration")
)
