package catalog_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluicefeed/sluice/catalog"
)

// restRequest is a request the fake REST server received.
type restRequest struct {
	method, path, query, auth string
	header                    http.Header
	form                      map[string]string
}

// fakeREST is a REST catalog server as far as a catalog's start and a
// listing go: an OAuth2 token endpoint that accepts one client, and
// /v1/config, /v1/namespaces and their tables, which need its token when
// it has a client. It records every request.
type fakeREST struct {
	*httptest.Server
	// clientID and secret are the accepted client ("": no auth needed).
	clientID, secret string
	// configStatus, when not 0, is the status /v1/config answers.
	configStatus int
	overrides    map[string]string

	mu       sync.Mutex
	requests []restRequest
}

const issuedToken = "issued-token-1"

func newFakeREST(t *testing.T, clientID, secret string) *fakeREST {
	f := &fakeREST{clientID: clientID, secret: secret}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeREST) serve(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	req := restRequest{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, auth: r.Header.Get("Authorization"),
		header: r.Header.Clone(), form: map[string]string{}}
	for k := range r.PostForm {
		req.form[k] = r.PostForm.Get(k)
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	configStatus := f.configStatus
	f.mu.Unlock()

	reply := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	restError := func(status int, typ, msg string) {
		reply(status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": status}})
	}
	if strings.HasSuffix(r.URL.Path, "/oauth/tokens") {
		if req.form["client_id"] != f.clientID || req.form["client_secret"] != f.secret {
			reply(http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": "bad client"})
			return
		}
		if req.form["scope"] == "bad" {
			reply(http.StatusBadRequest, map[string]string{"error": "invalid_scope"})
			return
		}
		reply(http.StatusOK, map[string]any{"access_token": issuedToken, "token_type": "bearer", "expires_in": 3600})
		return
	}
	if f.clientID != "" && req.auth != "Bearer "+issuedToken {
		restError(http.StatusUnauthorized, "NotAuthorizedException", "not authorized")
		return
	}
	switch {
	case r.URL.Path == "/v1/config":
		if configStatus != 0 {
			restError(configStatus, "SomeException", "config refused")
			return
		}
		reply(http.StatusOK, map[string]any{"defaults": map[string]string{}, "overrides": f.overrides})
	case strings.HasSuffix(r.URL.Path, "/namespaces"):
		reply(http.StatusOK, map[string]any{"namespaces": [][]string{{"sales"}}})
	case strings.HasSuffix(r.URL.Path, "/namespaces/sales/tables"):
		reply(http.StatusOK, map[string]any{"identifiers": []map[string]any{{"namespace": []string{"sales"}, "name": "orders"}}})
	default:
		restError(http.StatusNotFound, "NoSuchNamespaceException", "no such namespace")
	}
}

func (f *fakeREST) got() []restRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// TestRESTFirstRequest: the properties that configure the REST client are
// applied to the very first request: the client credentials are exchanged
// for a token before GET /v1/config, which carries the token, the
// warehouse and the configured headers; a static token, an OAuth2 server
// elsewhere, a scope and a prefix are honoured; secrets come from
// references.
func TestRESTFirstRequest(t *testing.T) {
	ctx := context.Background()

	t.Run("credential", func(t *testing.T) {
		f := newFakeREST(t, "sluice", "s3cr3t")
		secretFile := filepath.Join(t.TempDir(), "secret")
		if err := os.WriteFile(secretFile, []byte("sluice:s3cr3t\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("TEST_REST_CLIENT", "sluice")
		cat, err := catalog.Open(ctx, catalog.Config{Type: catalog.TypeREST, URI: f.URL, Warehouse: "s3://bucket/wh",
			Properties: map[string]string{
				"client-id-ref":    "${env:TEST_REST_CLIENT}",
				"credential":       "x${file:" + secretFile + "}", // a reference is the whole value: literal
				"scope":            "PRINCIPAL_ROLE:ALL",
				"header.X-Tenant":  "acme",
				"s3.endpoint":      "http://127.0.0.1:1",
				"credential-shape": "unused",
			}})
		if err == nil {
			cat.Close()
			t.Fatal("a credential with a reference inside it was resolved")
		}
		if !errors.Is(err, catalog.ErrInvalidConfig) || strings.Contains(err.Error(), "s3cr3t") {
			t.Fatalf("refused credential: %v", err)
		}

		f = newFakeREST(t, "sluice", "s3cr3t")
		cat, err = catalog.Open(ctx, catalog.Config{Type: catalog.TypeREST, URI: f.URL, Warehouse: "s3://bucket/wh",
			PropertiesFile: writeFile(t, "props.yaml", "credential: ${file:"+secretFile+"}\nscope: wrong\n"),
			Properties: map[string]string{
				"scope":           "PRINCIPAL_ROLE:ALL",
				"header.X-Tenant": "acme",
			}})
		if err != nil {
			t.Fatal(err)
		}
		defer cat.Close()
		// The secret file's final newline is not part of the secret.
		reqs := f.got()
		if len(reqs) < 2 || !strings.HasSuffix(reqs[0].path, "/v1/oauth/tokens") || reqs[1].path != "/v1/config" {
			t.Fatalf("requests: %+v", reqs)
		}
		tok := reqs[0]
		if tok.form["grant_type"] != "client_credentials" || tok.form["client_id"] != "sluice" ||
			tok.form["scope"] != "PRINCIPAL_ROLE:ALL" {
			t.Fatalf("token request: %+v", tok.form)
		}
		cfg := reqs[1]
		if cfg.auth != "Bearer "+issuedToken || cfg.query != "warehouse=s3%3A%2F%2Fbucket%2Fwh" ||
			cfg.header.Get("X-Tenant") != "acme" {
			t.Fatalf("first config request: auth %q query %q X-Tenant %q", cfg.auth, cfg.query, cfg.header.Get("X-Tenant"))
		}
		names, err := cat.ListTables(ctx)
		if err != nil || !slices.Equal(names, []string{"sales.orders"}) {
			t.Fatalf("ListTables: %v %v", names, err)
		}
	})

	t.Run("token, prefix, warehouse property", func(t *testing.T) {
		f := newFakeREST(t, "", "")
		t.Setenv("TEST_REST_TOKEN", "static-token")
		cat, err := catalog.Open(ctx, catalog.Config{Type: catalog.TypeREST, URI: f.URL, Properties: map[string]string{
			"token": "${env:TEST_REST_TOKEN}", "warehouse": "lake", "prefix": "cat1"}})
		if err != nil {
			t.Fatal(err)
		}
		defer cat.Close()
		if _, err := cat.ListTables(ctx); err != nil {
			t.Fatal(err)
		}
		reqs := f.got()
		if reqs[0].path != "/v1/config" || reqs[0].auth != "Bearer static-token" || reqs[0].query != "warehouse=lake" {
			t.Fatalf("first request: %+v", reqs[0])
		}
		if reqs[1].path != "/v1/cat1/namespaces" || reqs[1].auth != "Bearer static-token" {
			t.Fatalf("second request: %+v", reqs[1])
		}
	})

	t.Run("oauth2-server-uri", func(t *testing.T) {
		idp := newFakeREST(t, "sluice", "pw")
		f := newFakeREST(t, "", "")
		cat, err := catalog.Open(ctx, catalog.Config{Type: catalog.TypeREST, URI: f.URL, Properties: map[string]string{
			"credential": "sluice:pw", "rest.authorization-url": idp.URL + "/realms/x/oauth/tokens",
			"audience": "catalog-api"}})
		if err != nil {
			t.Fatal(err)
		}
		defer cat.Close()
		if reqs := idp.got(); len(reqs) != 1 || reqs[0].path != "/realms/x/oauth/tokens" || reqs[0].form["audience"] != "catalog-api" {
			t.Fatalf("token server: %+v", reqs)
		}
		if reqs := f.got(); reqs[0].path != "/v1/config" || reqs[0].auth != "Bearer "+issuedToken {
			t.Fatalf("catalog: %+v", reqs)
		}
	})

	t.Run("sigv4", func(t *testing.T) {
		f := newFakeREST(t, "", "")
		t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "secretexample")
		t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
		cat, err := catalog.Open(ctx, catalog.Config{Type: catalog.TypeREST, URI: f.URL, Properties: map[string]string{
			"rest.sigv4-enabled": "true", "rest.signing-region": "eu-west-3", "rest.signing-name": "glue"}})
		if err != nil {
			t.Fatal(err)
		}
		defer cat.Close()
		auth := f.got()[0].auth
		if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(auth, "/eu-west-3/glue/aws4_request") {
			t.Fatalf("first request not signed: %q", auth)
		}
	})
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRESTStartErrors: a start that retrying could fix (the server down or
// failing) is ErrUnavailable; one it cannot (refused credentials, no REST
// catalog, a malformed URL, an untrusted certificate) is ErrInvalidConfig,
// and names the cause, never the secret.
func TestRESTStartErrors(t *testing.T) {
	ctx := context.Background()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + lis.Addr().String()
	lis.Close()

	refusing := newFakeREST(t, "sluice", "right")
	failing := newFakeREST(t, "", "")
	failing.configStatus = http.StatusServiceUnavailable
	notFound := newFakeREST(t, "", "")
	notFound.configStatus = http.StatusNotFound
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("<html>hello</html>"))
	}))
	defer web.Close()
	tlsServer := httptest.NewTLSServer(http.HandlerFunc(failing.serve))
	defer tlsServer.Close()

	for _, tt := range []struct {
		name  string
		cfg   catalog.Config
		want  error
		words []string
	}{
		{"down", catalog.Config{URI: down}, catalog.ErrUnavailable, []string{"GET " + down + "/v1/config"}},
		{"503", catalog.Config{URI: failing.URL}, catalog.ErrUnavailable, []string{"503 Service Unavailable"}},
		{"token refused", catalog.Config{URI: refusing.URL, Properties: map[string]string{"credential": "sluice:wrong"}},
			catalog.ErrInvalidConfig, []string{"refused the token request", "401", "/v1/oauth/tokens", "invalid_client"}},
		{"token 400", catalog.Config{URI: refusing.URL, Properties: map[string]string{"credential": "sluice:right",
			"scope": "bad"}}, catalog.ErrInvalidConfig, []string{"refused the token request", "400", "invalid_scope"}},
		{"no token", catalog.Config{URI: refusing.URL}, catalog.ErrInvalidConfig,
			[]string{"refused the credentials", "401"}},
		{"404", catalog.Config{URI: notFound.URL}, catalog.ErrInvalidConfig, []string{"is not an Iceberg REST catalog"}},
		{"not json", catalog.Config{URI: web.URL}, catalog.ErrInvalidConfig, []string{"does not answer as an Iceberg REST catalog"}},
		{"malformed", catalog.Config{URI: "localhost:8181"}, catalog.ErrInvalidConfig, []string{"http://"}},
		{"bad auth url", catalog.Config{URI: failing.URL, Properties: map[string]string{"oauth2-server-uri": "/tokens"}},
			catalog.ErrInvalidConfig, []string{"oauth2-server-uri"}},
		{"bad bool", catalog.Config{URI: failing.URL, Properties: map[string]string{"rest.sigv4-enabled": "yes"}},
			catalog.ErrInvalidConfig, []string{"rest.sigv4-enabled"}},
		{"two warehouses", catalog.Config{URI: failing.URL, Warehouse: "a", Properties: map[string]string{"warehouse": "b"}},
			catalog.ErrInvalidConfig, []string{"give it once"}},
		{"untrusted", catalog.Config{URI: tlsServer.URL}, catalog.ErrInvalidConfig, []string{"not trusted", "rest.tls.ca-file"}},
		{"unset env", catalog.Config{URI: failing.URL, Properties: map[string]string{"token": "${env:TEST_NOT_SET_ANYWHERE}"}},
			catalog.ErrInvalidConfig, []string{"catalog property token", "${env:TEST_NOT_SET_ANYWHERE}", "not set"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Type = catalog.TypeREST
			cat, err := catalog.Open(ctx, tt.cfg)
			if err == nil {
				cat.Close()
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("%v, want %v", err, tt.want)
			}
			for _, w := range tt.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "wrong") {
				t.Errorf("%v names the secret", err)
			}
		})
	}

	// The server's CA given: the same server is trusted (and now fails
	// with its 503).
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsServer.Certificate().Raw})
	_, err = catalog.Open(ctx, catalog.Config{Type: catalog.TypeREST, URI: tlsServer.URL,
		Properties: map[string]string{"rest.tls.ca-file": writeFile(t, "ca.pem", string(ca))}})
	if !errors.Is(err, catalog.ErrUnavailable) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("with the CA: %v", err)
	}
}
