package auth

import (
	"context"
	"encoding/binary"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/metadata"
)

// FuzzParseAuthorization feeds arbitrary authorization values, as a client
// sends them, to the header and basic-credentials parsers.
func FuzzParseAuthorization(f *testing.F) {
	for _, s := range []string{
		"Bearer abc", "bearer  abc ", "Basic YWxpY2U6cHc=", "Basic YWxpY2U6cHc", "Basic", "Bearer",
		"", " ", "Digest x", "Bearer a b", "Basic Og==", "Basic \x00", "Bearer sluice1.AAAA.BBBB",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		scheme, cred, err := parseAuthorization(v)
		if err != nil {
			if !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("error %v does not wrap ErrUnauthenticated", err)
			}
			return
		}
		if scheme != SchemeBearer && scheme != SchemeBasic {
			t.Fatalf("scheme %q", scheme)
		}
		if cred == "" || strings.ContainsAny(cred, " \t\r\n") || !strings.Contains(v, cred) {
			t.Fatalf("credentials %q of %q", cred, v)
		}
		if scheme != SchemeBasic {
			return
		}
		user, pw, err := parseBasic(cred)
		if err != nil {
			if !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("error %v does not wrap ErrUnauthenticated", err)
			}
			return
		}
		if user == "" || !utf8.ValidString(user) || strings.ContainsFunc(user, isControl) || len(pw) > maxPasswordLen {
			t.Fatalf("basic credentials %q, %q", user, pw)
		}
	})
}

// FuzzIssuedToken feeds arbitrary bearer tokens to the issued-token parser
// and verifier: nothing but the tokens the issuer signed is ever accepted,
// and a token that parses has exactly one spelling.
func FuzzIssuedToken(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	s := &issuer{secret: []byte(strings.Repeat("k", MinSecretBytes)), ttl: time.Hour}
	valid, _, err := s.issue("alice", now)
	if err != nil {
		f.Fatal(err)
	}
	for _, tok := range []string{valid, valid[:len(valid)-1], valid + "A", "sluice1.", "sluice1..", "sluice1.AAAAAAAAAAAA.", "abc", ""} {
		f.Add(tok)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		parsed, perr := parseIssued(tok)
		if perr == nil {
			payload := binary.BigEndian.AppendUint64(nil, uint64(parsed.expires.Unix()))
			payload = append(payload, parsed.name...)
			again := issuedPrefix + b64.EncodeToString(payload) + "." + b64.EncodeToString(parsed.mac)
			if again != tok {
				t.Fatalf("token %q parses but re-encodes as %q", tok, again)
			}
		}
		name, err := s.verify(tok, now)
		if err == nil {
			if tok != valid || name != "alice" {
				t.Fatalf("forged token %q accepted as %q", tok, name)
			}
			return
		}
		if perr != nil && !errors.Is(err, errNotIssued) {
			t.Fatalf("unparsable token: %v", err)
		}
		if perr == nil && !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("parsed token refused with %v", err)
		}
	})
}

// FuzzAuthenticate feeds arbitrary authorization metadata through a whole
// token,basic Authenticator: a call is either one of the known principals
// or refused with ErrUnauthenticated.
func FuzzAuthenticate(f *testing.F) {
	cfg := testFiles(f)
	a, err := New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	issued := handshake(f, a, "alice", alicePW)
	for _, v := range []string{"Bearer " + ingestToken, issued, basic("alice", alicePW), "Bearer x", "", "Bearer sluice1.AAAA.AAAA"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", v))
		p, err := a.Authenticate(ctx)
		if err != nil {
			if !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("error %v does not wrap ErrUnauthenticated", err)
			}
			return
		}
		switch p {
		case Principal{Name: "ingest", Method: MethodToken}, Principal{Name: "alice", Method: MethodBasic}:
		default:
			t.Fatalf("%q authenticated as %+v", v, p)
		}
	})
}

// FuzzGlobMatch compares globMatch with a regular expression of the same
// pattern.
func FuzzGlobMatch(f *testing.F) {
	for _, c := range [][2]string{{"*", "a.b"}, {"a*c", "abc"}, {"?.*", "é.x"}, {"sales.*", "sales.eu.orders"}, {"*a*a*b", "aaaaaaaa"}} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if !utf8.ValidString(pattern) || !utf8.ValidString(s) || len(pattern) > 64 {
			t.Skip()
		}
		var re strings.Builder
		re.WriteString(`(?s)\A`)
		for _, r := range pattern {
			switch r {
			case '*':
				re.WriteString(".*")
			case '?':
				re.WriteString(".")
			default:
				re.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		re.WriteString(`\z`)
		want := regexp.MustCompile(re.String()).MatchString(s)
		if got := globMatch(pattern, s); got != want {
			t.Fatalf("globMatch(%q, %q) = %v, the regexp says %v", pattern, s, got, want)
		}
	})
}
