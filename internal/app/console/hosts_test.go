package console_test

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/sluicefeed/sluice/internal/app/console"
	"github.com/sluicefeed/sluice/internal/testkit/httpget"
)

// send sends a GET of path with the headers given (Host sets the request's
// host), and returns its status and body.
func (f *fixture) send(t *testing.T, path string, headers map[string]string) (int, string) {
	t.Helper()
	return httpget.Get(t, f.url+path, headers)
}

// TestDNSRebinding: with authentication off, a request whose Host is a
// name the console was not bound to (a web page's own name, resolved
// again to 127.0.0.1) is refused with 421 and a body that names the
// setting; the loopback names are served.
func TestDNSRebinding(t *testing.T) {
	f := start(t, false)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(f.url, "http://"))
	for _, host := range []string{"rebind.attacker.example:" + port, "rebind.attacker.example",
		"127.0.0.1.attacker.example:" + port, "localhost.attacker.example:" + port} {
		for _, path := range []string{"/api/changes?table=demo.orders", "/api/tables", "/", "/assets/console.js",
			"/api/live?table=demo.orders"} {
			status, body := f.send(t, path, map[string]string{"Host": host})
			if status != http.StatusMisdirectedRequest || !strings.Contains(body, "http.allowed_hosts") ||
				!strings.Contains(body, `"`+host+`"`) || strings.Contains(body, "order_id") {
				t.Errorf("GET %s with Host %s: %d %q; want 421 naming the host and http.allowed_hosts", path, host,
					status, body)
			}
		}
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port, "localhost.:" + port,
		"[::1]:" + port, "127.0.0.2:" + port} {
		if status, body := f.send(t, "/api/changes?table=demo.orders", map[string]string{"Host": host}); status != http.StatusOK ||
			!strings.Contains(body, `"rows"`) {
			t.Errorf("GET with Host %s: %d %q; want 200 with the rows", host, status, body)
		}
	}
}

// TestCrossOrigin: a request whose Origin is another site is refused
// (403) before it opens anything, a live stream included; the console's
// own origin, and a request without an Origin, are served.
func TestCrossOrigin(t *testing.T) {
	f := start(t, false)
	for _, origin := range []string{"http://rebind.attacker.example", "https://evil.example:443", "null",
		"file://", "http://127.0.0.1.attacker.example:1"} {
		for _, path := range []string{"/api/tables", "/api/live?table=demo.orders", "/api/changes?table=demo.orders"} {
			status, body := f.send(t, path, map[string]string{"Origin": origin})
			if status != http.StatusForbidden || !strings.Contains(body, "Origin") ||
				!strings.Contains(body, "http.allowed_hosts") || strings.Contains(body, "event:") {
				t.Errorf("GET %s with Origin %s: %d %q; want 403 naming the Origin and http.allowed_hosts", path,
					origin, status, body)
			}
		}
	}
	u, err := url.Parse(f.url)
	if err != nil {
		t.Fatal(err)
	}
	for _, origin := range []string{f.url, "http://localhost:" + u.Port(), ""} {
		if status, body := f.send(t, "/api/tables", map[string]string{"Origin": origin}); status != http.StatusOK {
			t.Errorf("GET with Origin %q: %d %q; want 200", origin, status, body)
		}
	}
}

