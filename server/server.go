package server

import (
	"context"
	"log/slog"

	flightgen "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/sluicefeed/sluice/feed"
	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
)

// Options configures a Server. The zero value is valid.
type Options struct {
	// Allocator allocates the memory of encoded batches. It should be the
	// engine's allocator. Default: memory.DefaultAllocator.
	Allocator memory.Allocator
	// Logger receives one line per failed call. Default: slog.Default().
	Logger *slog.Logger
}

// Server is the Flight service and the ControlService over one engine.
type Server struct {
	engine *feed.Engine
	mem    memory.Allocator
	log    *slog.Logger
}

// New returns a server over the engine.
func New(engine *feed.Engine, opts Options) *Server {
	if opts.Allocator == nil {
		opts.Allocator = memory.DefaultAllocator
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Server{engine: engine, mem: opts.Allocator, log: opts.Logger}
}

// Register registers the Flight service and the ControlService on a gRPC
// server.
func (s *Server) Register(r grpc.ServiceRegistrar) {
	flightgen.RegisterFlightServiceServer(r, &flightService{s: s})
	sluicev1.RegisterControlServiceServer(r, &controlService{s: s})
}

// fail logs a failed call and returns its gRPC status error.
func (s *Server) fail(ctx context.Context, call string, err error) error {
	st := toStatus(err)
	code := codeOf(st)
	level := slog.LevelInfo
	if code == codes.Internal || code == codes.Unknown {
		level = slog.LevelError
	}
	s.log.Log(ctx, level, "call failed", "call", call, "code", code.String(), "error", err.Error())
	return st
}
