package daemon

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicefeed/sluice/catalog"
)

// restServer is a REST catalog as far as flightd's start goes: GET
// /v1/config answers status() (200: an empty configuration), and it
// counts the calls.
type restServer struct {
	*httptest.Server
	calls  atomic.Int32
	status func() int
}

func newRESTServer(t *testing.T, status func() int) *restServer {
	s := &restServer{status: status}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/v1/config" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"message":"no","type":"NotFoundException","code":404}}`))
			return
		}
		if st := s.status(); st != http.StatusOK {
			w.WriteHeader(st)
			_, _ = w.Write([]byte(`{"error":{"message":"not now","type":"SomeException","code":` + strconv.Itoa(st) + `}}`))
			return
		}
		_, _ = w.Write([]byte(`{"defaults":{},"overrides":{}}`))
	}))
	t.Cleanup(s.Close)
	return s
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestOpenCatalogRetries: a catalog unavailable at start is retried, each
// attempt logged with its cause, until it answers or the start timeout
// has passed; one that refuses the configuration is not retried.
func TestOpenCatalogRetries(t *testing.T) {
	ctx := context.Background()
	restCfg := func(uri string, timeout time.Duration) Config {
		cfg := DefaultConfig()
		cfg.Catalog = catalog.Config{Type: catalog.TypeREST, URI: uri, StartTimeout: timeout}.WithDefaults()
		return cfg
	}

	t.Run("503 then up", func(t *testing.T) {
		var n atomic.Int32
		s := newRESTServer(t, func() int {
			if n.Add(1) <= 2 {
				return http.StatusServiceUnavailable
			}
			return http.StatusOK
		})
		var logs syncBuffer
		cat, err := openCatalog(ctx, restCfg(s.URL, time.Minute), slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		cat.Close()
		if got := strings.Count(logs.String(), "catalog unavailable at start, retrying"); got != 2 ||
			!strings.Contains(logs.String(), "503") || !strings.Contains(logs.String(), "attempts=3") {
			t.Fatalf("logs:\n%s", logs.String())
		}
	})

	t.Run("refused", func(t *testing.T) {
		s := newRESTServer(t, func() int { return http.StatusForbidden })
		_, err := openCatalog(ctx, restCfg(s.URL, time.Minute), slog.New(slog.NewTextHandler(io.Discard, nil)))
		if !errors.Is(err, catalog.ErrInvalidConfig) || s.calls.Load() != 1 || !strings.Contains(err.Error(), "403") {
			t.Fatalf("%v after %d calls", err, s.calls.Load())
		}
	})

	t.Run("down until the timeout", func(t *testing.T) {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		down := "http://" + lis.Addr().String()
		lis.Close()
		var logs syncBuffer
		start := time.Now()
		_, err = openCatalog(ctx, restCfg(down, 1200*time.Millisecond), slog.New(slog.NewTextHandler(&logs, nil)))
		took := time.Since(start)
		if !errors.Is(err, catalog.ErrUnavailable) || !strings.Contains(err.Error(), "--catalog-start-timeout 1.2s") {
			t.Fatalf("%v", err)
		}
		// Waits of 0.5s, then what is left of the 1.2s.
		if took < 1200*time.Millisecond || took > 5*time.Second || strings.Count(logs.String(), "retrying") != 2 {
			t.Fatalf("took %s; logs:\n%s", took, logs.String())
		}

		start = time.Now()
		_, err = openCatalog(ctx, restCfg(down, 0), slog.New(slog.NewTextHandler(io.Discard, nil)))
		if !errors.Is(err, catalog.ErrUnavailable) || time.Since(start) > time.Second {
			t.Fatalf("timeout 0: %v after %s", err, time.Since(start))
		}
	})

	t.Run("stopped while waiting", func(t *testing.T) {
		s := newRESTServer(t, func() int { return http.StatusServiceUnavailable })
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := openCatalog(cctx, restCfg(s.URL, time.Hour), slog.New(slog.NewTextHandler(io.Discard, nil)))
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
			t.Fatalf("%v after %s", err, time.Since(start))
		}
	})
}

