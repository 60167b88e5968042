package pqread

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/parquet"
)

// guard runs fn, turning a panic into ErrCorrupt naming the file and the
// column.
func guard(path, column string, fn func() error) (err error) {
	defer recoverTo(&err, path, column)
	return fn()
}

// recoverTo, deferred, turns a panic into *err, an ErrCorrupt.
func recoverTo(err *error, path, column string) {
	if v := recover(); v != nil {
		*err = fmt.Errorf("%w: %s: panic: %v", ErrCorrupt, where(path, column), v)
	}
}

// classify wraps an error of the decoder: the source's own errors and the
// context's pass through (they may be transient), any other is
// ErrCorrupt.
func classify(err error, path, column string) error {
	var se *sourceError
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.As(err, &se):
		return fmt.Errorf("pqread: %s: %w", where(path, column), err)
	case errors.Is(err, ErrCorrupt):
		return err
	}
	return fmt.Errorf("%w: %s: %w", ErrCorrupt, where(path, column), err)
}

// where names the file and the column in an error.
func where(path, column string) string {
	var b strings.Builder
	if path == "" {
		path = "file"
	}
	b.WriteString(path)
	if column != "" {
		fmt.Fprintf(&b, ": column %q", column)
	}
	return b.String()
}

// source is the file as the decoder reads it: a panic of the file's
// methods becomes an error (the decoder reads some columns in goroutines
// of its own, where a panic would end the process), and its errors are
// marked as the source's (see classify). Reading past the end is not the
// source's error: the footer pointed there, so the file is corrupt.
type source struct{ r parquet.ReaderAtSeeker }

// sourceError is an error of the file's own methods.
type sourceError struct{ err error }

func (e *sourceError) Error() string { return e.err.Error() }
func (e *sourceError) Unwrap() error { return e.err }

func (s *source) ReadAt(p []byte, off int64) (n int, err error) {
	defer func() {
		if v := recover(); v != nil {
			n, err = 0, &sourceError{fmt.Errorf("panic reading the file: %v", v)}
		}
	}()
	n, err = s.r.ReadAt(p, off)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		err = &sourceError{err}
	}
	return n, err
}

func (s *source) Seek(offset int64, whence int) (n int64, err error) {
	defer func() {
		if v := recover(); v != nil {
			n, err = 0, &sourceError{fmt.Errorf("panic seeking in the file: %v", v)}
		}
	}()
	n, err = s.r.Seek(offset, whence)
	if err != nil {
		err = &sourceError{err}
	}
	return n, err
}
