package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// This file proves the metadata and peer handling over real gRPC
// connections on loopback: a tiny Flight server whose interceptors call the
// Authenticator the way the Sluice server does, and arrow-go's Flight
// client.

const handshakeMethod = "/arrow.flight.protocol.FlightService/Handshake"

// whoamiServer answers GetSchema and DoAction with the caller's principal
// ("name/method"), and serves the Handshake with the Authenticator.
type whoamiServer struct {
	flight.BaseFlightServer
	a *Authenticator
}

func (s *whoamiServer) Handshake(stream flight.FlightService_HandshakeServer) error {
	_, md, err := s.a.Handshake(stream.Context())
	if err != nil {
		return grpcError(err)
	}
	if md != nil {
		if err := stream.SetHeader(md); err != nil {
			return err
		}
	}
	return nil
}

func whoami(ctx context.Context) []byte {
	p, ok := FromContext(ctx)
	if !ok {
		return []byte("no principal")
	}
	return []byte(p.Name + "/" + p.Method)
}

func (s *whoamiServer) GetSchema(ctx context.Context, _ *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	return &flight.SchemaResult{Schema: whoami(ctx)}, nil
}

func (s *whoamiServer) DoAction(_ *flight.Action, stream flight.FlightService_DoActionServer) error {
	return stream.Send(&flight.Result{Body: whoami(stream.Context())})
}

// grpcError maps the package's errors to their gRPC codes, as the server's
// one mapping function does.
func grpcError(err error) error {
	switch {
	case errors.Is(err, ErrUnauthenticated):
		return status.Error(codes.Unauthenticated, err.Error())
	case errors.Is(err, ErrPermissionDenied):
		return status.Error(codes.PermissionDenied, err.Error())
	default:
		return status.Error(codes.Internal, err.Error())
	}
}

type principalStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s principalStream) Context() context.Context { return s.ctx }

// serve starts a Flight server on loopback with the Authenticator's
// interceptors, TLS when tlsCfg is set, and returns its address.
func serve(t *testing.T, a *Authenticator, tlsCfg *tls.Config) string {
	t.Helper()
	unary := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		p, err := a.Authenticate(ctx)
		if err != nil {
			return nil, grpcError(err)
		}
		return h(NewContext(ctx, p), req)
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if info.FullMethod == handshakeMethod {
			return h(srv, ss) // the Handshake authenticates itself
		}
		p, err := a.Authenticate(ss.Context())
		if err != nil {
			return grpcError(err)
		}
		return h(srv, principalStream{ss, NewContext(ss.Context(), p)})
	}
	opts := []grpc.ServerOption{grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream)}
	if tlsCfg != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsCfg)))
	}
	gs := grpc.NewServer(opts...)
	flight.RegisterFlightServiceServer(gs, &whoamiServer{a: a})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- gs.Serve(lis) }()
	t.Cleanup(func() {
		gs.Stop()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return lis.Addr().String()
}

func dial(t *testing.T, addr string, creds credentials.TransportCredentials) flight.Client {
	t.Helper()
	c, err := flight.NewClientWithMiddleware(addr, nil, nil, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// ask returns the principal the server saw on a unary and on a streaming
// call, and the gRPC code of the call's failure.
func ask(ctx context.Context, c flight.Client) (unary, streaming string, code codes.Code) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := c.GetSchema(ctx, &flight.FlightDescriptor{})
	if err != nil {
		return "", "", status.Code(err)
	}
	stream, err := c.DoAction(ctx, &flight.Action{Type: "whoami"})
	if err != nil {
		return string(res.Schema), "", status.Code(err)
	}
	r, err := stream.Recv()
	if err != nil {
		return string(res.Schema), "", status.Code(err)
	}
	return string(res.Schema), string(r.Body), codes.OK
}

func withMD(kv ...string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), kv...)
}

func TestGRPCBearerAndBasic(t *testing.T) {
	a, err := New(testFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, serve(t, a, nil), insecure.NewCredentials())

	tests := []struct {
		name string
		ctx  context.Context
		want string // "": Unauthenticated
	}{
		{"no credentials", context.Background(), ""},
		{"wrong token", withMD("authorization", "Bearer wrong"), ""},
		{"malformed header", withMD("authorization", "Bearer"), ""},
		{"basic credentials on a call", withMD("authorization", basic("alice", alicePW)), ""},
		{"expired-looking garbage", withMD("authorization", "Bearer sluice1.AAAA.AAAA"), ""},
		{"static token", withMD("authorization", "Bearer "+ingestToken), "ingest/token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			unary, streaming, code := ask(tt.ctx, c)
			if tt.want == "" {
				if code != codes.Unauthenticated {
					t.Fatalf("code %v (%q, %q), want Unauthenticated", code, unary, streaming)
				}
				return
			}
			if code != codes.OK || unary != tt.want || streaming != tt.want {
				t.Fatalf("got %q, %q, %v; want %q", unary, streaming, code, tt.want)
			}
		})
	}

	t.Run("arrow-go AuthenticateBasicToken", func(t *testing.T) {
		ctx, err := c.AuthenticateBasicToken(context.Background(), "alice", alicePW)
		if err != nil {
			t.Fatal(err)
		}
		if unary, streaming, code := ask(ctx, c); code != codes.OK || unary != "alice/basic" || streaming != "alice/basic" {
			t.Fatalf("after the handshake: %q, %q, %v", unary, streaming, code)
		}
	})
	t.Run("arrow-go AuthenticateBasicToken, wrong password", func(t *testing.T) {
		_, err := c.AuthenticateBasicToken(context.Background(), "alice", "guess")
		if status.Code(err) != codes.Unauthenticated {
			t.Fatalf("AuthenticateBasicToken = %v, want Unauthenticated", err)
		}
	})
	t.Run("the handshake as pyarrow does it", func(t *testing.T) {
		// pyarrow's authenticate_basic_token pads the base64, sends no
		// message, closes its side, and looks for the bearer token in the
		// response's trailers, then headers.
		ctx := withMD("authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("alice:"+alicePW)))
		stream, err := c.Handshake(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := stream.CloseSend(); err != nil {
			t.Fatal(err)
		}
		if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
			t.Fatalf("Recv = %v, want the end of a successful stream", err)
		}
		header, err := stream.Header()
		if err != nil {
			t.Fatal(err)
		}
		md := metadata.Join(stream.Trailer(), header)
		vals := md.Get("authorization")
		if len(vals) != 1 || !strings.HasPrefix(vals[0], "Bearer ") {
			t.Fatalf("response metadata %v: want one authorization: Bearer <token>", md)
		}
		if unary, _, code := ask(withMD("authorization", vals[0]), c); code != codes.OK || unary != "alice/basic" {
			t.Fatalf("with the returned header: %q, %v", unary, code)
		}
	})
}

