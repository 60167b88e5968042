package storageerr

import "github.com/sluicefeed/sluice/internal/lib/errclass"

// Sentinel errors of the storage layer, which package storage re-exports.
// Errors that wrap one of them are storage.Error values naming the object
// or folder, the bucket, and who the request was made as where that is
// known, never a secret. Each has its class of failure (errclass), which
// the server maps to a gRPC code.
var (
	// ErrBucketNotFound reports a bucket (or container) that does not
	// exist: every object in it reads as missing, which is not the same
	// as a file removed by VACUUM or snapshot expiry.
	ErrBucketNotFound = errclass.New(errclass.NotFound, "storage: bucket not found")
	// ErrAccessDenied reports storage that refused flightd's credentials
	// (an unknown access key id, a secret that does not match it, an
	// expired session token) or refused them access (HTTP 403).
	ErrAccessDenied = errclass.New(errclass.PermissionDenied, "storage: access denied")
	// ErrMisconfigured reports storage settings that cannot work: no
	// region, a region other than the bucket's, no credentials at all.
	ErrMisconfigured = errclass.New(errclass.FailedPrecondition, "storage: misconfigured")
	// ErrUnavailable reports storage that could not be reached or answered
	// with a server error: a refused connection, a timeout, HTTP 5xx or
	// throttling. It may be transient.
	ErrUnavailable = errclass.New(errclass.Unavailable, "storage: unavailable")
)

// ErrOutsideRoot reports a local file or folder that lies inside a root
// the operator configured (a Delta root, a Delta table's folder, a local
// Iceberg warehouse) but resolves, through a symbolic link, to a place
// outside it. Such files are not read unless the root's setting to follow
// symbolic links is on (LocalOptions.FollowSymlinks).
var ErrOutsideRoot = errclass.New(errclass.FailedPrecondition, "storage: outside the root")
