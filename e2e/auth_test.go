package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/iceberg-go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// hrTable is a second table of the auth tests' warehouse, granted only to
// the principal "hr".
const hrTable = "hr.salaries"

// The rules of the auth tests' servers: analyst, alice (basic) and ingest
// (a client certificate) read e2e.*, restricted reads the id and qty
// columns of e2e.events, hr reads hr.*.
const authRules = `
  rules:
    - principals: [analyst, alice, ingest]
      tables: ["e2e.*"]
    - principals: [restricted]
      tables: [e2e.events]
      columns:
        e2e.events: [id, qty]
    - principals: [hr]
      tables: ["hr.*"]
`

// authFixture is what the auth tests set up, as test_auth.py reads it from
// SLUICE_AUTH_FIXTURE.
type authFixture struct {
	// Servers by mode: "token" (token,basic, plaintext), "short" (basic,
	// tokens issued for 4s), "tls" (token over TLS), "mtls".
	URIs     map[string]string `json:"uris"`
	Tokens   map[string]string `json:"tokens"` // principal -> token; "wrong" is no one's
	User     string            `json:"user"`
	Password string            `json:"password"`
	Secret   string            `json:"secret"`
	// PEM files: the CA, the client certificate "ingest" it issued, one
	// "stranger" it issued that the mtls server does not map, and a
	// certificate "ingest" of another CA.
	CA         string   `json:"ca"`
	ClientCert string   `json:"client_cert"`
	ClientKey  string   `json:"client_key"`
	Stranger   []string `json:"stranger"`
	Rogue      []string `json:"rogue"`
	Table      string   `json:"table"`
	HRTable    string   `json:"hr_table"`
	Rows       int      `json:"rows"`
	// restartShort kills the "short" server and starts it again on its
	// address, with a new random secret: the tokens it issued before are
	// refused from then on.
	restartShort func(t *testing.T)
}

