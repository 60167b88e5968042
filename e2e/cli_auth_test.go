package e2e

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestCLIAuth runs sluice against servers with authentication: a bearer
// token (--token and SLUICE_TOKEN), the basic login (--user with
// SLUICE_PASSWORD), TLS with a private CA (--tls-ca, or
// --insecure-skip-verify) and a client certificate (--tls-cert,
// --tls-key); wrong or missing credentials exit 26, Unauthenticated.
func TestCLIAuth(t *testing.T) {
	fix := writeEvents(t, 2, 5)
	dir := t.TempDir()
	token := flightdTool(t, "", "new-token")
	tokensFile := writeFile(t, dir, "tokens.yaml", "tokens:\n"+flightdTool(t, token, "hash-token", "--principal", "analyst")+"\n")
	const password = "correct horse battery staple"
	usersFile := writeFile(t, dir, "users.yaml", "users:\n"+flightdTool(t, password, "hash-password", "--user", "alice")+"\n")
	rulesFile := writeFile(t, dir, "rules.yaml", "auth:"+authRules)
	mtlsFile := writeFile(t, dir, "mtls.yaml", "auth:"+authRules+"  client_principals:\n    ingest: ingest\n")
	ca := newCA(t, dir, "cli-ca")
	serverCert, serverKey := ca.issue(t, "server", "127.0.0.1", true)
	clientCert, clientKey := ca.issue(t, "client", "ingest", false)
	wh := []string{"--warehouse", fix.Warehouse}
	plain := startFlightd(t, append(wh, "--config", rulesFile, "--auth-mode", "token,basic",
		"--auth-tokens-file", tokensFile, "--auth-users-file", usersFile)...)
	tlsSrv := startFlightd(t, append(wh, "--config", rulesFile, "--auth-mode", "token",
		"--auth-tokens-file", tokensFile, "--tls-cert-file", serverCert, "--tls-key-file", serverKey)...)
	mtls := startFlightd(t, append(wh, "--config", mtlsFile, "--auth-mode", "mtls",
		"--tls-cert-file", serverCert, "--tls-key-file", serverKey, "--tls-client-ca-file", ca.certFile)...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	run := func(env []string, args ...string) cliResult {
		cmd := exec.CommandContext(ctx, sluiceBin, args...)
		cmd.Env = cliEnv(env...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		res := cliResult{stdout: out.String(), stderr: errb.String()}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			res.code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return res
	}
	tlsURI, mtlsURI := "grpc+tls://"+tlsSrv.Addr, "grpc+tls://"+mtls.Addr
	for _, tt := range []struct {
		name string
		env  []string
		args []string
		code int
	}{
		{"no credentials", nil, []string{"--uri", plain.URI()}, 26},
		{"--token", nil, []string{"--uri", plain.URI(), "--token", token}, 0},
		{"SLUICE_TOKEN", []string{"SLUICE_TOKEN=" + token, "SLUICE_URI=" + plain.URI()}, nil, 0},
		{"a wrong token", nil, []string{"--uri", plain.URI(), "--token", flightdTool(t, "", "new-token")}, 26},
		{"--user, SLUICE_PASSWORD", []string{"SLUICE_PASSWORD=" + password}, []string{"--uri", plain.URI(), "--user", "alice"}, 0},
		{"a wrong password", []string{"SLUICE_PASSWORD=nope"}, []string{"--uri", plain.URI(), "--user", "alice"}, 26},
		{"TLS with --tls-ca", nil, []string{"--uri", tlsURI, "--tls-ca", ca.certFile, "--token", token}, 0},
		{"TLS, an unknown CA", nil, []string{"--uri", tlsURI, "--token", token}, 24},
		{"TLS, --insecure-skip-verify", nil, []string{"--uri", tlsURI, "--insecure-skip-verify", "--token", token}, 0},
		{"a client certificate", nil, []string{"--uri", mtlsURI, "--tls-ca", ca.certFile, "--tls-cert", clientCert, "--tls-key", clientKey}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := run(tt.env, append([]string{"tables", "-o", "json"}, tt.args...)...)
			if res.code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %q", res.code, tt.code, res.stderr)
			}
			if tt.code == 0 && !strings.Contains(res.stdout, `"name": "`+eventsTable+`"`) {
				t.Fatalf("tables: %s", res.stdout)
			}
			if tt.code == 26 && !strings.HasPrefix(res.stderr, "sluice tables: Unauthenticated: ") {
				t.Fatalf("stderr %q", res.stderr)
			}
			if strings.Contains(res.stderr, password) || strings.Contains(res.stderr, token) {
				t.Fatalf("a secret on stderr: %q", res.stderr)
			}
		})
	}
	// A read with a token equals the read without auth's: all the rows.
	res := run([]string{"SLUICE_TOKEN=" + token, "SLUICE_URI=" + plain.URI()}, "changes", eventsTable, "-o", "jsonl")
	n := 0
	for _, s := range fix.Snapshots {
		n += len(s.Rows)
	}
	if res.code != 0 || strings.Count(res.stdout, "\n") != n {
		t.Fatalf("exit %d, %d lines, want %d; %s", res.code, strings.Count(res.stdout, "\n"), n, res.stderr)
	}
}
