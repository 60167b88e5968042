package testsvc

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// OAuth2 makes a [Proxy] require OAuth2, as a REST catalog with an
// authorization server does: its token endpoint grants client_credentials
// tokens to ClientID with ClientSecret only, and every other request
// without a bearer token it issued (or one of Tokens) gets 401.
type OAuth2 struct {
	ClientID     string
	ClientSecret string
	// Scope, when set, must be among the scopes a token request asks for
	// (400 invalid_scope otherwise).
	Scope string
	// TokenPath is the token endpoint's path on the proxy; empty:
	// /v1/oauth/tokens, the catalog's own. Another path (say
	// /oauth2/token) stands for a separate authorization server: the
	// catalog's /v1/oauth/tokens then answers 404, so only a client given
	// that URI (oauth2-server-uri) gets a token.
	TokenPath string
	// Tokens are bearer tokens accepted besides the issued ones (a static
	// token).
	Tokens []string
	// TTL is the issued tokens' lifetime (expires_in); zero: one hour.
	TTL time.Duration
}

// Request is one request the proxy saw.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	Route  string // method and path pattern, e.g. "GET /v1/namespaces/{namespace}/tables/{table}"
	Status int
	Time   time.Time
}

// Proxy is an HTTP proxy in front of a REST catalog server. It records
// every request (with its route, see [Route]), can require OAuth2, and can
// go down and come up again on the same address.
type Proxy struct {
	addr  string
	oauth *OAuth2

	mu       sync.Mutex // guards the fields below
	backend  *url.URL
	srv      *http.Server
	reqs     []Request
	tokens   map[string]time.Time // issued token: expiry
	declined int                  // token requests refused
}

// NewProxy starts a proxy to backend (http://host:port) on a free
// loopback port; oauth may be nil.
func NewProxy(backend string, oauth *OAuth2) (*Proxy, error) {
	u, err := url.Parse(backend)
	if err != nil {
		return nil, err
	}
	if oauth != nil && oauth.TokenPath == "" {
		o := *oauth
		o.TokenPath = "/v1/oauth/tokens"
		oauth = &o
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{addr: l.Addr().String(), oauth: oauth, backend: u, tokens: map[string]time.Time{}}
	p.serve(l)
	return p, nil
}

// URI is the proxy's address, http://127.0.0.1:port.
func (p *Proxy) URI() string { return "http://" + p.addr }

// TokenURI is the OAuth2 token endpoint's URI (with OAuth2 set).
func (p *Proxy) TokenURI() string {
	if p.oauth == nil {
		return ""
	}
	return p.URI() + p.oauth.TokenPath
}

func (p *Proxy) serve(l net.Listener) {
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			p.mu.Lock()
			b := p.backend
			p.mu.Unlock()
			r.SetURL(b)
		},
		ErrorLog: log.New(io.Discard, "", 0), // a backend that is down is what some tests want
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		p.handle(rec, r, rp)
		p.mu.Lock()
		p.reqs = append(p.reqs, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(),
			Route: Route(r.Method, r.URL.Path), Status: rec.status, Time: time.Now()})
		p.mu.Unlock()
	})}
	p.mu.Lock()
	p.srv = srv
	p.mu.Unlock()
	go srv.Serve(l) //nolint:errcheck // ends with Close
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (p *Proxy) handle(w http.ResponseWriter, r *http.Request, rp http.Handler) {
	o := p.oauth
	if o == nil {
		rp.ServeHTTP(w, r)
		return
	}
	if r.URL.Path == o.TokenPath {
		p.token(w, r)
		return
	}
	if r.URL.Path == "/v1/oauth/tokens" {
		http.NotFound(w, r) // tokens come from the separate server only
		return
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || !p.valid(tok) {
		restError(w, http.StatusUnauthorized, "NotAuthorizedException", "a valid bearer token is required")
		return
	}
	rp.ServeHTTP(w, r)
}

func (p *Proxy) valid(tok string) bool {
	if slices.Contains(p.oauth.Tokens, tok) {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	exp, ok := p.tokens[tok]
	return ok && time.Now().Before(exp)
}

// token is the client_credentials grant (RFC 6749 4.4): the client's id
// and secret in the form or in Basic authorization.
func (p *Proxy) token(w http.ResponseWriter, r *http.Request) {
	o := p.oauth
	refuse := func(status int, code, msg string) {
		p.mu.Lock()
		p.declined++
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": msg})
	}
	if r.Method != http.MethodPost || r.ParseForm() != nil {
		refuse(http.StatusBadRequest, "invalid_request", "POST a form")
		return
	}
	if g := r.PostForm.Get("grant_type"); g != "client_credentials" {
		refuse(http.StatusBadRequest, "unsupported_grant_type", "grant_type "+g)
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != o.ClientID || secret != o.ClientSecret {
		refuse(http.StatusUnauthorized, "invalid_client", "unknown client or wrong secret")
		return
	}
	scopes := strings.Fields(r.PostForm.Get("scope"))
	if o.Scope != "" && !slices.Contains(scopes, o.Scope) {
		refuse(http.StatusBadRequest, "invalid_scope", fmt.Sprintf("scope %q required, asked for %q", o.Scope, scopes))
		return
	}
	ttl := o.TTL
	if ttl == 0 {
		ttl = time.Hour
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	tok := "tok-" + hex.EncodeToString(b)
	p.mu.Lock()
	p.tokens[tok] = time.Now().Add(ttl)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"access_token": tok, "token_type": "bearer", "expires_in": int(ttl.Seconds()),
		"issued_token_type": "urn:ietf:params:oauth:token-type:access_token", "scope": strings.Join(scopes, " "),
	})
}

// restError writes an Iceberg REST ErrorModel.
func restError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": status}})
}

// Route is a request's method and path with the names of namespaces,
// tables and views replaced by {namespace}, {table}, {view}: "GET
// /v1/namespaces/{namespace}/tables/{table}" is a loadTable.
func Route(method, path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i := 1; i < len(segs); i++ {
		switch segs[i-1] {
		case "namespaces":
			segs[i] = "{namespace}"
		case "tables":
			segs[i] = "{table}"
		case "views":
			segs[i] = "{view}"
		}
	}
	return method + " /" + strings.Join(segs, "/")
}

// LoadTableRoute is the route of loadTable.
const LoadTableRoute = "GET /v1/namespaces/{namespace}/tables/{table}"

// Requests is every request seen so far (since the last Reset).
func (p *Proxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.reqs)
}