// TestAuth starts flightd in every authentication mode, with table and
// column rules, and checks every path with the Go client here and with
// the real pyarrow client (e2e/python/test_auth.py): no credentials, a
// wrong token, an expired token, a table not granted, a column-restricted
// principal, the basic-auth handshake, TLS, mutual TLS with a known and an
// unknown client certificate, and health checks without credentials. The
// servers' logs must show the refusals and never a secret.
func TestAuth(t *testing.T) {
	fix := writeEvents(t, 4, 11)
	writeHRTable(t, fix.Warehouse)
	dir := t.TempDir()
	af := authFixture{URIs: map[string]string{}, Tokens: map[string]string{}, User: "alice",
		Password: "correct horse battery staple", Table: eventsTable, HRTable: hrTable}
	for _, s := range fix.Snapshots {
		af.Rows += len(s.Rows)
	}

	// The tokens and users files, made with flightd's own subcommands.
	tokens := "tokens:\n"
	for _, p := range []string{"analyst", "restricted", "hr"} {
		tok := flightdTool(t, "", "new-token")
		af.Tokens[p] = tok
		tokens += flightdTool(t, tok, "hash-token", "--principal", p) + "\n"
	}
	af.Tokens["wrong"] = flightdTool(t, "", "new-token")
	tokensFile := writeFile(t, dir, "tokens.yaml", tokens)
	usersFile := writeFile(t, dir, "users.yaml",
		"users:\n"+flightdTool(t, af.Password, "hash-password", "--user", af.User)+"\n")
	secret := make([]byte, 48)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	af.Secret = base64.StdEncoding.EncodeToString(secret)
	secretFile := writeFile(t, dir, "secret", af.Secret+"\n")
	rulesFile := writeFile(t, dir, "rules.yaml", "auth:"+authRules)
	mtlsFile := writeFile(t, dir, "mtls.yaml", "auth:"+authRules+"  client_principals:\n    ingest: ingest\n")

	// A CA, the server's certificate for 127.0.0.1, client certificates
	// from the CA, and one from another CA.
	ca := newCA(t, dir, "sluice-e2e-ca")
	other := newCA(t, dir, "rogue-ca")
	serverCert, serverKey := ca.issue(t, "server", "127.0.0.1", true)
	af.CA = ca.certFile
	af.ClientCert, af.ClientKey = ca.issue(t, "client", "ingest", false)
	sc, sk := ca.issue(t, "stranger", "stranger", false)
	af.Stranger = []string{sc, sk}
	rc, rk := other.issue(t, "rogue", "ingest", false)
	af.Rogue = []string{rc, rk}

	wh := []string{"--warehouse", fix.Warehouse, "--log-level", "info"}
	servers := map[string]*flightd{
		"token": startFlightd(t, append(wh, "--config", rulesFile, "--auth-mode", "token,basic",
			"--auth-tokens-file", tokensFile, "--auth-users-file", usersFile, "--auth-secret-file", secretFile)...),
		"short": startFlightd(t, append(wh, "--config", rulesFile, "--auth-mode", "basic",
			"--auth-users-file", usersFile, "--auth-token-ttl", "4s")...), // as shortFlags below
		"tls": startFlightd(t, append(wh, "--config", rulesFile, "--auth-mode", "token",
			"--auth-tokens-file", tokensFile, "--tls-cert-file", serverCert, "--tls-key-file", serverKey)...),
		"mtls": startFlightd(t, append(wh, "--config", mtlsFile, "--auth-mode", "mtls",
			"--tls-cert-file", serverCert, "--tls-key-file", serverKey, "--tls-client-ca-file", ca.certFile)...),
	}
	shortFlags := append(wh, "--config", rulesFile, "--auth-mode", "basic", "--auth-users-file", usersFile,
		"--auth-token-ttl", "4s")
	outer := t
	af.restartShort = func(t *testing.T) {
		_ = killFlightd(servers["short"])
		f := launchFlightd(t, append(shortFlags, "--listen", servers["short"].Addr)...)
		outer.Cleanup(func() { f.stop(outer) }) // serves the later subtests too
		servers["short"] = f
	}
	for mode, f := range servers {
		af.URIs[mode] = "grpc://" + f.Addr
		if mode == "tls" || mode == "mtls" {
			af.URIs[mode] = "grpc+tls://" + f.Addr
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)

	t.Run("go", func(t *testing.T) {
		goAuthChecks(t, ctx, af, pool)
	})
	t.Run("pyarrow", func(t *testing.T) {
		b, err := json.MarshalIndent(af, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		pytestPaths(t, ctx, map[string]string{"SLUICE_AUTH_FIXTURE": writeFile(t, dir, "auth.json", string(b))},
			[]string{"python/test_auth.py"})
	})

	// The logs: every refusal is there, with its code, and no secret ever.
	var logs string
	for _, f := range servers {
		f.stop(t)
		logs += f.logs()
	}
	for _, want := range []string{"code=Unauthenticated", "code=PermissionDenied", "call refused", "call failed"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the servers' logs hold no %q:\n%s", want, logs)
		}
	}
	secrets := []string{af.Password, af.Secret}
	for _, tok := range af.Tokens {
		secrets = append(secrets, tok)
	}
	for _, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("the servers' logs hold a secret (%.6s...)", s)
		}
	}
	if strings.Contains(logs, "sluice1.") {
		t.Errorf("the servers' logs hold an issued token")
	}
}

