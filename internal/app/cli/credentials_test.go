package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// env is an environment for IO.Getenv.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// TestTokenTrimmed: a token read raw from a file ends in a line feed; the
// server gets it without, from --token, SLUICE_TOKEN, --token-file and
// SLUICE_TOKEN_FILE alike.
func TestTokenTrimmed(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("tok-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"SLUICE_TOKEN", []string{"SLUICE_TOKEN", "tok\n"}, nil, "Bearer tok"},
		{"--token", nil, []string{"--token", " tok\r\n"}, "Bearer tok"},
		{"--token-file", nil, []string{"--token-file", file}, "Bearer tok-file"},
		{"SLUICE_TOKEN_FILE", []string{"SLUICE_TOKEN_FILE", file}, nil, "Bearer tok-file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := startFakeServer(t, status.Error(codes.NotFound, "no such table"))
			code, _, stderr := run(t, IO{Getenv: env(tt.env...)}, append([]string{"snapshots", "ns.t", "--uri", srv.uri}, tt.args...)...)
			if code != exitServer+int(codes.NotFound) {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if h := srv.headers(); len(h) == 0 || !slices.Equal(slices.Compact(h), []string{tt.want}) {
				t.Fatalf("authorization %q, want %q", h, tt.want)
			}
		})
	}
}

// TestTokenRefused: a token with a control character inside, or none at
// all in its file, is a usage error that does not print the token.
func TestTokenRefused(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		env  []string
		args []string
		msg  string
	}{
		{"control character", []string{"SLUICE_TOKEN", "se\x01cret"}, nil, "--token (or SLUICE_TOKEN) holds a control character"},
		{"line feed inside", nil, []string{"--token", "se\ncret"}, "--token (or SLUICE_TOKEN) holds a control character"},
		{"not ASCII", nil, []string{"--token", "secrét"}, "--token (or SLUICE_TOKEN) holds a character that is not printable ASCII"},
		{"empty file", nil, []string{"--token-file", empty}, "--token-file " + empty + ": no token in it"},
		{"missing file", nil, []string{"--token-file", filepath.Join(dir, "nope")}, "--token-file"},
		{"both", []string{"SLUICE_TOKEN", "a"}, []string{"--token-file", empty}, "--token and --token-file both given"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(t, IO{Getenv: env(tt.env...)}, append([]string{"tables", "--uri", "grpc://127.0.0.1:1"}, tt.args...)...)
			if code != exitUsage || !strings.Contains(stderr, tt.msg) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, tt.msg)
			}
			if strings.Contains(stderr, "cret") {
				t.Fatalf("the token is printed: %q", stderr)
			}
		})
	}
}

// TestTokenHelp: the help of --token says that it shows in the process
// list and offers --token-file, as --password's names SLUICE_PASSWORD.
func TestTokenHelp(t *testing.T) {
	_, out, _ := run(t, IO{}, "--help")
	var line string
	for l := range strings.Lines(out) {
		if strings.HasPrefix(strings.TrimSpace(l), "--token ") {
			line = l
		}
	}
	if !strings.Contains(line, "process list") || !strings.Contains(out, "--token-file") || !strings.Contains(out, "SLUICE_TOKEN_FILE") {
		t.Fatalf("sluice --help:\n%s", out)
	}
}

// TestURIPasswordRedacted: a password in --uri never reaches stderr.
func TestURIPasswordRedacted(t *testing.T) {
	for _, uri := range []string{
		"grpc://user:s3cret@127.0.0.1:1",
		"grpc+tls://user:s3cret@127.0.0.1:1",
		"user:s3cret@127.0.0.1:1",
		"grpc://127.0.0.1:1,user:s3cret@127.0.0.1:2",
		"grpc://user:s3cret@bad host:1",
	} {
		for _, o := range []IO{{}, {Getenv: env("SLUICE_URI", uri)}} {
			args := []string{"tables"}
			if o.Getenv == nil {
				args = append(args, "--uri", uri)
			}
			code, out, stderr := run(t, o, args...)
			if code == 0 || strings.Contains(stderr+out, "s3cret") || !strings.Contains(stderr, "user:xxxxx@") {
				t.Errorf("%s: exit %d, stderr %q", uri, code, stderr)
			}
		}
	}
}
