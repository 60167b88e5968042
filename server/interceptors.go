package server

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
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
	ctx, err := s.authenticate(ctx, info.FullMethod)
	if err == nil {
		err = s.limits.call(ctx, info.FullMethod)
	}
	var resp any
	if err == nil {
		resp, err = handler(ctx, req)
	}
	s.logCall(ctx, info.FullMethod, start, err)
	return resp, err
}

func (s *Server) streamCall(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo,
	handler grpc.StreamHandler) error {
	start := time.Now()
	ctx, err := s.authenticate(ss.Context(), info.FullMethod)
	if err == nil {
		err = s.limits.call(ctx, info.FullMethod)
	}
	if err == nil && !public(info.FullMethod) {
		var done func()
		if done, err = s.limits.stream(ctx); err == nil {
			defer done()
			if s.metrics != nil {
				s.metrics.openStreams.Inc()
				defer s.metrics.openStreams.Dec()
			}
		}
	}
	if err == nil {
		err = handler(srv, &contextStream{ServerStream: ss, ctx: ctx})
	}
	if ctx == nil {
		ctx = ss.Context()
	}
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
// the code and the time. Failures are also logged where they happen.
func (s *Server) logCall(ctx context.Context, method string, start time.Time, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	p := principalOf(ctx)
	s.log.DebugContext(ctx, "call", "method", method, "principal", p.Name, "code", status.Code(err).String(),
		"duration", time.Since(start))
}
