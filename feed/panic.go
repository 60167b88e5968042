package feed

import "github.com/sluicefeed/sluice/lake"

// PanicError is a panic met in a goroutine of a read (a bug, in the engine
// or a library it calls), turned into an error that ends that read alone.
// It wraps ErrInternal and carries the stack of the panic for the logs.
type PanicError = lake.PanicError

// guard runs fn, turning a panic into a *PanicError.
func guard(fn func() error) error { return lake.Guard(fn) }
