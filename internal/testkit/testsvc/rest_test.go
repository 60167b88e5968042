package testsvc

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// call sends a JSON request to the REST catalog and decodes the answer.
func call(t *testing.T, method, uri, token string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, uri, rd)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, uri, err, b)
		}
	}
	return resp.StatusCode
}

// TestRESTCatalog: Apache Iceberg's RESTCatalogServer on a moto bucket
// with authentication on, its S3 key an STS session of a role allowed the
// bucket only; the proxy requires OAuth2 (a separate token path and a
// scope); loadTable vends the session. The proxy counts the loads.
func TestRESTCatalog(t *testing.T) {
	ctx := context.Background()
	m := Moto(t, MotoOptions{Auth: true})
	bucket := UniqueName("wh")
	m.CreateBucket(t, bucket)
	role := m.CreateRole(t, "catalog", BucketPolicy(bucket))
	session, err := m.AssumeRole(ctx, m.Admin, role, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	oauth := &OAuth2{ClientID: "sluice", ClientSecret: "s3cret", Scope: "catalog", TokenPath: "/oauth2/token"}
	r := RESTCatalog(t, RESTOptions{Moto: m, Bucket: bucket, Key: session, VendCredentials: true, OAuth2: oauth})
	t.Logf("RESTCatalogServer served after %s", r.Startup.Round(time.Millisecond))

	if code := call(t, "GET", r.URI+"/v1/config", "", nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("config without a token: %d", code)
	}
	token := func(id, secret, scope string) (string, int) {
		form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}, "scope": {scope}}
		resp, err := http.PostForm(r.Proxy.TokenURI(), form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&tok)
		return tok.AccessToken, resp.StatusCode
	}
	if _, code := token("sluice", "wrong", "catalog"); code != http.StatusUnauthorized {
		t.Fatalf("wrong secret: %d", code)
	}
	if _, code := token("sluice", "s3cret", "other"); code != http.StatusBadRequest {
		t.Fatalf("wrong scope: %d", code)
	}
	resp, err := http.PostForm(r.URI+"/v1/oauth/tokens", url.Values{"grant_type": {"client_credentials"},
		"client_id": {"sluice"}, "client_secret": {"s3cret"}, "scope": {"catalog"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the catalog's own token endpoint with a separate one: %d", resp.StatusCode)
	}
	tok, code := token("sluice", "s3cret", "catalog")
	if code != http.StatusOK || tok == "" {
		t.Fatalf("token: %d %q", code, tok)
	}
	if code := call(t, "GET", r.URI+"/v1/config?warehouse=x", "not-a-token", nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("config with a wrong token: %d", code)
	}
	if code := call(t, "GET", r.URI+"/v1/config?warehouse=x", tok, nil, nil); code != http.StatusOK {
		t.Fatalf("config: %d", code)
	}
	if code := call(t, "POST", r.URI+"/v1/namespaces", tok, map[string]any{"namespace": []string{"ns"}}, nil); code != http.StatusOK {
		t.Fatalf("create namespace: %d", code)
	}
	schema := map[string]any{"type": "struct", "schema-id": 0, "fields": []any{
		map[string]any{"id": 1, "name": "id", "type": "long", "required": true}}}
	var created struct {
		Location string `json:"metadata-location"`
	}
	if code := call(t, "POST", r.URI+"/v1/namespaces/ns/tables", tok, map[string]any{"name": "t", "schema": schema}, &created); code != http.StatusOK {
		t.Fatalf("create table: %d\n%s", code, r.Logs())
	}
	if !strings.HasPrefix(created.Location, "s3://"+bucket+"/") {
		t.Fatalf("metadata at %q", created.Location)
	}
	if keys := m.ListKeys(t, bucket, ""); len(keys) == 0 {
		t.Fatal("the table's metadata is not in the bucket")
	}
	var loaded struct {
		Config map[string]string `json:"config"`
	}
	r.Proxy.Reset()
	for range 3 {
		if code := call(t, "GET", r.URI+"/v1/namespaces/ns/tables/t", tok, nil, &loaded); code != http.StatusOK {
			t.Fatalf("load table: %d", code)
		}
	}
	if loaded.Config["s3.access-key-id"] != session.AccessKeyID || loaded.Config["s3.session-token"] != session.SessionToken {
		t.Fatalf("loadTable config %v does not vend the session %s", loaded.Config, session.AccessKeyID)
	}
	if n, n2 := r.Proxy.TableLoads("ns", "t"), r.Proxy.Count(LoadTableRoute); n != 3 || n2 != 3 {
		t.Fatalf("loads counted: %d, %d (%v)", n, n2, r.Proxy.Counts())
	}
	// The vended session reads the bucket, and nothing else.
	if _, err := m.Do(ctx, session, "s3", "GET", "/"+bucket+"?list-type=2", nil); err != nil {
		t.Fatalf("the vended session lists its bucket: %v", err)
	}
	other := UniqueName("other")
	m.CreateBucket(t, other)
	if _, err := m.Do(ctx, session, "s3", "GET", "/"+other+"?list-type=2", nil); err == nil {
		t.Fatal("the vended session lists another bucket")
	}

	// Down: refused; Up: served again. StopServer: 502; StartServer: the
	// same catalog again.
	r.Proxy.Down()
	if _, err := http.Get(r.URI + "/v1/config"); err == nil {
		t.Fatal("a proxy that is down answered")
	}
	if err := r.Proxy.Up(); err != nil {
		t.Fatal(err)
	}
	r.StopServer()
	if code := call(t, "GET", r.URI+"/v1/namespaces/ns/tables/t", tok, nil, nil); code != http.StatusBadGateway {
		t.Fatalf("with the server stopped: %d", code)
	}
	r.StartServer(t)
	t.Logf("restarted in %s", r.Startup.Round(time.Millisecond))
	if code := call(t, "GET", r.URI+"/v1/namespaces/ns/tables/t", tok, nil, &loaded); code != http.StatusOK {
		t.Fatalf("load table after a restart: %d", code)
	}
}
