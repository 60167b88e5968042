package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/testkit/testsvc"
)

// The REST catalog end-to-end tests beyond TestS3REST: a catalog that
// requires OAuth2, credentials vended by the catalog, and the errors of
// storage and catalog with their gRPC codes.

// checkEachSnapshot reads the whole history and each snapshot's own window
// (fewer windows than checkWindows, for the tests whose point is elsewhere).
func checkEachSnapshot(t *testing.T, ctx context.Context, c *sluice.Client, table string, o *s3Oracle) {
	t.Helper()
	last := len(o.Snapshots) - 1
	got, err := readChanges(ctx, c, o.Columns, sluice.ChangeRequest{Table: table})
	if err != nil {
		t.Fatalf("the history of %s: %v", table, err)
	}
	if d := sameChanges(got, o.expected(-1, last)); d != "" {
		t.Fatalf("the history of %s: %s", table, d)
	}
	for k := 1; k <= last; k++ {
		req := sluice.ChangeRequest{Table: table, FromSnapshot: &o.Snapshots[k-1].ID, ToSnapshot: &o.Snapshots[k].ID}
		got, err := readChanges(ctx, c, o.Columns, req)
		if err != nil {
			t.Fatalf("snapshot %d of %s: %v", o.Snapshots[k].ID, table, err)
		}
		if d := sameChanges(got, o.expected(k-1, k)); d != "" {
			t.Fatalf("snapshot %d of %s: %s", o.Snapshots[k].ID, table, d)
		}
	}
}

