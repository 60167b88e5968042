package testsvc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"
)

// FakeGCSServer is a running fake-gcs-server: Google Cloud Storage's JSON
// and XML APIs on loopback, objects in memory, no authentication.
type FakeGCSServer struct {
	URL  string // http://127.0.0.1:port
	proc *process
}

// FakeGCS starts a fake-gcs-server for this test (stopped at its end): the
// binary of the Go module github.com/fsouza/fake-gcs-server, which `make
// test` builds and names in SLUICE_FAKE_GCS. The test fails when
// SLUICE_FAKE_GCS is not set.
func FakeGCS(t testing.TB) *FakeGCSServer {
	t.Helper()
	g, err := startFakeGCS()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.proc.stop(5 * time.Second) })
	return g
}

var sharedGCS struct {
	once sync.Once
	g    *FakeGCSServer
	err  error
}

// SharedFakeGCS returns the test binary's one fake-gcs-server, started on
// first use and ended with the binary. Tests that share it keep apart by
// bucket names (see [UniqueName]).
func SharedFakeGCS(t testing.TB) *FakeGCSServer {
	t.Helper()
	sharedGCS.once.Do(func() { sharedGCS.g, sharedGCS.err = startFakeGCS() })
	if sharedGCS.err != nil {
		t.Fatal(sharedGCS.err)
	}
	return sharedGCS.g
}

func startFakeGCS() (*FakeGCSServer, error) {
	bin := os.Getenv("SLUICE_FAKE_GCS")
	if bin == "" {
		return nil, fmt.Errorf("SLUICE_FAKE_GCS is not set: run the tests with `make test` (or set it to " +
			".tmp/bin/fake-gcs-server-<version> after `make fake-gcs-server`)")
	}
	p, addr, err := startOnFreePort(func(port int) (*process, error) {
		addr := "127.0.0.1:" + itoa(port)
		return startProcess("fake-gcs-server", nil, bin, "-backend", "memory", "-scheme", "http",
			"-host", "127.0.0.1", "-port", itoa(port), "-public-host", addr, "-external-url", "http://"+addr,
			"-log-level", "warn")
	}, waitingTCP(30*time.Second))
	if err != nil {
		return nil, err
	}
	return &FakeGCSServer{URL: "http://" + addr, proc: p}, nil
}

// Props are iceberg-go's storage properties for the server: its endpoint,
// and no authentication (the server checks none).
func (g *FakeGCSServer) Props() map[string]string {
	return map[string]string{"gcs.endpoint": g.URL + "/storage/v1/", "gcs.no-auth": "true"}
}

// Logs is the server's output so far.
func (g *FakeGCSServer) Logs() string { return g.proc.logs() }

func (g *FakeGCSServer) do(method, path, contentType string, body []byte) error {
	req, err := http.NewRequestWithContext(context.Background(), method, g.URL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return &StatusError{Status: resp.StatusCode, Body: string(b)}
	}
	return nil
}

// CreateBucket creates a bucket.
func (g *FakeGCSServer) CreateBucket(t testing.TB, bucket string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"name": bucket})
	if err := g.do(http.MethodPost, "/storage/v1/b", "application/json", body); err != nil {
		t.Fatalf("fake-gcs-server: create bucket %s: %v", bucket, err)
	}
}

// PutObject writes an object.
func (g *FakeGCSServer) PutObject(t testing.TB, bucket, name string, data []byte) {
	t.Helper()
	q := url.Values{"uploadType": {"media"}, "name": {name}}
	if err := g.do(http.MethodPost, "/upload/storage/v1/b/"+url.PathEscape(bucket)+"/o?"+q.Encode(),
		"application/octet-stream", data); err != nil {
		t.Fatalf("fake-gcs-server: put gs://%s/%s: %v", bucket, name, err)
	}
}
