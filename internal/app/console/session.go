package console

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"

	"google.golang.org/grpc/metadata"

	"github.com/sluicefeed/sluice/auth"
)

// CookieName is the session cookie: the caller's bearer token, HTTP-only.
const CookieName = "sluice_session"

// TokenUser is the basic-auth user name that says the password is a bearer
// token (a static token of mode token, or one the basic login issued).
const TokenUser = "token"

// caller is the authenticated caller of a request.
type caller struct {
	principal auth.Principal
	// token is the bearer token the console's calls carry ("" while
	// authentication is off).
	token string
}

type callerKey struct{}

func callerOf(ctx context.Context) caller {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c
}

// outgoing returns the context of the console's calls to the service on
// behalf of the request's caller: they carry its bearer token.
func outgoing(ctx context.Context) context.Context {
	if tok := callerOf(ctx).token; tok != "" {
		return metadata.AppendToOutgoingContext(ctx, auth.HeaderAuthorization, auth.SchemeBearer+" "+tok)
	}
	return ctx
}

// authenticate establishes the caller of a request: its session cookie,
// else its Authorization header (a bearer token, or basic credentials,
// which log in and set the cookie). It answers 401 itself, with a basic
// challenge so that the browser asks for a login, when there are none or
// they are wrong.
func (c *Console) authenticate(w http.ResponseWriter, r *http.Request) (context.Context, bool) {
	ctx := r.Context()
	a := c.opts.Authenticator
	if a == nil {
		return context.WithValue(ctx, callerKey{}, caller{principal: auth.Anonymous}), true
	}
	if ck, err := r.Cookie(CookieName); err == nil && ck.Value != "" {
		p, err := bearer(a, ck.Value)
		if err == nil {
			return context.WithValue(ctx, callerKey{}, caller{principal: p, token: ck.Value}), true
		}
		// An expired or revoked session: forget it, and try the header
		// (the browser resends its basic login).
		http.SetCookie(w, c.cookie("", -1))
		if r.Header.Get("Authorization") == "" {
			c.refuse(w, r, err)
			return nil, false
		}
	}
	header := r.Header.Values("Authorization")
	if len(header) == 0 {
		c.refuse(w, r, fmt.Errorf("%w: no credentials: log in, or send \"Authorization: Bearer <token>\"",
			auth.ErrUnauthenticated))
		return nil, false
	}
	if len(header) > 1 {
		c.refuse(w, r, fmt.Errorf("%w: %d Authorization headers, want one", auth.ErrUnauthenticated, len(header)))
		return nil, false
	}
	scheme, cred, _ := strings.Cut(strings.TrimSpace(header[0]), " ")
	cred = strings.TrimSpace(cred)
	switch {
	case strings.EqualFold(scheme, auth.SchemeBearer):
		p, err := bearer(a, cred)
		if err != nil {
			c.refuse(w, r, err)
			return nil, false
		}
		return context.WithValue(ctx, callerKey{}, caller{principal: p, token: cred}), true
	case strings.EqualFold(scheme, auth.SchemeBasic):
		if !c.logins.allow(hostOf(r.RemoteAddr)) {
			c.log(r, http.StatusTooManyRequests, "ResourceExhausted", "", "too many logins from this address")
			http.Error(w, "ResourceExhausted: too many logins from this address: retry in a second",
				http.StatusTooManyRequests)
			return nil, false
		}
		p, tok, err := c.login(ctx, header[0])
		if err != nil {
			c.refuse(w, r, err)
			return nil, false
		}
		http.SetCookie(w, c.cookie(tok, 0))
		return context.WithValue(ctx, callerKey{}, caller{principal: p, token: tok}), true
	default:
		c.refuse(w, r, fmt.Errorf("%w: unsupported authorization scheme: want Bearer or Basic",
			auth.ErrUnauthenticated))
		return nil, false
	}
}

// bearer checks a bearer token as the service does.
func bearer(a *auth.Authenticator, tok string) (auth.Principal, error) {
	return a.AuthenticateMetadata(metadata.Pairs(auth.HeaderAuthorization, auth.SchemeBearer+" "+tok), nil)
}

