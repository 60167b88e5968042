package server_test

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/sluicefeed/sluice/server"
)

// The server's options replace gRPC's proto codec for the whole gRPC
// server (see flightCodec): the other services flightd registers on it,
// such as gRPC health, still work. (The Flight and control services are
// exercised by every other test, which serve with the same options.)
func TestServerOptionsServeHealth(t *testing.T) {
	srv := server.New(nil, server.Options{})
	gs := grpc.NewServer(srv.ServerOptions()...)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health check: %v, %v", resp, err)
	}
}
