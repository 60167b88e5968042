package errclass_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sluicefeed/sluice/internal/lib/errclass"
)

// classes are all the classes, in their order of precedence.
var classes = []errclass.Class{
	errclass.Canceled, errclass.DeadlineExceeded, errclass.InvalidArgument, errclass.NotFound,
	errclass.FailedPrecondition, errclass.ResourceExhausted, errclass.Unauthenticated,
	errclass.PermissionDenied, errclass.Unavailable, errclass.Unimplemented, errclass.Internal,
}

// wrapOne is an error type that wraps one error by its Unwrap method, as
// the packages' own error types do.
type wrapOne struct{ err error }

func (e *wrapOne) Error() string { return "one: " + e.err.Error() }
func (e *wrapOne) Unwrap() error { return e.err }

// wrapMany wraps several errors by an Unwrap method.
type wrapMany struct{ errs []error }

func (e *wrapMany) Error() string   { return "many" }
func (e *wrapMany) Unwrap() []error { return e.errs }

func TestNewIsASentinel(t *testing.T) {
	err := errclass.New(errclass.NotFound, "catalog: table not found")
	if got := err.Error(); got != "catalog: table not found" {
		t.Errorf("Error() = %q; want the message given", got)
	}
	twin := errclass.New(errclass.NotFound, "catalog: table not found")
	if errors.Is(err, twin) || errors.Is(twin, err) {
		t.Error("two sentinels of the same class and message match each other; each must be distinct")
	}
	for _, w := range []error{
		fmt.Errorf("table %q: %w", "db.t", err),
		fmt.Errorf("x: %w", fmt.Errorf("y: %w", err)),
		errors.Join(errors.New("other"), err),
		&wrapOne{err},
		&wrapMany{[]error{errors.New("other"), &wrapOne{err}}},
	} {
		if !errors.Is(w, err) {
			t.Errorf("errors.Is(%q, the sentinel) = false", w)
		}
		if errors.Is(w, twin) {
			t.Errorf("errors.Is(%q, another sentinel) = true", w)
		}
		if c, ok := errclass.Of(w); c != errclass.NotFound || !ok {
			t.Errorf("Of(%q) = %v, %v; want NotFound, true", w, c, ok)
		}
	}
	if got := fmt.Sprintf("%v", fmt.Errorf("read: %w", err)); got != "read: catalog: table not found" {
		t.Errorf("wrapped message = %q", got)
	}
}

func TestNewRefusesNoClass(t *testing.T) {
	for _, c := range []errclass.Class{0, errclass.Internal + 1, 255} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%v, ...) did not panic", c)
				}
			}()
			_ = errclass.New(c, "x")
		}()
	}
}

func TestOfUnclassified(t *testing.T) {
	for _, err := range []error{
		nil,
		errors.New("boom"),
		fmt.Errorf("x: %w", errors.New("boom")),
		errors.Join(errors.New("a"), errors.New("b")),
		&wrapOne{errors.New("boom")},
		&wrapMany{},
		// The message of a sentinel is not the sentinel.
		errors.New(errclass.New(errclass.NotFound, "x: not found").Error()),
	} {
		if c, ok := errclass.Of(err); c != 0 || ok {
			t.Errorf("Of(%v) = %v, %v; want the zero Class, false", err, c, ok)
		}
	}
}

func TestOfContext(t *testing.T) {
	for _, c := range []struct {
		err  error
		want errclass.Class
	}{
		{context.Canceled, errclass.Canceled},
		{fmt.Errorf("read: %w", context.Canceled), errclass.Canceled},
		{context.DeadlineExceeded, errclass.DeadlineExceeded},
		{&wrapOne{context.DeadlineExceeded}, errclass.DeadlineExceeded},
		// The call's end comes before what failed meanwhile.
		{fmt.Errorf("%w: %w", errclass.New(errclass.InvalidArgument, "bad"), context.Canceled),
			errclass.Canceled},
		{errors.Join(errclass.New(errclass.Unavailable, "down"), context.DeadlineExceeded),
			errclass.DeadlineExceeded},
		{errors.Join(context.DeadlineExceeded, context.Canceled), errclass.Canceled},
	} {
		if got, ok := errclass.Of(c.err); got != c.want || !ok {
			t.Errorf("Of(%v) = %v, %v; want %v, true", c.err, got, ok, c.want)
		}
	}
}

// TestOfPrecedence: of two sentinels wrapped together, in any shape and
// either order, Of returns the class declared first, however deep it is.
func TestOfPrecedence(t *testing.T) {
	shapes := []struct {
		name string
		wrap func(a, b error) error
	}{
		{"a: b", func(a, b error) error { return fmt.Errorf("%w: %w", a, b) }},
		{"a: (x: b)", func(a, b error) error { return fmt.Errorf("%w: %w", a, fmt.Errorf("x: %w", b)) }},
		{"one(many(a, one(b)))", func(a, b error) error { return &wrapOne{&wrapMany{[]error{a, &wrapOne{b}}}} }},
		{"join(join(x, a), b)", func(a, b error) error { return errors.Join(errors.Join(errors.New("x"), a), b) }},
	}
	for i, a := range classes {
		for j, b := range classes {
			want := a
			if j < i {
				want = b
			}
			ea, eb := errclass.New(a, "a"), errclass.New(b, "b")
			for _, s := range shapes {
				err := s.wrap(ea, eb)
				if got, ok := errclass.Of(err); got != want || !ok {
					t.Errorf("%s with a %v, b %v: Of = %v, %v; want %v", s.name, a, b, got, ok, want)
				}
			}
		}
	}
}

func TestClassString(t *testing.T) {
	want := []string{"Canceled", "DeadlineExceeded", "InvalidArgument", "NotFound", "FailedPrecondition",
		"ResourceExhausted", "Unauthenticated", "PermissionDenied", "Unavailable", "Unimplemented", "Internal"}
	for i, c := range classes {
		if c.String() != want[i] {
			t.Errorf("class %d is %q; want %q", i, c, want[i])
		}
	}
	if got := errclass.Class(0).String(); got != "Class(0)" {
		t.Errorf("the zero Class is %q", got)
	}
	if got := (errclass.Internal + 1).String(); got != fmt.Sprintf("Class(%d)", errclass.Internal+1) {
		t.Errorf("a value past the classes is %q", got)
	}
}
