package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicefeed/sluice/auth"
	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/errclass"
	"github.com/sluicefeed/sluice/internal/lib/storage"
	"github.com/sluicefeed/sluice/progress"
)

// classified are the errors codeOf gives a code of the contract, each with
// that code. The table pins the mapping codeOf made when it tested each
// package's sentinels with errors.Is: a change of a code here is a change
// of the wire contract (docs/PROTOCOL.md, "Errors").
var classified = []struct {
	name string
	err  error
	code codes.Code
}{
	{"context.Canceled", context.Canceled, codes.Canceled},
	{"context.DeadlineExceeded", context.DeadlineExceeded, codes.DeadlineExceeded},

	{"ErrBadRequest", ErrBadRequest, codes.InvalidArgument},
	{"feed.ErrInvalidRequest", feed.ErrInvalidRequest, codes.InvalidArgument},
	{"feed.ErrUnknownColumn", feed.ErrUnknownColumn, codes.InvalidArgument},
	{"feed.ErrInvalidFilter", feed.ErrInvalidFilter, codes.InvalidArgument},
	{"feed.ErrNotAncestor", feed.ErrNotAncestor, codes.InvalidArgument},
	{"catalog.ErrInvalidName", catalog.ErrInvalidName, codes.InvalidArgument},

	{"feed.ErrSnapshotNotFound", feed.ErrSnapshotNotFound, codes.NotFound},
	{"catalog.ErrTableNotFound", catalog.ErrTableNotFound, codes.NotFound},
	{"progress.ErrNotFound", progress.ErrNotFound, codes.NotFound},
	{"storage.ErrBucketNotFound", storage.ErrBucketNotFound, codes.NotFound},

	{"feed.ErrResyncRequired", feed.ErrResyncRequired, codes.FailedPrecondition},
	{"feed.ErrUnsupported", feed.ErrUnsupported, codes.FailedPrecondition},
	{"feed.ErrInconsistentSnapshot", feed.ErrInconsistentSnapshot, codes.FailedPrecondition},
	{"feed.ErrUnreadable", feed.ErrUnreadable, codes.FailedPrecondition},
	{"feed.ErrSchemaChanged", feed.ErrSchemaChanged, codes.FailedPrecondition},
	{"catalog.ErrAmbiguous", catalog.ErrAmbiguous, codes.FailedPrecondition},
	{"storage.ErrMisconfigured", storage.ErrMisconfigured, codes.FailedPrecondition},
	{"storage.ErrOutsideRoot", storage.ErrOutsideRoot, codes.FailedPrecondition},

	{"feed.ErrTooLarge", feed.ErrTooLarge, codes.ResourceExhausted},
	{"ErrMessageTooLarge", ErrMessageTooLarge, codes.ResourceExhausted},
	{"ErrLimit", ErrLimit, codes.ResourceExhausted},
	{"ErrStalled", ErrStalled, codes.ResourceExhausted},
	{"feed.ErrSpill", feed.ErrSpill, codes.ResourceExhausted},

	{"auth.ErrUnauthenticated", auth.ErrUnauthenticated, codes.Unauthenticated},

	{"auth.ErrPermissionDenied", auth.ErrPermissionDenied, codes.PermissionDenied},
	{"progress.ErrNotOwner", progress.ErrNotOwner, codes.PermissionDenied},
	{"storage.ErrAccessDenied", storage.ErrAccessDenied, codes.PermissionDenied},

	{"catalog.ErrUnavailable", catalog.ErrUnavailable, codes.Unavailable},
	{"feed.ErrStorageUnavailable", feed.ErrStorageUnavailable, codes.Unavailable},
	{"storage.ErrUnavailable", storage.ErrUnavailable, codes.Unavailable},
	{"progress.ErrUnavailable", progress.ErrUnavailable, codes.Unavailable},
	{"ErrShuttingDown", ErrShuttingDown, codes.Unavailable},

	{"ErrNotImplemented", ErrNotImplemented, codes.Unimplemented},

	// Sentinels no code of the contract names: a bug, or a failure no
	// client call meets (configuration, shutdown).
	{"feed.ErrInternal", feed.ErrInternal, codes.Internal},
	{"feed.ErrLeakedReads", feed.ErrLeakedReads, codes.Internal},
	{"catalog.ErrInvalidConfig", catalog.ErrInvalidConfig, codes.Internal},
	{"auth.ErrInvalidConfig", auth.ErrInvalidConfig, codes.Internal},
	{"progress.ErrInvalidDSN", progress.ErrInvalidDSN, codes.Internal},
	{"an error nothing classifies", errors.New("boom"), codes.Internal},
}

// precedence is the order in which codeOf picks a code for an error that
// wraps errors of several codes: the first of them here.
var precedence = []codes.Code{
	codes.Canceled, codes.DeadlineExceeded, codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition,
	codes.ResourceExhausted, codes.Unauthenticated, codes.PermissionDenied, codes.Unavailable,
	codes.Unimplemented, codes.Internal,
}

func rank(t *testing.T, c codes.Code) int {
	t.Helper()
	for i, p := range precedence {
		if p == c {
			return i
		}
	}
	t.Fatalf("%s is not in precedence", c)
	return -1
}