// TestS3RESTOAuth2: a REST catalog that requires OAuth2 (client
// credentials at a separate token endpoint, a required scope; 401 for any
// request without a token it issued). pyiceberg writes through it; flightd,
// given credential (from a file: ${file:...}), oauth2-server-uri and
// scope, starts with an authenticated first GET /v1/config that carries
// ?warehouse=, reads every snapshot as pyiceberg scans it and follows a
// new commit, and a durable consumer resumes after a restart (with a new
// token). A static token (the token property) works too. Without the
// credential, or with a wrong secret, flightd refuses to start at once,
// saying why.
func TestS3RESTOAuth2(t *testing.T) {
	python(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rest := testsvc.SharedRESTCatalog(t)
	m := rest.Moto
	staticToken := "static-" + testsvc.UniqueName("token")
	oauth := &testsvc.OAuth2{ClientID: "sluice-reader", ClientSecret: "s3cret-" + testsvc.UniqueName("x"),
		Scope: "sluice", TokenPath: "/oauth2/token", Tokens: []string{staticToken}}
	proxy, err := testsvc.NewProxy(rest.Backend, oauth)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	credential := oauth.ClientID + ":" + oauth.ClientSecret
	cat := s3Catalog{uri: proxy.URI(), warehouse: rest.Warehouse, moto: m, key: m.Admin, env: []string{
		"SLUICE_REST_CREDENTIAL=" + credential, "SLUICE_REST_OAUTH2_URI=" + proxy.TokenURI(), "SLUICE_REST_SCOPE=sluice"}}
	const table = "oauth.items"
	o := cat.write(t, ctx, "init", table, 0)

	noAmbientAWS(t)
	credFile := filepath.Join(t.TempDir(), "rest-credential")
	if err := os.WriteFile(credFile, []byte(credential+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLUICE_TEST_S3_SECRET", m.Admin.SecretAccessKey)
	props := s3Props(m, m.Admin)
	props["s3.secret-access-key"] = "${env:SLUICE_TEST_S3_SECRET}"
	props["credential"] = "${file:" + credFile + "}"
	props["oauth2-server-uri"] = proxy.TokenURI()
	props["scope"] = "sluice"
	proxy.Reset()
	args := []string{"--config", s3Config{uri: proxy.URI(), warehouse: rest.Warehouse, properties: props}.file(t),
		"--poll-interval", "200ms"}
	srv := launchFlightd(t, args...)
	defer func() { srv.stop(t) }()
	reqs := proxy.Requests()
	var config *testsvc.Request
	for i, r := range reqs {
		if r.Status == http.StatusUnauthorized {
			t.Errorf("flightd's request %s %s got 401", r.Method, r.Path)
		}
		if r.Route == "GET /v1/config" && config == nil {
			config = &reqs[i]
		}
	}
	if len(reqs) == 0 || reqs[0].Route != "POST /oauth2/token" {
		t.Fatalf("flightd's first request to the catalog is not a token request at oauth2-server-uri: %+v", reqs)
	}
	if config == nil || config.Status != http.StatusOK || config.Query.Get("warehouse") != rest.Warehouse {
		t.Fatalf("flightd's GET /v1/config: %+v, want 200 with ?warehouse=%s", config, rest.Warehouse)
	}
	c := dialGo(t, ctx, srv.URI())
	checkSnapshots(t, ctx, c, table, o)
	checkEachSnapshot(t, ctx, c, table, o)
	s := followS3(t, ctx, c, sluice.SubscribeRequest{Table: table, Start: sluice.StartLatest, Heartbeats: true}, o.Columns)
	time.Sleep(500 * time.Millisecond)
	o2 := cat.write(t, ctx, "more", table, 7)
	last := len(o2.Snapshots) - 1
	if d := sameChanges(s.until(t, o2.Snapshots[last].ID, time.Minute), o2.expected(last-1, last)); d != "" {
		t.Fatalf("the followed commit: %s", d)
	}
	t.Run("pyarrow windows", func(t *testing.T) { pyarrowWindows(t, ctx, srv.URI(), table, o2) })
	t.Run("consumer resumes after a restart", func(t *testing.T) {
		tokens := proxy.Count("POST /oauth2/token")
		consumerResumes(t, ctx, c, func() *sluice.Client {
			srv.stop(t)
			srv = launchFlightd(t, args...)
			return dialGo(t, ctx, srv.URI())
		}, table, o2, 4)
		if proxy.Count("POST /oauth2/token") == tokens {
			t.Error("the restarted flightd got no token")
		}
	})

	t.Run("static token", func(t *testing.T) {
		p := s3Props(m, m.Admin)
		p["token"] = staticToken
		srv := startFlightd(t, "--config", s3Config{uri: proxy.URI(), warehouse: rest.Warehouse, properties: p}.file(t))
		c := dialGo(t, ctx, srv.URI())
		last := len(o2.Snapshots) - 1
		got, err := readChanges(ctx, c, o2.Columns, sluice.ChangeRequest{Table: table, FromSnapshot: &o2.Snapshots[last-1].ID})
		if err != nil {
			t.Fatal(err)
		}
		if d := sameChanges(got, o2.expected(last-1, last)); d != "" {
			t.Fatalf("with a static token: %s", d)
		}
	})
	t.Run("no credential", func(t *testing.T) {
		p := s3Props(m, m.Admin)
		began := time.Now()
		out := refused(t, nil, "--config", s3Config{uri: proxy.URI(), warehouse: rest.Warehouse, properties: p}.file(t))
		wantOutput(t, out, "401")
		if d := time.Since(began); d > 20*time.Second {
			t.Errorf("refused after %s: a catalog that refuses the credentials is not retried", d)
		}
	})
	t.Run("wrong secret", func(t *testing.T) {
		p := s3Props(m, m.Admin)
		const wrong = "Wr0ngSecr3t"
		p["credential"] = oauth.ClientID + ":" + wrong
		p["oauth2-server-uri"] = proxy.TokenURI()
		p["scope"] = "sluice"
		declined := proxy.Declined()
		out := refused(t, nil, "--config", s3Config{uri: proxy.URI(), warehouse: rest.Warehouse, properties: p}.file(t))
		if proxy.Declined() == declined {
			t.Errorf("the token endpoint refused no request")
		}
		if strings.Contains(out, wrong) {
			t.Errorf("the output shows the secret:\n%s", out)
		}
		wantOutput(t, out, "invalid_client")
	})
}

// TestS3RESTVendedCredentials: moto checks every request's signature and
// policy; the REST catalog's own S3 key is an STS session of a role allowed
// one bucket, which it vends in each loadTable's config. flightd, given no
// S3 key at all, reads the table with the vended session alone (windows
// with Go and pyarrow, a followed commit, a consumer resumed after a
// restart). Once the
// catalog stops vending, the same flightd configuration cannot read (no
// credentials: FailedPrecondition saying so, not an unreadable file); a
// key with a wrong secret, and a user's key allowed another bucket only,
// fail with PermissionDenied naming the access key id and the bucket; the
// admin's key reads (the control).
func TestS3RESTVendedCredentials(t *testing.T) {
	python(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m := testsvc.Moto(t, testsvc.MotoOptions{Auth: true})
	bucket := testsvc.UniqueName("vended")
	m.CreateBucket(t, bucket)
	role := m.CreateRole(t, "catalog-vends", testsvc.BucketPolicy(bucket))
	session, err := m.AssumeRole(ctx, m.Admin, role, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	rest := testsvc.RESTCatalog(t, testsvc.RESTOptions{Moto: m, Bucket: bucket, Key: session, VendCredentials: true})
	cat := s3Catalog{uri: rest.URI, warehouse: rest.Warehouse, moto: m, key: m.Admin}
	const table = "vend.items"
	o := cat.write(t, ctx, "small", table, 0)

	noAmbientAWS(t)
	start := func(t *testing.T, key testsvc.Key) *sluice.Client {
		cfg := s3Config{uri: rest.URI, warehouse: rest.Warehouse, properties: s3Props(m, key)}.file(t)
		srv := startFlightd(t, "--config", cfg)
		return dialGo(t, ctx, srv.URI())
	}
	full := sluice.ChangeRequest{Table: table}
	t.Run("vended session only", func(t *testing.T) {
		args := []string{"--config", s3Config{uri: rest.URI, warehouse: rest.Warehouse, properties: s3Props(m, testsvc.Key{})}.file(t),
			"--poll-interval", "200ms"}
		srv := launchFlightd(t, args...)
		defer func() { srv.stop(t) }()
		c := dialGo(t, ctx, srv.URI())
		checkEachSnapshot(t, ctx, c, table, o)
		pyarrowWindows(t, ctx, srv.URI(), table, o)
		s := followS3(t, ctx, c, sluice.SubscribeRequest{Table: table, Start: sluice.StartLatest, Heartbeats: true}, o.Columns)
		time.Sleep(500 * time.Millisecond)
		o2 := cat.write(t, ctx, "more", table, 2)
		last := len(o2.Snapshots) - 1
		if d := sameChanges(s.until(t, o2.Snapshots[last].ID, time.Minute), o2.expected(last-1, last)); d != "" {
			t.Fatalf("the followed commit: %s", d)
		}
		consumerResumes(t, ctx, c, func() *sluice.Client {
			srv.stop(t)
			srv = launchFlightd(t, args...)
			return dialGo(t, ctx, srv.URI())
		}, table, o2, 1)
		o = o2
	})

	rest.SetVendCredentials(t, false)
	t.Run("not vended, no key", func(t *testing.T) {
		c := start(t, testsvc.Key{})
		_, err := readChanges(ctx, c, o.Columns, full)
		wantCode(t, err, codes.FailedPrecondition, "credentials")
		if strings.Contains(errString(err), "unreadable") {
			t.Errorf("%v: want missing credentials, not an unreadable file", err)
		}
	})
	// No key in flightd's configuration, nothing vended: the AWS default
	// credential chain finds one, in the environment or in the shared
	// credentials file (the first two links of the chain).
	reader := m.CreateUser(t, "chain-reader", testsvc.BucketPolicy(bucket))
	t.Run("default chain, environment", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", reader.AccessKeyID)
		t.Setenv("AWS_SECRET_ACCESS_KEY", reader.SecretAccessKey)
		checkEachSnapshot(t, ctx, start(t, testsvc.Key{}), table, o)
	})
	t.Run("default chain, shared credentials file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "credentials")
		if err := os.WriteFile(file, []byte("[default]\naws_access_key_id = "+reader.AccessKeyID+
			"\naws_secret_access_key = "+reader.SecretAccessKey+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", file)
		checkEachSnapshot(t, ctx, start(t, testsvc.Key{}), table, o)
	})
	t.Run("wrong secret", func(t *testing.T) {
		c := start(t, testsvc.Key{AccessKeyID: m.Admin.AccessKeyID, SecretAccessKey: "not-the-secret"})
		_, err := readChanges(ctx, c, o.Columns, full)
		wantCode(t, err, codes.PermissionDenied, m.Admin.AccessKeyID)
		if !strings.Contains(errString(err), bucket) {
			t.Errorf("%v does not name the bucket %s", err, bucket)
		}
	})
	t.Run("key of another bucket", func(t *testing.T) {
		other := m.CreateUser(t, "other-reader", testsvc.BucketPolicy("some-other-bucket"))
		c := start(t, other)
		_, err := readChanges(ctx, c, o.Columns, full)
		wantCode(t, err, codes.PermissionDenied, other.AccessKeyID)
		if !strings.Contains(errString(err), bucket) {
			t.Errorf("%v does not name the bucket %s", err, bucket)
		}
	})
	t.Run("admin key", func(t *testing.T) {
		checkEachSnapshot(t, ctx, start(t, m.Admin), table, o)
	})
}

// TestS3RESTStorageErrors: flightd's S3 endpoint has no such bucket (a
// second moto server, where the catalog's bucket does not exist): reads
// fail with NotFound naming the bucket, not "resync required"; without any
// region flightd says so (at start, or FailedPrecondition on read).
func TestS3RESTStorageErrors(t *testing.T) {
	python(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rest := testsvc.SharedRESTCatalog(t)
	m := rest.Moto
	cat := s3Catalog{uri: rest.URI, warehouse: rest.Warehouse, moto: m, key: m.Admin}
	const table = "errs.items"
	o := cat.write(t, ctx, "small", table, 0)
	noAmbientAWS(t)

	t.Run("missing bucket", func(t *testing.T) {
		empty := testsvc.Moto(t, testsvc.MotoOptions{})
		srv := startFlightd(t, "--config", s3Config{uri: rest.URI, warehouse: rest.Warehouse,
			properties: s3Props(empty, empty.Admin)}.file(t))
		c := dialGo(t, ctx, srv.URI())
		_, err := readChanges(ctx, c, o.Columns, sluice.ChangeRequest{Table: table})
		if sluice.Code(err) != codes.NotFound {
			t.Logf("flightd's S3 server's log:\n%s", empty.Logs())
		}
		wantCode(t, err, codes.NotFound, rest.Bucket)
		if !strings.Contains(errString(err), "bucket") || strings.Contains(errString(err), "resync") {
			t.Errorf("%v: want a missing bucket, not resync", err)
		}
	})
	t.Run("missing region", func(t *testing.T) {
		p := s3Props(m, m.Admin)
		delete(p, "s3.region")
		cfg := s3Config{uri: rest.URI, warehouse: rest.Warehouse, properties: p}.file(t)
		f := launchFlightdOrRefusal(t, "--config", cfg)
		if f.refusal != "" {
			wantOutput(t, f.refusal, "region")
			return
		}
		defer f.srv.stop(t)
		c := dialGo(t, ctx, f.srv.URI())
		_, err := readChanges(ctx, c, o.Columns, sluice.ChangeRequest{Table: table})
		wantCode(t, err, codes.FailedPrecondition, "region")
		t.Logf("without a region: %v", err)
	})
}

// startOrRefusal is a flightd that serves, or the output of one that
// refused to start.
type startOrRefusal struct {
	srv     *flightd
	refusal string
}

// launchFlightdOrRefusal starts flightd and waits until it serves or exits.
func launchFlightdOrRefusal(t *testing.T, args ...string) startOrRefusal {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	f := &flightd{stderr: &syncBuffer{}, done: make(chan error, 1)}
	f.cmd = exec.Command(flightdBin, append([]string{"--listen", "127.0.0.1:0", "--ready-file", ready}, args...)...)
	f.cmd.Env = append(os.Environ(), "SLUICE_LOG_LEVEL=warn")
	f.cmd.Stdout, f.cmd.Stderr = f.stderr, f.stderr
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { f.done <- f.cmd.Wait() }()
	deadline := time.After(60 * time.Second)
	for {
		if b, err := os.ReadFile(ready); err == nil && len(b) > 0 {
			f.Addr = strings.TrimSpace(string(b))
			return startOrRefusal{srv: f}
		}
		select {
		case err := <-f.done:
			if err == nil {
				t.Fatalf("flightd exited with 0 before serving:\n%s", f.logs())
			}
			return startOrRefusal{refusal: f.logs()}
		case <-deadline:
			_ = f.cmd.Process.Kill()
			t.Fatalf("flightd neither served nor exited within a minute:\n%s", f.logs())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestS3RESTDown: a REST catalog that is down when flightd starts is
// waited for (flightd serves once it comes up); one that goes down later
// makes calls fail with Unavailable while a follow stream keeps its
// heartbeats, and everything recovers when it is back.
func TestS3RESTDown(t *testing.T) {
	python(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rest := testsvc.SharedRESTCatalog(t)
	m := rest.Moto
	cat := s3Catalog{uri: rest.URI, warehouse: rest.Warehouse, moto: m, key: m.Admin}
	const table = "down.items"
	o := cat.write(t, ctx, "small", table, 0)
	noAmbientAWS(t)

	proxy, err := testsvc.NewProxy(rest.Backend, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	proxy.Down()
	const outage = 4 * time.Second
	up := make(chan error, 1)
	go func() {
		time.Sleep(outage)
		up <- proxy.Up()
	}()
	began := time.Now()
	srv := startFlightd(t, "--config", s3Config{uri: proxy.URI(), warehouse: rest.Warehouse, properties: s3Props(m, m.Admin)}.file(t),
		"--poll-interval", "200ms", "--heartbeat-interval", "300ms", "--max-backoff", "500ms")
	if err := <-up; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(began); d < outage {
		t.Fatalf("flightd served after %s, before the catalog was up (%s)", d, outage)
	}
	t.Logf("flightd served %s after start, the catalog up after %s", time.Since(began).Round(time.Millisecond), outage)
	c := dialGo(t, ctx, srv.URI())
	checkEachSnapshot(t, ctx, c, table, o)

	s := followS3(t, ctx, c, sluice.SubscribeRequest{Table: table, Start: sluice.StartLatest, Heartbeats: true}, o.Columns)
	heartbeat := func(what string) {
		t.Helper()
		select {
		case b := <-s.batches:
			if !b.meta.Heartbeat {
				t.Fatalf("%s: a batch %+v, want a heartbeat", what, b.meta)
			}
		case err := <-s.done:
			t.Fatalf("%s: the follow stream ended: %v", what, err)
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: no heartbeat within 20s", what)
		}
	}
	heartbeat("before the outage")
	proxy.Down()
	for _, call := range []struct {
		name string
		do   func() error
	}{
		{"CommitSeq", func() error { _, err := c.CommitSeq(ctx, table); return err }},
		{"Snapshots", func() error { _, err := c.Snapshots(ctx, table); return err }},
		{"ListTables", func() error { _, err := c.ListTables(ctx); return err }},
		{"Changes", func() error { _, err := readChanges(ctx, c, o.Columns, sluice.ChangeRequest{Table: table}); return err }},
	} {
		// An answer from the shared poll may stand until that poll fails.
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := call.do()
			if sluice.Code(err) == codes.Unavailable {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s 10s after the catalog went down: %v, want Unavailable", call.name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for range 3 {
		heartbeat("during the outage")
	}
	if err := proxy.Up(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.CommitSeq(ctx, table); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("no recovery within 30s of the catalog's return: %v\n%s", err, srv.logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
	o2 := cat.write(t, ctx, "more", table, 3)
	last := len(o2.Snapshots) - 1
	if d := sameChanges(s.until(t, o2.Snapshots[last].ID, time.Minute), o2.expected(last-1, last)); d != "" {
		t.Fatalf("the commit after the outage: %s", d)
	}
}

// TestS3RESTOneLoadPerPoll: 200 follow streams of one table on one flightd
// cost about one loadTable of that table per poll interval at the REST
// catalog (counted at a proxy in front of it), not one per stream; and
// every stream gets the next commit.
func TestS3RESTOneLoadPerPoll(t *testing.T) {
	python(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rest := testsvc.SharedRESTCatalog(t)
	m := rest.Moto
	cat := s3Catalog{uri: rest.URI, warehouse: rest.Warehouse, moto: m, key: m.Admin}
	const table, followers, poll = "watch.items", 200, 500 * time.Millisecond
	o := cat.write(t, ctx, "small", table, 0)
	noAmbientAWS(t)
	proxy, err := testsvc.NewProxy(rest.Backend, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	srv := startFlightd(t, "--config", s3Config{uri: proxy.URI(), warehouse: rest.Warehouse, properties: s3Props(m, m.Admin)}.file(t),
		"--poll-interval", poll.String(), "--heartbeat-interval", "1s",
		"--max-streams", "0", "--max-streams-per-principal", "0", "--calls-per-second", "0")
	c := dialGo(t, ctx, srv.URI())
	subs := make([]*subscription, followers)
	for i := range subs {
		subs[i] = followS3(t, ctx, c, sluice.SubscribeRequest{Table: table, Start: sluice.StartLatest, Heartbeats: true}, o.Columns)
	}
	for i, s := range subs { // every stream is open: it has sent a heartbeat
		select {
		case <-s.batches:
		case err := <-s.done:
			t.Fatalf("follower %d ended: %v", i, err)
		case <-time.After(30 * time.Second):
			t.Fatalf("follower %d sent nothing within 30s", i)
		}
	}
	proxy.Reset()
	const window = 5 * time.Second
	time.Sleep(window)
	loads := proxy.TableLoads("watch", "items")
	polls := int(window / poll)
	t.Logf("%d followers: %d loads of the table in %s (%d poll intervals); all requests: %v", followers, loads, window, polls, proxy.Counts())
	if loads > 2*polls+2 || loads < 2 {
		t.Fatalf("%d loads of the table in %d poll intervals with %d followers: want about one per interval", loads, polls, followers)
	}
	o2 := cat.write(t, ctx, "more", table, 5)
	last := len(o2.Snapshots) - 1
	want := o2.expected(last-1, last)
	for i, s := range subs {
		if d := sameChanges(s.until(t, o2.Snapshots[last].ID, time.Minute), want); d != "" {
			t.Fatalf("follower %d: %s", i, d)
		}
	}
}
