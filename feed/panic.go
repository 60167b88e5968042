package feed

import (
	"fmt"
	"runtime/debug"
)

// PanicError is a panic met in a goroutine of a read (a bug, in the engine
// or a library it calls), turned into an error that ends that read alone.
// It wraps ErrInternal and carries the stack of the panic for the logs.
type PanicError struct {
	// Value is what was passed to panic.
	Value any
	// Stack is the stack of the goroutine that panicked.
	Stack []byte
}

func (p *PanicError) Error() string { return fmt.Sprintf("%v: panic: %v", ErrInternal, p.Value) }

// Unwrap makes a PanicError match ErrInternal.
func (p *PanicError) Unwrap() error { return ErrInternal }

// guard runs fn, turning a panic into a *PanicError.
func guard(fn func() error) (err error) {
	defer recoverTo(&err)
	return fn()
}

// recoverTo, deferred, turns a panic into *err, a *PanicError.
func recoverTo(err *error) {
	if r := recover(); r != nil {
		*err = &PanicError{Value: r, Stack: debug.Stack()}
	}
}
