package progress_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicefeed/sluice/internal/testkit/pgtest"
	"github.com/sluicefeed/sluice/progress"
)

// stores returns the stores to test: a SQLite file always, and PostgreSQL
// when SLUICE_TEST_POSTGRES_DSN names one or a local server can be started
// (initdb and pg_ctl on PATH).
func stores(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{"sqlite": filepath.Join(t.TempDir(), "consumers.db")}
	if dsn := os.Getenv("SLUICE_TEST_POSTGRES_DSN"); dsn != "" {
		out["postgres"] = dsn
		return out
	}
	dsn, err := pgtest.Start(t)
	if err != nil {
		t.Logf("PostgreSQL store not tested: %v (set SLUICE_TEST_POSTGRES_DSN, or apt-get install postgresql)", err)
		return out
	}
	out["postgres"] = dsn
	return out
}

func TestStore(t *testing.T) {
	for name, dsn := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, err := progress.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.Dialect() != name {
				t.Fatalf("dialect %s", s.Dialect())
			}
			if _, err := s.Get(ctx, key("a.t", "c1")); !errors.Is(err, progress.ErrNotFound) {
				t.Fatalf("get of nothing: %v", err)
			}
			at := time.UnixMilli(1_800_000_000_000)
			for _, c := range []progress.Checkpoint{
				{Table: "a.t", Consumer: "c1", Snapshot: 11, CommitSeq: 1, TimestampMs: 100, AckedAt: at},
				{Table: "a.t", Consumer: "c2", Snapshot: 12, CommitSeq: 2, TimestampMs: 200, AckedAt: at},
				{Table: "b.t", Consumer: "c1", Snapshot: 99, CommitSeq: 9, TimestampMs: 900, AckedAt: at},
				// Overwrites c1 on a.t.
				{Table: "a.t", Consumer: "c1", Snapshot: -5, CommitSeq: 3, TimestampMs: 300, AckedAt: at},
			} {
				if err := s.Put(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.Get(ctx, key("a.t", "c1"))
			if err != nil {
				t.Fatal(err)
			}
			want := progress.Checkpoint{Table: "a.t", Consumer: "c1", Snapshot: -5, CommitSeq: 3, TimestampMs: 300, AckedAt: at}
			if got != want {
				t.Fatalf("get: %+v, want %+v", got, want)
			}
			list, err := s.List(ctx, "a.t")
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 2 || list[0].Consumer != "c1" || list[1].Consumer != "c2" || list[1].Snapshot != 12 {
				t.Fatalf("list: %+v", list)
			}
			if empty, err := s.List(ctx, "none.t"); err != nil || len(empty) != 0 {
				t.Fatalf("list of a table without consumers: %v %v", empty, err)
			}
			if removed, err := s.Delete(ctx, key("a.t", "c1"), ""); err != nil || !removed {
				t.Fatalf("delete: %v %v", removed, err)
			}
			if removed, err := s.Delete(ctx, key("a.t", "c1"), ""); err != nil || removed {
				t.Fatalf("second delete: %v %v", removed, err)
			}
			if got, err := s.Get(ctx, key("b.t", "c1")); err != nil || got.Snapshot != 99 {
				t.Fatalf("progress is per table: %+v %v", got, err)
			}

			// Owners: the first principal to record a consumer's progress
			// owns it; another may neither move nor reset it.
			owned := progress.Checkpoint{Table: "a.t", Consumer: "c3", Snapshot: 1, CommitSeq: 1, AckedAt: at,
				Owner: "alice"}
			if err := s.Put(ctx, owned); err != nil {
				t.Fatal(err)
			}
			stolen := owned
			stolen.Owner, stolen.Snapshot = "bob", 2
			if err := s.Put(ctx, stolen); !errors.Is(err, progress.ErrNotOwner) || !strings.Contains(err.Error(), `"alice"`) {
				t.Fatalf("bob's ack of alice's consumer: %v", err)
			}
			if removed, err := s.Delete(ctx, key("a.t", "c3"), "bob"); !errors.Is(err, progress.ErrNotOwner) || removed {
				t.Fatalf("bob's reset of alice's consumer: %v %v", removed, err)
			}
			if got, err := s.Get(ctx, key("a.t", "c3")); err != nil || got != owned {
				t.Fatalf("alice's consumer after bob's attempts: %+v %v", got, err)
			}
			owned.Snapshot = 3
			if err := s.Put(ctx, owned); err != nil {
				t.Fatalf("alice moves her consumer: %v", err)
			}
			if removed, err := s.Delete(ctx, key("a.t", "c3"), "alice"); err != nil || !removed {
				t.Fatalf("alice resets her consumer: %v %v", removed, err)
			}
			// Progress without an owner (recorded before owners were
			// kept) is adopted by the next principal to acknowledge.
			legacy := progress.Checkpoint{Table: "a.t", Consumer: "c4", Snapshot: 1, AckedAt: at}
			if err := s.Put(ctx, legacy); err != nil {
				t.Fatal(err)
			}
			legacy.Owner = "carol"
			if err := s.Put(ctx, legacy); err != nil {
				t.Fatalf("carol adopts an unowned consumer: %v", err)
			}
			legacy.Owner = "dave"
			if err := s.Put(ctx, legacy); !errors.Is(err, progress.ErrNotOwner) {
				t.Fatalf("dave's ack of carol's adopted consumer: %v", err)
			}
			if _, err := s.Delete(ctx, key("a.t", "c4"), "carol"); err != nil {
				t.Fatal(err)
			}

			// Durable: a new store on the same database sees the progress.
			s2, err := progress.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			if got, err := s2.Get(ctx, key("a.t", "c2")); err != nil || got.Snapshot != 12 {
				t.Fatalf("reopened: %+v %v", got, err)
			}
			if _, err := s2.Delete(ctx, key("a.t", "c2"), ""); err != nil {
				t.Fatal(err)
			}
			if _, err := s2.Delete(ctx, key("b.t", "c1"), ""); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	for _, dsn := range []string{"", "mysql://x", "file://host/x.db"} {
		if _, err := progress.Open(ctx, dsn); !errors.Is(err, progress.ErrInvalidDSN) {
			t.Errorf("Open(%q): %v, want ErrInvalidDSN", dsn, err)
		}
	}
	if _, err := progress.Open(ctx, filepath.Join(t.TempDir(), "missing", "dir", "c.db")); !errors.Is(err, progress.ErrUnavailable) {
		t.Errorf("a SQLite file in a missing directory: %v", err)
	}
	if got := progress.Redact("postgres://u:secret@h/db"); got != "postgres://u:xxxxx@h/db" {
		t.Errorf("redact: %s", got)
	}
}

func TestSQLiteForms(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "c.db")
	for _, dsn := range []string{path, "file://" + path, "sqlite:///" + path} {
		s, err := progress.Open(ctx, dsn)
		if err != nil {
			t.Fatalf("Open(%q): %v", dsn, err)
		}
		if err := s.Put(ctx, progress.Checkpoint{Table: "a.t", Consumer: "c", Snapshot: 1}); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

// A store made before owners were kept gains the column, its progress
// unowned.
func TestMigrateAddsOwner(t *testing.T) {
	ctx := context.Background()
	s := openOldStore(t, `CREATE TABLE sluice_consumer_progress (
		table_name TEXT NOT NULL, consumer TEXT NOT NULL, snapshot_id BIGINT NOT NULL, commit_seq BIGINT NOT NULL,
		timestamp_ms BIGINT NOT NULL, acked_at_ms BIGINT NOT NULL, PRIMARY KEY (table_name, consumer))`,
		`INSERT INTO sluice_consumer_progress VALUES ('a.t', 'old', 7, 1, 100, 1800000000000)`)
	got, err := s.Get(ctx, key("a.t", "old"))
	if err != nil || got.Snapshot != 7 || got.Owner != "" {
		t.Fatalf("old progress after the migration: %+v %v", got, err)
	}
	if err := s.Put(ctx, progress.Checkpoint{Table: "a.t", Consumer: "old", Snapshot: 8, Owner: "alice"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, key("a.t", "old")); got.Owner != "alice" {
		t.Fatalf("adopted: %+v", got)
	}
}

// openOldStore writes a SQLite store of an earlier layout with the given
// statements and opens it with this version, which migrates it.
func openOldStore(t *testing.T, statements ...string) *progress.Store {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range statements {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s, err := progress.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// key is the key of a consumer on a table's main branch.
func key(table, consumer string) progress.Key { return progress.Key{Table: table, Consumer: consumer} }
