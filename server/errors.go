package server

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicefeed/sluice/auth"
	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/storage"
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
		errors.Is(err, progress.ErrNotFound),
		errors.Is(err, storage.ErrBucketNotFound):
		return codes.NotFound
	case errors.Is(err, feed.ErrResyncRequired),
		errors.Is(err, feed.ErrUnsupported), errors.Is(err, feed.ErrInconsistentSnapshot),
		errors.Is(err, feed.ErrUnreadable),
		errors.Is(err, feed.ErrSchemaChanged),
		errors.Is(err, catalog.ErrAmbiguous),
		errors.Is(err, storage.ErrMisconfigured),
		errors.Is(err, storage.ErrOutsideRoot):
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
		errors.Is(err, progress.ErrNotOwner),
		errors.Is(err, storage.ErrAccessDenied):
		return codes.PermissionDenied
	case errors.Is(err, catalog.ErrUnavailable),
		errors.Is(err, feed.ErrStorageUnavailable),
		errors.Is(err, storage.ErrUnavailable),
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
// code and the error's message (cut to maxMessageBytes).
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(codeOf(err), clipText(err.Error()))
}

func badRequestf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}

// Client-supplied names are repeated in messages and logs cut to a prefix,
// so that no name of any length makes a status too large to reach its
// client, or a log line large.
const (
	// maxNameBytes is how much of a client-supplied name a message repeats.
	maxNameBytes = 200
	// maxMessageBytes bounds a status message and the error of a log line,
	// whatever it holds.
	maxMessageBytes = 4 << 10
)

// clipName returns a client-supplied name for a message or a log line: the
// name, or its first maxNameBytes bytes and the count of all of them.
func clipName(name string) string {
	if len(name) <= maxNameBytes {
		return name
	}
	return cutAt(name, maxNameBytes) + fmt.Sprintf("…(%d bytes)", len(name))
}

// quoteName is clipName quoted, as %q quotes: the quoted prefix and the
// count of the name's bytes.
func quoteName(name string) string {
	if len(name) <= maxNameBytes {
		return strconv.Quote(name)
	}
	return strconv.Quote(cutAt(name, maxNameBytes)) + fmt.Sprintf("…(%d bytes)", len(name))
}

// clipText cuts a message to maxMessageBytes bytes, saying how long it was.
func clipText(msg string) string {
	if len(msg) <= maxMessageBytes {
		return msg
	}
	return cutAt(msg, maxMessageBytes) + fmt.Sprintf("…(%d bytes)", len(msg))
}

// quoted matches a double-quoted string with Go or JSON escapes.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// clipQuoted cuts every quoted string longer than maxNameBytes in a
// message, as quoteName does: for the errors of decoders, which repeat a
// name of the client's (an unknown field) without the caller knowing it.
func clipQuoted(msg string) string {
	return quoted.ReplaceAllStringFunc(msg, func(q string) string {
		inner := q[1 : len(q)-1]
		if len(inner) <= maxNameBytes {
			return q
		}
		head := cutAt(inner, maxNameBytes)
		if n := len(head) - len(strings.TrimRight(head, `\`)); n%2 == 1 {
			head = head[:len(head)-1] // not half an escape
		}
		return `"` + head + `"` + fmt.Sprintf("…(%d bytes)", len(inner))
	})
}

// cutAt returns the first n bytes of s, less a rune cut in two.
func cutAt(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// namedError is an error whose message repeats client-supplied names cut
// to a prefix (see clipNames); it wraps the error it describes.
type namedError struct {
	err error
	msg string
}

func (e *namedError) Error() string { return e.msg }
func (e *namedError) Unwrap() error { return e.err }

// clipNames returns err with the long names among names (those the client
// sent with the call) cut to a prefix wherever its message repeats them,
// quoted or not, and the message cut to maxMessageBytes.
func clipNames(err error, names ...string) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	msg := err.Error()
	for _, n := range names {
		if len(n) <= maxNameBytes {
			continue
		}
		msg = strings.ReplaceAll(msg, strconv.Quote(n), quoteName(n))
		msg = strings.ReplaceAll(msg, n, clipName(n))
	}
	msg = clipText(msg)
	if msg == err.Error() {
		return err
	}
	return &namedError{err: err, msg: msg}
}