// Count is the number of requests on a route (see [Route]) since the
// last Reset.
func (p *Proxy) Count(route string) int {
	n := 0
	for _, r := range p.Requests() {
		if r.Route == route {
			n++
		}
	}
	return n
}

// Counts is the number of requests per route since the last Reset.
func (p *Proxy) Counts() map[string]int {
	c := map[string]int{}
	for _, r := range p.Requests() {
		c[r.Route]++
	}
	return c
}

// TableLoads is the number of loadTable requests of one table
// ("GET /v1/namespaces/<ns>/tables/<table>"; a multi-level namespace is
// joined with the unit separator %1F) since the last Reset.
func (p *Proxy) TableLoads(namespace, table string) int {
	want := "/v1/namespaces/" + namespace + "/tables/" + table
	n := 0
	for _, r := range p.Requests() {
		if r.Method == http.MethodGet && r.Path == want {
			n++
		}
	}
	return n
}

// Declined is the number of token requests refused (wrong client, secret,
// grant or scope).
func (p *Proxy) Declined() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.declined
}

// Reset forgets the requests seen so far.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reqs = nil
}

// SetBackend points the proxy at another server.
func (p *Proxy) SetBackend(backend string) {
	u, err := url.Parse(backend)
	if err != nil {
		panic(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backend = u
}

// Down closes the proxy's listener and open connections: its address
// refuses connections, as a catalog that is down does, until Up.
func (p *Proxy) Down() {
	p.mu.Lock()
	srv := p.srv
	p.srv = nil
	p.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// Up listens again on the same address after Down.
func (p *Proxy) Up() error {
	var l net.Listener
	var err error
	for i := 0; i < 50; i++ { // the closed listener's port may linger a moment
		if l, err = net.Listen("tcp", p.addr); err == nil {
			p.serve(l)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("proxy up again on %s: %w", p.addr, err)
}

// Close ends the proxy.
func (p *Proxy) Close() { p.Down() }

// BasicAuth is the Authorization header value of HTTP Basic auth.
func BasicAuth(id, secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(id+":"+secret))
}
