package spark

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/google/uuid"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/sluicefeed/sluice/spark/internal/connectpb"
)

// errEndOfResult ends an operation's batches once the server said that the
// result is complete.
var errEndOfResult = errors.New("spark: end of result")

// operationTag marks every operation Sluice starts, so that an operator can
// find (and interrupt) them on the server.
const operationTag = "sluice"

// operation is one ExecutePlan call: a statement running on the server,
// whose Arrow batches are read one at a time as the server sends them
// (gRPC's flow control holds the server back while the reader does not
// read). An operation that is closed before its result was complete is
// interrupted on the server.
type operation struct {
	s       *Session
	id      string // the operation id Sluice chose
	what    string // the statement, for errors
	ctx     context.Context
	cancel  context.CancelFunc
	stream  grpc.ServerStreamingClient[pb.ExecutePlanResponse]
	pending []arrow.RecordBatch // decoded, not yet returned
	// complete: the server ended the result (status OK); ended: it ended
	// the operation (complete or with an error), nothing to interrupt.
	complete, ended bool
}

// start sends plan to the server.
func (s *Session) start(ctx context.Context, plan *pb.Plan, what string) (*operation, error) {
	id := uuid.NewString()
	sctx, cancel := context.WithCancel(ctx)
	stream, err := s.client.ExecutePlan(s.outgoing(sctx), &pb.ExecutePlanRequest{
		SessionId: s.id, UserContext: s.user(), ClientType: &s.remote.UserAgent,
		OperationId: &id, Plan: plan, Tags: []string{operationTag},
	})
	if err != nil {
		cancel()
		return nil, classify(err, what)
	}
	if s.onStart != nil {
		s.onStart(id, what)
	}
	return &operation{s: s, id: id, what: what, ctx: ctx, cancel: cancel, stream: stream}, nil
}

// next returns the operation's next batch, which the caller releases;
// errEndOfResult once the server ended the result with status OK. A
// stream that breaks (a server that dies, a connection reset) is
// ErrUnavailable: never a result that only looks complete.
func (o *operation) next() (arrow.RecordBatch, error) {
	for len(o.pending) == 0 {
		if o.ended && o.complete {
			return nil, errEndOfResult
		}
		resp, err := o.stream.Recv()
		if errors.Is(err, io.EOF) {
			// The server closed the stream with status OK: the operation
			// is not reattachable, so that is its end (ResultComplete is
			// sent only to reattachable ones). A server that dies breaks
			// the stream instead, which gRPC reports as Unavailable.
			o.ended, o.complete = true, true
			return nil, errEndOfResult
		}
		if err != nil {
			if cerr := o.ctx.Err(); cerr != nil {
				return nil, cerr
			}
			o.ended = true
			return nil, classify(err, o.what)
		}
		switch r := resp.GetResponseType().(type) {
		case *pb.ExecutePlanResponse_ArrowBatch_:
			if err := o.decode(r.ArrowBatch.GetData()); err != nil {
				return nil, err
			}
		case *pb.ExecutePlanResponse_ResultComplete_:
			o.complete = true
		}
	}
	rec := o.pending[0]
	o.pending = o.pending[1:]
	return rec, nil
}

// decode reads the Arrow IPC stream of one ArrowBatch message.
func (o *operation) decode(data []byte) error {
	r, err := ipc.NewReader(bytes.NewReader(data), ipc.WithAllocator(o.s.mem))
	if err != nil {
		return fmt.Errorf("%w: %s sent an unreadable Arrow batch: %v", ErrQuery, o.s.remote, err)
	}
	defer r.Release()
	for r.Next() {
		rec := r.RecordBatch()
		rec.Retain()
		o.pending = append(o.pending, rec)
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w: %s sent an unreadable Arrow batch: %v", ErrQuery, o.s.remote, err)
	}
	return nil
}

// close ends the operation: batches not taken are released and, unless the
// server ended it, the operation is interrupted on the server (the read
// was cancelled or abandoned) with a context of its own, since the read's
// may be the one that ended.
func (o *operation) close() {
	for _, rec := range o.pending {
		rec.Release()
	}
	o.pending = nil
	o.cancel()
	if o.ended {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(o.ctx), o.s.timeout)
	defer cancel()
	ids, err := o.s.interrupt(ctx, o.id)
	if err != nil {
		o.s.log.Warn("spark: interrupting an abandoned operation failed", "remote", o.s.remote.String(),
			"operation", o.id, "err", err)
		return
	}
	if o.s.onInterrupt != nil {
		o.s.onInterrupt(o.id, ids)
	}
	o.s.log.Info("spark: interrupted an abandoned operation", "remote", o.s.remote.String(),
		"operation", o.id, "interrupted", ids)
}

// interrupt interrupts the operation id on the server and returns the ids
// of the operations it interrupted (none when the operation had ended).
func (s *Session) interrupt(ctx context.Context, id string) ([]string, error) {
	resp, err := s.client.Interrupt(s.outgoing(ctx), &pb.InterruptRequest{
		SessionId: s.id, UserContext: s.user(), ClientType: &s.remote.UserAgent,
		InterruptType: pb.InterruptRequest_INTERRUPT_TYPE_OPERATION_ID,
		Interrupt:     &pb.InterruptRequest_OperationId{OperationId: id},
	})
	if err != nil {
		return nil, classify(err, "interrupt "+id)
	}
	return resp.GetInterruptedIds(), nil
}

// classify turns a gRPC error from the server into this package's errors:
// a Spark error (with ErrorInfo) into an *Error, a server that cannot be
// reached or that broke the stream into ErrUnavailable.
func classify(err error, what string) error {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, clip(what), err)
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return &Error{Class: info.GetMetadata()["errorClass"], SQLState: info.GetMetadata()["sqlState"],
				Exception: info.GetReason(), Message: st.Message()}
		}
	}
	switch st.Code() {
	case codes.Canceled:
		return fmt.Errorf("%s: %w", clip(what), context.Canceled)
	case codes.DeadlineExceeded:
		return fmt.Errorf("%s: %w", clip(what), context.DeadlineExceeded)
	case codes.Unavailable, codes.Aborted, codes.ResourceExhausted:
		return fmt.Errorf("%w: %s: %s", ErrUnavailable, clip(what), st.Message())
	case codes.Internal:
		// gRPC's own: a stream reset or a connection gone under it.
		if m := st.Message(); strings.HasPrefix(m, "stream terminated by RST_STREAM") ||
			strings.HasPrefix(m, "transport:") || strings.Contains(m, "connection reset") {
			return fmt.Errorf("%w: %s: %s", ErrUnavailable, clip(what), m)
		}
	}
	// The server answered with an error but no ErrorInfo: a JVM Error
	// (Spark 4.2 with Iceberg's 4.1 runtime fails every statement with an
	// IncompatibleClassChangeError this way).
	return &Error{Message: st.Message()}
}

// clip shortens a statement for an error message.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
