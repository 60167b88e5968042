package catalog

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
)

// openREST opens the rest catalog. iceberg-go sends its first request, GET
// /v1/config, with only what REST options set (rest.With...), not what the
// properties say: the properties that configure the REST client are turned
// into options here, so that the first request is authenticated and names
// the warehouse. The others (file IO, ...) are passed on as they are. The
// error of a server that cannot be reached, or fails, is ErrUnavailable
// (worth retrying); that of a server that refuses the configuration (the
// credentials, the warehouse) or is no REST catalog is ErrInvalidConfig.
func openREST(ctx context.Context, cfg Config, props iceberg.Properties) (*rest.Catalog, error) {
	probe := &startProbe{}
	opts, err := restOptions(cfg, props, probe)
	if err != nil {
		return nil, err
	}
	ice, err := rest.NewCatalog(ctx, cfg.Name, cfg.URI, opts...)
	if err != nil {
		return nil, probe.classify(ctx, cfg, err)
	}
	probe.done()
	return ice, nil
}

// restOptions returns the REST options that props and cfg's warehouse
// configure; the properties left go with rest.WithAdditionalProps.
func restOptions(cfg Config, props iceberg.Properties, probe *startProbe) ([]rest.Option, error) {
	props = maps.Clone(props)
	take := func(name string) (string, bool) {
		v, ok := props[name]
		delete(props, name)
		return v, ok && v != ""
	}
	var opts []rest.Option

	warehouse, ok := take(PropWarehouse)
	if ok && cfg.Warehouse != "" && warehouse != cfg.Warehouse {
		return nil, fmt.Errorf("%w: the warehouse is %q (--warehouse) and %q (catalog property warehouse): give it once",
			ErrInvalidConfig, cfg.Warehouse, warehouse)
	}
	if cfg.Warehouse != "" {
		warehouse = cfg.Warehouse
	}
	if warehouse != "" {
		opts = append(opts, rest.WithWarehouseLocation(warehouse))
	}
	if v, ok := take(PropCredential); ok {
		opts = append(opts, rest.WithCredential(v))
	}
	if v, ok := take(PropToken); ok {
		opts = append(opts, rest.WithOAuthToken(v))
	}
	if v, ok := take(PropScope); ok {
		opts = append(opts, rest.WithScope(v))
	}
	if v, ok := take(PropAudience); ok {
		opts = append(opts, rest.WithAudience(v))
	}
	if v, ok := take(PropResource); ok {
		opts = append(opts, rest.WithResource(v))
	}
	if v, ok := take(PropPrefix); ok {
		opts = append(opts, rest.WithPrefix(v))
	}
	// oauth2-server-uri wins over its alias, as in iceberg-go.
	authName := PropOAuth2ServerURI
	authURI, ok := take(PropOAuth2ServerURI)
	if alias, aliasOK := take(PropAuthorizationURL); aliasOK && !ok {
		authName, authURI, ok = PropAuthorizationURL, alias, true
	}
	if ok {
		if err := checkHTTPURL(authURI); err != nil {
			return nil, fmt.Errorf("%w: catalog property %s %q %v", ErrInvalidConfig, authName, authURI, err)
		}
		u, _ := url.Parse(authURI)
		opts = append(opts, rest.WithAuthURI(u))
	}

	sigv4, err := boolProperty(props, PropSigV4Enabled)
	if err != nil {
		return nil, err
	}
	delete(props, PropSigV4Enabled)
	region, _ := take(PropSigningRegion)
	service, _ := take(PropSigningName)
	if sigv4 {
		opts = append(opts, rest.WithSigV4RegionSvc(region, service))
	}

	headers := map[string]string{}
	for name, v := range props {
		if h, ok := strings.CutPrefix(name, PropHeaderPrefix); ok && h != "" {
			headers[h] = v
			delete(props, name)
		}
	}
	if len(headers) > 0 {
		opts = append(opts, rest.WithHeaders(headers))
	}

	tlsConfig, err := restTLS(props)
	if err != nil {
		return nil, err
	}
	delete(props, PropTLSCAFile)
	delete(props, PropTLSSkipVerify)
	if tlsConfig != nil {
		opts = append(opts, rest.WithTLSConfig(tlsConfig))
	}
	opts = append(opts, rest.WithTransportFactory(func(tc *tls.Config) (http.RoundTripper, func()) {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = tc
		return probe.wrap(t), t.CloseIdleConnections
	}))
	delete(props, "uri")
	delete(props, "type")
	return append(opts, rest.WithAdditionalProps(props)), nil
}

// boolProperty reads a true/false property (absent: false).
func boolProperty(props iceberg.Properties, name string) (bool, error) {
	v, ok := props[name]
	if !ok || v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%w: catalog property %s %q is not true or false", ErrInvalidConfig, name, v)
	}
	return b, nil
}

// restTLS returns the TLS configuration of rest.tls.ca-file and
// rest.tls.skip-verify, nil when neither is set.
func restTLS(props iceberg.Properties) (*tls.Config, error) {
	skip, err := boolProperty(props, PropTLSSkipVerify)
	if err != nil {
		return nil, err
	}
	caFile := props[PropTLSCAFile]
	if caFile == "" && !skip {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: skip} //nolint:gosec // the operator's choice, warned about
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("%w: catalog property %s: %v", ErrInvalidConfig, PropTLSCAFile, err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: catalog property %s: %s holds no PEM certificate", ErrInvalidConfig,
				PropTLSCAFile, caFile)
		}
		c.RootCAs = pool
	}
	return c, nil
}

