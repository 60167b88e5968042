package server

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/sluicefeed/sluice/auth"
)

// Methods that need no credentials: the Flight Handshake (it is how a
// client gets them) and the gRPC health checks.
const (
	handshakeMethod = "/arrow.flight.protocol.FlightService/Handshake"
	healthPrefix    = "/grpc.health.v1.Health/"
)

func public(method string) bool {
	return method == handshakeMethod || strings.HasPrefix(method, healthPrefix)
}

// ServerOptions returns the gRPC server options every server of this
// service needs, in order: panic recovery (a panic in a call becomes an
// Internal error, logged with its stack, and the process lives on),
// metrics, a log line per call, authentication (every call but the
// Handshake and health checks), and the limits on concurrent streams and
// call rates; plus the request size limit.
func (s *Server) ServerOptions() []grpc.ServerOption {
	handler := recovery.WithRecoveryHandlerContext(func(ctx context.Context, p any) error {
		s.log.ErrorContext(ctx, "panic in call", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		return status.Errorf(codes.Internal, "internal error: %v", p)
	})
	unary := []grpc.UnaryServerInterceptor{recovery.UnaryServerInterceptor(handler)}
	stream := []grpc.StreamServerInterceptor{recovery.StreamServerInterceptor(handler)}
	if s.metrics != nil {
		unary = append(unary, s.metrics.grpc.UnaryServerInterceptor())
		stream = append(stream, s.metrics.grpc.StreamServerInterceptor())
	}
	unary = append(unary, s.unaryCall)
	stream = append(stream, s.streamCall)
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(stream...),
		grpc.MaxRecvMsgSize(maxRequestBytes + 64<<10),
		// gRPC's proto codec, but for the FlightData of a stream's
		// batches, whose bodies it sends without a copy.
		grpc.ForceServerCodecV2(newFlightCodec()),
	}
}

// authenticate returns the context of an authenticated call.
func (s *Server) authenticate(ctx context.Context, method string) (context.Context, error) {
	if public(method) {
		return ctx, nil
	}
	p := auth.Principal{Name: "anonymous", Method: "anonymous"}
	if s.authn != nil {
		var err error
		if p, err = s.authn.Authenticate(ctx); err != nil {
			return nil, toStatus(err)
		}
	}
	return auth.NewContext(ctx, p), nil
}

func (s *Server) unaryCall(ctx context.Context, req any, info *grpc.UnaryServerInfo,
	handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	actx, err := s.admit(ctx, info.FullMethod)
	if err != nil {
		s.logCall(ctx, info.FullMethod, start, err)
		return nil, err
	}
	resp, err := handler(actx, req)
	s.logCall(actx, info.FullMethod, start, err)
	return resp, err
}

// admit authenticates a call and applies the call rate limit. A refused
// call is logged (at info, like every failed call) with its method, its
// peer's address and the reason, which never holds a credential.
func (s *Server) admit(ctx context.Context, method string) (context.Context, error) {
	actx, err := s.authenticate(ctx, method)
	if err == nil {
		err = s.limits.call(actx, method)
	}
	if err != nil {
		err = toStatus(err)
		attrs := []any{"call", method, "code", status.Code(err).String(), "peer", peerOf(ctx)}
		if actx != nil {
			attrs = append(attrs, "principal", principalOf(actx).Name)
		}
		s.log.InfoContext(ctx, "call refused", append(attrs, "error", status.Convert(err).Message())...)
		return nil, err
	}
	return actx, nil
}

// peerOf returns the address of the call's client, for logs.
func peerOf(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return "unknown"
}

func (s *Server) streamCall(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo,
	handler grpc.StreamHandler) error {
	start := time.Now()
	ctx, err := s.admit(ss.Context(), info.FullMethod)
	if err != nil {
		s.logCall(ss.Context(), info.FullMethod, start, err)
		return err
	}
	if !public(info.FullMethod) {
		done, err := s.limits.stream(ctx)
		if err != nil {
			err = toStatus(err)
			s.log.InfoContext(ctx, "call refused", "call", info.FullMethod, "code", status.Code(err).String(),
				"peer", peerOf(ctx), "principal", principalOf(ctx).Name, "error", status.Convert(err).Message())
			s.logCall(ctx, info.FullMethod, start, err)
			return err
		}
		defer done()
		if s.metrics != nil {
			s.metrics.openStreams.Inc()
			defer s.metrics.openStreams.Dec()
		}
	}
	err = handler(srv, &contextStream{ServerStream: ss, ctx: ctx})
	s.logCall(ctx, info.FullMethod, start, err)
	return err
}

// contextStream is a server stream with the authenticated context.
type contextStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (c *contextStream) Context() context.Context { return c.ctx }

// logCall logs one line per call at debug level: the method, the caller,
// the code and the time; "call cancelled" for a call its client cancelled
// (or left), which is no failure. Failures are also logged where they
// happen.
func (s *Server) logCall(ctx context.Context, method string, start time.Time, err error) {
	msg := "call"
	if clientCancelled(ctx, err) {
		msg = "call cancelled"
	}
	s.log.DebugContext(ctx, msg, "method", method, "principal", principalOf(ctx).Name, "code",
		codeOf(err).String(), "duration", time.Since(start))
}

// clientCancelled reports whether a call ended because its client
// cancelled it or went away: its error is Canceled and its context is
// cancelled. Such a call did not fail, and is not logged as failed.
func clientCancelled(ctx context.Context, err error) bool {
	return err != nil && codeOf(err) == codes.Canceled && errors.Is(ctx.Err(), context.Canceled)
}
