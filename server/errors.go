package server

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicefeed/sluice/auth"
	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/progress"
)

// Sentinel errors of the server.
var (
	// ErrBadRequest reports bytes that are not a valid request: neither a
	// binary nor a JSON ChangeRequest, an unknown action, a malformed action
	// body.
	ErrBadRequest = errors.New("server: bad request")
	// ErrNotImplemented reports a request feature this server does not
	// offer yet.
	ErrNotImplemented = errors.New("server: not implemented")
	// ErrMessageTooLarge reports a batch whose encoding would exceed the
	// message size clients accept.
	ErrMessageTooLarge = errors.New("server: message too large")
	// ErrShuttingDown ends follow streams and WatchCommits when the server
	// shuts down.
	ErrShuttingDown = errors.New("server shutting down")
	// ErrSchemaChanged ends a follow stream when the table's schema changes
	// under it: an Arrow stream has one schema, so the changes from then on
	// must be read by a new stream.
	ErrSchemaChanged = errors.New("server: schema changed")
)

// codeOf maps an error to its gRPC code, following the contract's table.
func codeOf(err error) codes.Code {
	if s, ok := status.FromError(err); ok {
		return s.Code()
	}
	switch {
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, ErrBadRequest),
		errors.Is(err, feed.ErrInvalidRequest),
		errors.Is(err, feed.ErrUnknownColumn),
		errors.Is(err, feed.ErrInvalidFilter),
		errors.Is(err, feed.ErrNotAncestor),
		errors.Is(err, catalog.ErrInvalidName):
		return codes.InvalidArgument
	case errors.Is(err, feed.ErrSnapshotNotFound),
		errors.Is(err, catalog.ErrTableNotFound),
		errors.Is(err, progress.ErrNotFound):
		return codes.NotFound
	case errors.Is(err, feed.ErrResyncRequired),
		errors.Is(err, feed.ErrUnsupported), errors.Is(err, feed.ErrInconsistentSnapshot),
		errors.Is(err, feed.ErrUnreadable),
		errors.Is(err, ErrSchemaChanged):
		return codes.FailedPrecondition
	case errors.Is(err, feed.ErrTooLarge),
		errors.Is(err, ErrMessageTooLarge),
		errors.Is(err, ErrLimit),
		errors.Is(err, ErrStalled),
		errors.Is(err, feed.ErrSpill):
		return codes.ResourceExhausted
	case errors.Is(err, auth.ErrUnauthenticated):
		return codes.Unauthenticated
	case errors.Is(err, auth.ErrPermissionDenied),
		errors.Is(err, progress.ErrNotOwner):
		return codes.PermissionDenied
	case errors.Is(err, catalog.ErrUnavailable),
		errors.Is(err, feed.ErrStorageUnavailable),
		errors.Is(err, progress.ErrUnavailable),
		errors.Is(err, ErrShuttingDown):
		return codes.Unavailable
	case errors.Is(err, ErrNotImplemented):
		return codes.Unimplemented
	default:
		return codes.Internal
	}
}

// toStatus converts an error into a gRPC status error with the contract's
// code and the error's message.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(codeOf(err), err.Error())
}

func badRequestf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}
