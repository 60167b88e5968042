package sluice_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

func TestDial(t *testing.T) {
	cat := newWarehouse(t)
	createTable(t, cat, emptyTable, nil)
	srv := serve(t, cat)
	_, port, _ := net.SplitHostPort(srv.addr)

	t.Run("addresses", func(t *testing.T) {
		for _, addr := range []string{
			srv.addr,
			"grpc://" + srv.addr,
			"grpc+tcp://" + srv.addr,
			"grpc://" + srv.addr + "/",
			"[::ffff:127.0.0.1]:" + port,
		} {
			c, _ := dial(t, addr)
			if _, err := c.ListTables(t.Context()); err != nil {
				t.Errorf("%s: %v", addr, err)
			}
		}
	})

	t.Run("invalid addresses", func(t *testing.T) {
		for _, addr := range []string{
			"",
			"127.0.0.1",
			":" + port,
			"http://" + srv.addr,
			"grpc://",
			"grpc://" + srv.addr + "/path",
			"grpc://user@" + srv.addr,
			"grpc+tls:" + srv.addr,
		} {
			c, err := sluice.Dial(t.Context(), addr)
			if err == nil {
				c.Close()
				t.Errorf("Dial(%q) succeeded", addr)
			}
		}
	})

	t.Run("plaintext scheme with TLS configuration", func(t *testing.T) {
		c, err := sluice.Dial(t.Context(), "grpc://"+srv.addr, sluice.WithTLSConfig(&tls.Config{}))
		if err == nil {
			c.Close()
			t.Error("Dial succeeded")
		}
	})

	t.Run("unreachable server", func(t *testing.T) {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := lis.Addr().String()
		lis.Close()
		c, _ := dial(t, addr)
		if _, err := c.CommitSeq(t.Context(), emptyTable); sluice.Code(err) != codes.Unavailable {
			t.Errorf("call to a closed port: %v, want Unavailable", err)
		}
	})

	t.Run("closed client", func(t *testing.T) {
		c, err := sluice.Dial(t.Context(), srv.addr)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CommitSeq(t.Context(), emptyTable); err == nil {
			t.Error("call on a closed client succeeded")
		}
	})
}

func TestTLS(t *testing.T) {
	cert, roots := selfSignedCert(t)
	cat := newWarehouse(t)
	createTable(t, cat, emptyTable, nil)
	srv := serve(t, cat, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}})))
	trust := sluice.WithTLSConfig(&tls.Config{RootCAs: roots})

	tests := []struct {
		name string
		addr string
		opts []sluice.Option
		want codes.Code
	}{
		{"grpc+tls with the server's root", "grpc+tls://" + srv.addr, []sluice.Option{trust}, codes.OK},
		{"host:port with a TLS configuration", srv.addr, []sluice.Option{trust}, codes.OK},
		{"grpc+tls with the system roots", "grpc+tls://" + srv.addr, nil, codes.Unavailable},
		{"plaintext", "grpc://" + srv.addr, nil, codes.Unavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := dial(t, tt.addr, tt.opts...)
			if _, err := c.ListTables(t.Context()); sluice.Code(err) != tt.want {
				t.Errorf("ListTables: %v, want %s", err, tt.want)
			}
		})
	}
}

// selfSignedCert returns a certificate for 127.0.0.1 and a pool that
// trusts it.
func selfSignedCert(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "sluice test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, roots
}

func TestToken(t *testing.T) {
	cat := newWarehouse(t)
	createTable(t, cat, ordersTable, history[:1])

	tests := []struct {
		name string
		opts []sluice.Option
		want []string
	}{
		{"with a token", []sluice.Option{sluice.WithToken("s3cret")}, []string{"Bearer s3cret"}},
		{"without a token", nil, nil},
		{"empty token", []sluice.Option{sluice.WithToken("")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, cat)
			c, _ := dial(t, srv.addr, tt.opts...)
			ctx := t.Context()
			req := sluice.ChangeRequest{Table: ordersTable}
			if _, err := c.CommitSeq(ctx, ordersTable); err != nil {
				t.Fatal(err)
			}
			if _, err := c.ListTables(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Snapshots(ctx, ordersTable); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Explain(ctx, req); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Schema(ctx, req); err != nil {
				t.Fatal(err)
			}
			r, err := c.Changes(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := readAll(t, r); err != nil {
				t.Fatal(err)
			}
			r.Release()

			calls := srv.auth.calls()
			for _, method := range []string{
				"/sluice.v1.ControlService/CommitSeq",
				"/sluice.v1.ControlService/ListTables",
				"/sluice.v1.ControlService/ListSnapshots",
				"/sluice.v1.ControlService/Explain",
				"/arrow.flight.protocol.FlightService/GetSchema",
				"/arrow.flight.protocol.FlightService/GetFlightInfo",
				"/arrow.flight.protocol.FlightService/DoGet",
			} {
				got, ok := calls[method]
				if !ok {
					t.Errorf("%s was not called", method)
					continue
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("%s: authorization %q, want %q", method, got, tt.want)
				}
			}
		})
	}
}

func TestCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want codes.Code
	}{
		{"nil", nil, codes.OK},
		{"plain error", errors.New("boom"), codes.Unknown},
		{"status", status.Error(codes.NotFound, "gone"), codes.NotFound},
		{"wrapped status", fmt.Errorf("wrapped: %w", status.Error(codes.PermissionDenied, "no")), codes.PermissionDenied},
		{"canceled", context.Canceled, codes.Canceled},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{"sluice error", &sluice.Error{Op: "Changes", Code: codes.ResourceExhausted}, codes.ResourceExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sluice.Code(tt.err); got != tt.want {
				t.Errorf("Code(%v) = %s, want %s", tt.err, got, tt.want)
			}
		})
	}
}
