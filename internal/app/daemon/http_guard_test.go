package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicefeed/sluice/auth"
	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/app/demo"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
	"github.com/sluicefeed/sluice/internal/testkit/docmd"
	"github.com/sluicefeed/sluice/internal/testkit/httpget"
	"github.com/sluicefeed/sluice/server"
)

// runHTTP runs flightd on the demo warehouse with args (its console on
// --http-listen) until the test ends, and returns the console's URL.
func runHTTP(t *testing.T, args ...string) string {
	t.Helper()
	cfg, err := LoadConfig(append([]string{"--demo", "--warehouse", t.TempDir(), "--listen", "127.0.0.1:0",
		"--log-level", "error"}, args...), nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	out := &lockedBuilder{}
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, out) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	re := regexp.MustCompile(`web console on (https?://\S+/)`)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("Run ended before serving: %v\n%s", err, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no console URL printed:\n%s", out)
		}
	}
}

// tokenFlags writes a tokens file granting ops every table and returns the
// flags of mode token with it, and ops's token.
func tokenFlags(t *testing.T) ([]string, string) {
	t.Helper()
	tok, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, "tokens:\n  - principal: ops\n    sha256: %s\n",
		auth.HashToken(tok)), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--auth-mode", "token", "--auth-tokens-file", path}, tok
}

// TestSharedAddressPprof: on an address that serves the console and the
// metrics with authentication on, the profiles (the command line among
// them) need the console's credentials; /metrics and /healthz stay open.
func TestSharedAddressPprof(t *testing.T) {
	flags, tok := tokenFlags(t)
	url := runHTTP(t, append(flags, "--http-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--pprof")...)
	for _, path := range []string{"debug/pprof/cmdline", "debug/pprof/", "debug/pprof/goroutine?debug=1",
		"debug/pprof/heap", "debug/pprof/symbol", "debug/pprof/trace?seconds=1", "debug/pprof/profile?seconds=1"} {
		status, body := httpget.Get(t, url+path, nil)
		if status != http.StatusUnauthorized || strings.Contains(body, "--auth-tokens-file") {
			t.Errorf("GET /%s without credentials: %d %.100q; want 401", path, status, body)
		}
	}
	status, body := httpget.Get(t, url+"debug/pprof/cmdline", map[string]string{"Authorization": "Bearer " + tok})
	if status != http.StatusOK || body == "" {
		t.Errorf("GET /debug/pprof/cmdline with a token: %d %.100q; want 200 and the command line", status, body)
	}
	status, body = httpget.Get(t, url+"debug/pprof/", map[string]string{"Authorization": "Bearer " + tok})
	if status != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("GET /debug/pprof/ with a token: %d %.100q; want 200 and the index", status, body)
	}
	for path, want := range map[string]string{"metrics": "sluice_", "healthz": "ok"} {
		if status, body := httpget.Get(t, url+path, nil); status != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET /%s without credentials: %d %.100q; want 200 with %q", path, status, body, want)
		}
	}
}

// TestHTTPHostGuard: every path of flightd's HTTP servers, the metrics and
// the profiles too, refuses a Host it was not bound to (421, naming
// http.allowed_hosts), unless the setting lists it.
func TestHTTPHostGuard(t *testing.T) {
	url := runHTTP(t, "--http-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--pprof")
	port := url[strings.LastIndex(url, ":")+1 : len(url)-1]
	for _, path := range []string{"metrics", "healthz", "debug/pprof/cmdline", "api/tables", ""} {
		status, body := httpget.Get(t, url+path, map[string]string{"Host": "rebind.attacker.example:" + port})
		if status != http.StatusMisdirectedRequest || !strings.Contains(body, "http.allowed_hosts") {
			t.Errorf("GET /%s with a foreign Host: %d %.100q; want 421 naming http.allowed_hosts", path, status, body)
		}
		if status, body := httpget.Get(t, url+path, map[string]string{"Host": "localhost:" + port}); status != http.StatusOK {
			t.Errorf("GET /%s with Host localhost: %d %.100q; want 200", path, status, body)
		}
	}
}

