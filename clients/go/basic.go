package sluice

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// WithBasicAuth authenticates as user with password through Flight's
// basic-auth Handshake (the server's --auth-mode basic), then sends the
// bearer token the server returns with every call. Dial does the first
// Handshake, so wrong credentials fail Dial with codes.Unauthenticated;
// the client handshakes again before its token expires (the server's
// --auth-token-ttl), and once when a call, or a stream before its first
// message, finds its token refused (a server restarted without
// --auth-secret-file forgets the tokens it issued), then repeats the call;
// so a long-running client, and a Subscription with Reconnect, keep
// working. The password crosses the network
// on every Handshake: use TLS beyond a trusted network. It replaces
// WithToken.
func WithBasicAuth(user, password string) Option {
	return func(c *config) { c.basic = &basicAuth{user: user, password: password, now: time.Now} }
}

const handshakeMethod = "/arrow.flight.protocol.FlightService/Handshake"

// basicAuth is the per-call credential of WithBasicAuth: the Basic header
// on the Handshake, the issued bearer token on every other call.
type basicAuth struct {
	user, password string
	now            func() time.Time
	flight         flight.Client // set by Dial before any call

	mu      sync.Mutex
	token   string
	refresh time.Time // handshake again from then on (zero: never)
}

func (b *basicAuth) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	if ri, ok := credentials.RequestInfoFromContext(ctx); ok && ri.Method == handshakeMethod {
		return nil, nil // the Handshake carries the Basic credentials itself
	}
	tok, err := b.current(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]string{"authorization": "Bearer " + tok}, nil
}

// RequireTransportSecurity is false, as for WithToken: plaintext works on
// loopback and trusted networks.
func (b *basicAuth) RequireTransportSecurity() bool { return false }

// current returns a token that is not about to expire, handshaking for a
// new one when needed.
func (b *basicAuth) current(ctx context.Context) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.token != "" && (b.refresh.IsZero() || b.now().Before(b.refresh)) {
		return b.token, nil
	}
	return b.handshake(ctx)
}

// expire forgets a token that the server refused, unless another call has
// replaced it since.
func (b *basicAuth) expire(tok string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.token == tok {
		b.token = ""
	}
}

// handshake gets a new token with arrow-go's basic-auth Handshake; b.mu
// is held.
func (b *basicAuth) handshake(ctx context.Context) (string, error) {
	authed, err := b.flight.AuthenticateBasicToken(ctx, b.user, b.password)
	if err != nil {
		return "", callError(ctx, "Handshake", err)
	}
	md, _ := metadata.FromOutgoingContext(authed)
	vals := md.Get("authorization")
	if len(vals) == 0 || !strings.HasPrefix(vals[len(vals)-1], "Bearer ") {
		return "", &Error{Op: "Handshake", Code: codes.Internal, cause: ErrProtocol,
			Message: fmt.Sprintf("%v: the server answered the basic-auth Handshake without a bearer token "+
				"(is its --auth-mode basic?)", ErrProtocol)}
	}
	issued := b.now()
	b.token = strings.TrimPrefix(vals[len(vals)-1], "Bearer ")
	b.refresh = time.Time{}
	if exp, ok := tokenExpiry(b.token); ok {
		// Renew with a quarter of the lifetime left (at most a minute), so
		// that a call started just before the expiry still gets in.
		b.refresh = exp.Add(-min(exp.Sub(issued)/4, time.Minute))
	}
	return b.token, nil
}

// tokenExpiry reads the expiry of a token that Sluice issued:
// sluice1.<base64url(expiry, 8 bytes big-endian, then the principal)>.<mac>.
func tokenExpiry(tok string) (time.Time, bool) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || parts[0] != "sluice1" {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || len(payload) < 8 {
		return time.Time{}, false
	}
	return time.Unix(int64(binary.BigEndian.Uint64(payload[:8])), 0), true
}

// retryRefused is a unary interceptor of WithBasicAuth: a call refused as
// Unauthenticated (a token expired early, or a server restarted with a new
// secret) handshakes again and is retried once; a second refusal is the
// call's error.
func (b *basicAuth) retryRefused(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if method == handshakeMethod {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	tok, err := b.current(ctx)
	if err != nil {
		return err
	}
	err = invoker(ctx, method, req, reply, cc, opts...)
	if Code(err) != codes.Unauthenticated {
		return err
	}
	b.expire(tok)
	return invoker(ctx, method, req, reply, cc, opts...)
}

// retryRefusedStream is the stream interceptor of WithBasicAuth: a
// server-streaming call (DoGet, DoAction, WatchCommits) refused as
// Unauthenticated before its first message handshakes again and is opened
// once more, with the same request; a second refusal is the call's error.
// A stream refused after a message came, and streams that send more than
// one message, are not opened again.
func (b *basicAuth) retryRefusedStream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn,
	method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if method == handshakeMethod || desc.ClientStreams || !desc.ServerStreams {
		return streamer(ctx, desc, cc, method, opts...)
	}
	tok, err := b.current(ctx)
	if err != nil {
		return nil, err
	}
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		if Code(err) != codes.Unauthenticated {
			return nil, err
		}
		b.expire(tok)
		return streamer(ctx, desc, cc, method, opts...)
	}
	open := func() (grpc.ClientStream, error) {
		b.expire(tok)
		return streamer(ctx, desc, cc, method, opts...)
	}
	return &refusedStream{ClientStream: cs, open: open}, nil
}

// refusedStream is a server-streaming call that opens itself again, once,
// when its first receive fails with codes.Unauthenticated. As every
// grpc.ClientStream, it is not safe for concurrent receives or concurrent
// sends.
type refusedStream struct {
	grpc.ClientStream
	open func() (grpc.ClientStream, error) // opens the call again with a new token

	req      any  // the request sent, for the second stream
	sentLast bool // CloseSend was called
	received bool // a message came: the call is under way
	retried  bool
}

func (s *refusedStream) SendMsg(m any) error {
	s.req = m
	return s.ClientStream.SendMsg(m)
}

func (s *refusedStream) CloseSend() error {
	s.sentLast = true
	return s.ClientStream.CloseSend()
}

func (s *refusedStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err == nil {
		s.received = true
		return nil
	}
	if s.received || s.retried || s.req == nil || status.Code(err) != codes.Unauthenticated {
		return err
	}
	s.retried = true
	cs, oerr := s.open()
	if oerr != nil {
		return oerr
	}
	// A server stream's request goes out as one message, whose failure
	// the receive reports.
	if err := cs.SendMsg(s.req); err != nil {
		return err
	}
	if s.sentLast {
		if err := cs.CloseSend(); err != nil {
			return err
		}
	}
	s.ClientStream = cs
	if err := cs.RecvMsg(m); err != nil {
		return err
	}
	s.received = true
	return nil
}
