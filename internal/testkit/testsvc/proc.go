package testsvc

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// process is a service process started by a test.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error // Wait's result, set before done is closed
}

// syncBuffer is a buffer that a process writes while a test reads it.
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

// startProcess starts argv with env added to the test's environment but
// for its AWS_* variables (a test may set them for flightd, even empty, which
// botocore in moto takes for a profile named ""). The process is killed
// with the test binary (Pdeathsig on Linux).
func startProcess(name string, env []string, argv ...string) (*process, error) {
	return startProcessIn(name, "", env, argv...)
}

// startProcessIn is startProcess in the working directory dir ("": the
// test's).
func startProcessIn(name, dir string, env []string, argv ...string) (*process, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	p := &process{name: name, cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
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
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends the process: SIGTERM, then SIGKILL after grace.
func (p *process) stop(grace time.Duration) {
	if p.exited() {
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

// kill ends the process at once (SIGKILL), as a crash would.
func (p *process) kill() {
	if !p.exited() {
		_ = p.cmd.Process.Kill()
	}
	<-p.done
}

// logs is the process's output so far.
func (p *process) logs() string { return p.out.String() }

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
			return fmt.Errorf("%s exited before listening on %s (%v):\n%s", p.name, addr, p.err, p.logs())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not listen on %s within %s:\n%s", p.name, addr, timeout, p.logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Python returns the Python interpreter of the test venv: SLUICE_PYTHON,
// which `make test` sets (its venv has moto[server], pyiceberg, pyarrow).
// The test fails when it is not set, or is skipped when SLUICE_SKIP_PYTHON is.
func Python(t testing.TB) string {
	t.Helper()
	py, err := python()
	if err != nil {
		if os.Getenv("SLUICE_SKIP_PYTHON") != "" {
			t.Skip("SLUICE_SKIP_PYTHON is set")
		}
		t.Fatal(err)
	}
	return py
}

func python() (string, error) {
	py := os.Getenv("SLUICE_PYTHON")
	if py == "" {
		return "", fmt.Errorf("SLUICE_PYTHON is not set: run the tests with `make test` (or set it to .tmp/venv/bin/python " +
			"after `make venv`), which installs moto[server] and pyiceberg")
	}
	return py, nil
}

// PaimonPython returns the Python interpreter of the pypaimon venv
// (make paimon-venv): SLUICE_PAIMON_PYTHON, which make test sets. Without
// it the test fails, or skips when SLUICE_SKIP_PYTHON is set.
func PaimonPython(t testing.TB) string {
	t.Helper()
	py := os.Getenv("SLUICE_PAIMON_PYTHON")
	if py == "" {
		if os.Getenv("SLUICE_SKIP_PYTHON") != "" {
			t.Skip("SLUICE_SKIP_PYTHON is set")
		}
		t.Fatal("SLUICE_PAIMON_PYTHON is not set: run the tests with `make test` (or set it to " +
			".tmp/venv-paimon/bin/python after `make paimon-venv`), which installs pypaimon")
	}
	return py
}

func itoa(n int) string { return strconv.Itoa(n) }

// startOnFreePort starts a server on a free loopback port: start launches
// it on port, ready waits until it serves at addr (127.0.0.1:port). A
// server that does not come up is stopped and started again on another
// port, three times at most (the port may have been taken meanwhile),
// unless ready says retrying cannot help.
func startOnFreePort(start func(port int) (*process, error),
	ready func(p *process, addr string) (retry bool, err error)) (*process, string, error) {
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, "", err
		}
		p, err := start(port)
		if err != nil {
			return nil, "", err
		}
		addr := "127.0.0.1:" + itoa(port)
		retry, err := ready(p, addr)
		if err == nil {
			return p, addr, nil
		}
		p.stop(time.Second)
		if !retry {
			return nil, "", err
		}
		last = err
	}
	return nil, "", last
}

// waitingTCP is a ready function for startOnFreePort: the server accepts
// connections within timeout.
func waitingTCP(timeout time.Duration) func(p *process, addr string) (bool, error) {
	return func(p *process, addr string) (bool, error) { return true, waitTCP(p, addr, timeout) }
}