// TestSecurityDocSharedAddress keeps SECURITY.md's table of what an
// address shared by the console and the metrics serves without
// credentials true: it builds that server with authentication on and
// --pprof, asks for every path it registers (and the pages under each)
// without credentials, and checks that the table lists exactly those
// paths, each served or refused as it is.
func TestSecurityDocSharedAddress(t *testing.T) {
	const doc = "../../../docs/SECURITY.md"
	flags, _ := tokenFlags(t)
	cfg, err := LoadConfig(append(flags, "--http-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
		"--pprof"), nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if _, err := demo.Ensure(ctx, cat); err != nil {
		t.Fatal(err)
	}
	authn, err := auth.New(cfg.Auth)
	if err != nil {
		t.Fatal(err)
	}
	authz, err := auth.NewAuthorizer(cfg.Auth)
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	engine := feed.New(cat, feed.Options{})
	defer engine.Close()
	metrics := server.NewMetrics(engine)
	srv := server.New(engine, server.Options{Logger: quiet, Authenticator: authn, Authorizer: authz, Metrics: metrics})
	defer srv.Shutdown()
	sites, err := httpServices{cfg: cfg, metrics: metrics, srv: srv, authn: authn, log: quiet}.bindHTTP()
	if err != nil {
		t.Fatal(err)
	}
	defer sites.stop()
	url := strings.TrimSuffix(sites.serve(), "/")
	if len(sites.sites) != 1 {
		t.Fatalf("%d HTTP servers; want one for the shared address", len(sites.sites))
	}

	// The pages under each registered path.
	var profiles []string
	for _, p := range pprof.Profiles() {
		profiles = append(profiles, "/debug/pprof/"+p.Name()+"?debug=1")
	}
	under := map[string][]string{
		"/debug/pprof/": append(profiles, "/debug/pprof/cmdline", "/debug/pprof/symbol",
			"/debug/pprof/trace?seconds=1", "/debug/pprof/profile?seconds=1"),
		"/": {"/assets/console.js", "/assets/console.css", "/api/session", "/api/tables",
			"/api/snapshots?table=demo.orders", "/api/changes?table=demo.orders", "/api/live?table=demo.orders",
			"/no/such/page"},
	}
	served := map[string]bool{}
	for _, pattern := range sites.sites[0].patterns {
		var open, closed []string
		for _, path := range append([]string{pattern}, under[pattern]...) {
			switch status, body := httpget.Get(t, url+path, nil); status {
			case http.StatusUnauthorized:
				closed = append(closed, path)
			case http.StatusOK:
				open = append(open, path)
			default:
				t.Errorf("GET %s without credentials: %d %.100q; want 200 or 401", path, status, body)
			}
		}
		if len(open) > 0 && len(closed) > 0 {
			t.Errorf("under %s, %q are served without credentials and %q refused: the table cannot say so",
				pattern, open, closed)
		}
		served[pattern] = len(open) > 0
	}

	rows := docmd.Table(t, doc, docmd.Read(t, doc), "path", "what", "without credentials")
	listed := map[string]bool{}
	for _, r := range rows {
		switch {
		case strings.HasPrefix(r[2], "served"):
			listed[r[0]] = true
		case strings.HasPrefix(r[2], "refused"):
			listed[r[0]] = false
		default:
			t.Errorf("%s: %s: %q says neither served nor refused", doc, r[0], r[2])
		}
	}
	if !maps.Equal(listed, served) {
		t.Errorf("%s lists %v (path: served without credentials); the shared address serves %v", doc,
			listed, served)
	}
	var open []string
	for p, ok := range served {
		if ok {
			open = append(open, p)
		}
	}
	if slices.Sort(open); !slices.Equal(open, []string{"/healthz", "/metrics"}) {
		t.Errorf("served without credentials: %q; want /healthz and /metrics only", open)
	}
}
