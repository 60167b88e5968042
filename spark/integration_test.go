package spark

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/internal/testkit/testsvc"
)

// The integration tests run against real Spark Connect servers
// (internal/testkit/testsvc/spark.go), one of each version at a time. They are
// skipped unless SLUICE_SPARK_CONNECT_42 / _41 name the installs
// (make -f mk/spark.mk test-spark), and fail when those are set but a
// server does not start. Tables are written by Spark itself, through the
// same Connect session.

// dial opens a session on srv, closed at the end of the test.
func dial(t *testing.T, srv *testsvc.SparkServer, mem memory.Allocator) *Session {
	t.Helper()
	s, err := Dial(srv.Remote, Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Close(ctx); err != nil && !errors.Is(err, ErrUnavailable) {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

func exec(t *testing.T, s *Session, statements ...string) {
	t.Helper()
	for _, st := range statements {
		began := time.Now()
		if err := s.Exec(t.Context(), st); err != nil {
			t.Fatalf("%s: %v", st, err)
		}
		t.Logf("%6.2fs  %s", time.Since(began).Seconds(), clip(st))
	}
}

func logServer(t *testing.T, name string, srv *testsvc.SparkServer) {
	t.Helper()
	rss, err := srv.RSS()
	if err != nil {
		t.Logf("%s: started in %s (RSS: %v)", name, srv.Startup.Round(time.Millisecond), err)
		return
	}
	t.Logf("%s: started in %s, RSS %d MB", name, srv.Startup.Round(time.Millisecond), rss>>20)
}

// readAll reads a window and renders its rows as "op before after snapshot".
func readAll(t *testing.T, s *Session, req Request) []string {
	t.Helper()
	began := time.Now()
	var out []string
	for rec, err := range s.Read(t.Context(), req) {
		if err != nil {
			t.Fatalf("read %s: %v", req.Table.Name, err)
		}
		out = append(out, renderRows(rec)...)
	}
	t.Logf("read %s %+v: %d rows in %s", req.Table.Name, req.Window, len(out), time.Since(began).Round(time.Millisecond))
	return out
}

func renderRows(rec arrow.RecordBatch) []string {
	op := rec.Column(0).(*array.String)
	img := func(col, i int) string {
		s := rec.Column(col).(*array.Struct)
		if s.IsNull(i) {
			return "-"
		}
		parts := make([]string, s.NumField())
		for f := range s.NumField() {
			parts[f] = s.Field(f).ValueStr(i)
		}
		return strings.Join(parts, "/")
	}
	var out []string
	for i := range int(rec.NumRows()) {
		out = append(out, fmt.Sprintf("%s %s %s", op.Value(i), img(1, i), img(2, i)))
	}
	return out
}

func wantRows(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestSparkDelta42(t *testing.T) {
	in := testsvc.LookupSpark(t, testsvc.EnvSpark42)
	srv := testsvc.StartSpark(t, in, testsvc.SparkOptions{Conf: testsvc.SparkDeltaConf()})
	logServer(t, "Spark 4.2 + Delta", srv)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := dial(t, srv, mem)

	began := time.Now()
	v, err := s.Version(t.Context())
	if err != nil || v != "4.2.0" {
		t.Fatalf("Version = %q, %v", v, err)
	}
	t.Logf("version %s in %s", v, time.Since(began).Round(time.Millisecond))

	exec(t, s,
		"CREATE TABLE rt (id INT, c STRING, n DOUBLE) USING delta TBLPROPERTIES ('delta.enableRowTracking' = 'true')",
		"INSERT INTO rt VALUES (1, 'a', 1.0), (2, 'b', 2.0), (3, 'c', 3.0)",
		"UPDATE rt SET c = 'bb' WHERE id = 2",
		"UPDATE rt SET c = c WHERE id = 3",
		"DELETE FROM rt WHERE id = 1",
		"MERGE INTO rt USING (SELECT 3 AS id, 'cc' AS c UNION ALL SELECT 4, 'd') s ON rt.id = s.id "+
			"WHEN MATCHED THEN UPDATE SET c = s.c WHEN NOT MATCHED THEN INSERT (id, c, n) VALUES (s.id, s.c, 4.0)",
		"CREATE TABLE plain (id INT, c STRING) USING delta",
		"INSERT INTO plain VALUES (1, 'a')",
	)
	rt := Table{Name: TableName{"spark_catalog", "default", "rt"}, Format: Delta}
	plain := Table{Name: TableName{"spark_catalog", "default", "plain"}, Format: Delta, NativeReadable: true}

	t.Run("history", func(t *testing.T) {
		hist, err := s.History(t.Context(), rt)
		if err != nil {
			t.Fatal(err)
		}
		if len(hist) != 6 || hist[0].Version != 0 || hist[5].Version != 5 || hist[5].Operation != "MERGE" {
			t.Fatalf("history %+v", hist)
		}
	})

	t.Run("row tracking is spark_native", func(t *testing.T) {
		began := time.Now()
		verdict, err := s.Detect(t.Context(), rt, Window{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("verdict in %s: %+v", time.Since(began).Round(time.Millisecond), verdict)
		if verdict.Chosen != EngineSparkNative || !verdict.NativeExpected || !verdict.NativeUsable || verdict.FellBack ||
			verdict.ServerVersion != "4.2.0" {
			t.Errorf("verdict %+v", verdict)
		}
	})

	req := Request{Table: rt, Engine: EngineSparkNative}
	t.Run("whole history, updates paired by row id, the no-op cancelled", func(t *testing.T) {
		wantRows(t, readAll(t, s, req),
			"insert - 1/a/1", "insert - 2/b/2", "insert - 3/c/3",
			"update_before 2/b/2 -", "update_after - 2/bb/2",
			// version 3 (SET c = c) is a no-op pair: nothing
			"delete 1/a/1 -",
			"update_before 3/c/3 -", "update_after - 3/cc/3", "insert - 4/d/4")
	})
	t.Run("version window", func(t *testing.T) {
		r := req
		r.Window = Window{From: AtVersion(1), To: AtVersion(4)}
		wantRows(t, readAll(t, s, r), "update_before 2/b/2 -", "update_after - 2/bb/2", "delete 1/a/1 -")
	})
	t.Run("empty window", func(t *testing.T) {
		r := req
		r.Window = Window{From: AtVersion(3), To: AtVersion(3)}
		wantRows(t, readAll(t, s, r))
	})
	t.Run("timestamp window", func(t *testing.T) {
		hist, err := s.History(t.Context(), rt)
		if err != nil {
			t.Fatal(err)
		}
		r := req
		r.Window = Window{From: AtTime(hist[3].Time), To: AtTime(hist[4].Time.Add(time.Millisecond))}
		wantRows(t, readAll(t, s, r), "delete 1/a/1 -")
	})
	t.Run("projection keeps an update whose projected images are equal", func(t *testing.T) {
		r := req
		r.Columns = []string{"id"}
		r.Window = Window{From: AtVersion(1)}
		wantRows(t, readAll(t, s, r), "update_before 2 -", "update_after - 2", "delete 1 -",
			"update_before 3 -", "update_after - 3", "insert - 4")
	})
	t.Run("filter keeps a pair whole", func(t *testing.T) {
		r := req
		r.Filter = Compare{Column{"c"}, Eq, String("bb")}
		wantRows(t, readAll(t, s, r), "update_before 2/b/2 -", "update_after - 2/bb/2")
		r.Filter = Or{Compare{Column{"id"}, Ge, Int(4)}, Compare{Column{"c"}, Eq, String("x') OR true --")}}
		wantRows(t, readAll(t, s, r), "insert - 4/d/4")
	})
	t.Run("without row tracking falls back with Delta's error", func(t *testing.T) {
		verdict, err := s.Detect(t.Context(), plain, Window{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("verdict %+v", verdict)
		if verdict.Chosen != EngineNative || !verdict.NativeExpected || verdict.NativeUsable || !verdict.FellBack ||
			!strings.Contains(verdict.Reason, "DELTA_CHANGELOG_REQUIRES_ROW_TRACKING") {
			t.Errorf("verdict %+v", verdict)
		}
		unreadable := plain
		unreadable.NativeReadable = false
		verdict, err = s.Detect(t.Context(), unreadable, Window{})
		if !errors.Is(err, ErrNoChangeEngine) || verdict.Chosen != "" || !strings.Contains(err.Error(), "requires row tracking") {
			t.Errorf("Detect = %+v, %v; want ErrNoChangeEngine with Delta's text", verdict, err)
		}
	})
	t.Run("unknown table", func(t *testing.T) {
		_, err := s.Detect(t.Context(), Table{Name: TableName{"spark_catalog", "default", "nope"}, Format: Delta}, Window{})
		if !errors.Is(err, ErrTableNotFound) {
			t.Errorf("err = %v, want ErrTableNotFound", err)
		}
	})

	// A table large enough that its read streams many batches.
	exec(t, s,
		"CREATE TABLE big (id BIGINT, pad STRING) USING delta TBLPROPERTIES ('delta.enableRowTracking' = 'true')",
		"INSERT INTO big SELECT id, repeat('x', 200) FROM range(0, 400000)")
	big := Request{Table: Table{Name: TableName{"spark_catalog", "default", "big"}, Format: Delta}, Engine: EngineSparkNative}

	t.Run("a cancelled read interrupts the job", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var mu sync.Mutex
		var started string
		var interrupted []string
		s.onStart = func(id, statement string) {
			if strings.Contains(statement, " CHANGES ") {
				mu.Lock()
				started = id
				mu.Unlock()
				// Cancel while Spark sorts the window: before the first batch.
				time.AfterFunc(500*time.Millisecond, cancel)
			}
		}
		s.onInterrupt = func(id string, ids []string) {
			mu.Lock()
			defer mu.Unlock()
			interrupted = ids
		}
		defer func() { s.onStart, s.onInterrupt = nil, nil }()
		began := time.Now()
		var err error
		for rec, e := range s.Read(ctx, big) {
			_ = rec
			if e != nil {
				err = e
			}
		}
		t.Logf("cancelled after %s: %v", time.Since(began).Round(time.Millisecond), err)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if started == "" || len(interrupted) != 1 || interrupted[0] != started {
			t.Errorf("operation %q, the server interrupted %q", started, interrupted)
		}
	})

	t.Run("a server killed mid-stream is Unavailable", func(t *testing.T) {
		began := time.Now()
		rows, batches := 0, 0
		var err error
		for rec, e := range s.Read(t.Context(), big) {
			if e != nil {
				err = e
				break
			}
			if batches == 0 {
				t.Logf("first batch after %s", time.Since(began).Round(time.Millisecond))
				srv.Kill()
			}
			batches++
			rows += int(rec.NumRows())
		}
		t.Logf("after the kill: %d rows in %d batches, then %v", rows, batches, err)
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("err = %v after %d of 400000 rows, want ErrUnavailable", err, rows)
		}
		if rows >= 400000 {
			t.Errorf("read all %d rows: the kill came too late to test anything", rows)
		}
	})
}

// icebergRuntime is the Iceberg Spark runtime jar of the 4.1 install.
func icebergRuntime(t *testing.T, in testsvc.SparkInstall) string {
	t.Helper()
	for _, j := range in.Jars {
		if strings.Contains(filepath.Base(j), "iceberg-spark-runtime") {
			return j
		}
	}
	t.Fatalf("no Iceberg runtime among %s's jars", in.Dir)
	return ""
}

func TestSparkIceberg41(t *testing.T) {
	in := testsvc.LookupSpark(t, testsvc.EnvSpark41)
	warehouse := t.TempDir()
	srv := testsvc.StartSpark(t, in, testsvc.SparkOptions{Conf: testsvc.SparkIcebergConf("ice", warehouse)})
	logServer(t, "Spark 4.1 + Iceberg", srv)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := dial(t, srv, mem)

	cow := "TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'copy-on-write', " +
		"'write.update.mode' = 'copy-on-write', 'write.merge.mode' = 'copy-on-write')"
	mor := "TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'merge-on-read', " +
		"'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read')"
	exec(t, s,
		"CREATE TABLE ice.db.cow (id INT, c STRING) USING iceberg "+cow,
		"INSERT INTO ice.db.cow VALUES (1, 'a'), (2, 'b'), (3, 'c')",
		"UPDATE ice.db.cow SET c = 'bb' WHERE id = 2",
		"DELETE FROM ice.db.cow WHERE id = 1",
		"MERGE INTO ice.db.cow t USING (SELECT 3 AS id, 'cc' AS c UNION ALL SELECT 4, 'd') s ON t.id = s.id "+
			"WHEN MATCHED THEN UPDATE SET c = s.c WHEN NOT MATCHED THEN INSERT *",
		"CREATE TABLE ice.db.mor (id INT, c STRING) USING iceberg "+mor,
		"INSERT INTO ice.db.mor VALUES (1, 'a'), (2, 'b')",
		"DELETE FROM ice.db.mor WHERE id = 1",
		// A snapshot with data and delete files: a merge-on-read delete
		// alone (delete files only) still reads.
		"UPDATE ice.db.mor SET c = 'bb' WHERE id = 2",
	)
	cowT := Table{Name: TableName{"ice", "db", "cow"}, Format: Iceberg, NativeReadable: true}
	morT := Table{Name: TableName{"ice", "db", "mor"}, Format: Iceberg, NativeReadable: true}

	t.Run("copy-on-write is iceberg_changelog_view", func(t *testing.T) {
		began := time.Now()
		verdict, err := s.Detect(t.Context(), cowT, Window{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("verdict in %s: %+v", time.Since(began).Round(time.Millisecond), verdict)
		if verdict.Chosen != EngineIcebergChangelogView || verdict.NativeExpected || verdict.NativeUsable ||
			verdict.FellBack || verdict.ServerVersion != "4.1.4" {
			t.Errorf("verdict %+v", verdict)
		}
	})
	req := Request{Table: cowT, Engine: EngineIcebergChangelogView, Identity: []string{"id"}}
	t.Run("whole history, updates paired by identity", func(t *testing.T) {
		wantRows(t, readAll(t, s, req),
			"insert - 1/a", "insert - 2/b", "insert - 3/c",
			"update_before 2/b -", "update_after - 2/bb",
			"delete 1/a -",
			"update_before 3/c -", "update_after - 3/cc", "insert - 4/d")
	})
	t.Run("snapshot window, start exclusive, and commit times", func(t *testing.T) {
		hist, err := s.History(t.Context(), cowT)
		if err != nil || len(hist) != 4 {
			t.Fatalf("history %+v, %v", hist, err)
		}
		r := req
		r.Window = Window{From: AtVersion(hist[0].Version), To: AtVersion(hist[2].Version)}
		var rows []string
		for rec, err := range s.Read(t.Context(), r) {
			if err != nil {
				t.Fatal(err)
			}
			snap, ts := rec.Column(3).(*array.Int64), rec.Column(4).(*array.Timestamp)
			for i := range int(rec.NumRows()) {
				if snap.Value(i) != hist[1].Version && snap.Value(i) != hist[2].Version {
					t.Errorf("row %d of snapshot %d", i, snap.Value(i))
				}
				if !ts.IsValid(i) {
					t.Errorf("row %d has no commit time", i)
				}
			}
			rows = append(rows, renderRows(rec)...)
		}
		wantRows(t, rows, "update_before 2/b -", "update_after - 2/bb", "delete 1/a -")
	})
	t.Run("without identity: deletes and inserts", func(t *testing.T) {
		r := req
		r.Identity = nil
		hist, err := s.History(t.Context(), cowT)
		if err != nil {
			t.Fatal(err)
		}
		r.Window = Window{From: AtVersion(hist[0].Version), To: AtVersion(hist[1].Version)}
		wantRows(t, readAll(t, s, r), "delete 2/b -", "insert - 2/bb")
	})
	t.Run("merge-on-read falls back to native with Iceberg's error", func(t *testing.T) {
		verdict, err := s.Detect(t.Context(), morT, Window{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("verdict %+v", verdict)
		if verdict.Chosen != EngineNative || !verdict.FellBack ||
			!strings.Contains(verdict.Reason, "Delete files are currently not supported in changelog scans") {
			t.Errorf("verdict %+v", verdict)
		}
	})

	// (d) Spark 4.2 with the 4.1 runtime, on the same warehouse: no
	// Iceberg runtime exists for 4.2.
	t.Run("Iceberg on 4.2 falls back with Spark's error", func(t *testing.T) {
		in42 := testsvc.LookupSpark(t, testsvc.EnvSpark42)
		srv42 := testsvc.StartSpark(t, in42, testsvc.SparkOptions{Jars: []string{icebergRuntime(t, in)},
			Conf: testsvc.SparkIcebergConf("ice", warehouse)})
		logServer(t, "Spark 4.2 + Iceberg 4.1 runtime", srv42)
		s42 := dial(t, srv42, mem)
		verdict, err := s42.Detect(t.Context(), cowT, Window{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("verdict %+v", verdict)
		if verdict.Chosen != EngineNative || !verdict.NativeExpected || verdict.NativeUsable || !verdict.FellBack ||
			!strings.Contains(verdict.Reason, "refused CHANGES") {
			t.Errorf("verdict %+v", verdict)
		}
	})
}

func TestMain(m *testing.M) {
	// The backend logs verdicts and interrupts; keep them in -v output.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})))
	os.Exit(m.Run())
}
