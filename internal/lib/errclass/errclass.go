package errclass

import (
	"context"
	"errors"
	"fmt"
)

// Class is a kind of failure, as the wire contract sorts them. The zero
// Class is no class.
//
// The classes are declared in order of precedence: when an error wraps
// errors of several classes, [Of] returns the one declared first. A call
// cancelled or out of time is that whatever else failed meanwhile; what
// the client must fix in its request comes before what is missing, what
// is missing before the table's state, and a cause the storage named (a
// bucket that does not exist, refused keys) before the unavailability
// that wraps it.
type Class uint8

const (
	// Canceled is a call its caller cancelled (context.Canceled).
	Canceled Class = iota + 1
	// DeadlineExceeded is a call whose deadline passed
	// (context.DeadlineExceeded).
	DeadlineExceeded
	// InvalidArgument is a request the client must fix: malformed, naming
	// an unknown column, with a bad filter or a window off the lineage.
	InvalidArgument
	// NotFound is a table, snapshot, consumer progress or bucket that
	// does not exist.
	NotFound
	// FailedPrecondition is a request the table's state refuses: history
	// expired, a feature not read, a damaged file, storage settings that
	// cannot work.
	FailedPrecondition
	// ResourceExhausted is a limit reached: of the server, of memory and
	// spill, of a row or message size, of a client's reading.
	ResourceExhausted
	// Unauthenticated is missing or bad credentials.
	Unauthenticated
	// PermissionDenied is a caller, or flightd's own keys, not allowed
	// what was asked.
	PermissionDenied
	// Unavailable is a catalog, storage, store or server that cannot be
	// reached, or is going away; it may be transient.
	Unavailable
	// Unimplemented is a call or feature not offered.
	Unimplemented
	// Internal is a bug, or a state that should not happen.
	Internal
)

// classNames are the classes' names, indexed by Class.
var classNames = [...]string{
	Canceled:           "Canceled",
	DeadlineExceeded:   "DeadlineExceeded",
	InvalidArgument:    "InvalidArgument",
	NotFound:           "NotFound",
	FailedPrecondition: "FailedPrecondition",
	ResourceExhausted:  "ResourceExhausted",
	Unauthenticated:    "Unauthenticated",
	PermissionDenied:   "PermissionDenied",
	Unavailable:        "Unavailable",
	Unimplemented:      "Unimplemented",
	Internal:           "Internal",
}

// valid reports whether c is one of the declared classes.
func (c Class) valid() bool { return c >= Canceled && c <= Internal }

// String returns the class's name ("NotFound"), or "Class(n)" for a value
// that is not a class.
func (c Class) String() string {
	if !c.valid() {
		return fmt.Sprintf("Class(%d)", uint8(c))
	}
	return classNames[c]
}

// sentinel is an error of a class, declared by New.
type sentinel struct {
	class Class
	msg   string
}

func (e *sentinel) Error() string { return e.msg }

// New returns a new sentinel error of class c with the message msg, for a
// package-level variable. Like errors.New, each call returns a distinct
// error, equal only to itself. It panics if c is not a class: a sentinel
// without one would map silently to Internal.
func New(c Class, msg string) error {
	if !c.valid() {
		panic(fmt.Sprintf("errclass.New(%v, %q): not a class", c, msg))
	}
	return &sentinel{class: c, msg: msg}
}

// Of returns the class of err: Canceled or DeadlineExceeded when err is
// (errors.Is) the context package's error, else the first in precedence
// of the classes of the sentinels err wraps, followed through every
// Unwrap, one error or several. It returns the zero Class and false for
// nil and for an error that wraps no sentinel of a class.
func Of(err error) (Class, bool) {
	switch {
	case err == nil:
		return 0, false
	case errors.Is(err, context.Canceled):
		return Canceled, true
	case errors.Is(err, context.DeadlineExceeded):
		return DeadlineExceeded, true
	}
	var best Class
	walk(err, func(e error) bool {
		if s, ok := e.(*sentinel); ok && (best == 0 || s.class < best) {
			best = s.class
		}
		return best != Canceled // nothing precedes it
	})
	return best, best != 0
}

// walk calls visit on err and every error it wraps, depth first, as
// errors.Is visits them, until visit returns false. It reports whether
// the walk went to the end.
func walk(err error, visit func(error) bool) bool {
	for err != nil {
		if !visit(err) {
			return false
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if !walk(e, visit) {
					return false
				}
			}
			return true
		default:
			return true
		}
	}
	return true
}
