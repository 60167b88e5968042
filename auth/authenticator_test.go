package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// Credentials of the test files.
const (
	ingestToken = "static-token-of-ingest"
	alicePW     = "alice's password"
)

// testFiles writes a tokens file (ingest), a users file (alice, with a
// cheap hash) and a secret file, and returns a Config of mode token,basic
// using them.
func testFiles(t testing.TB) Config {
	t.Helper()
	tokens := writeFile(t, "tokens.yaml", fmt.Sprintf("tokens:\n  - principal: ingest\n    sha256: %s\n", HashToken(ingestToken)))
	users := writeFile(t, "users.yaml", fmt.Sprintf("users:\n  - name: alice\n    bcrypt: %q\n", testHash(t, alicePW)))
	secret := writeFile(t, "secret", strings.Repeat("s", MinSecretBytes))
	return Config{Mode: "token,basic", TokensFile: tokens, UsersFile: users, SecretFile: secret}
}

func newTestAuth(t testing.TB, cfg Config, now time.Time) *Authenticator {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.now = func() time.Time { return now }
	return a
}

func basic(user, pw string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw))
}

// handshake returns a bearer token for user from a's Handshake.
func handshake(t testing.TB, a *Authenticator, user, pw string) string {
	t.Helper()
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", basic(user, pw)))
	p, md, err := a.Handshake(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p != (Principal{Name: user, Method: MethodBasic}) {
		t.Fatalf("Handshake principal %+v", p)
	}
	vals := md.Get("authorization")
	if len(vals) != 1 || !strings.HasPrefix(vals[0], "Bearer ") {
		t.Fatalf("Handshake metadata %v", md)
	}
	return vals[0]
}

func TestAuthenticateBearer(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	cfg := testFiles(t)
	a := newTestAuth(t, cfg, now)
	issued := handshake(t, a, "alice", alicePW)
	later := newTestAuth(t, cfg, now.Add(time.Hour)) // the same secret, an hour on
	tokenOnly := newTestAuth(t, Config{Mode: "token", TokensFile: cfg.TokensFile}, now)
	basicOnly := newTestAuth(t, Config{Mode: "basic", UsersFile: cfg.UsersFile, SecretFile: cfg.SecretFile}, now)
	otherSecret := newTestAuth(t, Config{Mode: "basic", UsersFile: cfg.UsersFile}, now)
	off := newTestAuth(t, Config{}, now)

	tampered := []byte(issued)
	tampered[len("Bearer sluice1.")+3] ^= 1

	ingest := Principal{Name: "ingest", Method: MethodToken}
	alice := Principal{Name: "alice", Method: MethodBasic}
	tests := []struct {
		name string
		a    *Authenticator
		md   metadata.MD
		want Principal // zero: ErrUnauthenticated
	}{
		{"no metadata", a, nil, Principal{}},
		{"no credentials", a, metadata.Pairs("x-other", "1"), Principal{}},
		{"right static token", a, metadata.Pairs("authorization", "Bearer "+ingestToken), ingest},
		{"scheme in lower case", a, metadata.Pairs("authorization", "bearer "+ingestToken), ingest},
		{"key in mixed case", a, metadata.Pairs("Authorization", "Bearer "+ingestToken), ingest},
		{"wrong token", a, metadata.Pairs("authorization", "Bearer not-a-token"), Principal{}},
		{"token without its scheme", a, metadata.Pairs("authorization", ingestToken), Principal{}},
		{"malformed header", a, metadata.Pairs("authorization", "Bearer "), Principal{}},
		{"two authorization values", a, metadata.Pairs("authorization", "Bearer "+ingestToken, "authorization", "Bearer x"), Principal{}},
		{"basic credentials outside the handshake", a, metadata.Pairs("authorization", basic("alice", alicePW)), Principal{}},
		{"issued token", a, metadata.Pairs("authorization", issued), alice},
		{"expired issued token", later, metadata.Pairs("authorization", issued), Principal{}},
		{"tampered issued token", a, metadata.Pairs("authorization", string(tampered)), Principal{}},
		{"issued token, another secret", otherSecret, metadata.Pairs("authorization", issued), Principal{}},
		{"issued token in mode token", tokenOnly, metadata.Pairs("authorization", issued), Principal{}},
		{"static token in mode basic", basicOnly, metadata.Pairs("authorization", "Bearer "+ingestToken), Principal{}},
		{"issued token in mode basic", basicOnly, metadata.Pairs("authorization", issued), alice},
		{"static token in mode token", tokenOnly, metadata.Pairs("authorization", "Bearer "+ingestToken), ingest},
		{"mode off, nothing", off, nil, Anonymous},
		{"mode off, a wrong token", off, metadata.Pairs("authorization", "Bearer nope"), Anonymous},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.md != nil {
				ctx = metadata.NewIncomingContext(ctx, tt.md)
			}
			p, err := tt.a.Authenticate(ctx)
			if tt.want == (Principal{}) {
				if !errors.Is(err, ErrUnauthenticated) {
					t.Fatalf("Authenticate = %+v, %v; want ErrUnauthenticated", p, err)
				}
				if strings.Contains(err.Error(), ingestToken) || strings.Contains(err.Error(), issued[len("Bearer "):]) {
					t.Fatalf("the error shows the token: %v", err)
				}
				return
			}
			if err != nil || p != tt.want {
				t.Fatalf("Authenticate = %+v, %v; want %+v", p, err, tt.want)
			}
		})
	}

	// An issued token survives a restart with the same secret file, until
	// it expires.
	restarted := newTestAuth(t, cfg, now.Add(59*time.Minute))
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", issued))
	if p, err := restarted.Authenticate(ctx); err != nil || p != alice {
		t.Fatalf("after a restart: %+v, %v", p, err)
	}
	if _, err := later.Authenticate(ctx); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("an hour later: %v, want expired", err)
	}
}

