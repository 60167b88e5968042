package progress_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/sluicefeed/sluice/progress"
)

// TestClaims: a consumer's owner is fixed by its first claim (a stream
// that names it) or its first acknowledgement, atomically; the
// configuration may assign it to another; a reset frees it.
func TestClaims(t *testing.T) {
	for name, dsn := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, err := progress.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			const table = "claims.t"
			// A claim is an owner without progress: Get and List do not show it.
			if err := s.Claim(ctx, key(table, "svc"), "alice"); err != nil {
				t.Fatal(err)
			}
			if err := s.Claim(ctx, key(table, "svc"), "alice"); err != nil {
				t.Fatalf("alice claims her consumer again: %v", err)
			}
			if _, err := s.Get(ctx, key(table, "svc")); !errors.Is(err, progress.ErrNotFound) {
				t.Fatalf("get of a claimed consumer without progress: %v, want ErrNotFound", err)
			}
			if list, err := s.List(ctx, table); err != nil || len(list) != 0 {
				t.Fatalf("list with a claim only: %v %v", list, err)
			}
			// Another principal may neither claim it nor record progress.
			if err := s.Claim(ctx, key(table, "svc"), "mallory"); !errors.Is(err, progress.ErrNotOwner) {
				t.Fatalf("mallory claims alice's consumer: %v", err)
			}
			err = s.Put(ctx, progress.Checkpoint{Table: table, Consumer: "svc", Snapshot: 5, Owner: "mallory"})
			if !errors.Is(err, progress.ErrNotOwner) {
				t.Fatalf("mallory acks alice's claimed consumer: %v", err)
			}
			if removed, err := s.Delete(ctx, key(table, "svc"), "mallory"); !errors.Is(err, progress.ErrNotOwner) || removed {
				t.Fatalf("mallory resets alice's claimed consumer: %v %v", removed, err)
			}
			if err := s.Put(ctx, progress.Checkpoint{Table: table, Consumer: "svc", Snapshot: 7, Owner: "alice"}); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Get(ctx, key(table, "svc")); err != nil || got.Snapshot != 7 || got.Owner != "alice" {
				t.Fatalf("alice's progress: %+v %v", got, err)
			}
			// The configuration's owner takes it over, without the progress
			// another principal recorded; its own it keeps.
			if err := s.Assign(ctx, key(table, "svc"), "ingest"); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Get(ctx, key(table, "svc")); !errors.Is(err, progress.ErrNotFound) {
				t.Fatalf("assigned: %+v %v, want alice's progress dropped", got, err)
			}
			if err := s.Put(ctx, progress.Checkpoint{Table: table, Consumer: "svc", Snapshot: 8, Owner: "ingest"}); err != nil {
				t.Fatal(err)
			}
			if err := s.Assign(ctx, key(table, "svc"), "ingest"); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Get(ctx, key(table, "svc")); err != nil || got.Snapshot != 8 || got.Owner != "ingest" {
				t.Fatalf("assigned again: %+v %v, want the owner's progress kept", got, err)
			}
			if err := s.Claim(ctx, key(table, "svc"), "alice"); !errors.Is(err, progress.ErrNotOwner) {
				t.Fatalf("alice claims the assigned consumer: %v", err)
			}
			// A reset of a claim removes no progress, and frees the id.
			if err := s.Claim(ctx, key(table, "fresh"), "bob"); err != nil {
				t.Fatal(err)
			}
			if removed, err := s.Delete(ctx, key(table, "fresh"), "bob"); err != nil || removed {
				t.Fatalf("reset of a claim: %v %v, want no progress removed", removed, err)
			}
			if err := s.Claim(ctx, key(table, "fresh"), "carol"); err != nil {
				t.Fatalf("carol claims the freed id: %v", err)
			}
			// Progress without an owner is adopted by a claim.
			if err := s.Put(ctx, progress.Checkpoint{Table: table, Consumer: "legacy", Snapshot: 1}); err != nil {
				t.Fatal(err)
			}
			if err := s.Claim(ctx, key(table, "legacy"), "dave"); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Get(ctx, key(table, "legacy")); err != nil || got.Owner != "dave" || got.Snapshot != 1 {
				t.Fatalf("adopted by a claim: %+v %v", got, err)
			}
			// Claims race: one principal wins.
			var wg sync.WaitGroup
			errs := make([]error, 8)
			for i := range errs {
				wg.Go(func() { errs[i] = s.Claim(ctx, key(table, "raced"), fmt.Sprintf("p%d", i)) })
			}
			wg.Wait()
			won := 0
			for _, err := range errs {
				switch {
				case err == nil:
					won++
				case !errors.Is(err, progress.ErrNotOwner):
					t.Fatalf("a claim that lost the race: %v", err)
				}
			}
			if won != 1 {
				t.Fatalf("%d principals won the claim of one consumer", won)
			}
			for _, c := range []string{"svc", "fresh", "legacy", "raced"} {
				if _, err := s.Delete(ctx, key(table, c), "ingest"); err != nil && !errors.Is(err, progress.ErrNotOwner) {
					t.Fatal(err)
				}
			}
		})
	}
}

// A store made before claims were kept gains the acked column, its
// progress acknowledged.
func TestMigrateAddsAcked(t *testing.T) {
	ctx := context.Background()
	s := openOldStore(t, `CREATE TABLE sluice_consumer_progress (
		table_name TEXT NOT NULL, consumer TEXT NOT NULL, snapshot_id BIGINT NOT NULL, commit_seq BIGINT NOT NULL,
		timestamp_ms BIGINT NOT NULL, acked_at_ms BIGINT NOT NULL, owner TEXT NOT NULL DEFAULT '',
		PRIMARY KEY (table_name, consumer))`,
		`INSERT INTO sluice_consumer_progress VALUES ('a.t', 'c', 7, 1, 100, 1800000000000, 'alice')`)
	if got, err := s.Get(ctx, key("a.t", "c")); err != nil || got.Snapshot != 7 || got.Owner != "alice" {
		t.Fatalf("progress after the migration: %+v %v", got, err)
	}
}
