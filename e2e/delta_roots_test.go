package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

// The tests of this file check what a local Delta root serves: nothing
// that a symbolic link leads out of it (unless delta.follow_symlinks), a
// root that is itself a table's folder, and the names a NotFound suggests.

// TestDeltaSymlinks: a sub-folder of the Delta root that is a symbolic
// link to a table elsewhere is not served (flightd warns at start, naming
// it and the setting), and a table whose data files are links out of the
// root fails its read with FailedPrecondition naming the file and the
// setting, rather than serve what lies outside. With
// --delta-follow-symlinks (delta.follow_symlinks) both are served.
func TestDeltaSymlinks(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	elsewhere := filepath.Join(base, "elsewhere", "table")
	copyTree(t, filepath.Join(deltaFixtureDir, "cdf-table-simple"), elsewhere)
	copyTree(t, filepath.Join(deltaFixtureDir, "cdf-table-simple"), filepath.Join(root, "t"))
	if err := os.Symlink(elsewhere, filepath.Join(root, "symtab")); err != nil {
		t.Fatal(err)
	}
	// Every data file of delta.t is a link to its copy outside the root.
	data, err := filepath.Glob(filepath.Join(root, "t", "*.parquet"))
	if err != nil || len(data) == 0 {
		t.Fatalf("data files of the copy: %v, %v", data, err)
	}
	for _, p := range data {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(elsewhere, filepath.Base(p)), p); err != nil {
			t.Fatal(err)
		}
	}

	srv := startFlightd(t, "--warehouse", t.TempDir(), "--create-catalog", "--delta-root", root,
		"--log-level", "info")
	ctx := t.Context()
	c := dialGo(t, ctx, srv.URI())
	tables, err := c.ListTables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tbl := range tables {
		names = append(names, tbl.Name)
	}
	if !slices.Equal(names, []string{"delta.t"}) {
		t.Errorf("list_tables %v; want delta.t alone, not the link out of the root", names)
	}
	if n, err := countChanges(ctx, c, sluice.ChangeRequest{Table: "delta.symtab"}); sluice.Code(err) != codes.NotFound {
		t.Errorf("changes of delta.symtab: %d rows, %v; want NotFound", n, err)
	}
	n, err := countChanges(ctx, c, sluice.ChangeRequest{Table: "delta.t"})
	if n != 0 || sluice.Code(err) != codes.FailedPrecondition || !strings.Contains(errString(err), "delta.follow_symlinks") ||
		!strings.Contains(errString(err), filepath.Join(root, "t")) || !strings.Contains(errString(err), elsewhere) {
		t.Errorf("changes of delta.t, its data files linked out of the root: %d rows, %v; want FailedPrecondition "+
			"naming the file, where it leads and delta.follow_symlinks", n, err)
	}
	if !waitLog(srv, "delta.symtab", "delta.follow_symlinks") {
		t.Errorf("flightd's log does not warn about delta.symtab and delta.follow_symlinks:\n%s", srv.logs())
	}
	if !waitLog(srv, "serving the Delta tables of a root", "tables=1") {
		t.Errorf("flightd's log does not say how many tables the root holds:\n%s", srv.logs())
	}

	// Following links, as the operator asked: both are served.
	for _, args := range [][]string{
		{"--delta-follow-symlinks"},
		{"--config", writeFile(t, t.TempDir(), "flightd.yaml", "delta:\n  follow_symlinks: true\n")},
	} {
		srv := startFlightd(t, append([]string{"--warehouse", t.TempDir(), "--create-catalog", "--delta-root", root},
			args...)...)
		c := dialGo(t, ctx, srv.URI())
		for _, name := range []string{"delta.t", "delta.symtab"} {
			if n, err := countChanges(ctx, c, sluice.ChangeRequest{Table: name}); err != nil || n != 25 {
				t.Errorf("%v: changes of %s: %d rows, %v; want the 25 of cdf-table-simple", args, name, n, err)
			}
		}
	}
}

// TestDeltaRootIsTable: --delta-root given a table's own folder (one that
// holds _delta_log), a newcomer's first try, serves that table as
// delta.<folder> and says so in the log, rather than start cleanly and
// serve nothing. A misspelled Delta name gets a "did you mean", and a
// window past the latest version names the latest.
func TestDeltaRootIsTable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "orders")
	copyTree(t, filepath.Join(deltaFixtureDir, "cdf-table-simple"), dir)
	srv := startFlightd(t, "--warehouse", t.TempDir(), "--create-catalog", "--delta-root", dir,
		"--log-level", "info")
	ctx := t.Context()
	c := dialGo(t, ctx, srv.URI())
	if n, err := countChanges(ctx, c, sluice.ChangeRequest{Table: "delta.orders"}); err != nil || n != 25 {
		t.Errorf("changes of delta.orders: %d rows, %v; want the 25 of cdf-table-simple", n, err)
	}
	if !waitLog(srv, "table's own folder", "delta.orders", "--delta-root") {
		t.Errorf("flightd's log does not say the root is a table's folder served as delta.orders:\n%s", srv.logs())
	}
	_, err := countChanges(ctx, c, sluice.ChangeRequest{Table: "delta.order"})
	wantCode(t, err, codes.NotFound, "did you mean delta.orders?")
	// --to past the latest version names the latest.
	_, err = countChanges(ctx, c, sluice.ChangeRequest{Table: "delta.orders", ToSnapshot: ptr(40)})
	wantCode(t, err, codes.NotFound, "past the latest version, 2")
}

// TestDeltaDidYouMean: a misspelled Delta table name is NotFound with the
// nearest names, as an Iceberg name is.
func TestDeltaDidYouMean(t *testing.T) {
	root := t.TempDir()
	copyTree(t, filepath.Join(deltaFixtureDir, "cdf-table-simple"), filepath.Join(root, "orders"))
	srv := startFlightd(t, "--warehouse", t.TempDir(), "--create-catalog", "--delta-root", root)
	ctx := t.Context()
	c := dialGo(t, ctx, srv.URI())
	for _, name := range []string{"delta.order", "delta.ordres", "sales.orders"} {
		_, err := countChanges(ctx, c, sluice.ChangeRequest{Table: name})
		wantCode(t, err, codes.NotFound, "did you mean delta.orders?")
	}
}

// waitLog reports whether flightd's log holds every one of want on one
// line within a few seconds.
func waitLog(srv *flightd, want ...string) bool {
	deadline := time.Now().Add(5 * time.Second)
	for {
		for line := range strings.SplitSeq(srv.logs(), "\n") {
			all := true
			for _, w := range want {
				all = all && strings.Contains(line, w)
			}
			if all {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}
