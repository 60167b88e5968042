package testsvc

// Spark Connect servers for the Spark backend's tests: the Connect server
// class of a pyspark wheel (spark-submit --class
// org.apache.spark.sql.connect.service.SparkConnectServer) in local mode, on
// a free loopback port, with the jars that sparkconnect/install.sh resolved
// from Maven Central. sparkconnect/README.md says what is installed where,
// and how long a start takes. A server is stopped when the test that
// started it ends, and killed with the test binary (Pdeathsig on Linux) if
// that dies first.

import (
	"bufio"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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

// SparkInstall is an installed Spark Connect server (install.sh's DIR).
type SparkInstall struct {
	Dir  string   // the install's directory
	Jars []string // the jars resolved from Maven Central (DIR/jars)
}

// LookupSpark returns the install that the environment variable env names. The
// test is skipped when env is unset, and fails when it is set but does not
// name a complete install: a run that asked for the Spark tests must not
// pass without them.
func LookupSpark(t testing.TB, env string) SparkInstall {
	t.Helper()
	dir := os.Getenv(env)
	if dir == "" {
		t.Skipf("%s is not set: `make test-spark` installs the Spark Connect servers and runs these tests", env)
	}
	in, err := ReadSparkInstall(dir)
	if err != nil {
		t.Fatalf("%s=%s: %v", env, dir, err)
	}
	return in
}

// ReadSparkInstall reads the install in dir; a relative dir is taken from
// the module's root (where go.mod is), as the Makefile names it.
func ReadSparkInstall(dir string) (SparkInstall, error) {
	abs := dir
	if !filepath.IsAbs(dir) {
		root, err := repoRoot()
		if err != nil {
			return SparkInstall{}, err
		}
		abs = filepath.Join(root, dir)
	}
	if _, err := os.Stat(filepath.Join(abs, ".installed")); err != nil {
		return SparkInstall{}, fmt.Errorf("not a complete Spark Connect install (run internal/testkit/testsvc/sparkconnect/install.sh): %w", err)
	}
	b, err := os.ReadFile(filepath.Join(abs, "jars"))
	if err != nil {
		return SparkInstall{}, err
	}
	in := SparkInstall{Dir: abs, Jars: strings.Fields(string(b))}
	for _, j := range in.Jars {
		if _, err := os.Stat(j); err != nil {
			return SparkInstall{}, fmt.Errorf("a resolved jar is gone (run internal/testkit/testsvc/sparkconnect/install.sh again): %w", err)
		}
	}
	return in, nil
}

// SparkOptions configure a server.
type SparkOptions struct {
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

// SparkDeltaConf is the configuration of Delta Lake: its SQL extension,
// DeltaCatalog as spark_catalog, and the changelog of CHANGES
// (changelogV2) on.
func SparkDeltaConf() map[string]string {
	return map[string]string{
		"spark.sql.extensions":                       "io.delta.sql.DeltaSparkSessionExtension",
		"spark.sql.catalog.spark_catalog":            "org.apache.spark.sql.delta.catalog.DeltaCatalog",
		"spark.databricks.delta.changelogV2.enabled": "true",
	}
}

// SparkIcebergConf is the configuration of an Iceberg Hadoop catalog named
// catalog on the local folder warehouse, with Iceberg's SQL extensions
// (CALL, and MERGE/UPDATE/DELETE on Iceberg tables).
func SparkIcebergConf(catalog, warehouse string) map[string]string {
	return map[string]string{
		"spark.sql.extensions":                            "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
		"spark.sql.catalog." + catalog:                    "org.apache.iceberg.spark.SparkCatalog",
		"spark.sql.catalog." + catalog + ".type":          "hadoop",
		"spark.sql.catalog." + catalog + ".warehouse":     warehouse,
		"spark.sql.catalog." + catalog + ".cache-enabled": "false",
	}
}

// SparkServer is a running Spark Connect server.
type SparkServer struct {
	Remote  string        // sc://127.0.0.1:port
	Addr    string        // 127.0.0.1:port
	Startup time.Duration // from spark-submit to the port accepting connections

	mu   sync.Mutex // guards proc
	proc *process
}

// StartSpark starts a Spark Connect server from in, stopped at the end of the
// test. The test fails when the server does not start.
func StartSpark(t testing.TB, in SparkInstall, opts SparkOptions) *SparkServer {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	s, err := startSpark(in, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func startSpark(in SparkInstall, opts SparkOptions) (*SparkServer, error) {
	if _, err := exec.LookPath("java"); err != nil {
		return nil, fmt.Errorf("a Spark Connect server needs Java 17 or newer (java on PATH): %w (make java)", err)
	}
	submit := filepath.Join(in.Dir, "venv", "bin", "spark-submit")
	heap := opts.Heap
	if heap == "" {
		heap = "1g"
	}
	jars := append(slices.Clone(in.Jars), opts.Jars...)
	var began time.Time
	p, addr, err := startOnFreePort(func(port int) (*process, error) {
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
		began = time.Now()
		env := []string{"SPARK_LOCAL_IP=127.0.0.1", "PYSPARK_PYTHON=" + filepath.Join(filepath.Dir(submit), "python")}
		return startProcessIn("the Spark Connect server", opts.Dir, env, argv...)
	}, func(p *process, addr string) (bool, error) {
		err := waitTCP(p, addr, 3*time.Minute)
		// A server that exited for another reason than a taken port
		// would fail the same way again.
		return !p.exited() || strings.Contains(p.logs(), "Address already in use"), err
	})
	if err != nil {
		return nil, err
	}
	return &SparkServer{Remote: "sc://" + addr, Addr: addr, Startup: time.Since(began), proc: p}, nil
}

// Stop ends the server (SIGTERM, then SIGKILL after 10 s).
func (s *SparkServer) Stop() {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	p.stop(10 * time.Second)
}

// Kill ends the server at once (SIGKILL), as a crash would.
func (s *SparkServer) Kill() {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	p.kill()
}

// Logs is the server's output so far.
func (s *SparkServer) Logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc.logs()
}

// PID is the server's process id: the driver JVM, where local mode runs
// the tasks (spark-submit execs it).
func (s *SparkServer) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc.cmd.Process.Pid
}

// RSS is the server's resident memory in bytes, from /proc (Linux only).
func (s *SparkServer) RSS() (int64, error) {
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
