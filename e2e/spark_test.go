package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/testkit/testsvc"
	"github.com/sluicefeed/sluice/spark"
)

// The tests of this file serve tables through real Spark Connect servers
// (issue 22's cases (a)–(e)): Spark writes the tables, flightd serves them
// with a spark: configuration, and each window read through Spark is
// checked against the same window read natively. They are skipped unless
// SLUICE_SPARK_CONNECT_42 / _41 name the installs (make test-integration),
// like spark's own integration tests, and start one Spark server at a time.

// sparkSession opens a session on srv to write tables with.
func sparkSession(t *testing.T, srv *testsvc.SparkServer) *spark.Session {
	t.Helper()
	s, err := spark.Dial(srv.Remote, spark.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.Close(ctx) // the server may have been killed
	})
	return s
}

// sparkExec runs statements, each within 10 minutes (a loaded machine
// makes Spark slow; a statement that never ends fails the test).
func sparkExec(t *testing.T, s *spark.Session, statements ...string) {
	t.Helper()
	for _, st := range statements {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
		err := s.Exec(ctx, st)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", st, err)
		}
	}
}

// sparkFlightd starts flightd on an empty catalog in dir with the given
// extra flags and the YAML configuration yml.
func sparkFlightd(t *testing.T, dir, yml string, args ...string) *flightd {
	t.Helper()
	cfg := filepath.Join(dir, "flightd.yaml")
	if err := os.WriteFile(cfg, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	wh := filepath.Join(dir, "sluice-warehouse")
	return startFlightd(t, append([]string{"--warehouse", wh, "--create-catalog", "--config", cfg}, args...)...)
}

// verdicts returns the listed tables' verdicts, by name.
func verdicts(t *testing.T, ctx context.Context, c *sluice.Client) map[string]*sluice.BackendVerdict {
	t.Helper()
	tables, err := c.ListTables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*sluice.BackendVerdict{}
	for _, ti := range tables {
		out[ti.Name] = ti.Backend
	}
	return out
}

// bothWays reads a window through Spark and natively and checks they are
// the same rows, commit markers included; it returns the rows.
func bothWays(t *testing.T, ctx context.Context, c *sluice.Client, req sluice.ChangeRequest) []string {
	t.Helper()
	read := func(backend string) []string {
		r := req
		r.Backend = backend
		p, err := c.Explain(ctx, r)
		if err != nil {
			t.Fatalf("explain (%s): %v", backend, err)
		}
		if p.Backend == nil || p.Backend.Backend != backend {
			t.Fatalf("explain (%s): verdict %+v", backend, p.Backend)
		}
		for _, sp := range p.Snapshots {
			if (sp.Strategy == "backend") != (backend == "spark") {
				t.Fatalf("explain (%s): snapshot %d's strategy is %s", backend, sp.Snapshot, sp.Strategy)
			}
		}
		rdr, err := c.Changes(ctx, r)
		if err != nil {
			t.Fatalf("read (%s): %v", backend, err)
		}
		defer rdr.Release()
		began := time.Now()
		rows, err := readRows(rdr)
		if err != nil {
			t.Fatalf("read (%s): %v", backend, err)
		}
		t.Logf("%s: %d lines in %s", backend, len(rows), time.Since(began).Round(time.Millisecond))
		return rows
	}
	viaSpark, native := read("spark"), read("native")
	if !slices.Equal(viaSpark, native) {
		t.Fatalf("through Spark:\n  %s\nnatively:\n  %s", strings.Join(viaSpark, "\n  "), strings.Join(native, "\n  "))
	}
	return viaSpark
}

// TestSparkDeltaServed: (a) a Delta table with row tracking on Spark 4.2 is
// served as spark_native, and its windows through Spark equal the native
// feed, updates paired and the no-op update cancelled; the same table
// without row tracking falls back to native with Delta's error text; a
// follow stream and a durable consumer read new commits through Spark;
// (e) a Spark server killed mid-stream gives Unavailable, never a feed
// that looks complete, and a table whose backend is auto is then served
// natively with a verdict that says so.
func TestSparkDeltaServed(t *testing.T) {
	in := testsvc.LookupSpark(t, testsvc.EnvSpark42)
	dir := t.TempDir()
	srv := testsvc.StartSpark(t, in, testsvc.SparkOptions{Conf: testsvc.SparkDeltaConf(), Dir: dir})
	t.Logf("Spark 4.2 started in %s", srv.Startup.Round(time.Millisecond))
	s := sparkSession(t, srv)
	sparkExec(t, s,
		"CREATE TABLE rt (id INT, c STRING) USING delta TBLPROPERTIES ('delta.enableRowTracking' = 'true')",
		"INSERT INTO rt VALUES (1, 'a'), (2, 'b'), (3, 'c')",
		"UPDATE rt SET c = 'bb' WHERE id = 2",
		"UPDATE rt SET c = c WHERE id = 3",
		"DELETE FROM rt WHERE id = 1",
		"CREATE TABLE plain (id INT, c STRING) USING delta",
		"INSERT INTO plain VALUES (1, 'a')",
		"CREATE TABLE big (id BIGINT, pad STRING) USING delta TBLPROPERTIES ('delta.enableRowTracking' = 'true')",
		"INSERT INTO big SELECT id, repeat('x', 200) FROM range(0, 300000)",
		"CREATE TABLE solo (id INT, c STRING) USING delta TBLPROPERTIES ('delta.enableRowTracking' = 'true')",
		"INSERT INTO solo VALUES (1, 'a'), (2, 'b')",
		"UPDATE solo SET c = 'bb' WHERE id = 2",
	)
	f := sparkFlightd(t, dir, fmt.Sprintf(`spark:
  remote: %s
  tables:
    delta.rt: spark_catalog.default.rt
    delta.plain: spark_catalog.default.plain
    delta.big: {name: spark_catalog.default.big, backend: spark}
    lake.solo: spark_catalog.default.solo
`, srv.Remote), "--delta-root", filepath.Join(dir, "spark-warehouse"), "--poll-interval", "200ms",
		"--progress-dsn", filepath.Join(dir, "consumers.db"), "--log-level", "info")
	ctx := t.Context()
	c := dialGo(t, ctx, f.URI())

	v := verdicts(t, ctx, c)
	if rt := v["delta.rt"]; rt == nil || rt.Backend != "spark" || rt.Chosen != "spark_native" || !rt.NativeExpected ||
		!rt.NativeUsable || rt.FellBack || rt.ServerVersion != "4.2.0" {
		t.Fatalf("delta.rt's verdict %+v", rt)
	}
	if p := v["delta.plain"]; p == nil || p.Backend != "native" || p.Chosen != "native" || !p.FellBack ||
		p.NativeUsable || !strings.Contains(p.Reason, "DELTA_CHANGELOG_REQUIRES_ROW_TRACKING") {
		t.Fatalf("delta.plain's verdict %+v, want a fallback with Delta's error", v["delta.plain"])
	}
	if logs := f.logs(); !strings.Contains(logs, "fell back") || !strings.Contains(logs, "spark_catalog.default.plain") {
		t.Errorf("the fallback is not in flightd's log:\n%s", logs)
	}

	t.Run("windows through Spark equal the native feed", func(t *testing.T) {
		// Spark pairs updates by row id; natively, a Delta table without
		// the change data feed pairs them by the request's identity.
		rows := bothWays(t, ctx, c, sluice.ChangeRequest{Table: "delta.rt", Identity: []string{"id"}})
		want := []string{
			`insert <nil> {[1] ["a"]} @1`, `insert <nil> {[2] ["b"]} @1`, `insert <nil> {[3] ["c"]} @1`, "snapshot 1 complete",
			`update_before {[2] ["b"]} <nil> @2`, `update_after <nil> {[2] ["bb"]} @2`, "snapshot 2 complete",
			"snapshot 3 complete",
			`delete {[1] ["a"]} <nil> @4`, "snapshot 4 complete",
		}
		t.Logf("rows:\n  %s", strings.Join(rows, "\n  "))
		if n := changeLines(rows); n != len(want)-4 || !strings.Contains(strings.Join(rows, "\n"), "update_before") {
			t.Fatalf("%d changes through Spark, want 6 (3 inserts, an update pair, a delete; the no-op cancelled)", n)
		}
		from, to := int64(1), int64(3)
		bothWays(t, ctx, c, sluice.ChangeRequest{Table: "delta.rt", FromSnapshot: &from, ToSnapshot: &to,
			Columns: []string{"c"}, Identity: []string{"id"}})
	})
	t.Run("filter, fold_updates and net_changes through Spark equal the native feed", func(t *testing.T) {
		id := []string{"id"}
		for _, tc := range []struct {
			name   string
			req    sluice.ChangeRequest
			reason string
		}{
			// The update pair b -> bb is kept whole: its before-image
			// matches, its after-image does not.
			{"filter on a pair's before-image", sluiceReq("delta.rt", id, "c = 'b'"), "evaluated in Spark's SQL"},
			{"filter on a column not projected", sluice.ChangeRequest{Table: "delta.rt", Identity: id,
				Filter: "id IN (1, 2) AND c IS NOT NULL", Columns: []string{"c"}}, "evaluated in Spark's SQL"},
			{"filter that drops a delete", sluiceReq("delta.rt", id, "c != 'a'"), "evaluated in Spark's SQL"},
			{"fold_updates", sluice.ChangeRequest{Table: "delta.rt", Identity: id, FoldUpdates: true},
				"folds Spark's update pairs"},
			{"net_changes with a filter", sluice.ChangeRequest{Table: "delta.rt", Identity: id, NetChanges: true,
				Filter: "id >= 2"}, "Sluice nets"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p, err := c.Explain(ctx, tc.req)
				if err != nil || p.Backend == nil || p.Backend.Backend != "spark" ||
					!strings.Contains(p.Backend.Reason, tc.reason) {
					t.Fatalf("explain: %+v, %v; want backend spark, %q in the reason", p.Backend, err, tc.reason)
				}
				rows := bothWays(t, ctx, c, tc.req)
				t.Logf("rows:\n  %s", strings.Join(rows, "\n  "))
				if changeLines(rows) == 0 {
					t.Fatal("no change: the case tests nothing")
				}
			})
		}
		_, err := c.Explain(ctx, sluice.ChangeRequest{Table: "delta.plain", Backend: "spark", Filter: "id = 1"})
		if sluice.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "requires row tracking") {
			t.Fatalf("forced spark on the table without row tracking: %v", err)
		}
		_, err = c.Explain(ctx, sluice.ChangeRequest{Table: "delta.rt", Backend: "duckdb"})
		if sluice.Code(err) != codes.InvalidArgument {
			t.Fatalf("backend duckdb: %v", err)
		}
		_, err = c.Explain(ctx, sluice.ChangeRequest{Table: "delta.rt", Backend: "spark", Filter: "nope = 1"})
		if sluice.Code(err) != codes.InvalidArgument {
			t.Fatalf("forced spark with a filter on an unknown column: %v", err)
		}
	})
	t.Run("commit_seq, snapshots, follow and a consumer through Spark", func(t *testing.T) {
		snaps, err := c.Snapshots(ctx, "delta.rt")
		if err != nil || len(snaps) != 5 {
			t.Fatalf("snapshots %+v, %v", snaps, err)
		}
		st, err := c.CommitSeq(ctx, "delta.rt")
		if err != nil || st.CommitSeq != 4 {
			t.Fatalf("commit_seq %+v, %v", st, err)
		}
		fctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		sub, err := c.Subscribe(fctx, sluice.SubscribeRequest{Table: "delta.rt", Consumer: "mirror", Start: "latest"})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Release()
		sparkExec(t, s, "INSERT INTO rt VALUES (9, 'z')", "UPDATE rt SET c = 'zz' WHERE id = 9")
		var got []string
		for b, err := range sub.All() {
			if err != nil {
				t.Fatalf("follow: %v after %q", err, got)
			}
			got = append(got, batchLines(b)...)
			if b.Meta.SnapshotComplete && b.Meta.Snapshot == 6 {
				if _, err := c.Ack(ctx, "mirror", "delta.rt", 6); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		if n := changeLines(got); n != 3 || !strings.Contains(strings.Join(got, "\n"), "update_after") {
			t.Fatalf("followed %d changes, want an insert and an update pair:\n  %s", n, strings.Join(got, "\n  "))
		}
		t.Logf("followed through Spark:\n  %s", strings.Join(got, "\n  "))
		p, err := c.Explain(ctx, sluice.ChangeRequest{Table: "delta.rt", FromSnapshot: ptr(4)})
		if err != nil || len(p.Snapshots) != 2 || p.Snapshots[0].Strategy != "backend" {
			t.Fatalf("the followed commits' plan: %+v, %v", p, err)
		}
	})

	t.Run("a table Spark alone serves has its history from DESCRIBE HISTORY", func(t *testing.T) {
		// lake.solo is no table of Sluice's: Spark alone serves it. Its
		// folder is also delta.solo, which Sluice reads natively.
		if so := verdicts(t, ctx, c)["lake.solo"]; so == nil || so.Backend != "spark" || so.Chosen != "spark_native" ||
			!strings.Contains(so.Reason, "cannot read the table's files") {
			t.Fatalf("lake.solo's verdict %+v", so)
		}
		snaps, err := c.Snapshots(ctx, "lake.solo")
		if err != nil || len(snaps) != 3 || snaps[2].ID != 2 || snaps[2].Operation != "UPDATE" {
			t.Fatalf("snapshots %+v, %v", snaps, err)
		}
		st, err := c.CommitSeq(ctx, "lake.solo")
		if err != nil || st.CommitSeq != 2 || st.Snapshot == nil || *st.Snapshot != 2 {
			t.Fatalf("commit_seq %+v, %v", st, err)
		}
		rowsOf := func(req sluice.ChangeRequest) []string {
			rdr, err := c.Changes(ctx, req)
			if err != nil {
				t.Fatalf("%+v: %v", req, err)
			}
			defer rdr.Release()
			rows, err := readRows(rdr)
			if err != nil {
				t.Fatalf("%+v: %v", req, err)
			}
			return rows
		}
		for _, req := range []sluice.ChangeRequest{
			{Identity: []string{"id"}},
			{Identity: []string{"id"}, Filter: "c = 'b'", Columns: []string{"c"}},
			{Identity: []string{"id"}, FromSnapshot: ptr(0), NetChanges: true},
		} {
			alone, native := req, req
			alone.Table, native.Table, native.Backend = "lake.solo", "delta.solo", "native"
			got, want := rowsOf(alone), rowsOf(native)
			if !slices.Equal(got, want) || changeLines(got) == 0 {
				t.Fatalf("%+v through Spark alone:\n  %s\nnatively:\n  %s", req, strings.Join(got, "\n  "),
					strings.Join(want, "\n  "))
			}
		}
		if _, err := c.Explain(ctx, sluice.ChangeRequest{Table: "lake.solo", Backend: "native"}); sluice.Code(err) !=
			codes.InvalidArgument {
			t.Fatalf("backend native for a table Spark alone serves: %v", err)
		}
		if _, err := c.Explain(ctx, sluice.ChangeRequest{Table: "lake.solo", FromSnapshot: ptr(7)}); sluice.Code(err) !=
			codes.NotFound {
			t.Fatalf("a version the history does not hold: %v", err)
		}

		fctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		full, err := c.Subscribe(fctx, sluice.SubscribeRequest{Table: "lake.solo", Start: sluice.StartLatestFull})
		if err == nil {
			for _, err = range full.All() {
				break
			}
			full.Release()
		}
		if sluice.Code(err) != codes.FailedPrecondition {
			t.Fatalf("latest-full on a table Spark alone serves: %v", err)
		}
		sub, err := c.Subscribe(fctx, sluice.SubscribeRequest{Table: "lake.solo", Consumer: "solo", Start: "latest"})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Release()
		sparkExec(t, s, "INSERT INTO solo VALUES (3, 'c')")
		var got []string
		for b, err := range sub.All() {
			if err != nil {
				t.Fatalf("follow: %v after %q", err, got)
			}
			got = append(got, batchLines(b)...)
			if b.Meta.SnapshotComplete && b.Meta.Snapshot == 3 {
				if _, err := c.Ack(ctx, "solo", "lake.solo", 3); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		if n := changeLines(got); n != 1 || !strings.HasPrefix(got[0], "insert ") || !strings.Contains(got[0], `"id":3`) ||
			!strings.HasSuffix(got[0], "@3") {
			t.Fatalf("followed %d changes, want the insert of version 3:\n  %s", n, strings.Join(got, "\n  "))
		}
		if st, err := c.CommitSeq(ctx, "lake.solo"); err != nil || st.CommitSeq != 3 {
			t.Fatalf("commit_seq after the insert %+v, %v", st, err)
		}
	})
	t.Run("a cancelled stream interrupts the Spark job", func(t *testing.T) {
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		rdr, err := c.Changes(rctx, sluice.ChangeRequest{Table: "delta.big"})
		if err != nil {
			t.Fatal(err)
		}
		for b, err := range rdr.All() {
			if err != nil {
				t.Fatalf("%v\n%s", err, f.logs())
			}
			if b.Record.NumRows() > 0 {
				break
			}
		}
		cancel()
		rdr.Release()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(f.logs(), "spark: interrupted an abandoned operation") {
			if time.Now().After(deadline) {
				t.Fatalf("flightd did not interrupt the Spark operation of a cancelled stream:\n%s", f.logs())
			}
			time.Sleep(100 * time.Millisecond)
		}
		// Whether Spark still ran the operation (interrupted=[id]) or had
		// already produced every batch into the stream's flow-control
		// window (interrupted=[]) is a matter of timing here; spark's
		// TestSparkDelta42 cancels while Spark sorts, and checks the id.
		for _, l := range strings.Split(f.logs(), "\n") {
			if strings.Contains(l, "spark: interrupted an abandoned operation") {
				t.Log(l)
			}
		}
	})
	t.Run("a Spark server killed mid-stream is Unavailable", func(t *testing.T) {
		rdr, err := c.Changes(ctx, sluice.ChangeRequest{Table: "delta.big", Columns: []string{"id", "pad"}})
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		rows, batches := 0, 0
		var readErr error
		for b, err := range rdr.All() {
			if err != nil {
				readErr = err
				break
			}
			if batches == 0 {
				srv.Kill()
			}
			batches++
			rows += int(b.Record.NumRows())
		}
		t.Logf("after the kill: %d rows in %d batches, then %v", rows, batches, readErr)
		if sluice.Code(readErr) != codes.Unavailable {
			t.Fatalf("the read ended with %v after %d of 300000 rows, want Unavailable\n%s", readErr, rows, f.logs())
		}
		// delta.big's backend is spark: with its verdict forgotten after
		// the failed read, it cannot be served until the server is back.
		_, err = c.Explain(ctx, sluice.ChangeRequest{Table: "delta.big"})
		if sluice.Code(err) != codes.Unavailable {
			t.Fatalf("delta.big (backend: spark) after the kill: %v, want Unavailable", err)
		}
	})
}

// sluiceReq is a request of table with identity and a filter.
func sluiceReq(table string, identity []string, filter string) sluice.ChangeRequest {
	return sluice.ChangeRequest{Table: table, Identity: identity, Filter: filter}
}

// changeLines counts the change rows among readRows' lines.
func changeLines(lines []string) int {
	n := 0
	for _, l := range lines {
		if !strings.HasPrefix(l, "snapshot ") {
			n++
		}
	}
	return n
}

// TestSparkIcebergServed: (b) an Iceberg copy-on-write table on Spark 4.1
// is served as iceberg_changelog_view, and its windows through Spark equal
// the native feed; (c) a merge-on-read table falls back to native with
// Iceberg's "Delete files are currently not supported in changelog scans";
// (d) on Spark 4.2 (no Iceberg runtime exists for it) the same tables fall
// back, with Spark's error text.
func TestSparkIcebergServed(t *testing.T) {
	in41 := testsvc.LookupSpark(t, testsvc.EnvSpark41)
	in42 := testsvc.LookupSpark(t, testsvc.EnvSpark42)
	dir := t.TempDir()
	wh := filepath.Join(dir, "iceberg")
	srv := testsvc.StartSpark(t, in41, testsvc.SparkOptions{Conf: testsvc.SparkIcebergConf("ice", wh), Dir: dir})
	t.Logf("Spark 4.1 started in %s", srv.Startup.Round(time.Millisecond))
	s := sparkSession(t, srv)
	props := func(mode string) string {
		return "TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = '" + mode + "', 'write.update.mode' = '" +
			mode + "', 'write.merge.mode' = '" + mode + "')"
	}
	sparkExec(t, s,
		"CREATE TABLE ice.db.cow (id INT, c STRING) USING iceberg "+props("copy-on-write"),
		"INSERT INTO ice.db.cow VALUES (1, 'a'), (2, 'b'), (3, 'c')",
		"UPDATE ice.db.cow SET c = 'bb' WHERE id = 2",
		"DELETE FROM ice.db.cow WHERE id = 1",
		"INSERT INTO ice.db.cow VALUES (4, 'd')",
		"CREATE TABLE ice.db.mor (id INT, c STRING) USING iceberg "+props("merge-on-read"),
		"INSERT INTO ice.db.mor VALUES (1, 'a'), (2, 'b')",
		"UPDATE ice.db.mor SET c = 'bb' WHERE id = 2",
	)
	yml := func(remote string) string {
		// sonly.<t> is ice.db.<t> too, but no table of Sluice's: Spark
		// alone serves it.
		return fmt.Sprintf("spark:\n  remote: %s\n  namespaces:\n    db: ice.db\n    sonly: ice.db\n", remote)
	}
	args := []string{"--catalog-type", "hadoop", "--warehouse", wh}
	cfg := filepath.Join(dir, "flightd.yaml")
	start := func(remote string) *flightd {
		if err := os.WriteFile(cfg, []byte(yml(remote)), 0o644); err != nil {
			t.Fatal(err)
		}
		return launchFlightd(t, append(args, "--config", cfg)...)
	}
	ctx := t.Context()

	f := start(srv.Remote)
	c := dialGo(t, ctx, f.URI())
	v := verdicts(t, ctx, c)
	if cow := v["db.cow"]; cow == nil || cow.Backend != "spark" || cow.Chosen != "iceberg_changelog_view" ||
		cow.NativeExpected || cow.FellBack || cow.ServerVersion != "4.1.4" {
		t.Fatalf("db.cow's verdict %+v", cow)
	}
	if mor := v["db.mor"]; mor == nil || mor.Backend != "native" || !mor.FellBack ||
		!strings.Contains(mor.Reason, "Delete files are currently not supported in changelog scans") {
		t.Fatalf("db.mor's verdict %+v, want a fallback with Iceberg's error", v["db.mor"])
	}
	rows := bothWays(t, ctx, c, sluice.ChangeRequest{Table: "db.cow", Identity: []string{"id"}})
	t.Logf("db.cow:\n  %s", strings.Join(rows, "\n  "))
	if n := changeLines(rows); n != 7 || !strings.Contains(strings.Join(rows, "\n"), "update_after") {
		t.Fatalf("%d changes through Spark, want 7 (3 inserts, an update pair, a delete, an insert)", n)
	}
	snaps, err := c.Snapshots(ctx, "db.cow")
	if err != nil || len(snaps) != 4 {
		t.Fatalf("snapshots %+v, %v", snaps, err)
	}
	bothWays(t, ctx, c, sluice.ChangeRequest{Table: "db.cow", Identity: []string{"id"}, FromSnapshot: &snaps[0].ID,
		ToSnapshot: &snaps[2].ID})

	t.Run("a table Spark alone serves has its history from the snapshots table", func(t *testing.T) {
		if so := v["sonly.cow"]; so == nil || so.Backend != "spark" || so.Chosen != "iceberg_changelog_view" {
			t.Fatalf("sonly.cow's verdict %+v", so)
		}
		alone, err := c.Snapshots(ctx, "sonly.cow")
		if err != nil || len(alone) != len(snaps) {
			t.Fatalf("snapshots %+v, %v", alone, err)
		}
		for i := range alone {
			if alone[i].ID != snaps[i].ID || alone[i].Operation != snaps[i].Operation ||
				i > 0 && alone[i].CommitSeq <= alone[i-1].CommitSeq {
				t.Fatalf("snapshot %d: %+v, natively %+v", i, alone[i], snaps[i])
			}
		}
		st, err := c.CommitSeq(ctx, "sonly.cow")
		if err != nil || st.Snapshot == nil || *st.Snapshot != snaps[3].ID || st.CommitSeq != alone[3].CommitSeq {
			t.Fatalf("commit_seq %+v, %v", st, err)
		}
		for _, req := range []sluice.ChangeRequest{
			{Identity: []string{"id"}},
			{Identity: []string{"id"}, FromSnapshot: &snaps[1].ID, Filter: "c IN ('b', 'd')"},
			{Identity: []string{"id"}, FoldUpdates: true},
		} {
			a, n := req, req
			a.Table, n.Table, n.Backend = "sonly.cow", "db.cow", "native"
			ra, err := c.Changes(ctx, a)
			if err != nil {
				t.Fatal(err)
			}
			got, err := readRows(ra)
			ra.Release()
			if err != nil {
				t.Fatal(err)
			}
			rn, err := c.Changes(ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			want, err := readRows(rn)
			rn.Release()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) || changeLines(got) == 0 {
				t.Fatalf("%+v through Spark alone:\n  %s\nnatively:\n  %s", req, strings.Join(got, "\n  "),
					strings.Join(want, "\n  "))
			}
		}
		// No engine serves the merge-on-read table, and Sluice cannot
		// read it under this name: refused with Iceberg's reason.
		_, err = c.Explain(ctx, sluice.ChangeRequest{Table: "sonly.mor"})
		if sluice.Code(err) != codes.FailedPrecondition ||
			!strings.Contains(err.Error(), "Delete files are currently not supported in changelog scans") {
			t.Fatalf("sonly.mor: %v", err)
		}
	})
	f.stop(t)
	srv.Stop()

	// (d) Spark 4.2 with the 4.1 runtime, on the same warehouse.
	var runtime string
	for _, j := range in41.Jars {
		if strings.Contains(filepath.Base(j), "iceberg-spark-runtime") {
			runtime = j
		}
	}
	srv42 := testsvc.StartSpark(t, in42, testsvc.SparkOptions{Jars: []string{runtime},
		Conf: testsvc.SparkIcebergConf("ice", wh), Dir: dir})
	t.Logf("Spark 4.2 with the 4.1 runtime started in %s", srv42.Startup.Round(time.Millisecond))
	f = start(srv42.Remote)
	defer f.stop(t)
	c = dialGo(t, ctx, f.URI())
	v = verdicts(t, ctx, c)
	if cow := v["db.cow"]; cow == nil || cow.Backend != "native" || !cow.NativeExpected || cow.NativeUsable ||
		!cow.FellBack || !strings.Contains(cow.Reason, "refused CHANGES") {
		t.Fatalf("db.cow's verdict on 4.2 %+v", cow)
	}
	t.Logf("db.cow on Spark 4.2: %s", v["db.cow"].Reason)
}
