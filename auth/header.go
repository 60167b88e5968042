package auth

import (
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The authorization metadata and its schemes, as Flight clients send them
// (pyarrow's FlightCallOptions headers and authenticate_basic_token,
// arrow-go's AuthenticateBasicToken).
const (
	// HeaderAuthorization is the gRPC metadata key of credentials, and of
	// the bearer token the Handshake returns.
	HeaderAuthorization = "authorization"
	// SchemeBearer prefixes a bearer token: "Bearer <token>".
	SchemeBearer = "Bearer"
	// SchemeBasic prefixes basic credentials: "Basic base64(user:password)".
	SchemeBasic = "Basic"
)

// maxHeaderLen bounds an authorization value; longer ones are refused
// before any decoding.
const maxHeaderLen = 4096

// maxPasswordLen is bcrypt's limit: it ignores bytes past the 72nd.
const maxPasswordLen = 72

// parseAuthorization splits an authorization value into its scheme
// (canonical: SchemeBearer or SchemeBasic) and credentials. It accepts what
// HTTP does: the scheme case-insensitively, spaces around and between; the
// credentials are one token68 word without spaces or control characters.
func parseAuthorization(v string) (scheme, credentials string, err error) {
	if len(v) > maxHeaderLen {
		return "", "", fmt.Errorf("%w: malformed authorization header: longer than %d bytes", ErrUnauthenticated, maxHeaderLen)
	}
	v = strings.Trim(v, " \t")
	s, cred, _ := strings.Cut(v, " ")
	cred = strings.TrimLeft(cred, " \t")
	switch {
	case strings.EqualFold(s, SchemeBearer):
		scheme = SchemeBearer
	case strings.EqualFold(s, SchemeBasic):
		scheme = SchemeBasic
	default:
		return "", "", fmt.Errorf("%w: malformed authorization header: want \"Bearer <token>\" or \"Basic <credentials>\"", ErrUnauthenticated)
	}
	if cred == "" {
		return "", "", fmt.Errorf("%w: malformed authorization header: %s without credentials", ErrUnauthenticated, scheme)
	}
	for i := 0; i < len(cred); i++ {
		if c := cred[i]; c <= ' ' || c >= 0x7f {
			return "", "", fmt.Errorf("%w: malformed authorization header: the %s credentials contain a space or a non-ASCII byte", ErrUnauthenticated, scheme)
		}
	}
	return scheme, cred, nil
}

// parseBasic decodes basic credentials, base64 of "user:password" with or
// without padding (pyarrow pads, arrow-go does not).
func parseBasic(cred string) (user, password string, err error) {
	raw, err := base64.StdEncoding.DecodeString(cred)
	if err != nil {
		raw, err = base64.RawStdEncoding.DecodeString(cred)
	}
	if err != nil {
		return "", "", fmt.Errorf("%w: malformed basic credentials: not base64", ErrUnauthenticated)
	}
	user, password, ok := strings.Cut(string(raw), ":")
	switch {
	case !ok:
		return "", "", fmt.Errorf("%w: malformed basic credentials: no ':' between user and password", ErrUnauthenticated)
	case user == "":
		return "", "", fmt.Errorf("%w: malformed basic credentials: empty user name", ErrUnauthenticated)
	case !utf8.ValidString(user) || strings.ContainsFunc(user, isControl):
		return "", "", fmt.Errorf("%w: malformed basic credentials: the user name is not printable UTF-8", ErrUnauthenticated)
	case len(password) > maxPasswordLen:
		return "", "", fmt.Errorf("%w: password longer than %d bytes", ErrUnauthenticated, maxPasswordLen)
	}
	return user, password, nil
}

func isControl(r rune) bool { return r < ' ' || r == 0x7f }
