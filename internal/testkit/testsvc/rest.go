package testsvc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RESTOptions configure a REST catalog server.
type RESTOptions struct {
	// Moto is the S3 server of the warehouse; nil: [SharedMoto].
	Moto *MotoServer
	// Bucket is the warehouse's bucket, created when it does not exist;
	// empty: a new one.
	Bucket string
	// Key is the server's own S3 credentials; zero: Moto's admin.
	Key Key
	// VendCredentials makes the server add its S3 credentials (Key, e.g. an
	// STS session from [MotoServer.AssumeRole]) to each loadTable response's
	// config (s3.access-key-id, s3.secret-access-key, s3.session-token):
	// the catalog's include-credentials.
	VendCredentials bool
	// OAuth2, when set, makes the proxy in front of the server require
	// OAuth2 (see [Proxy]).
	OAuth2 *OAuth2
}

// RESTServer is a running Apache Iceberg RESTCatalogServer behind a
// [Proxy]. Clients use URI (the proxy); Backend is the server itself.
type RESTServer struct {
	URI       string // http://127.0.0.1:port of the proxy
	Backend   string // http://127.0.0.1:port of the Java server
	Warehouse string // s3://bucket/
	Bucket    string
	Moto      *MotoServer
	Proxy     *Proxy
	Startup   time.Duration // how long the Java server took to serve

	mu   sync.Mutex // guards proc
	proc *process
	env  []string
	cp   string
}

