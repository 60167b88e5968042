// Package sparkconnect starts real Spark Connect servers for tests: the
// Connect server class of a pyspark wheel (spark-submit --class
// org.apache.spark.sql.connect.service.SparkConnectServer) in local mode, on
// a free loopback port, with the jars that install.sh resolved from Maven
// Central. See README.md for what is installed where, and how long a start
// takes.
//
// A server is stopped when the test that started it ends, and killed with
// the test binary (Pdeathsig on Linux) if that dies first.
package sparkconnect

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The environment variables that name the installed servers (see
// README.md); `make test-spark` sets them.
const (
	// EnvSpark42 names the install of pyspark 4.2.0 with Delta 4.4.
	EnvSpark42 = "SLUICE_SPARK_CONNECT_42"
	// EnvSpark41 names the install of pyspark 4.1.4 with Iceberg 1.11.
	EnvSpark41 = "SLUICE_SPARK_CONNECT_41"
)

// Install is an installed Spark Connect server (install.sh's DIR).
type Install struct {
	Dir  string   // the install's directory
	Jars []string // the jars resolved from Maven Central (DIR/jars)
}

// Lookup returns the install that the environment variable env names. The
// test is skipped when env is unset, and fails when it is set but does not
// name a complete install: a run that asked for the Spark tests must not
// pass without them.
func Lookup(t testing.TB, env string) Install {
	t.Helper()
	dir := os.Getenv(env)
	if dir == "" {
		t.Skipf("%s is not set: `make test-spark` installs the Spark Connect servers and runs these tests", env)
	}
	in, err := ReadInstall(dir)
	if err != nil {
		t.Fatalf("%s=%s: %v", env, dir, err)
	}
	return in
}

// ReadInstall reads the install in dir; a relative dir is taken from
// the module's root (where go.mod is), as the Makefile names it.
func ReadInstall(dir string) (Install, error) {
	abs := dir
	if !filepath.IsAbs(dir) {
		root, err := moduleRoot()
		if err != nil {
			return Install{}, err
		}
		abs = filepath.Join(root, dir)
	}
	if _, err := os.Stat(filepath.Join(abs, ".installed")); err != nil {
		return Install{}, fmt.Errorf("not a complete Spark Connect install (run internal/testsvc/sparkconnect/install.sh): %w", err)
	}
	b, err := os.ReadFile(filepath.Join(abs, "jars"))
	if err != nil {
		return Install{}, err
	}
	in := Install{Dir: abs, Jars: strings.Fields(string(b))}
	for _, j := range in.Jars {
		if _, err := os.Stat(j); err != nil {
			return Install{}, fmt.Errorf("a resolved jar is gone (run install.sh again): %w", err)
		}
	}
	return in, nil
}

// Options configure a server.
type Options struct {
	// Jars are added to the install's jars (another install's Iceberg
	// runtime, say).
	Jars []string
	// Conf are Spark settings (--conf key=value).
	Conf map[string]string
	// Heap is the driver's heap (--driver-memory); empty: 1g.
	Heap string
	// Dir is the server's working directory, where Spark puts its
	// spark-warehouse; empty: a new temporary directory of the test.
	Dir string
}

// DeltaConf is the configuration of Delta Lake: its SQL extension,
// DeltaCatalog as spark_catalog, and the changelog of CHANGES
// (changelogV2) on.
func DeltaConf() map[string]string {
	return map[string]string{
		"spark.sql.extensions":                       "io.delta.sql.DeltaSparkSessionExtension",
		"spark.sql.catalog.spark_catalog":            "org.apache.spark.sql.delta.catalog.DeltaCatalog",
		"spark.databricks.delta.changelogV2.enabled": "true",
	}
}

// IcebergConf is the configuration of an Iceberg Hadoop catalog named
// catalog on the local folder warehouse, with Iceberg's SQL extensions
// (CALL, and MERGE/UPDATE/DELETE on Iceberg tables).
func IcebergConf(catalog, warehouse string) map[string]string {
	return map[string]string{
		"spark.sql.extensions":                            "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
		"spark.sql.catalog." + catalog:                    "org.apache.iceberg.spark.SparkCatalog",
		"spark.sql.catalog." + catalog + ".type":          "hadoop",
		"spark.sql.catalog." + catalog + ".warehouse":     warehouse,
		"spark.sql.catalog." + catalog + ".cache-enabled": "false",
	}
}

// Server is a running Spark Connect server.
type Server struct {
	Remote  string        // sc://127.0.0.1:port
	Addr    string        // 127.0.0.1:port
	Startup time.Duration // from spark-submit to the port accepting connections

	mu   sync.Mutex // guards proc
	proc *process
}

// Start starts a Spark Connect server from in, stopped at the end of the
// test. The test fails when the server does not start.
func Start(t testing.TB, in Install, opts Options) *Server {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	s, err := start(in, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func start(in Install, opts Options) (*Server, error) {
	if _, err := exec.LookPath("java"); err != nil {
		return nil, fmt.Errorf("a Spark Connect server needs Java 17 or newer (java on PATH): %w (make java)", err)
	}
	submit := filepath.Join(in.Dir, "venv", "bin", "spark-submit")
	heap := opts.Heap
	if heap == "" {
		heap = "1g"
	}
	jars := append(slices.Clone(in.Jars), opts.Jars...)
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		conf := map[string]string{
			"spark.connect.grpc.binding.address": "127.0.0.1",
			"spark.connect.grpc.binding.port":    strconv.Itoa(port),
			"spark.ui.enabled":                   "false",
			"spark.sql.session.timeZone":         "UTC",
			"spark.driver.host":                  "127.0.0.1",
			"spark.driver.bindAddress":           "127.0.0.1",
		}
		maps.Copy(conf, opts.Conf)
		argv := []string{submit, "--master", "local[2]", "--driver-memory", heap,
			"--class", "org.apache.spark.sql.connect.service.SparkConnectServer", "--name", "sluice-test"}
		if len(jars) > 0 {
			argv = append(argv, "--jars", strings.Join(jars, ","))
		}
		for _, k := range slices.Sorted(maps.Keys(conf)) {
			argv = append(argv, "--conf", k+"="+conf[k])
		}
		argv = append(argv, "spark-internal")
		began := time.Now()
		p, err := startProcess(opts.Dir, argv)
		if err != nil {
			return nil, err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		if err := waitTCP(p, addr, 3*time.Minute); err != nil {
			p.stop(5 * time.Second)
			last = err
			if p.exitedEarly() {
				return nil, err // retrying would fail the same way
			}
			continue
		}
		return &Server{Remote: "sc://" + addr, Addr: addr, Startup: time.Since(began), proc: p}, nil
	}
	return nil, last
}

// Stop ends the server (SIGTERM, then SIGKILL after 10 s).
func (s *Server) Stop() {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	p.stop(10 * time.Second)
}

// Kill ends the server at once (SIGKILL), as a crash would.
func (s *Server) Kill() {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	p.stop(0)
}

// Logs is the server's output so far.
func (s *Server) Logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc.out.String()
}

// RSS is the server's resident memory in bytes, from /proc (Linux only).
func (s *Server) RSS() (int64, error) {
	s.mu.Lock()
	pid := s.proc.cmd.Process.Pid
	s.mu.Unlock()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// process is a server process.
type process struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error // Wait's result, set before done is closed
}

// syncBuffer is a bounded buffer that a process writes while a test reads.
type syncBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 4<<20 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startProcess starts argv in dir, killed with the test binary.
func startProcess(dir string, argv []string) (*process, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SPARK_LOCAL_IP=127.0.0.1", "PYSPARK_PYTHON="+filepath.Join(filepath.Dir(argv[0]), "python"))
	p := &process{cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.SysProcAttr = sysProcAttr()
	// Pdeathsig fires when the thread that forked exits: fork from a
	// thread that lives as long as the process.
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread is kept
		errc <- cmd.Start()
		if cmd.Process != nil {
			p.err = cmd.Wait()
		}
		close(p.done)
	}()
	if err := <-errc; err != nil {
		return nil, fmt.Errorf("start the Spark Connect server: %w", err)
	}
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitedEarly reports whether the process ended on its own within its
// first seconds (a configuration error rather than a taken port).
func (p *process) exitedEarly() bool {
	return p.exited() && !strings.Contains(p.out.String(), "Address already in use")
}

// stop ends the process: SIGTERM, then SIGKILL after grace (at once when
// grace is 0).
func (p *process) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	if grace == 0 {
		_ = p.cmd.Process.Kill()
		<-p.done
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitTCP waits until addr accepts connections, the process exits or the
// timeout passes.
func waitTCP(p *process, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if p.exited() {
			return fmt.Errorf("the Spark Connect server exited before listening on %s (%v):\n%s", addr, p.err, tail(p.out.String()))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the Spark Connect server did not listen on %s within %s:\n%s", addr, timeout, tail(p.out.String()))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tail is the end of a log, for an error message.
func tail(s string) string {
	if len(s) > 8000 {
		return "..." + s[len(s)-8000:]
	}
	return s
}

// moduleRoot is the directory of go.mod, from the working directory up.
func moduleRoot() (string, error) {
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
