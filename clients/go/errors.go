package sluice

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrProtocol reports a response the client cannot accept: a schema or
// batch it cannot decode, a batch without its app_metadata, or a stream
// that ends cleanly in the middle of a snapshot. Errors that wrap it have
// the code codes.Internal.
var ErrProtocol = errors.New("sluice: protocol violation")

// Error is a failed call. It keeps the gRPC status of the failure: Code
// and status.Code from google.golang.org/grpc/status both return its code,
// and status.FromError returns its status with any details the server
// attached. When the call's context was cancelled or expired, it wraps
// the context's error (errors.Is(err, context.Canceled) holds); when the
// client rejected the server's response, it wraps ErrProtocol.
type Error struct {
	// Op is the client call that failed, such as "Changes", "Subscribe" or
	// "CommitSeq"; a stream's failure is labelled by the call that opened
	// it (ChangeReader.Err by "Changes", Subscription.Err by "Subscribe").
	Op string
	// Code is the gRPC code of the failure.
	Code codes.Code
	// Message is the server's description of the failure, or the client's
	// for failures it detects itself.
	Message string

	status *status.Status
	cause  error
}

// Error returns "sluice: <op>: <code>: <message>".
func (e *Error) Error() string {
	return fmt.Sprintf("sluice: %s: %s: %s", e.Op, e.Code, e.Message)
}

// GRPCStatus returns the gRPC status of the failure.
func (e *Error) GRPCStatus() *status.Status {
	if e.status == nil {
		return status.New(e.Code, e.Message)
	}
	return e.status
}

// Unwrap returns the context error or ErrProtocol error behind the failure,
// or nil.
func (e *Error) Unwrap() error { return e.cause }

// Code returns the gRPC code of an error returned by this package:
// codes.OK for nil, the status code of an *Error or of any error that
// carries a gRPC status, codes.Canceled and codes.DeadlineExceeded for
// context errors, and codes.Unknown otherwise.
//
//	switch sluice.Code(err) {
//	case codes.NotFound: // unknown table or snapshot
//	case codes.FailedPrecondition: // history gone: resync
//	}
func Code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var gs interface{ GRPCStatus() *status.Status }
	if errors.As(err, &gs) && gs.GRPCStatus() != nil {
		return gs.GRPCStatus().Code()
	}
	switch {
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	}
	return codes.Unknown
}

// callError converts the failure of call op under ctx into an *Error.
func callError(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if e := (*Error)(nil); errors.As(err, &e) {
		return err
	}
	ctxErr := ctx.Err()
	var gs interface{ GRPCStatus() *status.Status }
	if errors.As(err, &gs) && gs.GRPCStatus() != nil {
		st := gs.GRPCStatus()
		e := &Error{Op: op, Code: st.Code(), Message: st.Message(), status: st}
		if ctxErr != nil && (st.Code() == codes.Canceled || st.Code() == codes.DeadlineExceeded) {
			e.cause = ctxErr
		}
		return e
	}
	if ctxErr != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		st := status.FromContextError(ctxErr)
		return &Error{Op: op, Code: st.Code(), Message: st.Message(), status: st, cause: ctxErr}
	}
	if !errors.Is(err, ErrProtocol) {
		err = fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	return &Error{Op: op, Code: codes.Internal, Message: err.Error(), status: status.New(codes.Internal, err.Error()),
		cause: err}
}

// protocolError returns an ErrProtocol error with a message.
func protocolError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrProtocol, fmt.Sprintf(format, args...))
}

// invalidArgument returns the *Error of a request the client rejects
// before sending it.
func invalidArgument(op, msg string) error {
	return &Error{Op: op, Code: codes.InvalidArgument, Message: msg, status: status.New(codes.InvalidArgument, msg)}
}