// RESTCatalog starts Apache Iceberg's RESTCatalogServer (SQLite JDBC
// catalog in a file of the test's temporary directory, S3FileIO on moto)
// and a [Proxy] in front of it, both stopped at the end of the test. The
// server takes 2-5 s to start. The server's own catalog, warehouse and
// S3 settings come from its environment variables (CATALOG_*, read by its
// RCKUtils.environmentCatalogConfig).
func RESTCatalog(t testing.TB, opts RESTOptions) *RESTServer {
	t.Helper()
	if opts.Moto == nil {
		opts.Moto = SharedMoto(t)
	}
	r, err := startREST(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

var sharedREST struct {
	once sync.Once
	rest *RESTServer
	dir  string
	err  error
}

// StopShared stops the test binary's shared services (SharedRESTCatalog,
// SharedMoto, SharedAzurite, SharedFakeGCS) and removes their files. A TestMain calls it after m.Run;
// without it the processes still end with the test binary (Pdeathsig), but
// the REST server's folder stays in the system's temporary directory.
func StopShared() {
	if r := sharedREST.rest; r != nil {
		r.Stop()
	}
	if sharedREST.dir != "" {
		_ = os.RemoveAll(sharedREST.dir)
	}
	if m := shared.moto; m != nil {
		m.Stop()
	}
	if a := sharedAzurite.a; a != nil {
		a.proc.stop(5 * time.Second)
	}
	if g := sharedGCS.g; g != nil {
		g.proc.stop(5 * time.Second)
	}
}

// SharedRESTCatalog returns the test binary's one REST catalog server on
// [SharedMoto], no OAuth2, no vended credentials, started on first use.
// Tests that share it keep apart by namespace. Its proxy's counts are
// shared too: reset them with [Proxy.Reset] only in a test that owns the
// server.
func SharedRESTCatalog(t testing.TB) *RESTServer {
	t.Helper()
	m := SharedMoto(t)
	sharedREST.once.Do(func() {
		dir, err := os.MkdirTemp("", "sluice-rest")
		if err != nil {
			sharedREST.err = err
			return
		}
		sharedREST.dir = dir
		sharedREST.rest, sharedREST.err = startREST(dir, RESTOptions{Moto: m})
	})
	if sharedREST.err != nil {
		t.Fatal(sharedREST.err)
	}
	return sharedREST.rest
}

func startREST(dir string, opts RESTOptions) (*RESTServer, error) {
	cp, err := RESTClasspath()
	if err != nil {
		return nil, err
	}
	m := opts.Moto
	if opts.Bucket == "" {
		opts.Bucket = UniqueName("warehouse")
	}
	if err := m.ensureBucket(opts.Bucket); err != nil {
		return nil, err
	}
	key := opts.Key
	if key.AccessKeyID == "" {
		key = m.Admin
	}
	r := &RESTServer{Warehouse: "s3://" + opts.Bucket + "/", Bucket: opts.Bucket, Moto: m, cp: cp}
	r.env = []string{
		"CATALOG_URI=jdbc:sqlite:file:" + filepath.Join(dir, "catalog.db"),
		"CATALOG_WAREHOUSE=" + r.Warehouse,
		"CATALOG_IO__IMPL=org.apache.iceberg.aws.s3.S3FileIO",
		"CATALOG_S3_ENDPOINT=" + m.Endpoint,
		"CATALOG_S3_PATH__STYLE__ACCESS=true",
		"CATALOG_CLIENT_REGION=" + Region,
		"CATALOG_S3_ACCESS__KEY__ID=" + key.AccessKeyID,
		"CATALOG_S3_SECRET__ACCESS__KEY=" + key.SecretAccessKey,
		// The AWS SDK must not look for credentials or a region elsewhere.
		"AWS_ACCESS_KEY_ID=" + key.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY=" + key.SecretAccessKey,
		"AWS_REGION=" + Region,
		"AWS_EC2_METADATA_DISABLED=true",
	}
	if key.SessionToken != "" {
		r.env = append(r.env, "CATALOG_S3_SESSION__TOKEN="+key.SessionToken, "AWS_SESSION_TOKEN="+key.SessionToken)
		if !key.Expiration.IsZero() {
			r.env = append(r.env, fmt.Sprintf("CATALOG_S3_SESSION__TOKEN__EXPIRES__AT__MS=%d", key.Expiration.UnixMilli()))
		}
	}
	if opts.VendCredentials {
		r.env = append(r.env, "CATALOG_INCLUDE__CREDENTIALS=true")
	}
	if err := r.start(); err != nil {
		return nil, err
	}
	p, err := NewProxy(r.Backend, opts.OAuth2)
	if err != nil {
		r.Stop()
		return nil, err
	}
	r.Proxy = p
	r.URI = p.URI()
	return r, nil
}

// start starts the Java server on a new free port.
func (r *RESTServer) start() error {
	java, err := exec.LookPath("java")
	if err != nil {
		return fmt.Errorf("the REST catalog server needs Java 17 or newer (java on PATH): %w "+
			"(Debian: apt-get install openjdk-17-jre-headless; `make test` installs it)", err)
	}
	var began time.Time
	p, addr, err := startOnFreePort(func(port int) (*process, error) {
		began = time.Now()
		env := append([]string{"CATALOG_REST_PORT=" + itoa(port)}, r.env...)
		// C1 only and the serial collector: start-up is what counts here
		// (about 2 s against 5 s with the defaults).
		return startProcess("RESTCatalogServer", env, java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
			"-Xmx512m", "-cp", r.cp, "org.apache.iceberg.rest.RESTCatalogServer")
	}, func(p *process, addr string) (bool, error) {
		return true, waitHTTP(p, "http://"+addr+"/v1/config", 90*time.Second)
	})
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.proc, r.Backend, r.Startup = p, "http://"+addr, time.Since(began)
	r.mu.Unlock()
	return nil
}

// waitHTTP waits until url answers 200.
func waitHTTP(p *process, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if p.exited() {
			return fmt.Errorf("%s exited before serving (%v):\n%s", p.name, p.err, p.logs())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not serve %s within %s:\n%s", p.name, url, timeout, p.logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop ends the server and its proxy.
func (r *RESTServer) Stop() {
	if r.Proxy != nil {
		r.Proxy.Close()
	}
	r.StopServer()
}

// StopServer ends the Java server but keeps the proxy: requests to URI get
// 502 Bad Gateway until [RESTServer.StartServer]. ([Proxy.Down] refuses
// connections instead.)
func (r *RESTServer) StopServer() {
	r.mu.Lock()
	p := r.proc
	r.mu.Unlock()
	if p != nil {
		p.stop(10 * time.Second)
	}
}

// StartServer starts the Java server again (after StopServer) with the
// same catalog database and warehouse, and points the proxy at it.
func (r *RESTServer) StartServer(t testing.TB) {
	t.Helper()
	if err := r.start(); err != nil {
		t.Fatal(err)
	}
	r.Proxy.SetBackend(r.Backend)
}

// Logs is the Java server's output so far.
func (r *RESTServer) Logs() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.proc.logs()
}

// RESTClasspath returns the runtime classpath of RESTCatalogServer:
// SLUICE_REST_CLASSPATH when set, else the file that Maven wrote for
// internal/testkit/testsvc/restcatalog/pom.xml under .tmp/restcatalog/ (named by
// the pom's hash), running Maven (local repository .tmp/m2) when it is
// missing. Concurrent test binaries take turns (a file lock).
func RESTClasspath() (string, error) {
	if cp := os.Getenv("SLUICE_REST_CLASSPATH"); cp != "" {
		return cp, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	pom := filepath.Join(root, "internal", "testsvc", "restcatalog", "pom.xml")
	b, err := os.ReadFile(pom)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	dir := filepath.Join(root, ".tmp", "restcatalog")
	out := filepath.Join(dir, "classpath-"+hex.EncodeToString(sum[:8]))
	if cp, ok := readClasspath(out); ok {
		return cp, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it too
	if cp, ok := readClasspath(out); ok {
		return cp, nil
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", fmt.Errorf("the REST catalog server's classpath is fetched by Maven (mvn on PATH): %w "+
			"(Debian: apt-get install maven; `make test` installs it)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	tmp := out + ".tmp"
	cmd := exec.CommandContext(ctx, mvn, "-B", "-q", "-f", pom, "-Dmaven.repo.local="+filepath.Join(root, ".tmp", "m2"),
		"dependency:build-classpath", "-Dmdep.outputFile="+tmp)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("mvn dependency:build-classpath for the REST catalog server: %w\n%s", err, b)
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", err
	}
	cp, ok := readClasspath(out)
	if !ok {
		return "", errors.New("mvn wrote no usable classpath to " + out)
	}
	return cp, nil
}

// readClasspath reads a classpath file whose jars all exist.
func readClasspath(path string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	cp := strings.TrimSpace(string(b))
	if cp == "" {
		return "", false
	}
	for _, jar := range filepath.SplitList(cp) {
		if _, err := os.Stat(jar); err != nil {
			return "", false
		}
	}
	return cp, true
}

// repoRoot is the module's root directory (the one with go.mod), found
// from the working directory upwards.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// SetVendCredentials restarts the Java server (same catalog database)
// with or without include-credentials (see [RESTOptions.VendCredentials]).
func (r *RESTServer) SetVendCredentials(t testing.TB, on bool) {
	t.Helper()
	r.StopServer()
	env := slices.DeleteFunc(slices.Clone(r.env), func(kv string) bool {
		return strings.HasPrefix(kv, "CATALOG_INCLUDE__CREDENTIALS=")
	})
	if on {
		env = append(env, "CATALOG_INCLUDE__CREDENTIALS=true")
	}
	r.env = env
	r.StartServer(t)
}