// TestCodeOf: each error, alone and wrapped with context, has its code;
// a status keeps its own code; nil is OK.
func TestCodeOf(t *testing.T) {
	for _, c := range classified {
		t.Run(c.name, func(t *testing.T) {
			if got := codeOf(c.err); got != c.code {
				t.Errorf("codeOf(%v) = %s; want %s", c.err, got, c.code)
			}
			wrapped := fmt.Errorf("table %q: snapshot 3: %w", "db.t", fmt.Errorf("reading: %w", c.err))
			if got := codeOf(wrapped); got != c.code {
				t.Errorf("codeOf(%v) = %s; want %s", wrapped, got, c.code)
			}
			if got := codeOf(toStatus(wrapped)); got != c.code {
				t.Errorf("codeOf(toStatus(%v)) = %s; want %s", wrapped, got, c.code)
			}
			if got := codeOf(clipNames(wrapped, "db.t")); got != c.code {
				t.Errorf("codeOf(clipNames(%v)) = %s; want %s", wrapped, got, c.code)
			}
		})
	}
	for _, c := range []struct {
		name string
		err  error
		code codes.Code
	}{
		{"nil", nil, codes.OK},
		{"a status", status.Error(codes.Aborted, "aborted"), codes.Aborted},
		{"a wrapped status", fmt.Errorf("call: %w", status.Error(codes.Aborted, "aborted")), codes.Aborted},
		{"a status over a sentinel's message", status.Error(codes.DataLoss, feed.ErrSnapshotNotFound.Error()),
			codes.DataLoss},
	} {
		if got := codeOf(c.err); got != c.code {
			t.Errorf("%s: codeOf(%v) = %s; want %s", c.name, c.err, got, c.code)
		}
	}
}

// TestCodeOfPrecedence: an error that wraps two classified errors, in
// either order, side by side or one inside the other, has the code that
// comes first in precedence, wherever in the chain its error is.
func TestCodeOfPrecedence(t *testing.T) {
	shapes := []struct {
		name string
		wrap func(a, b error) error
	}{
		{"a: b", func(a, b error) error { return fmt.Errorf("%w: %w", a, b) }},
		{"a: (x: b)", func(a, b error) error { return fmt.Errorf("%w: %w", a, fmt.Errorf("x: %w", b)) }},
		{"x: (a: (y: b))", func(a, b error) error {
			return fmt.Errorf("x: %w", fmt.Errorf("%w: %w", a, fmt.Errorf("y: %w", b)))
		}},
		{"join(a, b)", func(a, b error) error { return errors.Join(a, b) }},
	}
	n := 0
	for _, a := range classified {
		for _, b := range classified {
			want := a.code
			if rank(t, b.code) < rank(t, a.code) {
				want = b.code
			}
			for _, s := range shapes {
				err := s.wrap(a.err, b.err)
				if got := codeOf(err); got != want {
					t.Errorf("%s with a=%s, b=%s: codeOf = %s; want %s", s.name, a.name, b.name, got, want)
				}
				n++
			}
		}
	}
	t.Logf("%d chains", n)
}

// TestCodeOfChains: the chains the packages build, as they build them,
// have the code of the error that says what went wrong.
func TestCodeOfChains(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		code codes.Code
	}{
		// feed's readError: storage that cannot be reached, over a bucket
		// that does not exist or refused keys.
		{"unavailable over a missing bucket", fmt.Errorf("%w: snapshot 3 of table db.t: %w",
			feed.ErrStorageUnavailable, &storage.Error{Kind: storage.ErrBucketNotFound, Location: "s3://b/k",
				Reason: "the bucket \"b\" does not exist"}), codes.NotFound},
		{"unavailable over refused keys", fmt.Errorf("%w: snapshot 3 of table db.t: %w",
			feed.ErrStorageUnavailable, &storage.Error{Kind: storage.ErrAccessDenied, Location: "s3://b/k",
				Reason: "the storage refused the read"}), codes.PermissionDenied},
		{"unsupported over a file outside its root", fmt.Errorf("%w: table db.t: reading: %w",
			feed.ErrUnsupported, fmt.Errorf("%w: /r/t/x", storage.ErrOutsideRoot)), codes.FailedPrecondition},
		// catalog's storageError: an error of the storage it cannot name.
		{"catalog unavailable over an unclassified error", fmt.Errorf("%w: %w", catalog.ErrUnavailable,
			errors.New("dial tcp: refused")), codes.Unavailable},
		{"a storage error", &storage.Error{Kind: storage.ErrMisconfigured, Location: "s3://b/k",
			Reason: "no region"}, codes.FailedPrecondition},
		{"a cancelled read of an unreadable file", fmt.Errorf("%w: %w", feed.ErrUnreadable, context.Canceled),
			codes.Canceled},
	} {
		if got := codeOf(c.err); got != c.code {
			t.Errorf("%s: codeOf(%v) = %s; want %s", c.name, c.err, got, c.code)
		}
	}
}

// TestClassCode: every error class has the gRPC code of its name; an
// error of no class has Internal.
func TestClassCode(t *testing.T) {
	n := 0
	for c := errclass.Class(1); !strings.HasPrefix(c.String(), "Class("); c++ {
		if got := classCode(c); got.String() != c.String() {
			t.Errorf("class %v has the code %v", c, got)
		}
		n++
	}
	if n < 11 {
		t.Errorf("%d classes; want the contract's 11", n)
	}
	if got := classCode(0); got != codes.Internal {
		t.Errorf("no class has the code %v; want Internal", got)
	}
}
