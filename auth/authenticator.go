package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// Authenticator establishes the principal of a gRPC call from its metadata
// and its connection. It is immutable and safe for concurrent use.
type Authenticator struct {
	modes modes
	// tokens are the static tokens (mode token).
	tokens staticTokens
	// users and issuer serve the Handshake and its tokens (mode basic).
	users  *users
	issuer *issuer
	// clientPrincipals maps certificate subjects to names (mode mtls).
	clientPrincipals map[string]string
	// now is the clock of token expiry; time.Now but in tests.
	now func() time.Time
}

// New returns the Authenticator of cfg, loading its tokens, users and
// secret files. It checks cfg like Validate but for the listen address,
// which the caller checks with cfg.Validate.
func New(cfg Config) (*Authenticator, error) {
	cfg = cfg.WithDefaults()
	m, err := cfg.check()
	if err != nil {
		return nil, err
	}
	a := &Authenticator{modes: m, now: time.Now}
	if m.token {
		if a.tokens, err = loadTokens(cfg.TokensFile); err != nil {
			return nil, err
		}
	}
	if m.basic {
		if a.users, err = loadUsers(cfg.UsersFile); err != nil {
			return nil, err
		}
		if a.issuer, err = newIssuer(cfg.SecretFile, cfg.TokenTTL); err != nil {
			return nil, err
		}
	}
	if m.mtls {
		a.clientPrincipals = cfg.ClientPrincipals
	}
	return a, nil
}

// Authenticate returns the principal of the call whose server context is
// ctx, from its incoming metadata and its peer (see AuthenticateMetadata).
// The server calls it from its interceptors for every call but the Flight
// Handshake (which calls Handshake) and health checks, and stores the
// principal with NewContext.
func (a *Authenticator) Authenticate(ctx context.Context) (Principal, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	p, _ := peer.FromContext(ctx)
	return a.AuthenticateMetadata(md, p)
}

// AuthenticateMetadata returns the principal of a call with incoming
// metadata md over the connection p (either may be nil), or an error
// wrapping ErrUnauthenticated:
//
//   - mode off: Anonymous, whatever the call carries;
//   - mode mtls: the verified client certificate's mapped name or common
//     name; a connection without one, or whose certificate ClientPrincipals
//     does not map, is refused;
//   - modes token and basic: the metadata "authorization: Bearer <token>",
//     a static token (mode token) or one the Handshake issued (mode basic).
//     Missing, repeated or malformed authorization metadata, an unknown,
//     tampered or expired token, and basic credentials (which only the
//     Handshake takes) are refused.
func (a *Authenticator) AuthenticateMetadata(md metadata.MD, p *peer.Peer) (Principal, error) {
	switch {
	case a.modes.off:
		return Anonymous, nil
	case a.modes.mtls:
		return a.fromCertificate(p)
	}
	scheme, cred, err := authorization(md)
	if err != nil {
		return Principal{}, err
	}
	if scheme == SchemeBasic {
		return Principal{}, fmt.Errorf("%w: basic credentials are accepted only by the Flight Handshake: send the bearer token it returns", ErrUnauthenticated)
	}
	return a.fromBearer(cred)
}

// Handshake serves the Flight basic-auth Handshake, as pyarrow's
// FlightClient.authenticate_basic_token and arrow-go's
// Client.AuthenticateBasicToken call it: the call's incoming metadata holds
// "authorization: Basic base64(user:password)"; on success Handshake
// returns the user's principal and the metadata
// "authorization: Bearer <token>", which the server must send as the
// Handshake's response header (stream.SetHeader) before returning without
// sending any message. Later calls send that metadata; the token expires
// after the configured TTL.
//
// A Handshake with a bearer token, in mode mtls or in mode off is
// authenticated like any other call and returns nil metadata: nothing to
// send. Missing or wrong credentials, an unknown user (which takes as long
// as a wrong password) and basic credentials while mode basic is off are
// errors wrapping ErrUnauthenticated.
// Handshake returns ctx's error if ctx ends while it waits for one of the
// bounded password-checking slots.
func (a *Authenticator) Handshake(ctx context.Context) (Principal, metadata.MD, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if a.modes.off || a.modes.mtls {
		p, err := a.Authenticate(ctx)
		return p, nil, err
	}
	if len(md.Get(HeaderAuthorization)) == 0 && a.users != nil {
		return Principal{}, nil, fmt.Errorf("%w: no credentials: the Handshake takes the metadata \"authorization: Basic base64(user:password)\"", ErrUnauthenticated)
	}
	scheme, cred, err := authorization(md)
	if err != nil {
		return Principal{}, nil, err
	}
	if scheme == SchemeBearer {
		p, err := a.fromBearer(cred)
		return p, nil, err
	}
	if a.users == nil {
		return Principal{}, nil, fmt.Errorf("%w: basic authentication is not enabled (mode %s): send a bearer token", ErrUnauthenticated, a.modeString())
	}
	user, password, err := parseBasic(cred)
	if err != nil {
		return Principal{}, nil, err
	}
	ok, err := a.users.verify(ctx, user, password)
	if err != nil {
		return Principal{}, nil, err
	}
	if !ok {
		// Not naming the user: a password typed as a user name would end
		// up in the logs.
		return Principal{}, nil, fmt.Errorf("%w: wrong user name or password", ErrUnauthenticated)
	}
	tok, _, err := a.issuer.issue(user, a.now())
	if err != nil {
		return Principal{}, nil, err
	}
	return Principal{Name: user, Method: MethodBasic}, metadata.Pairs(HeaderAuthorization, SchemeBearer+" "+tok), nil
}