// goAuthChecks is the Go half of TestAuth.
func goAuthChecks(t *testing.T, ctx context.Context, af authFixture, pool *x509.CertPool) {
	tokenURI := af.URIs["token"]

	t.Run("no credentials", func(t *testing.T) {
		c := dialGo(t, ctx, tokenURI)
		everyCall(t, ctx, c, af.Table, codes.Unauthenticated, "no credentials")
	})
	t.Run("wrong token", func(t *testing.T) {
		c := dialGo(t, ctx, tokenURI, sluice.WithToken(af.Tokens["wrong"]))
		everyCall(t, ctx, c, af.Table, codes.Unauthenticated, "unknown bearer token")
	})
	t.Run("basic credentials on a call", func(t *testing.T) {
		basic := base64.StdEncoding.EncodeToString([]byte(af.User + ":" + af.Password))
		c := dialGo(t, ctx, tokenURI, sluice.WithDialOptions(grpc.WithUnaryInterceptor(
			func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker,
				opts ...grpc.CallOption) error {
				ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Basic "+basic)
				return invoker(ctx, method, req, reply, cc, opts...)
			})))
		_, err := c.ListTables(ctx)
		wantCode(t, err, codes.Unauthenticated, "only by the Flight Handshake")
	})
	t.Run("right token", func(t *testing.T) {
		c := dialGo(t, ctx, tokenURI, sluice.WithToken(af.Tokens["analyst"]))
		if n := countRows(t, ctx, c, sluice.ChangeRequest{Table: af.Table}); n != af.Rows {
			t.Fatalf("read %d rows, want %d", n, af.Rows)
		}
		listed(t, ctx, c, af.Table)
	})
	t.Run("table not granted", func(t *testing.T) {
		c := dialGo(t, ctx, tokenURI, sluice.WithToken(af.Tokens["analyst"]))
		everyCall(t, ctx, c, af.HRTable, codes.PermissionDenied, `principal "analyst" may not read table "hr.salaries"`)
		// A table that does not exist, outside the grants, is denied too:
		// the answer does not tell which tables exist.
		_, err := c.CommitSeq(ctx, "hr.nope")
		wantCode(t, err, codes.PermissionDenied, "hr.nope")
		hr := dialGo(t, ctx, tokenURI, sluice.WithToken(af.Tokens["hr"]))
		listed(t, ctx, hr, af.HRTable)
		everyCall(t, ctx, hr, af.Table, codes.PermissionDenied, `principal "hr" may not read table "e2e.events"`)
	})
	t.Run("column restricted", func(t *testing.T) {
		c := dialGo(t, ctx, tokenURI, sluice.WithToken(af.Tokens["restricted"]))
		listed(t, ctx, c, af.Table)
		rdr, err := c.Changes(ctx, sluice.ChangeRequest{Table: af.Table})
		if err != nil {
			t.Fatal(err)
		}
		img := rdr.Schema().Field(2).Type.(*arrow.StructType)
		var names []string
		for _, f := range img.Fields() {
			names = append(names, f.Name)
		}
		rows := 0
		for b, err := range rdr.All() {
			if err != nil {
				t.Fatal(err)
			}
			rows += int(b.Record.NumRows())
		}
		rdr.Release()
		if !slices.Equal(names, []string{"id", "qty"}) || rows != af.Rows {
			t.Fatalf("a restricted read: columns %v, %d rows; want [id qty], %d rows", names, rows, af.Rows)
		}
		if n := countRows(t, ctx, c, sluice.ChangeRequest{Table: af.Table, Columns: []string{"qty"}, Filter: "qty >= 0"}); n == 0 {
			t.Fatal("a filter on an allowed column found nothing")
		}
		for _, req := range []sluice.ChangeRequest{
			{Table: af.Table, Columns: []string{"id", "name"}},
			{Table: af.Table, Filter: "name = 'x'"},
			{Table: af.Table, Columns: []string{"id"}, Filter: "qty > 0 AND amount > 10"},
			{Table: af.Table, Identity: []string{"name"}},
		} {
			_, err := c.Changes(ctx, req)
			wantCode(t, err, codes.PermissionDenied, "may not read column")
			_, err = c.Schema(ctx, req)
			wantCode(t, err, codes.PermissionDenied, "may not read column")
		}
		sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: af.Table, Filter: "flag = TRUE", NoFollow: true})
		if err == nil {
			sub.Next()
			err = sub.Err()
			sub.Release()
		}
		wantCode(t, err, codes.PermissionDenied, "may not read column")
	})
	t.Run("basic handshake", func(t *testing.T) {
		tok := handshake(t, ctx, tokenURI, af.User, af.Password)
		c := dialGo(t, ctx, tokenURI, sluice.WithToken(tok))
		if n := countRows(t, ctx, c, sluice.ChangeRequest{Table: af.Table}); n != af.Rows {
			t.Fatalf("read %d rows, want %d", n, af.Rows)
		}
		everyCall(t, ctx, c, af.HRTable, codes.PermissionDenied, `principal "alice"`)
		fc, err := flight.NewClientWithMiddlewareCtx(ctx, strings.TrimPrefix(tokenURI, "grpc://"), nil, nil,
			grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer fc.Close()
		_, err = fc.AuthenticateBasicToken(ctx, af.User, "wrong password")
		wantCode(t, err, codes.Unauthenticated, "wrong user name or password")
		_, err = fc.AuthenticateBasicToken(ctx, "mallory", af.Password)
		wantCode(t, err, codes.Unauthenticated, "wrong user name or password")

		// The Go client's own handshake.
		gc := dialGo(t, ctx, tokenURI, sluice.WithBasicAuth(af.User, af.Password))
		if n := countRows(t, ctx, gc, sluice.ChangeRequest{Table: af.Table}); n != af.Rows {
			t.Fatalf("WithBasicAuth: read %d rows, want %d", n, af.Rows)
		}
		everyCall(t, ctx, gc, af.HRTable, codes.PermissionDenied, `principal "alice"`)
		_, err = sluice.Dial(ctx, tokenURI, sluice.WithBasicAuth(af.User, "wrong password"))
		wantCode(t, err, codes.Unauthenticated, "wrong user name or password")
	})
	t.Run("basic auth outlives its tokens", func(t *testing.T) {
		// Tokens of the "short" server live 4s: a WithBasicAuth client
		// handshakes again before each expires, and its calls, unary and
		// streaming, go on being accepted.
		c := dialGo(t, ctx, af.URIs["short"], sluice.WithBasicAuth(af.User, af.Password))
		deadline := time.Now().Add(7 * time.Second)
		for calls := 0; time.Now().Before(deadline); calls++ {
			if _, err := c.CommitSeq(ctx, af.Table); err != nil {
				t.Fatalf("call %d, %v before the end: %v", calls, time.Until(deadline).Round(time.Millisecond), err)
			}
			if calls%10 == 0 {
				if n := countRows(t, ctx, c, sluice.ChangeRequest{Table: af.Table}); n != af.Rows {
					t.Fatalf("read %d rows, want %d", n, af.Rows)
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	t.Run("basic auth outlives a new server secret", func(t *testing.T) {
		// A restart without a secret file draws a new secret, so the
		// client's fresh token is refused: it handshakes again and the
		// call goes through.
		c := dialGo(t, ctx, af.URIs["short"], sluice.WithBasicAuth(af.User, af.Password))
		if _, err := c.CommitSeq(ctx, af.Table); err != nil {
			t.Fatal(err)
		}
		af.restartShort(t)
		if _, err := c.CommitSeq(ctx, af.Table); err != nil {
			t.Fatalf("a call after the server's secret changed: %v", err)
		}
	})
	t.Run("expired token", func(t *testing.T) {
		uri := af.URIs["short"]
		tok := handshake(t, ctx, uri, af.User, af.Password)
		c := dialGo(t, ctx, uri, sluice.WithToken(tok))
		if _, err := c.CommitSeq(ctx, af.Table); err != nil {
			t.Fatalf("a fresh token: %v", err)
		}
		// Issued for 4s (expiry rounded down to the second): expired within 5s.
		deadline := time.Now().Add(15 * time.Second)
		for {
			_, err := c.CommitSeq(ctx, af.Table)
			if err != nil {
				wantCode(t, err, codes.Unauthenticated, "expired")
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("a token issued for 4s is still accepted after 15s")
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	t.Run("tls", func(t *testing.T) {
		uri := af.URIs["tls"]
		c := dialGo(t, ctx, uri, sluice.WithToken(af.Tokens["analyst"]),
			sluice.WithTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
		if n := countRows(t, ctx, c, sluice.ChangeRequest{Table: af.Table}); n != af.Rows {
			t.Fatalf("read %d rows over TLS, want %d", n, af.Rows)
		}
		noToken := dialGo(t, ctx, uri, sluice.WithTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
		_, err := noToken.ListTables(ctx)
		wantCode(t, err, codes.Unauthenticated, "no credentials")
		// The system's roots do not know the test CA; plaintext is not TLS.
		untrusted := dialGo(t, ctx, uri, sluice.WithToken(af.Tokens["analyst"]))
		_, err = untrusted.ListTables(ctx)
		wantCode(t, err, codes.Unavailable, "certificate")
		plain := dialGo(t, ctx, "grpc://"+strings.TrimPrefix(uri, "grpc+tls://"), sluice.WithToken(af.Tokens["analyst"]))
		_, err = plain.ListTables(ctx)
		wantCode(t, err, codes.Unavailable, "")
	})
	t.Run("mtls", func(t *testing.T) {
		uri := af.URIs["mtls"]
		withCert := func(certFile, keyFile string) sluice.Option {
			cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
			if certFile != "" {
				cert, err := tls.LoadX509KeyPair(certFile, keyFile)
				if err != nil {
					t.Fatal(err)
				}
				cfg.Certificates = []tls.Certificate{cert}
			}
			return sluice.WithTLSConfig(cfg)
		}
		c := dialGo(t, ctx, uri, withCert(af.ClientCert, af.ClientKey))
		if n := countRows(t, ctx, c, sluice.ChangeRequest{Table: af.Table}); n != af.Rows {
			t.Fatalf("read %d rows with a client certificate, want %d", n, af.Rows)
		}
		listed(t, ctx, c, af.Table)
		everyCall(t, ctx, c, af.HRTable, codes.PermissionDenied, `principal "ingest"`)
		// Signed by the CA but not among the known subjects.
		stranger := dialGo(t, ctx, uri, withCert(af.Stranger[0], af.Stranger[1]))
		everyCall(t, ctx, stranger, af.Table, codes.Unauthenticated, `unknown client certificate "CN=stranger"`)
		// Another CA's certificate, and none at all: the TLS handshake fails.
		rogue := dialGo(t, ctx, uri, withCert(af.Rogue[0], af.Rogue[1]))
		_, err := rogue.ListTables(ctx)
		wantCode(t, err, codes.Unavailable, "")
		none := dialGo(t, ctx, uri, withCert("", ""))
		_, err = none.ListTables(ctx)
		wantCode(t, err, codes.Unavailable, "")
	})
	t.Run("consumers belong to their principal", func(t *testing.T) {
		analyst := dialGo(t, ctx, tokenURI, sluice.WithToken(af.Tokens["analyst"]))
		alice := dialGo(t, ctx, tokenURI, sluice.WithBasicAuth(af.User, af.Password))
		seq, err := analyst.CommitSeq(ctx, af.Table)
		if err != nil {
			t.Fatal(err)
		}
		p, err := analyst.Ack(ctx, "owned-1", af.Table, *seq.Snapshot)
		if err != nil || p.Owner != "analyst" {
			t.Fatalf("analyst's ack: %+v %v", p, err)
		}
		_, err = alice.Ack(ctx, "owned-1", af.Table, *seq.Snapshot)
		wantCode(t, err, codes.PermissionDenied, `belongs to principal "analyst"`)
		_, err = alice.ResetConsumer(ctx, "owned-1", af.Table)
		wantCode(t, err, codes.PermissionDenied, `belongs to principal "analyst"`)
		// Alice may see it (she may read the table) but not move it.
		if got, err := alice.ConsumerProgress(ctx, "owned-1", af.Table); err != nil || got.Owner != "analyst" {
			t.Fatalf("alice reads analyst's progress: %+v %v", got, err)
		}
		if removed, err := analyst.ResetConsumer(ctx, "owned-1", af.Table); err != nil || !removed {
			t.Fatalf("analyst resets their consumer: %v %v", removed, err)
		}
		// Reset, the id is free: alice's ack makes it hers.
		if p, err := alice.Ack(ctx, "owned-1", af.Table, *seq.Snapshot); err != nil || p.Owner != "alice" {
			t.Fatalf("alice's ack of the freed id: %+v %v", p, err)
		}
	})
	t.Run("health without credentials", func(t *testing.T) {
		for _, tt := range []struct {
			uri   string
			creds credentials.TransportCredentials
		}{
			{tokenURI, insecure.NewCredentials()},
			{af.URIs["short"], insecure.NewCredentials()},
			{af.URIs["tls"], credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})},
		} {
			conn, err := grpc.NewClient(strings.TrimPrefix(strings.TrimPrefix(tt.uri, "grpc://"), "grpc+tls://"),
				grpc.WithTransportCredentials(tt.creds))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
			conn.Close()
			if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Fatalf("health of %s without credentials: %v, %v", tt.uri, resp, err)
			}
		}
	})
}

// everyCall checks that every call on table fails with code and a message
// containing msg: the Flight calls and every control call.
func everyCall(t *testing.T, ctx context.Context, c *sluice.Client, table string, code codes.Code, msg string) {
	t.Helper()
	var snap int64 = 1
	calls := []struct {
		name string
		call func() error
	}{
		{"Changes", func() error {
			r, err := c.Changes(ctx, sluice.ChangeRequest{Table: table})
			if err == nil {
				r.Release()
			}
			return err
		}},
		{"Schema", func() error { _, err := c.Schema(ctx, sluice.ChangeRequest{Table: table}); return err }},
		{"Subscribe", func() error {
			s, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: table})
			if err != nil {
				return err
			}
			defer s.Release()
			s.Next()
			return s.Err()
		}},
		{"CommitSeq", func() error { _, err := c.CommitSeq(ctx, table); return err }},
		{"Snapshots", func() error { _, err := c.Snapshots(ctx, table); return err }},
		{"Explain", func() error { _, err := c.Explain(ctx, sluice.ChangeRequest{Table: table}); return err }},
		{"Ack", func() error { _, err := c.Ack(ctx, "auth-test", table, snap); return err }},
		{"ConsumerProgress", func() error { _, err := c.ConsumerProgress(ctx, "auth-test", table); return err }},
		{"ListConsumers", func() error { _, err := c.ListConsumers(ctx, table); return err }},
		{"ResetConsumer", func() error { _, err := c.ResetConsumer(ctx, "auth-test", table); return err }},
		{"WatchCommits", func() error {
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			for _, err := range c.WatchCommits(wctx, table) {
				return err
			}
			return nil
		}},
	}
	if code == codes.Unauthenticated {
		calls = append(calls, struct {
			name string
			call func() error
		}{"ListTables", func() error { _, err := c.ListTables(ctx); return err }})
	}
	for _, call := range calls {
		err := call.call()
		if sluice.Code(err) != code || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s on %s: %v, want %s containing %q", call.name, table, err, code, msg)
		}
	}
}

func wantCode(t *testing.T, err error, code codes.Code, msg string) {
	t.Helper()
	if sluice.Code(err) != code || !strings.Contains(errString(err), msg) {
		t.Fatalf("%v, want %s containing %q", err, code, msg)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// listed checks that list_tables shows exactly the tables given.
func listed(t *testing.T, ctx context.Context, c *sluice.Client, want ...string) {
	t.Helper()
	tables, err := c.ListTables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tb := range tables {
		names = append(names, tb.Name)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("list_tables shows %v, want %v", names, want)
	}
}

func countRows(t *testing.T, ctx context.Context, c *sluice.Client, req sluice.ChangeRequest) int {
	t.Helper()
	rdr, err := c.Changes(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	n := 0
	for b, err := range rdr.All() {
		if err != nil {
			t.Fatal(err)
		}
		n += int(b.Record.NumRows())
	}
	return n
}

// handshake runs the Flight basic-auth Handshake with arrow-go's client and
// returns the bearer token the server issued.
func handshake(t *testing.T, ctx context.Context, uri, user, password string) string {
	t.Helper()
	fc, err := flight.NewClientWithMiddlewareCtx(ctx, strings.TrimPrefix(uri, "grpc://"), nil, nil,
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	authed, err := fc.AuthenticateBasicToken(ctx, user, password)
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	md, _ := metadata.FromOutgoingContext(authed)
	vals := md.Get("authorization")
	if len(vals) != 1 || !strings.HasPrefix(vals[0], "Bearer ") {
		t.Fatalf("the handshake returned the authorization metadata %q", vals)
	}
	return strings.TrimPrefix(vals[0], "Bearer ")
}

// flightdTool runs a flightd subcommand with stdin and returns its output,
// without the final line break.
func flightdTool(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(flightdBin, args...)
	cmd.Stdin = strings.NewReader(stdin + "\n")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("flightd %v: %v\n%s", args, err, stderr.String())
	}
	return strings.TrimSuffix(string(out), "\n")
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeHRTable adds the table hr.salaries to a warehouse.
func writeHRTable(t *testing.T, warehouse string) {
	t.Helper()
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, warehouse)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := tablewrite.CreateTable(ctx, cat, hrTable, iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "salary", Type: iceberg.PrimitiveTypes.Float64}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tablewrite.Append(ctx, tbl, []tablewrite.Row{{"id": 1, "salary": 1e6}, {"id": 2, "salary": 2e6}}); err != nil {
		t.Fatal(err)
	}
}

// testCA is a certificate authority of the tests.
type testCA struct {
	dir      string
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	certFile string
}

func newCA(t *testing.T, dir, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &testCA{dir: dir, cert: cert, key: key, certFile: filepath.Join(dir, name+".pem")}
	writePEM(t, ca.certFile, "CERTIFICATE", der)
	return ca
}

// issue writes a certificate for cn signed by the CA, and its key, and
// returns their files: a server certificate for the IP address cn, or a
// client certificate whose common name is cn.
func (ca *testCA) issue(t *testing.T, name, cn string, server bool) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP(cn)}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(ca.dir, name+".pem"), filepath.Join(ca.dir, name+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", pkcs8)
	return certFile, keyFile
}

func serial(t *testing.T) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
