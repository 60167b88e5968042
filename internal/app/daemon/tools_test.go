package daemon

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"

	"github.com/sluicefeed/sluice/auth"
)

func runTool(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	var out strings.Builder
	err := Main(context.Background(), args, nil, strings.NewReader(stdin), &out, io.Discard)
	return out.String(), err
}

func TestNewTokenAndHashToken(t *testing.T) {
	tok, err := runTool(t, "", CmdNewToken)
	if err != nil {
		t.Fatal(err)
	}
	tok = strings.TrimSuffix(tok, "\n")
	if len(tok) != 43 || strings.ContainsAny(tok, " \n=+/") {
		t.Fatalf("new token %q: want 43 base64url characters", tok)
	}
	again, _ := runTool(t, "", CmdNewToken)
	if strings.TrimSpace(again) == tok {
		t.Fatal("two new tokens are equal")
	}
	for _, in := range []string{tok, tok + "\n", tok + "\r\n"} {
		got, err := runTool(t, in, CmdHashToken)
		if err != nil || got != auth.HashToken(tok)+"\n" {
			t.Fatalf("hash-token of %q: %q, %v", in, got, err)
		}
	}
	// The entry is a valid tokens file once under "tokens:", and the
	// authenticator accepts the token.
	entry, err := runTool(t, tok, CmdHashToken, "--principal", "ingest")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(path, []byte("tokens:\n"+entry), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(auth.Config{Mode: auth.ModeToken, TokensFile: path})
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.AuthenticateMetadata(map[string][]string{"authorization": {"Bearer " + tok}}, nil)
	if err != nil || p.Name != "ingest" {
		t.Fatalf("the token of the entry %q: %v, %v", entry, p, err)
	}
}

func TestHashPassword(t *testing.T) {
	got, err := runTool(t, "correct horse battery staple\n", CmdHashPassword)
	if err != nil {
		t.Fatal(err)
	}
	if bcrypt.CompareHashAndPassword([]byte(strings.TrimSpace(got)), []byte("correct horse battery staple")) != nil {
		t.Fatalf("hash-password printed %q, not the password's bcrypt hash", got)
	}
	entry, err := runTool(t, "s3cret-pass", CmdHashPassword, "--user", "alice")
	if err != nil {
		t.Fatal(err)
	}
	var f auth.UsersFile
	if err := yaml.Unmarshal([]byte("users:\n"+entry), &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Users) != 1 || f.Users[0].Name != "alice" ||
		bcrypt.CompareHashAndPassword([]byte(f.Users[0].Bcrypt), []byte("s3cret-pass")) != nil {
		t.Fatalf("users-file entry %q", entry)
	}
}

func TestToolErrors(t *testing.T) {
	long := strings.Repeat("x", maxSecretLine+1)
	for _, tt := range []struct {
		name, stdin string
		args        []string
		msg         string
	}{
		{"empty token", "", []string{CmdHashToken}, "no token"},
		{"empty line", "\n", []string{CmdHashToken}, "no token"},
		{"short token", "abc\n", []string{CmdHashToken}, "too easy to guess"},
		{"token with a space", "abcdefgh ijklmnopqrst", []string{CmdHashToken}, "space"},
		{"two lines", "abcdefghijklmnopq\nrstuvwxyz\n", []string{CmdHashToken}, "more than one line"},
		{"token as an argument", "", []string{CmdHashToken, "abcdefghijklmnopq"}, "standard input"},
		{"overlong input", long, []string{CmdHashToken}, "longer than"},
		{"empty password", "", []string{CmdHashPassword}, "no password"},
		{"overlong password", strings.Repeat("p", 73), []string{CmdHashPassword}, "72"},
		{"unknown flag", "", []string{CmdNewToken, "--bits", "9"}, "flag provided but not defined"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			err := Main(context.Background(), tt.args, nil, strings.NewReader(tt.stdin), io.Discard, &stderr)
			if err == nil || !strings.Contains(err.Error()+stderr.String(), tt.msg) {
				t.Fatalf("%v (stderr %q), want an error containing %q", err, stderr.String(), tt.msg)
			}
		})
	}
	if err := Main(context.Background(), []string{"--help"}, nil, nil, io.Discard, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
}
