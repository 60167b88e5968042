// Package e2e tests Sluice as users run it: a real flightd process on a
// temporary warehouse and a free port, tables written by real writers
// (iceberg-go here, pyiceberg from the Python tests), read by the real Go
// client and the real pyarrow Flight client.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/testkit/testsvc"
)

// flightdBin and sluiceBin are the flightd and sluice binaries built for
// this run.
var flightdBin, sluiceBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	flightdBin, sluiceBin = filepath.Join(dir, "flightd"), filepath.Join(dir, "sluice")
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
		"github.com/sluicefeed/sluice/cmd/flightd", "github.com/sluicefeed/sluice/cmd/sluice")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build flightd and sluice:", err)
		os.Exit(1)
	}
	code := m.Run()
	testsvc.StopShared()
	os.RemoveAll(dir)
	os.Exit(code)
}

// flightd is a running flightd process.
type flightd struct {
	Addr   string // host:port
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan error
}

// syncBuffer is a buffer that the process writes while a test reads it.
type syncBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// logs returns flightd's output so far (stderr and stdout).
func (f *flightd) logs() string { return f.stderr.String() }

// pid is the process id.
func (f *flightd) pid() int { return f.cmd.Process.Pid }

// URI is the address as a Flight URI.
func (f *flightd) URI() string { return "grpc://" + f.Addr }

// startFlightd starts flightd with the given flags on a free loopback port
// and waits until it serves. The process is stopped with SIGTERM at the end
// of the test, which must make it exit cleanly.
func startFlightd(t *testing.T, args ...string) *flightd {
	t.Helper()
	f := launchFlightd(t, args...)
	t.Cleanup(func() { f.stop(t) })
	return f
}

// launchFlightd is startFlightd without the cleanup: the caller stops the
// process (for a server that outlives the subtest that starts it).
func launchFlightd(t *testing.T, args ...string) *flightd {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	args = append([]string{"--listen", "127.0.0.1:0", "--ready-file", ready}, args...)
	cmd := exec.Command(flightdBin, args...)
	cmd.Env = append(os.Environ(), "SLUICE_LOG_LEVEL=warn")
	f := &flightd{cmd: cmd, stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = f.stderr
	cmd.Stdout = f.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { f.done <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(ready); err == nil && len(b) > 0 {
			f.Addr = strings.TrimSpace(string(b))
			break
		}
		select {
		case err := <-f.done:
			t.Fatalf("flightd exited before serving (%v):\n%s", err, f.stderr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("flightd did not serve within a minute:\n%s", f.stderr)
		}
	}
	return f
}

// stop sends SIGTERM and checks for a clean exit.
func (f *flightd) stop(t *testing.T) {
	t.Helper()
	if f.cmd.ProcessState != nil {
		return
	}
	_ = f.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-f.done:
		if err != nil {
			t.Errorf("flightd did not exit cleanly on SIGTERM: %v\n%s", err, f.stderr)
		}
	case <-time.After(30 * time.Second):
		f.cmd.Process.Kill()
		t.Errorf("flightd did not stop within 30s of SIGTERM:\n%s", f.stderr)
	}
}

// python returns the Python interpreter of the e2e venv (SLUICE_PYTHON, set
// by `make test`), failing the test when it is not set: the Python tests
// are part of the evidence, not optional.
func python(t *testing.T) string {
	t.Helper()
	py := os.Getenv("SLUICE_PYTHON")
	if py == "" {
		if os.Getenv("SLUICE_SKIP_PYTHON") != "" {
			t.Skip("SLUICE_SKIP_PYTHON is set")
		}
		t.Fatal("SLUICE_PYTHON is not set: run the e2e tests with `make test` or `make test-e2e`, " +
			"which create the Python venv (or set SLUICE_SKIP_PYTHON=1 to skip the Python half)")
	}
	return py
}

// dialGo returns a Go client of a flightd; the test's end closes it.
func dialGo(t *testing.T, ctx context.Context, uri string, opts ...sluice.Option) *sluice.Client {
	t.Helper()
	c, err := sluice.Dial(ctx, uri, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// pytest runs pytest on e2e/python with the given environment.
func pytest(t *testing.T, ctx context.Context, env map[string]string, args ...string) {
	t.Helper()
	pytestPaths(t, ctx, env, []string{"python"}, args...)
}

// pytestPaths runs pytest on the given files or directories (relative to
// e2e/) with the given environment.
func pytestPaths(t *testing.T, ctx context.Context, env map[string]string, paths []string, args ...string) {
	t.Helper()
	py := python(t)
	argv := append([]string{"-m", "pytest", "-q", "-p", "no:cacheprovider"}, paths...)
	cmd := exec.CommandContext(ctx, py, append(argv, args...)...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, "SLUICE_FLIGHTD="+flightdBin)
	out, err := cmd.CombinedOutput()
	t.Logf("pytest:\n%s", out)
	if err != nil {
		t.Fatalf("pytest failed: %v", err)
	}
}
