// Package pgtest starts a throwaway PostgreSQL server for tests: Debian's
// postgresql package (initdb and pg_ctl on PATH, or in
// /usr/lib/postgresql/<version>/bin), run as the postgres user when the
// test runs as root, since PostgreSQL refuses to run as root.
package pgtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// lookPath finds a PostgreSQL program on PATH, or in the newest of
// Debian's /usr/lib/postgresql/<version>/bin.
func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not on PATH nor in /usr/lib/postgresql/*/bin (apt-get install postgresql)", name)
}

// Start starts a PostgreSQL server on a free loopback port, stopped at the
// end of the test, and returns its DSN (user sluice, database postgres,
// no password). It returns an error saying why when it cannot.
func Start(t testing.TB) (string, error) {
	t.Helper()
	initdb, err := lookPath("initdb")
	if err != nil {
		return "", err
	}
	pgctl, err := lookPath("pg_ctl")
	if err != nil {
		return "", err
	}
	var wrap []string
	dir, err := os.MkdirTemp("", "sluice-pg-")
	if err != nil {
		return "", err
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return "", errors.New("running as root and there is no postgres user (apt-get install postgresql)")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return "", err
		}
		wrap = []string{"runuser", "-u", "postgres", "--"}
	}
	run := func(args ...string) error {
		args = append(slices.Clone(wrap), args...)
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %v\n%s", args, err, out)
		}
		return nil
	}
	data := filepath.Join(dir, "data")
	if err := run(initdb, "-D", data, "-U", "sluice", "--auth=trust", "-E", "UTF8"); err != nil {
		return "", err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	port := lis.Addr().(*net.TCPAddr).Port
	lis.Close()
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s -c fsync=off "+
		"-c max_connections=200", port, dir)
	if err := run(pgctl, "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
		return "", err
	}
	t.Cleanup(func() { _ = run(pgctl, "-D", data, "-m", "immediate", "stop") })
	return fmt.Sprintf("postgres://sluice@127.0.0.1:%d/postgres?sslmode=disable", port), nil
}
