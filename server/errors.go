package server

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicefeed/sluice/internal/lib/errclass"
)

// Sentinel errors of the server.
var (
	// ErrBadRequest reports bytes that are not a valid request: neither a
	// binary nor a JSON ChangeRequest, an unknown action, a malformed action
	// body.
	ErrBadRequest = errclass.New(errclass.InvalidArgument, "server: bad request")
	// ErrNotImplemented reports a request feature this server does not
	// offer yet.
	ErrNotImplemented = errclass.New(errclass.Unimplemented, "server: not implemented")
	// ErrMessageTooLarge reports a batch whose encoding would exceed the
	// message size clients accept.
	ErrMessageTooLarge = errclass.New(errclass.ResourceExhausted, "server: message too large")
	// ErrShuttingDown ends follow streams and WatchCommits when the server
	// shuts down.
	ErrShuttingDown = errclass.New(errclass.Unavailable, "server shutting down")
)

// codeOf maps an error to its gRPC code, following the contract's table:
// a status keeps its code; any other error has the code of its class
// (errclass.Of: the class of the sentinel it wraps, the first in
// precedence when it wraps several), Internal when it has none.
func codeOf(err error) codes.Code {
	if s, ok := status.FromError(err); ok {
		return s.Code()
	}
	c, _ := errclass.Of(err)
	return classCode(c)
}

// classCode returns the gRPC code of an error class: the code of the same
// name, Internal for no class.
func classCode(c errclass.Class) codes.Code {
	switch c {
	case errclass.Canceled:
		return codes.Canceled
	case errclass.DeadlineExceeded:
		return codes.DeadlineExceeded
	case errclass.InvalidArgument:
		return codes.InvalidArgument
	case errclass.NotFound:
		return codes.NotFound
	case errclass.FailedPrecondition:
		return codes.FailedPrecondition
	case errclass.ResourceExhausted:
		return codes.ResourceExhausted
	case errclass.Unauthenticated:
		return codes.Unauthenticated
	case errclass.PermissionDenied:
		return codes.PermissionDenied
	case errclass.Unavailable:
		return codes.Unavailable
	case errclass.Unimplemented:
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
