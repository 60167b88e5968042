package spark

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Remote is a parsed Spark Connect URI, as Spark's clients spell it:
//
//	sc://host[:port][/;param=value;...]
//
// with the parameters token (a bearer token; implies TLS), use_ssl
// (true/false), user_id and user_agent. The port defaults to 15002.
type Remote struct {
	// Host and Port address the server.
	Host string
	Port int
	// Token is sent as "authorization: Bearer <token>" with every call.
	Token string
	// TLS is set by use_ssl=true or by a token.
	TLS bool
	// UserID is the user of the session's user context; default "sluice".
	UserID string
	// UserAgent is the client type the server logs; default "sluice".
	UserAgent string
}

// DefaultPort is Spark Connect's default port.
const DefaultPort = 15002

// ParseRemote parses a Spark Connect URI. Errors wrap ErrInvalidRequest.
func ParseRemote(uri string) (Remote, error) {
	shown := redactURI(uri)
	rest, ok := strings.CutPrefix(uri, "sc://")
	if !ok {
		return Remote{}, fmt.Errorf("%w: Spark Connect URI %q does not start with sc://", ErrInvalidRequest, shown)
	}
	hostport, params, _ := strings.Cut(rest, "/")
	r := Remote{Port: DefaultPort, UserID: "sluice", UserAgent: "sluice"}
	if hostport == "" {
		return Remote{}, fmt.Errorf("%w: Spark Connect URI %q has no host", ErrInvalidRequest, shown)
	}
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		port, err := strconv.Atoi(p)
		if err != nil || port <= 0 || port > 65535 {
			return Remote{}, fmt.Errorf("%w: Spark Connect URI %q: bad port %q", ErrInvalidRequest, shown, p)
		}
		r.Host, r.Port = h, port
	} else {
		r.Host = hostport
	}
	if params != "" && !strings.HasPrefix(params, ";") {
		return Remote{}, fmt.Errorf("%w: Spark Connect URI %q: parameters follow \"/;\"", ErrInvalidRequest, shown)
	}
	for _, kv := range strings.Split(strings.TrimPrefix(params, ";"), ";") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return Remote{}, fmt.Errorf("%w: Spark Connect URI %q: parameter %q has no value", ErrInvalidRequest, shown, k)
		}
		v, err := url.QueryUnescape(v)
		if err != nil {
			return Remote{}, fmt.Errorf("%w: Spark Connect URI %q: parameter %q: %v", ErrInvalidRequest, shown, k, err)
		}
		switch k {
		case "token":
			r.Token, r.TLS = v, true
		case "use_ssl":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return Remote{}, fmt.Errorf("%w: Spark Connect URI %q: use_ssl=%q", ErrInvalidRequest, shown, v)
			}
			r.TLS = b || r.Token != ""
		case "user_id":
			r.UserID = v
		case "user_agent":
			r.UserAgent = v
		case "session_id":
			// A session of its own per Session: an id from the URI would
			// be shared by every Session dialled with it.
			return Remote{}, fmt.Errorf("%w: Spark Connect URI %q: session_id is chosen by Sluice", ErrInvalidRequest, shown)
		default:
			// Spark's clients send unknown parameters as headers; Sluice
			// knows no others and refuses them rather than guess.
			return Remote{}, fmt.Errorf("%w: Spark Connect URI %q: unknown parameter %q", ErrInvalidRequest, shown, k)
		}
	}
	return r, nil
}

// Addr is host:port.
func (r Remote) Addr() string { return net.JoinHostPort(r.Host, strconv.Itoa(r.Port)) }

// String is the URI without its token.
func (r Remote) String() string {
	s := "sc://" + r.Addr()
	if r.TLS {
		s += "/;use_ssl=true"
	}
	return s
}

// redactURI returns uri for messages: its parameters' values (a token)
// left out.
func redactURI(uri string) string {
	base, params, ok := strings.Cut(uri, "/;")
	if !ok {
		return uri
	}
	var names []string
	for _, kv := range strings.Split(params, ";") {
		if k, _, _ := strings.Cut(kv, "="); k != "" {
			names = append(names, k+"=…")
		}
	}
	return base + "/;" + strings.Join(names, ";")
}
