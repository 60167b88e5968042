package sluice

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	sluicev1 "github.com/sluicefeed/sluice/gen/sluice/v1"
)

// DefaultAddr is the address a Sluice server listens on by default.
const DefaultAddr = "127.0.0.1:8815"

// Client is a connection to a Sluice server. One gRPC connection carries
// both the Arrow Flight calls that stream changes and the typed control
// calls. A Client is safe for concurrent use by multiple goroutines.
type Client struct {
	conn    *grpc.ClientConn
	flight  flight.Client
	control sluicev1.ControlServiceClient
	mem     memory.Allocator
}

// Dial returns a client of the Sluice server at addr, which is "host:port"
// or a URI with the scheme "grpc" or "grpc+tcp" (plaintext) or "grpc+tls"
// (TLS), such as "grpc+tls://sluice.example.com:443". A bare "host:port"
// is plaintext unless WithTLSConfig is given.
//
// addr may also list several replicas of one deployment, comma-separated
// under one scheme: "grpc://a:8815,b:8815,c:8815". The client connects to
// the first that answers, in the order given; when that connection breaks
// (a replica stops), a call in flight fails with codes.Unavailable and the
// calls after it connect again the same way: to a survivor. A Subscription with Reconnect, or a durable consumer that
// subscribes again, so resumes on another replica. Give each client its
// own order (rotate the list) to spread clients over the replicas.
//
// Dial does not wait for the connection to be established: it starts
// connecting in the background, and a call made while the server cannot
// be reached fails with codes.Unavailable; with WithBasicAuth, though, it
// waits for the first Handshake and returns its failure. ctx bounds only
// the setup; it does not govern the connection's lifetime. Close the
// client to release the connection. The connection's HTTP/2 receive
// window is a fixed 16 MiB, for the connection and each stream: what the
// server may send ahead of the client's reads (WithDialOptions with
// grpc.WithInitialWindowSize and grpc.WithInitialConnWindowSize sets
// others).
func Dial(ctx context.Context, addr string, opts ...Option) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sluice: dial %s: %w", addr, err)
	}
	var cfg config
	for _, opt := range opts {
		opt(&cfg)
	}
	targets, scheme, err := parseAddrs(addr)
	if err != nil {
		return nil, fmt.Errorf("sluice: dial: %w", err)
	}
	target := targets[0]

	var creds credentials.TransportCredentials
	switch {
	case scheme == schemeTLS || (scheme == "" && cfg.tls != nil):
		tc := cfg.tls
		if tc == nil {
			tc = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		creds = credentials.NewTLS(tc.Clone())
	case cfg.tls != nil:
		return nil, fmt.Errorf("sluice: dial %s: the %s:// scheme is plaintext, but a TLS configuration was given "+
			"(use %s://)", addr, scheme, schemeTLS)
	default:
		creds = insecure.NewCredentials()
	}

	dialOpts := []grpc.DialOption{grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(newFlightCodec())),
		grpc.WithInitialWindowSize(receiveWindowBytes), grpc.WithInitialConnWindowSize(receiveWindowBytes)}
	switch {
	case cfg.basic != nil:
		dialOpts = append(dialOpts, grpc.WithPerRPCCredentials(cfg.basic),
			grpc.WithChainUnaryInterceptor(cfg.basic.retryRefused),
			grpc.WithChainStreamInterceptor(cfg.basic.retryRefusedStream))
	case cfg.token != "":
		dialOpts = append(dialOpts, grpc.WithPerRPCCredentials(bearerToken(cfg.token)))
	}
	if len(targets) > 1 {
		// Several replicas: a resolver of this client's own hands gRPC
		// every address, and its default policy (pick_first) connects to
		// the first that answers. TLS checks each by its own host name.
		r := manual.NewBuilderWithScheme("sluice-replicas")
		addrs := make([]resolver.Address, len(targets))
		for i, t := range targets {
			host, _, _ := net.SplitHostPort(t)
			addrs[i] = resolver.Address{Addr: t, ServerName: host}
		}
		r.InitialState(resolver.State{Addresses: addrs})
		dialOpts = append(dialOpts, grpc.WithResolvers(r))
		target = r.Scheme() + ":///replicas"
	}
	dialOpts = append(dialOpts, cfg.dialOpts...)
	conn, err := grpc.NewClient(target, dialOpts...)
	if err != nil {
		return nil, fmt.Errorf("sluice: dial %s: %w", addr, err)
	}
	conn.Connect()

	mem := cfg.mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	c := &Client{
		conn:    conn,
		flight:  flight.NewClientFromConn(conn, nil),
		control: sluicev1.NewControlServiceClient(conn),
		mem:     mem,
	}
	if cfg.basic != nil {
		cfg.basic.flight = c.flight
		cfg.basic.mu.Lock()
		_, err := cfg.basic.handshake(ctx)
		cfg.basic.mu.Unlock()
		if err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("sluice: dial %s: %w", addr, err)
		}
	}
	return c, nil
}

