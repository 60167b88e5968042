// Package httpget sends the plain HTTP GETs that the tests of flightd's
// web surfaces (console, API, metrics, pprof) make, with the headers an
// attacker or a browser would set.
package httpget

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// Timeout bounds each request: a live stream that a guard let through by
// mistake never ends by itself, and the test must fail rather than hang.
const Timeout = 30 * time.Second

// Get sends a GET of url with the headers given ("Host" sets the request's
// host, as curl -H "Host: ..." does) and returns its status and body. A
// request that cannot be sent fails the test.
func Get(t testing.TB, url string, headers map[string]string) (status int, body string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	return resp.StatusCode, string(b)
}
