package e2e

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicefeed/sluice/internal/testkit/httpget"
)

// TestConsoleRebinding is the DNS rebinding of a page the user visits: a
// flightd --demo with its console on loopback and authentication off
// refuses a request for the demo's rows whose Host is the attacker's name
// (curl -H "Host: rebind.attacker.example:PORT"), and one whose Origin is
// another site, while the console's own names are served.
func TestConsoleRebinding(t *testing.T) {
	srv := startFlightd(t, "--demo", "--warehouse", t.TempDir(), "--http-listen", "127.0.0.1:0",
		"--log-level", "info")
	addr := consoleAddr(t, srv)
	_, port, _ := net.SplitHostPort(addr)
	base := "http://" + addr
	const rows = "/api/changes?table=demo.orders"
	status, body := httpget.Get(t, base+rows, map[string]string{"Host": "rebind.attacker.example:" + port})
	if status != http.StatusMisdirectedRequest || strings.Contains(body, "order_id") ||
		!strings.Contains(body, "http.allowed_hosts") {
		t.Fatalf("a rebound Host: %d %.200q; want 421 naming http.allowed_hosts, and no rows", status, body)
	}
	status, body = httpget.Get(t, base+rows, map[string]string{"Origin": "http://rebind.attacker.example:" + port})
	if status != http.StatusForbidden || strings.Contains(body, "order_id") {
		t.Fatalf("a foreign Origin: %d %.200q; want 403 and no rows", status, body)
	}
	for _, host := range []string{addr, "localhost:" + port} {
		if status, body := httpget.Get(t, base+rows, map[string]string{"Host": host}); status != http.StatusOK ||
			!strings.Contains(body, "order_id") {
			t.Fatalf("Host %s: %d %.200q; want 200 with the rows", host, status, body)
		}
	}
	if !strings.Contains(srv.logs(), `host=rebind.attacker.example:`+port) {
		t.Errorf("the refusal is not logged with its host:\n%s", srv.logs())
	}

	// A name the operator lists is served.
	named := startFlightd(t, "--demo", "--warehouse", t.TempDir(), "--http-listen", "127.0.0.1:0",
		"--http-allowed-hosts", "sluice.example.com", "--log-level", "info")
	addr = consoleAddr(t, named)
	_, port, _ = net.SplitHostPort(addr)
	if status, body := httpget.Get(t, "http://"+addr+rows, map[string]string{"Host": "sluice.example.com:" + port}); status != http.StatusOK {
		t.Fatalf("a name of --http-allowed-hosts: %d %.200q; want 200", status, body)
	}
}

// TestConsoleBusyPort: a flightd whose Flight port, or console port, is
// taken exits with an error that names the flag and the address, and logs
// no "serving" line (the other addresses were free, but nothing was
// served).
func TestConsoleBusyPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	for _, tc := range []struct{ flag, listen, http string }{
		{"--listen", addr, "127.0.0.1:0"},
		{"--http-listen", "127.0.0.1:0", addr},
	} {
		out := refused(t, nil, "--demo", "--warehouse", t.TempDir(), "--listen", tc.listen, "--metrics-listen",
			"127.0.0.1:0", "--http-listen", tc.http, "--log-level", "info")
		wantOutput(t, out, tc.flag+" "+addr+": ", "address already in use")
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, `msg=serving`) || strings.Contains(line, `msg="serving`) ||
				strings.Contains(line, "web console on") || strings.Contains(line, "serving on") {
				t.Errorf("%s taken: flightd logged a serving line before it failed: %s\n%s", tc.flag, line, out)
			}
		}
	}
}
