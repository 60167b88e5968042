package server

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ServerOptions returns the gRPC server options every server of this
// service should use: panic recovery (a panic in a call becomes an Internal
// error, logged with its stack, and the process lives on) and the request
// size limit.
func (s *Server) ServerOptions() []grpc.ServerOption {
	handler := recovery.WithRecoveryHandlerContext(func(ctx context.Context, p any) error {
		s.log.ErrorContext(ctx, "panic in call", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		return status.Errorf(codes.Internal, "internal error: %v", p)
	})
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(recovery.UnaryServerInterceptor(handler)),
		grpc.ChainStreamInterceptor(recovery.StreamServerInterceptor(handler)),
		grpc.MaxRecvMsgSize(maxRequestBytes + 64<<10),
	}
}