func TestHandshake(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	cfg := testFiles(t)
	a := newTestAuth(t, cfg, now)
	tokenOnly := newTestAuth(t, Config{Mode: "token", TokensFile: cfg.TokensFile}, now)
	off := newTestAuth(t, Config{}, now)
	alice := Principal{Name: "alice", Method: MethodBasic}
	tests := []struct {
		name      string
		a         *Authenticator
		md        metadata.MD
		want      Principal // zero: ErrUnauthenticated
		wantToken bool
	}{
		{"right password", a, metadata.Pairs("authorization", basic("alice", alicePW)), alice, true},
		{"unpadded base64 (arrow-go)", a, metadata.Pairs("authorization",
			"Basic "+base64.RawStdEncoding.EncodeToString([]byte("alice:"+alicePW))), alice, true},
		{"wrong password", a, metadata.Pairs("authorization", basic("alice", "guess")), Principal{}, false},
		{"unknown user", a, metadata.Pairs("authorization", basic("mallory", alicePW)), Principal{}, false},
		{"malformed basic credentials", a, metadata.Pairs("authorization", "Basic !!!"), Principal{}, false},
		{"no colon", a, metadata.Pairs("authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("alice"))), Principal{}, false},
		{"no credentials", a, nil, Principal{}, false},
		{"unknown scheme", a, metadata.Pairs("authorization", "Digest x"), Principal{}, false},
		{"a static token", a, metadata.Pairs("authorization", "Bearer "+ingestToken), Principal{Name: "ingest", Method: MethodToken}, false},
		{"basic while mode basic is off", tokenOnly, metadata.Pairs("authorization", basic("alice", alicePW)), Principal{}, false},
		{"mode off", off, metadata.Pairs("authorization", basic("alice", alicePW)), Anonymous, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.md != nil {
				ctx = metadata.NewIncomingContext(ctx, tt.md)
			}
			p, md, err := tt.a.Handshake(ctx)
			if tt.want == (Principal{}) {
				if !errors.Is(err, ErrUnauthenticated) || md != nil {
					t.Fatalf("Handshake = %+v, %v, %v; want ErrUnauthenticated", p, md, err)
				}
				if strings.Contains(err.Error(), alicePW) {
					t.Fatalf("the error shows the password: %v", err)
				}
				return
			}
			if err != nil || p != tt.want {
				t.Fatalf("Handshake = %+v, %v; want %+v", p, err, tt.want)
			}
			if !tt.wantToken {
				if md != nil {
					t.Fatalf("Handshake metadata %v, want none", md)
				}
				return
			}
			// The returned metadata authenticates later calls.
			later := metadata.NewIncomingContext(context.Background(), md)
			if got, err := tt.a.Authenticate(later); err != nil || got != tt.want {
				t.Fatalf("Authenticate with the issued token = %+v, %v", got, err)
			}
		})
	}
}

func TestHandshakeCanceled(t *testing.T) {
	a := newTestAuth(t, testFiles(t), time.Now())
	for range cap(a.users.sem) {
		a.users.sem <- struct{}{}
	}
	ctx, cancel := context.WithCancel(metadata.NewIncomingContext(context.Background(),
		metadata.Pairs("authorization", basic("alice", alicePW))))
	cancel()
	if _, _, err := a.Handshake(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Handshake = %v, want context.Canceled", err)
	}
}

// tlsPeer is the peer of a TLS connection whose client presented certs,
// verified (chains) or not.
func tlsPeer(verified bool, certs ...*x509.Certificate) *peer.Peer {
	state := tls.ConnectionState{PeerCertificates: certs}
	if verified && len(certs) > 0 {
		state.VerifiedChains = [][]*x509.Certificate{certs}
	}
	return &peer.Peer{
		Addr:     &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000},
		AuthInfo: credentials.TLSInfo{State: state},
	}
}