// startProbe watches the HTTP exchanges of a rest catalog's start, to tell
// why it failed: iceberg-go's errors do not always keep the status (an
// OAuth2 server's refusal) or the transport's error (it formats them
// into text).
type startProbe struct {
	mu sync.Mutex // guards the fields below
	// off stops the watching once the catalog is open.
	off bool
	// attempts counts the requests sent.
	attempts int
	// last is the last request: its method and URL (without the query),
	// the status of its response (0: none) and its transport error.
	method, url string
	status      int
	err         error
}

type probeTransport struct {
	http.RoundTripper
	p *startProbe
}

func (p *startProbe) wrap(rt http.RoundTripper) http.RoundTripper { return probeTransport{rt, p} }

func (t probeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.p.mu.Lock()
	watching := !t.p.off
	if watching {
		u := *r.URL
		u.RawQuery, u.User = "", nil
		t.p.attempts++
		t.p.method, t.p.url, t.p.status, t.p.err = r.Method, u.String(), 0, nil
	}
	t.p.mu.Unlock()
	rsp, err := t.RoundTripper.RoundTrip(r)
	if watching {
		t.p.mu.Lock()
		t.p.err = err
		if rsp != nil {
			t.p.status = rsp.StatusCode
		}
		t.p.mu.Unlock()
	}
	return rsp, err
}

// done stops the watching.
func (p *startProbe) done() {
	p.mu.Lock()
	p.off = true
	p.mu.Unlock()
}

// classify returns the error of a failed start: ErrUnavailable when the
// server could not be reached or failed (a 5xx, 408, 429), ErrInvalidConfig
// when it refused the configuration or is no REST catalog, or when no
// request could be sent.
func (p *startProbe) classify(ctx context.Context, cfg Config, err error) error {
	cfg.URI = RedactURI(cfg.URI)
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return fmt.Errorf("%w: rest catalog %s: no answer: %v", ErrUnavailable, cfg.URI, err)
	}
	p.mu.Lock()
	attempts, method, where, status, terr := p.attempts, p.method, p.url, p.status, p.err
	p.mu.Unlock()
	req := method + " " + where
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var verify *tls.CertificateVerificationError
	switch {
	case attempts == 0:
		return fmt.Errorf("%w: rest catalog %s: %v", ErrInvalidConfig, cfg.URI, err)
	case terr != nil && (errors.As(terr, &unknownCA) || errors.As(terr, &hostname) || errors.As(terr, &verify)):
		return fmt.Errorf("%w: rest catalog %s: %s: the server's certificate is not trusted (%v): check the URL, or "+
			"give its CA with the catalog property %s", ErrInvalidConfig, cfg.URI, req, terr, PropTLSCAFile)
	case status == 0:
		// The transport's error, without the URL it repeats.
		cause := err
		var ue *url.Error
		if errors.As(cmp.Or(terr, err), &ue) {
			cause = ue.Err
		}
		return fmt.Errorf("%w: rest catalog %s: %s: %v", ErrUnavailable, cfg.URI, req, cause)
	case method == http.MethodPost && status >= 400 && status < 500:
		// The only POST of a start is the OAuth2 token request: its 400
		// is invalid_client, invalid_scope, ... (RFC 6749, 5.2).
		return fmt.Errorf("%w: the OAuth2 server of rest catalog %s refused the token request: %s answered %d %s (%v): "+
			"check the catalog properties credential, scope, audience, resource and oauth2-server-uri", ErrInvalidConfig,
			cfg.URI, req, status, http.StatusText(status), err)
	case status == http.StatusUnauthorized || status == http.StatusForbidden || status == 419:
		return fmt.Errorf("%w: rest catalog %s refused the credentials: %s answered %d %s (%v): check the catalog "+
			"properties credential, token, scope and oauth2-server-uri", ErrInvalidConfig, cfg.URI, req, status,
			http.StatusText(status), err)
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500:
		return fmt.Errorf("%w: rest catalog %s: %s answered %d %s (%v)", ErrUnavailable, cfg.URI, req, status,
			http.StatusText(status), err)
	case status == http.StatusNotFound && strings.HasSuffix(where, "/v1/config"):
		return fmt.Errorf("%w: %s is not an Iceberg REST catalog: %s answered 404 Not Found (%v): check --catalog-uri "+
			"(the base URL, without /v1; for Polaris, http://host:8181/api/catalog) and the warehouse", ErrInvalidConfig,
			cfg.URI, req, err)
	case status >= 400:
		return fmt.Errorf("%w: rest catalog %s refused the configuration: %s answered %d %s (%v): check the warehouse "+
			"and the catalog properties", ErrInvalidConfig, cfg.URI, req, status, http.StatusText(status), err)
	default:
		return fmt.Errorf("%w: %s does not answer as an Iceberg REST catalog: %s answered %d (%v): check --catalog-uri",
			ErrInvalidConfig, cfg.URI, req, status, err)
	}
}
