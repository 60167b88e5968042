package lake

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"runtime/debug"

	"github.com/sluicefeed/sluice/internal/lib/errclass"
	"github.com/sluicefeed/sluice/internal/lib/storage/storageerr"
)

// Sentinel errors a table format reports to the engine, and the engine to
// its callers (package feed re-exports each under the same name). Their
// text keeps the "feed:" prefix the engine has always reported, which
// clients and the documentation quote. Each has the class of failure
// (errclass) the server maps to a gRPC code; ErrInternal has none (an
// error of no class is internal).
var (
	// ErrUnknownColumn reports a projected, identity or filter column that
	// the window's end schema does not have.
	ErrUnknownColumn = errclass.New(errclass.InvalidArgument, "feed: unknown column")
	// ErrSnapshotNotFound reports a commit id that the table does not hold,
	// or a timestamp before the table's first commit.
	ErrSnapshotNotFound = errclass.New(errclass.NotFound, "feed: snapshot not found")
	// ErrResyncRequired reports a window that starts before the table's
	// retained history, or whose metadata or data files are gone: the
	// consumer must re-read the table from a commit still readable.
	ErrResyncRequired = errclass.New(errclass.FailedPrecondition, "feed: resync required")
	// ErrUnsupported reports a commit or table feature that cannot be
	// turned into exact row changes: the engine fails rather than skip a
	// commit or emit wrong rows.
	ErrUnsupported = errclass.New(errclass.FailedPrecondition, "feed: unsupported")
	// ErrInconsistentSnapshot reports a commit whose metadata disagrees
	// with itself (the files its manifests add or remove against its
	// summary): the engine fails rather than emit a feed that does not add
	// up.
	ErrInconsistentSnapshot = errclass.New(errclass.FailedPrecondition, "feed: snapshot manifests disagree with its summary")
	// ErrUnreadable reports a metadata, data or delete file that exists but
	// cannot be decoded: damaged, truncated, or not what its metadata says.
	ErrUnreadable = errclass.New(errclass.FailedPrecondition, "feed: unreadable table file")
	// ErrStorageUnavailable reports storage that could not be reached.
	ErrStorageUnavailable = errclass.New(errclass.Unavailable, "feed: storage unavailable")
	// ErrInternal reports a bug met during a read: a panic, contained to the
	// read it happened in (see PanicError).
	ErrInternal = errors.New("feed: internal error")
)

// PanicError is a panic met in a goroutine of a read (a bug, in the engine,
// a format or a library they call), turned into an error that ends that
// read alone. It wraps ErrInternal and carries the stack of the panic for
// the logs.
type PanicError struct {
	// Value is what was passed to panic.
	Value any
	// Stack is the stack of the goroutine that panicked.
	Stack []byte
}

func (p *PanicError) Error() string { return fmt.Sprintf("%v: panic: %v", ErrInternal, p.Value) }

// Unwrap makes a PanicError match ErrInternal.
func (p *PanicError) Unwrap() error { return ErrInternal }

// Guard runs fn, turning a panic into a *PanicError.
func Guard(fn func() error) (err error) {
	defer RecoverTo(&err)
	return fn()
}

// RecoverTo, deferred, turns a panic into *err, a *PanicError.
func RecoverTo(err *error) {
	if r := recover(); r != nil {
		*err = &PanicError{Value: r, Stack: debug.Stack()}
	}
}

// ReadError classifies an error reading a file of table name for commit
// (0: none in particular): what names the file ("data file x", "manifest
// list"). A missing file means the history is gone and the consumer must
// resync; storage that cannot be reached is ErrStorageUnavailable; a file
// that is there but cannot be decoded ErrUnreadable. Errors classified
// already, and cancellations, pass as they are.
func ReadError(name string, commit int64, what string, err error) error {
	where := fmt.Sprintf("snapshot %d of table %s", commit, name)
	if commit == 0 {
		where = "table " + name
	}
	var netErr net.Error
	switch {
	case errors.Is(err, ErrResyncRequired), errors.Is(err, ErrUnreadable), errors.Is(err, ErrStorageUnavailable),
		errors.Is(err, ErrInternal), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err // classified already, or not a file's fault
	case errors.Is(err, storageerr.ErrOutsideRoot):
		// A local file that a symbolic link leads out of its root: not
		// read unless the root's setting allows it (the error names it).
		return fmt.Errorf("%w: %s: %s: %w", ErrUnsupported, where, what, err)
	case StorageDown(err):
		return fmt.Errorf("%w: %s: %w", ErrStorageUnavailable, where, err)
	case StorageFault(err):
		// A bucket that does not exist, refused credentials: not the
		// file's fault, and not the history's.
		return fmt.Errorf("%s: %w", where, err)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s: %s no longer exists (%v); its changes cannot be read, "+
			"so re-read the table's current state and follow it from there", ErrResyncRequired, where, what, err)
	case errors.As(err, &netErr):
		return fmt.Errorf("%w: %s: read %s: %v", ErrStorageUnavailable, where, what, err)
	default:
		// The file is there but cannot be decoded: damaged, truncated, not
		// what its metadata says.
		return fmt.Errorf("%w: %s: %s cannot be read: %v", ErrUnreadable, where, what, err)
	}
}

// StorageFault reports whether err is the storage's fault, as the storage
// layer classified it (storage.Classify): a bucket that does not exist,
// refused credentials, settings that cannot work, which no read of the
// table can cure and which are not the history's either.
func StorageFault(err error) bool {
	return errors.Is(err, storageerr.ErrBucketNotFound) || errors.Is(err, storageerr.ErrAccessDenied) ||
		errors.Is(err, storageerr.ErrMisconfigured)
}

// StorageDown reports whether err is storage that could not be reached
// (it may come back).
func StorageDown(err error) bool { return errors.Is(err, storageerr.ErrUnavailable) }
