package auth

import "context"

// Authentication methods, the values of Principal.Method.
const (
	// MethodToken is a static bearer token from the tokens file.
	MethodToken = "token"
	// MethodBasic is a user of the users file, authenticated by the Flight
	// basic-auth Handshake or by the bearer token it issued.
	MethodBasic = "basic"
	// MethodMTLS is a verified TLS client certificate.
	MethodMTLS = "mtls"
	// MethodAnonymous is any caller while authentication is off.
	MethodAnonymous = "anonymous"
)

// AnonymousName is the name of the principal of every caller while
// authentication is off. Authorization rules apply to it like to any other
// name.
const AnonymousName = "anonymous"

// Principal is an authenticated caller.
type Principal struct {
	// Name identifies the caller: the principal of a static token, the
	// user name, the client certificate's mapped name or common name, or
	// AnonymousName. Authorization rules match it.
	Name string
	// Method is how the caller authenticated: MethodToken, MethodBasic,
	// MethodMTLS or MethodAnonymous.
	Method string
}

// Anonymous is the principal of every caller while authentication is off.
var Anonymous = Principal{Name: AnonymousName, Method: MethodAnonymous}

// String returns the principal as "name (method)", for logs.
func (p Principal) String() string { return p.Name + " (" + p.Method + ")" }

type principalKey struct{}

// NewContext returns a copy of ctx that carries p.
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal that NewContext stored in ctx, and
// whether there was one.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
