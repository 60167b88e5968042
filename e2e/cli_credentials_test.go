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

// TestCLICredentials runs sluice against a flightd with token
// authentication: a token with the line feed it has when read raw from a
// file works from SLUICE_TOKEN, --token-file and SLUICE_TOKEN_FILE; a
// token with a control character inside is a usage error; a password in
// --uri is never printed. A mistyped flag of flightd and of sluice gets
// the nearest flag, and a refused connection names the address and
// --uri / SLUICE_URI.
func TestCLICredentials(t *testing.T) {
	fix := writeEvents(t, 1, 3)
	dir := t.TempDir()
	token := flightdTool(t, "", "new-token")
	tokensFile := writeFile(t, dir, "tokens.yaml", "tokens:\n"+flightdTool(t, token, "hash-token", "--principal", "analyst")+"\n")
	rulesFile := writeFile(t, dir, "rules.yaml", "auth:"+authRules)
	tokenFile := writeFile(t, dir, "token", token+"\n")
	srv := startFlightd(t, "--warehouse", fix.Warehouse, "--config", rulesFile, "--auth-mode", "token", "--auth-tokens-file", tokensFile)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(env []string, args ...string) cliResult {
		t.Helper()
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
	uri := "SLUICE_URI=" + srv.URI()
	for _, tt := range []struct {
		name string
		env  []string
		args []string
		code int
		msg  string
	}{
		{"SLUICE_TOKEN with a line feed", []string{uri, "SLUICE_TOKEN=" + token + "\n"}, nil, 0, ""},
		{"--token-file", []string{uri}, []string{"--token-file", tokenFile}, 0, ""},
		{"SLUICE_TOKEN_FILE", []string{uri, "SLUICE_TOKEN_FILE=" + tokenFile}, nil, 0, ""},
		{"a control character inside", []string{uri, "SLUICE_TOKEN=" + token[:4] + "\x01" + token[4:]}, nil, 2,
			"--token (or SLUICE_TOKEN) holds a control character"},
		{"no token", []string{uri}, nil, 26, "Unauthenticated"},
		{"a password in --uri", nil, []string{"--token-file", tokenFile, "--uri", "grpc://analyst:s3cret@" + srv.Addr}, 2,
			"grpc://analyst:xxxxx@" + srv.Addr + ": sluice takes no credentials in the address"},
		{"a mistyped flag", []string{uri}, []string{"--token-fil", tokenFile}, 2,
			"flag provided but not defined: -token-fil (did you mean --token-file?)"},
		{"connection refused", []string{"SLUICE_URI=grpc://127.0.0.1:1"}, []string{"--token-file", tokenFile}, 24,
			"the server at grpc://127.0.0.1:1 (SLUICE_URI) is unavailable: is flightd running there? --uri or SLUICE_URI names another."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := run(tt.env, append([]string{"tables"}, tt.args...)...)
			if res.code != tt.code || !strings.Contains(res.stderr, tt.msg) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", res.code, res.stderr, tt.code, tt.msg)
			}
			if strings.Contains(res.stderr, token[4:]) || strings.Contains(res.stderr, "s3cret") {
				t.Fatalf("a secret is printed: %q", res.stderr)
			}
			if tt.code == 0 && !strings.Contains(res.stdout, eventsTable) {
				t.Fatalf("tables:\n%s", res.stdout)
			}
		})
	}

	t.Run("flightd's mistyped flag", func(t *testing.T) {
		out, err := exec.CommandContext(ctx, flightdBin, "--catalog-nam", "x").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "flag provided but not defined: -catalog-nam (did you mean --catalog-name?)") {
			t.Fatalf("%v: %s", err, out)
		}
	})
}