// login checks basic credentials: the user "token" with a bearer token as
// the password, or a user of the users file, for whom it runs the
// service's basic login (the Flight Handshake's) and returns the token it
// issues.
func (c *Console) login(ctx context.Context, header string) (auth.Principal, string, error) {
	a := c.opts.Authenticator
	if user, pw, ok := parseBasic(header); ok && user == TokenUser {
		if p, err := bearer(a, pw); err == nil {
			return p, pw, nil
		}
	}
	in := metadata.NewIncomingContext(ctx, metadata.Pairs(auth.HeaderAuthorization, header))
	p, md, err := a.Handshake(in)
	if err != nil {
		return auth.Principal{}, "", err
	}
	vals := md.Get(auth.HeaderAuthorization)
	if len(vals) != 1 {
		// Modes without a users file answer basic credentials with an
		// error above; this is a configuration the console cannot use.
		return auth.Principal{}, "", fmt.Errorf("%w: basic login issued no token", auth.ErrUnauthenticated)
	}
	tok, ok := strings.CutPrefix(vals[0], auth.SchemeBearer+" ")
	if !ok {
		return auth.Principal{}, "", fmt.Errorf("%w: basic login issued no bearer token", auth.ErrUnauthenticated)
	}
	return p, tok, nil
}

// parseBasic returns the user and password of a basic Authorization
// header.
func parseBasic(header string) (user, password string, ok bool) {
	r := &http.Request{Header: http.Header{"Authorization": {header}}}
	return r.BasicAuth()
}

// cookie returns the session cookie holding tok; maxAge -1 deletes it.
func (c *Console) cookie(tok string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: tok, Path: "/", MaxAge: maxAge, HttpOnly: true,
		Secure: c.opts.SecureCookie, SameSite: http.SameSiteStrictMode}
}

// refuse answers 401 with a basic challenge (the browser then asks for a
// login) and logs the refusal, never the credentials.
func (c *Console) refuse(w http.ResponseWriter, r *http.Request, err error) {
	msg := err.Error()
	if i := strings.Index(msg, auth.ErrUnauthenticated.Error()+": "); i >= 0 {
		msg = msg[i+len(auth.ErrUnauthenticated.Error())+2:]
	}
	if !errors.Is(err, auth.ErrUnauthenticated) {
		msg = "login failed: " + msg
	}
	c.log(r, http.StatusUnauthorized, "Unauthenticated", "", msg)
	w.Header().Set("WWW-Authenticate", `Basic realm="Sluice console", charset="UTF-8"`)
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, "Unauthenticated: "+msg, http.StatusUnauthorized)
}

// log logs a refused or failed request at info, like the service's
// refused calls.
func (c *Console) log(r *http.Request, httpStatus int, code, principal, msg string) {
	attrs := []any{"path", r.URL.Path, "status", httpStatus, "code", code, "peer", r.RemoteAddr}
	if principal != "" {
		attrs = append(attrs, "principal", principal)
	}
	c.opts.Logger.InfoContext(r.Context(), "console request refused", append(attrs, "error", msg)...)
}

func hostOf(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// rateLimiter is a token bucket per key, of capacity twice the rate.
type rateLimiter struct {
	rate float64
	// mu guards buckets.
	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     int64 // unix nanoseconds
}

func newRateLimiter(rate float64) *rateLimiter {
	return &rateLimiter{rate: rate, buckets: map[string]*bucket{}}
}

func (l *rateLimiter) allow(key string) bool {
	if l.rate < 0 {
		return true
	}
	t := now().UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= 10_000 {
			l.buckets = map[string]*bucket{} // bounded memory; forgets idle addresses
		}
		b = &bucket{tokens: 2 * l.rate, at: t}
		l.buckets[key] = b
	}
	b.tokens = min(2*l.rate, b.tokens+float64(t-b.at)/1e9*l.rate)
	b.at = t
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