type otherAuthInfo struct{}

func (otherAuthInfo) AuthType() string { return "other" }

func TestAuthenticateMTLS(t *testing.T) {
	ca := newTestCA(t, "Sluice test CA")
	ingest := ca.issue(t, pkix.Name{CommonName: "ingest", Organization: []string{"Acme"}}, false)
	reports := ca.issue(t, pkix.Name{CommonName: "reports", OrganizationalUnit: []string{"bi"}, Organization: []string{"Acme"}}, false)
	noCN := ca.issue(t, pkix.Name{Organization: []string{"Acme"}}, false)
	trick := ca.issue(t, pkix.Name{CommonName: "CN=reports,OU=bi,O=Acme"}, false)
	tlsFiles := TLSConfig{CertFile: "unused", KeyFile: "unused", ClientCAFile: ca.file}
	byCN := newTestAuth(t, Config{Mode: "mtls", TLS: tlsFiles}, time.Now())
	mapped := newTestAuth(t, Config{Mode: "mtls", TLS: tlsFiles, ClientPrincipals: map[string]string{
		"ingest":                      "ingest-service", // by common name
		reports.leaf.Subject.String(): "bi-reports",     // by whole subject
	}}, time.Now())
	if s := reports.leaf.Subject.String(); s != "CN=reports,OU=bi,O=Acme" {
		t.Fatalf("subject %q", s)
	}
	mtls := func(name string) Principal { return Principal{Name: name, Method: MethodMTLS} }
	tests := []struct {
		name string
		a    *Authenticator
		p    *peer.Peer
		md   metadata.MD
		want Principal // zero: ErrUnauthenticated
	}{
		{"common name", byCN, tlsPeer(true, ingest.leaf), nil, mtls("ingest")},
		{"common name, a token ignored", byCN, tlsPeer(true, ingest.leaf), metadata.Pairs("authorization", "Bearer x"), mtls("ingest")},
		{"no common name", byCN, tlsPeer(true, noCN.leaf), nil, Principal{}},
		{"unverified certificate", byCN, tlsPeer(false, ingest.leaf), nil, Principal{}},
		{"no certificate", byCN, tlsPeer(false), nil, Principal{}},
		{"not TLS", byCN, &peer.Peer{AuthInfo: otherAuthInfo{}}, nil, Principal{}},
		{"no auth info", byCN, &peer.Peer{}, nil, Principal{}},
		{"no peer", byCN, nil, nil, Principal{}},
		{"mapped by common name", mapped, tlsPeer(true, ingest.leaf), nil, mtls("ingest-service")},
		{"mapped by subject", mapped, tlsPeer(true, reports.leaf), nil, mtls("bi-reports")},
		{"unknown certificate", mapped, tlsPeer(true, noCN.leaf), nil, Principal{}},
		{"common name spelling a mapped subject", mapped, tlsPeer(true, trick.leaf), nil, Principal{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.a.AuthenticateMetadata(tt.md, tt.p)
			if tt.want == (Principal{}) {
				if !errors.Is(err, ErrUnauthenticated) {
					t.Fatalf("AuthenticateMetadata = %+v, %v; want ErrUnauthenticated", p, err)
				}
				return
			}
			if err != nil || p != tt.want {
				t.Fatalf("AuthenticateMetadata = %+v, %v; want %+v", p, err, tt.want)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	cfg := testFiles(t)
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	short := writeFile(t, "short", "too short")
	tests := []struct {
		name string
		cfg  Config
	}{
		{"invalid config", Config{Mode: "token"}},
		{"missing tokens file", Config{Mode: "token", TokensFile: missing}},
		{"malformed tokens file", Config{Mode: "token", TokensFile: writeFile(t, "t.yaml", "tokens: {")}},
		{"missing users file", Config{Mode: "basic", UsersFile: missing}},
		{"malformed users file", Config{Mode: "basic", UsersFile: writeFile(t, "u.yaml", "users: [{name: a, bcrypt: x}]")}},
		{"short secret", Config{Mode: "basic", UsersFile: cfg.UsersFile, SecretFile: short}},
		{"missing secret", Config{Mode: "basic", UsersFile: cfg.UsersFile, SecretFile: missing}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("New = %v, want ErrInvalidConfig", err)
			}
		})
	}
}

func TestPrincipalContext(t *testing.T) {
	ctx := context.Background()
	if _, ok := FromContext(ctx); ok {
		t.Fatal("a principal in an empty context")
	}
	want := Principal{Name: "alice", Method: MethodBasic}
	got, ok := FromContext(NewContext(ctx, want))
	if !ok || got != want {
		t.Fatalf("FromContext = %+v, %v", got, ok)
	}
	if s := want.String(); s != "alice (basic)" {
		t.Fatalf("String = %q", s)
	}
}
