package daemon

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHTTPListen: the console's address from each source, and the
// configurations that would expose it refused at start, naming the flag.
func TestHTTPListen(t *testing.T) {
	dir := t.TempDir()
	plaintext := filepath.Join(dir, "plaintext.yaml")
	if err := os.WriteFile(plaintext, []byte("http_listen: 0.0.0.0:8080\nauth:\n  mode: token\n  tokens_file: t.yaml\n"+
		"  allow_plaintext: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	token := []string{"--auth-mode", "token", "--auth-tokens-file", "t.yaml"}
	for _, tt := range []struct {
		name string
		args []string
		env  []string
		want string // "" for valid
	}{
		{"loopback", []string{"--http-listen", "127.0.0.1:8080"}, nil, ""},
		{"env", nil, []string{"SLUICE_HTTP_LISTEN=localhost:8080"}, ""},
		{"shared with the metrics", []string{"--http-listen", "127.0.0.1:9090", "--metrics-listen", "127.0.0.1:9090"}, nil, ""},
		{"yaml, plaintext behind a proxy", []string{"--config", plaintext}, nil, ""},
		{"no port", []string{"--http-listen", "127.0.0.1"}, nil, "--http-listen"},
		{"public without auth", []string{"--http-listen", "0.0.0.0:8080"}, nil, "authentication is off"},
		{"public without auth, env", nil, []string{"SLUICE_HTTP_LISTEN=:8080"}, "authentication is off"},
		{"public token without TLS", append([]string{"--http-listen", "10.0.0.5:8080"}, token...), nil, "in the clear"},
		{"mtls", []string{"--http-listen", "127.0.0.1:8080", "--auth-mode", "mtls", "--tls-cert-file", "c.pem",
			"--tls-key-file", "k.pem", "--tls-client-ca-file", "ca.pem"}, nil, "not client certificates"},
	} {
		c, err := LoadConfig(tt.args, tt.env, io.Discard)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want == "" && c.HTTPListen == "":
			t.Errorf("%s: no console address", tt.name)
		case tt.want != "" && (!errors.Is(err, ErrConfig) || !strings.Contains(errText(err), tt.want) ||
			!strings.Contains(errText(err), "--http-listen")):
			t.Errorf("%s: %v; want ErrConfig naming --http-listen and %q", tt.name, err, tt.want)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// lockedBuilder is a strings.Builder that Run writes while the test reads.
type lockedBuilder struct {
	mu sync.Mutex // guards b
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestConsoleSharesMetricsAddress: with --http-listen equal to
// --metrics-listen one HTTP server serves the console, /metrics and
// /healthz; the console's URL is printed.
func TestConsoleSharesMetricsAddress(t *testing.T) {
	wh := t.TempDir()
	cfg, err := LoadConfig([]string{"--demo", "--warehouse", wh, "--listen", "127.0.0.1:0", "--http-listen",
		"127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--log-level", "error"}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	out := &lockedBuilder{}
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, out) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	re := regexp.MustCompile(`web console on (http://\S+/)`)
	var url string
	for deadline := time.Now().Add(30 * time.Second); url == ""; {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no console URL printed:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for path, want := range map[string]string{"api/tables": `"name":"demo.orders"`, "metrics": "sluice_",
		"healthz": "ok", "": "<title>Sluice console</title>"} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %s, body without %q", url+path, resp.Status, want)
		}
	}
}

// TestHTTPAllowedHosts: http.allowed_hosts from each source, and the
// entries refused at start, naming the flag.
func TestHTTPAllowedHosts(t *testing.T) {
	yamlFile := filepath.Join(t.TempDir(), "f.yaml")
	if err := os.WriteFile(yamlFile, []byte("http_listen: 127.0.0.1:8080\nhttp:\n  allowed_hosts: [sluice.example.com, "+
		"\"[::1]\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	token := []string{"--auth-mode", "token", "--auth-tokens-file", "t.yaml"}
	for _, tt := range []struct {
		name string
		args []string
		env  []string
		want []string
	}{
		{"default", nil, nil, nil},
		{"yaml", []string{"--config", yamlFile}, nil, []string{"sluice.example.com", "[::1]"}},
		{"env over yaml", []string{"--config", yamlFile}, []string{"SLUICE_HTTP_ALLOWED_HOSTS=a.example, b.example"},
			[]string{"a.example", "b.example"}},
		{"flag over env", []string{"--http-allowed-hosts", "c.example,10.0.0.5"},
			[]string{"SLUICE_HTTP_ALLOWED_HOSTS=a.example"}, []string{"c.example", "10.0.0.5"}},
		{"any host with auth", append([]string{"--http-allowed-hosts", "*"}, token...), nil, []string{"*"}},
	} {
		c, err := LoadConfig(tt.args, tt.env, io.Discard)
		if err != nil || strings.Join(c.HTTP.AllowedHosts, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%s: %v, allowed hosts %q; want %q", tt.name, err, c.HTTP.AllowedHosts, tt.want)
		}
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"any host without auth", []string{"--http-allowed-hosts", "*"}, "authentication is off"},
		{"a URL", []string{"--http-allowed-hosts", "https://sluice.example.com"}, "without a scheme"},
		{"a port", []string{"--http-allowed-hosts", "sluice.example.com:8080"}, "a port"},
		{"a glob", []string{"--http-allowed-hosts", "*.example.com"}, "not a host name"},
	} {
		_, err := LoadConfig(tt.args, nil, io.Discard)
		if !errors.Is(err, ErrConfig) || !strings.Contains(errText(err), tt.want) ||
			!strings.Contains(errText(err), "--http-allowed-hosts") {
			t.Errorf("%s: %v; want ErrConfig naming --http-allowed-hosts and %q", tt.name, err, tt.want)
		}
	}
}