// TestRunWaitsForCatalog: flightd with a REST catalog that is down at
// start neither listens nor writes its ready file until the catalog
// answers, then serves; its consumer progress goes to the working
// directory, not to a ./warehouse, and the log says where.
func TestRunWaitsForCatalog(t *testing.T) {
	work := t.TempDir()
	t.Chdir(work)
	var up atomic.Bool
	s := newRESTServer(t, func() int {
		if up.Load() {
			return http.StatusOK
		}
		return http.StatusServiceUnavailable
	})
	ready := filepath.Join(work, "ready")
	cfg, err := LoadConfig([]string{"--listen", "127.0.0.1:0", "--ready-file", ready, "--catalog-type", "rest",
		"--catalog-uri", s.URL, "--catalog-property", "s3.path-style-access=true",
		"--catalog-property", "credential=${env:TEST_SLUICE_REST_CREDENTIAL}"},
		[]string{"SLUICE_CATALOG_PROPERTIES=s3.endpoint=http://127.0.0.1:9000"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Catalog.Warehouse != "" {
		t.Fatalf("a rest catalog got a warehouse: %q", cfg.Catalog.Warehouse)
	}

	// The credential's variable is not set: refused at start, naming it.
	err = Run(context.Background(), cfg, io.Discard)
	if !errors.Is(err, catalog.ErrInvalidConfig) || !strings.Contains(err.Error(), "TEST_SLUICE_REST_CREDENTIAL") {
		t.Fatalf("unset credential variable: %v", err)
	}
	// The fake server takes no credential: a token exchange would fail.
	delete(cfg.Catalog.Properties, "credential")

	logs := captureStderr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, io.Discard) }()
	for s.calls.Load() < 2 {
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(ready); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ready before the catalog is open: %v", err)
	}
	up.Store(true)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, err := os.ReadFile(ready); err == nil && len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not ready once the catalog answers")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(work, DefaultProgressFile)); err != nil {
		t.Fatalf("progress store: %v", err)
	}
	if _, err := os.Stat(filepath.Join(work, "warehouse")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a ./warehouse was made: %v", err)
	}
	out := logs()
	for _, w := range []string{"catalog unavailable at start, retrying", "s3.path-style-access is not read by iceberg-go",
		"consumer progress is kept in the working directory", "s3.endpoint:http://127.0.0.1:9000"} {
		if !strings.Contains(out, w) {
			t.Errorf("the log does not say %q:\n%s", w, out)
		}
	}
}

// TestRunStoppedWhileWaiting: a stop (SIGTERM) while the catalog is
// waited for ends flightd cleanly, at once.
func TestRunStoppedWhileWaiting(t *testing.T) {
	t.Chdir(t.TempDir())
	s := newRESTServer(t, func() int { return http.StatusServiceUnavailable })
	cfg, err := LoadConfig([]string{"--listen", "127.0.0.1:0", "--catalog-type", "rest", "--catalog-uri", s.URL}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	logs := captureStderr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := Run(ctx, cfg, io.Discard); err != nil || time.Since(start) > 5*time.Second {
		t.Fatalf("%v after %s", err, time.Since(start))
	}
	if out := logs(); !strings.Contains(out, "retrying") || !strings.Contains(out, "the catalog was open") {
		t.Fatalf("logs:\n%s", out)
	}
}

// captureStderr redirects the process's stderr (where Run logs) to a
// file until the test ends; the function returns what was written.
func captureStderr(t *testing.T) func() string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = f
	t.Cleanup(func() { os.Stderr = old; f.Close() })
	return func() string {
		b, _ := os.ReadFile(f.Name())
		return string(b)
	}
}

// TestCatalogPropertiesConfig: catalog properties come from the YAML file,
// SLUICE_CATALOG_PROPERTIES and repeated --catalog-property flags, each
// over the one before; a malformed one is named without its value.
func TestCatalogPropertiesConfig(t *testing.T) {
	yamlFile := filepath.Join(t.TempDir(), "flightd.yaml")
	if err := os.WriteFile(yamlFile, []byte("catalog:\n  type: rest\n  uri: http://cat:8181\n  start_timeout: 10s\n"+
		"  properties_file: /run/secrets/catalog.yaml\n  properties:\n    a: yaml\n    b: yaml\n    c: yaml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig([]string{"--config", yamlFile, "--catalog-property", "c=flag", "--catalog-property", "d=x=y"},
		[]string{"SLUICE_CATALOG_PROPERTIES=b=env,c=env"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "yaml", "b": "env", "c": "flag", "d": "x=y"}
	if !maps.Equal(c.Catalog.Properties, want) || c.Catalog.StartTimeout != 10*time.Second ||
		c.Catalog.PropertiesFile != "/run/secrets/catalog.yaml" || c.Catalog.Warehouse != "" {
		t.Fatalf("%+v", c.Catalog)
	}
	c, err = LoadConfig([]string{"--catalog-start-timeout", "0s", "--catalog-properties-file", "p.yaml"},
		[]string{"SLUICE_CATALOG_START_TIMEOUT=1m", "SLUICE_CATALOG_PROPERTIES_FILE=q.yaml"}, io.Discard)
	if err != nil || c.Catalog.StartTimeout != 0 || c.Catalog.PropertiesFile != "p.yaml" || c.Catalog.Warehouse != "./warehouse" {
		t.Fatalf("%+v %v", c.Catalog, err)
	}
	if c, _ := LoadConfig(nil, nil, io.Discard); c.Catalog.StartTimeout != catalog.DefaultStartTimeout {
		t.Fatalf("default start timeout %s", c.Catalog.StartTimeout)
	}
	for _, tt := range []struct {
		args, env []string
		words     string
	}{
		{[]string{"--catalog-property", "hunter2"}, nil, "want name=value"},
		{nil, []string{"SLUICE_CATALOG_PROPERTIES=a=1,hunter2"}, "item 2: want name=value"},
		{[]string{"--catalog-start-timeout", "5"}, nil, "5 has no unit"},
		{nil, []string{"SLUICE_CATALOG_START_TIMEOUT=-1s"}, "negative"},
	} {
		_, err := LoadConfig(tt.args, tt.env, io.Discard)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.words) {
			t.Errorf("%v %v: %v", tt.args, tt.env, err)
		}
		if err != nil && len(tt.env) > 0 && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the error shows the value: %v", err)
		}
	}
}