func TestGRPCMutualTLS(t *testing.T) {
	ca := newTestCA(t, "Sluice test CA")
	rogueCA := newTestCA(t, "Rogue CA")
	server := ca.issue(t, pkix.Name{CommonName: "sluice"}, true)
	ingest := ca.issue(t, pkix.Name{CommonName: "ingest", Organization: []string{"Acme"}}, false)
	stranger := ca.issue(t, pkix.Name{CommonName: "stranger"}, false)
	rogue := rogueCA.issue(t, pkix.Name{CommonName: "ingest", Organization: []string{"Acme"}}, false)

	cfg := Config{Mode: "mtls", TLS: TLSConfig{CertFile: server.certFile, KeyFile: server.keyFile, ClientCAFile: ca.file}}
	if err := cfg.Validate("0.0.0.0:8815"); err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := cfg.ServerTLS()
	if err != nil {
		t.Fatal(err)
	}
	byCN, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ClientPrincipals = map[string]string{"CN=ingest,O=Acme": "ingest-service"}
	mapped, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addrByCN, addrMapped := serve(t, byCN, tlsCfg), serve(t, mapped, tlsCfg)

	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	clientTLS := func(cert *testCert) credentials.TransportCredentials {
		c := &tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS12}
		if cert != nil {
			c.Certificates = []tls.Certificate{cert.pair}
		}
		return credentials.NewTLS(c)
	}
	tests := []struct {
		name  string
		addr  string
		creds credentials.TransportCredentials
		want  string
		code  codes.Code
	}{
		{"known certificate", addrByCN, clientTLS(ingest), "ingest/mtls", codes.OK},
		{"known certificate, mapped", addrMapped, clientTLS(ingest), "ingest-service/mtls", codes.OK},
		{"certificate of the CA, not mapped", addrMapped, clientTLS(stranger), "", codes.Unauthenticated},
		{"certificate of another CA", addrByCN, clientTLS(rogue), "", codes.Unavailable},
		{"no certificate", addrByCN, clientTLS(nil), "", codes.Unavailable},
		{"plaintext", addrByCN, insecure.NewCredentials(), "", codes.Unavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			unary, streaming, code := ask(context.Background(), dial(t, tt.addr, tt.creds))
			if code != tt.code || unary != tt.want || (tt.want != "" && streaming != tt.want) {
				t.Fatalf("got %q, %q, %v; want %q, %v", unary, streaming, code, tt.want, tt.code)
			}
		})
	}
}

func TestGRPCTokenOverTLS(t *testing.T) {
	ca := newTestCA(t, "Sluice test CA")
	server := ca.issue(t, pkix.Name{CommonName: "sluice"}, true)
	cfg := testFiles(t)
	cfg.TLS = TLSConfig{CertFile: server.certFile, KeyFile: server.keyFile}
	if err := cfg.Validate(":8815"); err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := cfg.ServerTLS()
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, a, tlsCfg)
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	c := dial(t, addr, credentials.NewTLS(&tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS12}))
	if unary, streaming, code := ask(withMD("authorization", "Bearer "+ingestToken), c); code != codes.OK || unary != "ingest/token" || streaming != "ingest/token" {
		t.Fatalf("static token over TLS: %q, %q, %v", unary, streaming, code)
	}
	ctx, err := c.AuthenticateBasicToken(context.Background(), "alice", alicePW)
	if err != nil {
		t.Fatal(err)
	}
	if unary, _, code := ask(ctx, c); code != codes.OK || unary != "alice/basic" {
		t.Fatalf("issued token over TLS: %q, %v", unary, code)
	}
	if _, _, code := ask(context.Background(), c); code != codes.Unauthenticated {
		t.Fatalf("no credentials over TLS: %v", code)
	}
	// A client that does not trust the server's CA does not connect.
	if _, _, code := ask(withMD("authorization", "Bearer "+ingestToken), dial(t, addr, credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12}))); code != codes.Unavailable {
		t.Fatalf("untrusted server: %v", code)
	}
}