// Close closes the connection. Calls and ChangeReaders still in flight
// fail; their readers must still be released.
func (c *Client) Close() error {
	return c.conn.Close()
}

// receiveWindowBytes is the HTTP/2 flow-control window of the client's
// connection and of each of its streams: how much the server may send
// that the client has not read yet. gRPC's default starts at 64 KiB and
// grows up to 16 MiB by the bandwidth-delay pings it sends while data
// flows; a fixed window of that size never holds the server back more
// than the grown one would, spares the pings and most window updates (the
// server reads a fifth as often), and makes a follow stream cost flightd
// about a fifth less CPU (docs/OPERATIONS.md, Decode cache). The memory a
// client may hold unread stays the grown window's: 16 MiB per connection.
// WithDialOptions overrides it.
const receiveWindowBytes = 16 << 20

// Address schemes.
const (
	schemeGRPC = "grpc"
	schemeTCP  = "grpc+tcp"
	schemeTLS  = "grpc+tls"
)

var errBadAddr = errors.New("invalid address")

// parseAddr splits addr into a "host:port" gRPC target and its scheme
// ("" for a bare "host:port").
func parseAddr(addr string) (target, scheme string, err error) {
	hostport := addr
	if s, rest, ok := strings.Cut(addr, "://"); ok {
		switch s {
		case schemeGRPC, schemeTCP, schemeTLS:
		default:
			return "", "", fmt.Errorf("%w %q: unknown scheme %q (want grpc://, grpc+tcp:// or grpc+tls://)",
				errBadAddr, addr, s)
		}
		scheme, hostport = s, strings.TrimSuffix(rest, "/")
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || host == "" || port == "" || strings.ContainsAny(hostport, "/?#@") {
		return "", "", fmt.Errorf("%w %q: want host:port, optionally after grpc://, grpc+tcp:// or grpc+tls://",
			errBadAddr, addr)
	}
	return net.JoinHostPort(host, port), scheme, nil
}

// parseAddrs parses an address, or several comma-separated under one
// scheme (given on the first, or on each).
func parseAddrs(addr string) (targets []string, scheme string, err error) {
	if !strings.Contains(addr, ",") {
		target, scheme, err := parseAddr(addr)
		if err != nil {
			return nil, "", err
		}
		return []string{target}, scheme, nil
	}
	for i, part := range strings.Split(addr, ",") {
		target, s, err := parseAddr(strings.TrimSpace(part))
		if err != nil {
			return nil, "", fmt.Errorf("%w (in the list %q)", err, addr)
		}
		switch {
		case i == 0:
			scheme = s
		case s != "" && s != scheme:
			return nil, "", fmt.Errorf("%w %q: the replicas of a list share one scheme, but %q is %s:// and the "+
				"first is %s://", errBadAddr, addr, part, s, cmp.Or(scheme, "bare"))
		}
		if slices.Contains(targets, target) {
			return nil, "", fmt.Errorf("%w %q: %s is listed twice", errBadAddr, addr, target)
		}
		targets = append(targets, target)
	}
	return targets, scheme, nil
}

// bearerToken sends "authorization: Bearer <token>" with every call.
type bearerToken string

func (t bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(t)}, nil
}

// RequireTransportSecurity is false so that tokens also work with
// plaintext servers on a local network or in tests.
func (t bearerToken) RequireTransportSecurity() bool { return false }
