package progress_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluicefeed/sluice/progress"
)

// TestRefs: progress is keyed by table, ref and consumer: the same id on
// the main branch and on a branch are two consumers, each with its own
// progress and owner, listed together.
func TestRefs(t *testing.T) {
	for name, dsn := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, err := progress.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			const table = "refs.t"
			main := progress.Key{Table: table, Consumer: "c"}
			audit := progress.Key{Table: table, Ref: "audit", Consumer: "c"}
			at := time.UnixMilli(1_800_000_000_000)
			if err := s.Put(ctx, progress.Checkpoint{Table: table, Consumer: "c", Snapshot: 1, AckedAt: at,
				Owner: "alice"}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, audit); !errors.Is(err, progress.ErrNotFound) {
				t.Fatalf("the branch's consumer before its first ack: %v, want ErrNotFound", err)
			}
			// Bob may own the id on the branch although alice owns it on main.
			onAudit := progress.Checkpoint{Table: table, Ref: "audit", Consumer: "c", Snapshot: 2, AckedAt: at,
				Owner: "bob"}
			if err := s.Put(ctx, onAudit); err != nil {
				t.Fatalf("bob acks c on the branch: %v", err)
			}
			if got, err := s.Get(ctx, audit); err != nil || got != onAudit {
				t.Fatalf("the branch's consumer: %+v %v, want %+v", got, err, onAudit)
			}
			if got, err := s.Get(ctx, main); err != nil || got.Snapshot != 1 || got.Ref != "" || got.Owner != "alice" {
				t.Fatalf("main's consumer after the branch's ack: %+v %v", got, err)
			}
			stolen := onAudit
			stolen.Owner = "alice"
			if err := s.Put(ctx, stolen); !errors.Is(err, progress.ErrNotOwner) || !strings.Contains(err.Error(), `ref "audit"`) {
				t.Fatalf("alice acks bob's consumer on the branch: %v", err)
			}
			list, err := s.List(ctx, table)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 2 || list[0].Key() != main || list[1].Key() != audit {
				t.Fatalf("list: %+v, want main's c then audit's", list)
			}
			if removed, err := s.Delete(ctx, audit, "bob"); err != nil || !removed {
				t.Fatalf("reset of the branch's consumer: %v %v", removed, err)
			}
			if got, err := s.Get(ctx, main); err != nil || got.Snapshot != 1 {
				t.Fatalf("main's consumer after the branch's reset: %+v %v", got, err)
			}
			if err := s.Claim(ctx, audit, "carol"); err != nil {
				t.Fatalf("the reset branch consumer is free: %v", err)
			}
			if _, err := s.Delete(ctx, audit, "carol"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Delete(ctx, main, "alice"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestMigrateKeysByRef: a store keyed by (table, consumer), as every
// version before refs made it, is rebuilt keyed by (table, ref,
// consumer): each old record, claims and protection included, is the
// main branch's, and a consumer of the same id on a branch is another.
// Opening it again changes nothing.
func TestMigrateKeysByRef(t *testing.T) {
	for name, dsn := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dsn := oldLayout(t, name, dsn)
			s, err := progress.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got, err := s.Get(ctx, key("a.t", "old"))
			want := progress.Checkpoint{Table: "a.t", Consumer: "old", Snapshot: 7, CommitSeq: 1, TimestampMs: 100,
				AckedAt: time.UnixMilli(1_800_000_000_000), Owner: "alice", Protected: true}
			if err != nil || got != want {
				t.Fatalf("old progress after the migration: %+v %v, want %+v", got, err, want)
			}
			if _, err := s.Get(ctx, key("a.t", "claimed")); !errors.Is(err, progress.ErrNotFound) {
				t.Fatalf("an old claim shows as progress: %v", err)
			}
			if err := s.Claim(ctx, key("a.t", "claimed"), "mallory"); !errors.Is(err, progress.ErrNotOwner) {
				t.Fatalf("an old claim lost its owner: %v", err)
			}
			branch := progress.Checkpoint{Table: "a.t", Ref: "audit", Consumer: "old", Snapshot: 9, Owner: "bob"}
			if err := s.Put(ctx, branch); err != nil {
				t.Fatalf("a consumer of the same id on a branch: %v", err)
			}
			s2, err := progress.Open(ctx, dsn)
			if err != nil {
				t.Fatalf("reopen a migrated store: %v", err)
			}
			defer s2.Close()
			list, err := s2.List(ctx, "a.t")
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 2 || list[0] != want || list[1].Ref != "audit" || list[1].Snapshot != 9 {
				t.Fatalf("list after reopening: %+v", list)
			}
		})
	}
}

// oldLayout writes the progress table as the last version before refs
// made it, with an acknowledged, protected consumer and a claim, and
// returns the DSN to open it with: for PostgreSQL, one whose search_path
// is a schema of its own, so that the other tests' table is not touched.
func oldLayout(t *testing.T, dialect, dsn string) string {
	t.Helper()
	ctx := context.Background()
	driver := "sqlite"
	if dialect == progress.DialectPostgres {
		driver = "pgx"
		db, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		schema := fmt.Sprintf("old_layout_%d", time.Now().UnixNano())
		if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
			t.Fatal(err)
		}
		db.Close()
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		dsn = u.String()
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE TABLE sluice_consumer_progress (table_name TEXT NOT NULL, consumer TEXT NOT NULL,
			snapshot_id BIGINT NOT NULL, commit_seq BIGINT NOT NULL, timestamp_ms BIGINT NOT NULL,
			acked_at_ms BIGINT NOT NULL, owner TEXT NOT NULL DEFAULT '', acked INTEGER NOT NULL DEFAULT 1,
			protected INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (table_name, consumer))`,
		`INSERT INTO sluice_consumer_progress VALUES ('a.t', 'old', 7, 1, 100, 1800000000000, 'alice', 1, 1)`,
		`INSERT INTO sluice_consumer_progress VALUES ('a.t', 'claimed', 0, 0, 0, 1800000000000, 'carol', 0, 0)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return dsn
}
