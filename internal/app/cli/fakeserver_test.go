package cli

import (
	"net"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// fakeServer answers every gRPC call with err and records the
// authorization header of each: the CLI's side of a call without a
// flightd.
type fakeServer struct {
	uri string
	err error
	mu  sync.Mutex // guards auth
	// auth holds the authorization header of each call, in order.
	auth []string
}

func startFakeServer(t *testing.T, err error) *fakeServer {
	t.Helper()
	lis, lerr := net.Listen("tcp", "127.0.0.1:0")
	if lerr != nil {
		t.Fatal(lerr)
	}
	f := &fakeServer{uri: "grpc://" + lis.Addr().String(), err: err}
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		md, _ := metadata.FromIncomingContext(stream.Context())
		f.mu.Lock()
		f.auth = append(f.auth, md.Get("authorization")...)
		f.mu.Unlock()
		return f.err
	}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis) // ends with Stop below
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return f
}

// headers returns the authorization headers received so far.
func (f *fakeServer) headers() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.auth...)
}