// authorization returns the parsed authorization metadata of md: exactly
// one value.
func authorization(md metadata.MD) (scheme, cred string, err error) {
	vals := md.Get(HeaderAuthorization)
	switch len(vals) {
	case 0:
		return "", "", fmt.Errorf("%w: no credentials: send the metadata \"authorization: Bearer <token>\"", ErrUnauthenticated)
	case 1:
		return parseAuthorization(vals[0])
	default:
		return "", "", fmt.Errorf("%w: malformed authorization header: %d values, want one", ErrUnauthenticated, len(vals))
	}
}

// fromBearer returns the principal of a bearer token: a static one, or one
// the Handshake issued.
func (a *Authenticator) fromBearer(tok string) (Principal, error) {
	if a.tokens != nil {
		if name, ok := a.tokens.lookup(tok); ok {
			return Principal{Name: name, Method: MethodToken}, nil
		}
	}
	if a.issuer != nil {
		name, err := a.issuer.verify(tok, a.now())
		if err == nil {
			return Principal{Name: name, Method: MethodBasic}, nil
		}
		if !errors.Is(err, errNotIssued) {
			return Principal{}, err
		}
	}
	return Principal{}, fmt.Errorf("%w: unknown bearer token", ErrUnauthenticated)
}

// fromCertificate returns the principal of the verified client certificate
// of the connection p.
func (a *Authenticator) fromCertificate(p *peer.Peer) (Principal, error) {
	var info credentials.TLSInfo
	ok := false
	if p != nil {
		info, ok = p.AuthInfo.(credentials.TLSInfo)
	}
	if !ok {
		return Principal{}, fmt.Errorf("%w: no client certificate: the connection is not TLS", ErrUnauthenticated)
	}
	chains := info.State.VerifiedChains
	if len(chains) == 0 || len(chains[0]) == 0 {
		return Principal{}, fmt.Errorf("%w: no verified client certificate", ErrUnauthenticated)
	}
	leaf := chains[0][0]
	subject, cn := leaf.Subject.String(), leaf.Subject.CommonName
	if len(a.clientPrincipals) > 0 {
		if name, ok := a.clientPrincipals[subject]; ok {
			return Principal{Name: name, Method: MethodMTLS}, nil
		}
		// A common name that looks like a subject could otherwise match a
		// key meant for another certificate's whole subject.
		if cn != "" && !strings.Contains(cn, "=") {
			if name, ok := a.clientPrincipals[cn]; ok {
				return Principal{Name: name, Method: MethodMTLS}, nil
			}
		}
		return Principal{}, fmt.Errorf("%w: unknown client certificate %q", ErrUnauthenticated, subject)
	}
	if cn == "" {
		return Principal{}, fmt.Errorf("%w: client certificate %q has no common name", ErrUnauthenticated, subject)
	}
	return Principal{Name: cn, Method: MethodMTLS}, nil
}

func (a *Authenticator) modeString() string {
	var parts []string
	for _, m := range []struct {
		on   bool
		name string
	}{{a.modes.off, ModeOff}, {a.modes.token, ModeToken}, {a.modes.basic, ModeBasic}, {a.modes.mtls, ModeMTLS}} {
		if m.on {
			parts = append(parts, m.name)
		}
	}
	return strings.Join(parts, ",")
}
