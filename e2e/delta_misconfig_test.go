package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	sluice "github.com/sluicefeed/sluice/clients/go"
)

// TestDeltaMisconfig: flightd refuses to start on a Delta configuration
// that cannot be served as written, naming what is wrong: a --delta-root
// that does not exist or is not a folder, a delta.tables entry without a
// _delta_log, a Delta table with the name of a table of the Iceberg
// catalog. The same configurations, put right, are served.
func TestDeltaMisconfig(t *testing.T) {
	fixtures := copyDeltaFixtures(t)
	simple := filepath.Join(fixtures, "cdf-table-simple")

	t.Run("missing root", func(t *testing.T) {
		wh := t.TempDir()
		missing := filepath.Join(t.TempDir(), "no-such-root")
		out := refused(t, nil, "--warehouse", wh, "--delta-root", missing)
		wantOutput(t, out, "--delta-root", missing)
		out = refused(t, []string{"SLUICE_DELTA_ROOT=" + missing}, "--warehouse", wh)
		wantOutput(t, out, missing)
		file := writeFile(t, t.TempDir(), "root", "")
		out = refused(t, nil, "--warehouse", wh, "--delta-root", file)
		wantOutput(t, out, "--delta-root", file, "not a folder")
	})

	t.Run("delta.tables without _delta_log", func(t *testing.T) {
		wh := t.TempDir()
		notTable := t.TempDir()
		for _, loc := range []string{notTable, "file://" + notTable, filepath.Join(notTable, "missing")} {
			cfg := writeFile(t, t.TempDir(), "flightd.yaml",
				fmt.Sprintf("delta:\n  tables:\n    lake.simple: %q\n    lake.broken: %q\n", simple, loc))
			out := refused(t, nil, "--warehouse", wh, "--config", cfg)
			wantOutput(t, out, "delta.tables", "lake.broken", notTable, "_delta_log")
		}
	})

	t.Run("a name both formats serve", func(t *testing.T) {
		// The Iceberg catalog holds delta.x and sales.orders; the Delta
		// root has a folder x, and delta.tables names sales.orders.
		wh := t.TempDir()
		writeCatalogTable(t, wh, "catalog.db", "sluice", "delta.x")
		writeCatalogTable(t, wh, "catalog.db", "sluice", "sales.orders")
		root := t.TempDir()
		copyTree(t, simple, filepath.Join(root, "x"))
		out := refused(t, nil, "--warehouse", wh, "--delta-root", root)
		wantOutput(t, out, "delta.x", "Delta", "Iceberg")
		cfg := writeFile(t, t.TempDir(), "flightd.yaml",
			fmt.Sprintf("delta:\n  tables:\n    sales.orders: %q\n", "file://"+simple))
		out = refused(t, nil, "--warehouse", wh, "--config", cfg)
		wantOutput(t, out, "sales.orders", "Delta", "Iceberg")

		// Named apart, both are served, each in its format.
		cfg = writeFile(t, t.TempDir(), "flightd.yaml",
			fmt.Sprintf("delta:\n  tables:\n    sales.orders_delta: %q\n", "file://"+simple))
		srv := startFlightd(t, "--warehouse", wh, "--config", cfg)
		ctx := t.Context()
		c := dialGo(t, ctx, srv.URI())
		tables, err := c.ListTables(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tbl := range tables {
			got = append(got, tbl.Name+":"+tbl.Format)
		}
		want := []string{"delta.x:iceberg", "sales.orders:iceberg", "sales.orders_delta:delta"}
		if !slices.Equal(got, want) {
			t.Fatalf("list_tables %v, want %v", got, want)
		}
		n, err := countChanges(ctx, c, sluice.ChangeRequest{Table: "sales.orders_delta"})
		if err != nil || n != 25 {
			t.Fatalf("the Delta table named in delta.tables: %d rows, %v; want the 25 of cdf-table-simple", n, err)
		}
		_, err = c.Snapshots(ctx, "delta.cdf-table-simple")
		wantCode(t, err, codes.NotFound, "delta.cdf-table-simple")
	})
}

// TestDeltaNameTakenAfterStart: a Delta folder created under --delta-root
// while flightd runs, with the name of a table of the Iceberg catalog, must
// not take that table's place in silence, as flightd refuses the same
// configuration at start. Either the Iceberg table goes on being served
// (the folder is left out) or reads of the name fail naming both formats;
// what must not happen is a consumer of the Iceberg table being switched to
// another table's history without a word.
// flightd refuses reads of the name, naming both; a listing that holds no
// other table fails the same way (a listing fails when none of its tables
// can be loaded).
func TestDeltaNameTakenAfterStart(t *testing.T) {
	fixtures := copyDeltaFixtures(t)
	wh := t.TempDir()
	writeCatalogTable(t, wh, "catalog.db", "sluice", "delta.x")
	root := t.TempDir()
	srv := startFlightd(t, "--warehouse", wh, "--delta-root", root)
	ctx := t.Context()
	c := dialGo(t, ctx, srv.URI())
	before, err := c.ListTables(ctx)
	if err != nil || len(before) != 1 || before[0].Name != "delta.x" || before[0].Format != "iceberg" {
		t.Fatalf("list_tables before: %v, %v; want the Iceberg table delta.x", before, err)
	}
	if n, err := countChanges(ctx, c, sluice.ChangeRequest{Table: "delta.x"}); err != nil || n != 1 {
		t.Fatalf("the Iceberg table delta.x: %d rows, %v; want its 1 row", n, err)
	}

	copyTree(t, filepath.Join(fixtures, "cdf-table-simple"), filepath.Join(root, "x"))
	after, err := c.ListTables(ctx)
	if err != nil && (!strings.Contains(err.Error(), "Delta") || !strings.Contains(err.Error(), "Iceberg")) {
		t.Fatalf("list_tables after the folder x appeared: %v; want the tables, or an error naming both formats", err)
	}
	for _, tbl := range after {
		if tbl.Name == "delta.x" && tbl.Format != "iceberg" {
			t.Errorf("list_tables after the folder x appeared: %v; the Iceberg table delta.x is replaced by the "+
				"Delta folder", after)
		}
	}
	n, err := countChanges(ctx, c, sluice.ChangeRequest{Table: "delta.x"})
	switch {
	case err == nil && n == 1:
		// The Iceberg table is served on.
	case err != nil && n == 0 && strings.Contains(err.Error(), "Delta") && strings.Contains(err.Error(), "Iceberg"):
		// Refused, naming both.
	default:
		t.Errorf("delta.x after the folder x appeared: %d rows, %v; want the Iceberg table's 1 row, or an error "+
			"naming both formats", n, err)
	}
}

// TestDeltaTableRecreated: a Delta table dropped and created again in the
// same folder while flightd runs (rm -r and a new table, as a path-based
// DROP TABLE / CREATE TABLE does) is served as the new table: its versions,
// their times, its schema and its rows, not what flightd read of the old
// one: flightd tells a table by its oldest log file, and starts over when
// it changes.
func TestDeltaTableRecreated(t *testing.T) {
	fixtures := copyDeltaFixtures(t)
	root := t.TempDir()
	dir := filepath.Join(root, "t")
	copyTree(t, filepath.Join(fixtures, "cdf-table-simple"), dir)
	srv := startFlightd(t, "--warehouse", t.TempDir(), "--delta-root", root)
	ctx := t.Context()
	c := dialGo(t, ctx, srv.URI())
	if n, err := countChanges(ctx, c, sluice.ChangeRequest{Table: "delta.t"}); err != nil || n != 25 {
		t.Fatalf("the first table: %d rows, %v; want the 25 of cdf-table-simple", n, err)
	}

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	newTable := filepath.Join(fixtures, "table-with-dv-small")
	copyTree(t, newTable, dir)
	_, latest := deltaLatest(t, dir)
	seq, err := c.CommitSeq(ctx, "delta.t")
	if want := deltaCommitTime(t, dir, latest); err != nil || seq.CommitSeq != latest || seq.TimestampMs != want {
		t.Errorf("commit_seq %v, %v; want version %d at %d", seq, err, latest, want)
	}
	snaps, err := c.Snapshots(ctx, "delta.t")
	if err != nil || len(snaps) != int(latest)+1 || snaps[0].TimestampMs != deltaCommitTime(t, dir, 0) {
		t.Errorf("list_snapshots %v, %v; want the new table's versions 0..%d", snaps, err, latest)
	}
	sc, err := c.Schema(ctx, sluice.ChangeRequest{Table: "delta.t"})
	if err != nil || sc.Field(2).Type.String() != "struct<value: int32 nullable>" {
		t.Errorf("GetSchema %v, %v; want the new table's column value", sc, err)
	}
	if n, err := countChanges(ctx, c, sluice.ChangeRequest{Table: "delta.t"}); err != nil || n != 12 {
		t.Errorf("the new table's feed: %d rows, %v; want its 10 inserts and 2 deletes", n, err)
	}
	sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: "delta.t", Start: sluice.StartLatestFull, NoFollow: true})
	n := 0
	if err == nil {
		for b, err2 := range sub.All() {
			if err2 != nil {
				err = err2
				break
			}
			n += int(b.Record.NumRows())
		}
		sub.Release()
	}
	if err != nil || n != 8 {
		t.Errorf("the new table's full state: %d rows, %v; want its 8 rows", n, err)
	}
}