// TestAllowedHosts: the names the operator allows are served, as Host and
// as Origin, with any port, case or final dot; AnyHost serves every Host
// but still refuses a foreign Origin.
func TestAllowedHosts(t *testing.T) {
	f := start(t, false, func(o *console.Options) {
		o.Hosts = console.NewHosts("127.0.0.1:0", []string{"sluice.example.com", "[fd00::5]", "10.1.2.3"})
	})
	for _, h := range []map[string]string{
		{"Host": "sluice.example.com"},
		{"Host": "Sluice.Example.COM.:8443"},
		{"Host": "[fd00::5]:80"},
		{"Host": "10.1.2.3:8080"},
		{"Host": "sluice.example.com", "Origin": "https://sluice.example.com"},
		{"Origin": "https://sluice.example.com:8443"},
	} {
		if status, body := f.send(t, "/api/tables", h); status != http.StatusOK {
			t.Errorf("GET with %v: %d %q; want 200", h, status, body)
		}
	}
	for _, h := range []map[string]string{
		{"Host": "other.example.com"},
		{"Host": "example.com"},
		{"Host": "sluice.example.com.attacker.example"},
		{"Host": "10.1.2.4"},
	} {
		if status, body := f.send(t, "/api/tables", h); status != http.StatusMisdirectedRequest {
			t.Errorf("GET with %v: %d %q; want 421", h, status, body)
		}
	}

	anyHost := start(t, false, func(o *console.Options) { o.Hosts = console.NewHosts("127.0.0.1:0", []string{"*"}) })
	if status, body := anyHost.send(t, "/api/tables", map[string]string{"Host": "rebind.attacker.example"}); status != http.StatusOK {
		t.Errorf("any host: GET with a foreign Host: %d %q; want 200", status, body)
	}
	if status, body := anyHost.send(t, "/api/tables", map[string]string{"Origin": "http://rebind.attacker.example"}); status != http.StatusForbidden {
		t.Errorf("any host: GET with a foreign Origin: %d %q; want 403", status, body)
	}
}

// TestHostsOfListenAddress: a listener answers the host of its address,
// and on a wildcard address every address of the machine, besides the
// loopback names; no other.
func TestHostsOfListenAddress(t *testing.T) {
	for _, tt := range []struct {
		listen   string
		yes, not []string
	}{
		{"127.0.0.1:8080", []string{"localhost", "127.0.0.1:8080", "[::1]:1", "127.1.2.3"},
			[]string{"10.0.0.5:8080", "192.0.2.1", "rebind.attacker.example", "localhost.attacker.example"}},
		{"10.0.0.5:8080", []string{"10.0.0.5:8080", "10.0.0.5", "localhost:8080"}, []string{"10.0.0.6:8080", "sluice"}},
		{"sluice.internal:8080", []string{"sluice.internal:8080", "SLUICE.internal"}, []string{"sluice", "internal"}},
		{"[::1]:8080", []string{"[::1]:8080", "[0:0:0:0:0:0:0:1]:8080", "localhost"}, []string{"[::2]:8080"}},
	} {
		h := console.NewHosts(tt.listen, nil)
		for _, host := range tt.yes {
			if !h.Allows(host) {
				t.Errorf("listening on %s: Host %s refused", tt.listen, host)
			}
		}
		for _, host := range tt.not {
			if h.Allows(host) {
				t.Errorf("listening on %s: Host %s allowed", tt.listen, host)
			}
		}
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, listen := range []string{"0.0.0.0:8080", "[::]:8080", ":8080"} {
		h := console.NewHosts(listen, nil)
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !h.Allows(net.JoinHostPort(n.IP.String(), "8080")) {
				t.Errorf("listening on %s: the machine's address %s refused", listen, n.IP)
			}
		}
		if h.Allows("rebind.attacker.example:8080") || h.Allows("192.0.2.1") {
			t.Errorf("listening on %s: a name or an address not the machine's is allowed", listen)
		}
	}
}

// TestAuthenticated: a handler behind Console.Authenticated needs the
// console's credentials while authentication is on (401 with a basic
// challenge), and checks the Host first.
func TestAuthenticated(t *testing.T) {
	for _, on := range []bool{true, false} {
		f := start(t, on)
		c := console.New(console.Options{Client: nil, Authenticator: f.authn,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		hs := httptest.NewServer(c.Authenticated(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "secret")
		})))
		defer hs.Close()
		g := &fixture{url: hs.URL}
		status, body := g.send(t, "/", nil)
		if on && (status != http.StatusUnauthorized || body == "secret") || !on && status != http.StatusOK {
			t.Errorf("auth %v, no credentials: %d %q", on, status, body)
		}
		if on {
			if status, body := g.send(t, "/", map[string]string{"Authorization": bearer(f.tokens["analyst"])}); status != http.StatusOK ||
				body != "secret" {
				t.Errorf("with a token: %d %q; want 200", status, body)
			}
		}
		if status, _ := g.send(t, "/", map[string]string{"Host": "rebind.attacker.example",
			"Authorization": bearer(f.tokens["analyst"])}); status != http.StatusMisdirectedRequest {
			t.Errorf("auth %v, a foreign Host: %d; want 421", on, status)
		}
	}
}
