package e2e

// The Delta fixtures (testdata/delta: tables delta-rs and delta-kernel-rs
// test against, with the change feeds those projects state in
// EXPECTED.json) read through a real flightd with the Go client. The
// mapping of the peers' queries onto Sluice windows, and the differences
// stated there, are those of feed/delta_fixtures_test.go, whose small
// helpers are copied here (a _test file cannot be imported): Delta's
// inclusive start_version v is from_snapshot v-1, its inclusive
// start_timestamp T is from_timestamp_ms T-1, its end bounds are Sluice's;
// the changes are flattened into Delta CDF rows and compared as multisets
// over the query's columns.

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/testkit/deltafx"
)

// deltaFixtureDir holds the Delta fixtures, relative to e2e/.
const deltaFixtureDir = "../testdata/delta"

// copyDeltaFixtures copies every table of testdata/delta (each folder
// holding a _delta_log; not the written/ and gen/ folders) into a new
// folder, keeping the files' modification times (a commit without a
// commitInfo timestamp is dated by its file's), and returns it: the tests
// serve and change the copy, never the committed tree.
func copyDeltaFixtures(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	entries, err := os.ReadDir(deltaFixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		src := filepath.Join(deltaFixtureDir, e.Name())
		if st, err := os.Stat(filepath.Join(src, "_delta_log")); err != nil || !st.IsDir() {
			continue
		}
		copyTree(t, src, filepath.Join(root, e.Name()))
		n++
	}
	if n == 0 {
		t.Fatalf("no Delta tables under %s", deltaFixtureDir)
	}
	return root
}

// copyTree copies the folder src to dst, keeping modification times.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.Chtimes(to, info.ModTime(), info.ModTime())
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}

// serveDeltaFixtures starts flightd on a copy of the Delta fixtures (and an
// empty Iceberg warehouse) and returns it with the copy's folder.
func serveDeltaFixtures(t *testing.T, args ...string) (*flightd, string) {
	t.Helper()
	root := copyDeltaFixtures(t)
	args = append([]string{"--warehouse", t.TempDir(), "--delta-root", root}, args...)
	return startFlightd(t, args...), root
}

// deltaCodes are the codes of Sluice's refusals of the peers' refused
// queries (deltafx.Refusals says which and why).
var deltaCodes = map[string]codes.Code{
	"delta-rs:test_load_bad_version_range":                            codes.InvalidArgument,
	"delta-kernel-rs:invalid_range_start_after_last_version_of_table": codes.NotFound,
}

// TestDeltaFixtures reads every query of every testdata/delta/*/EXPECTED.json
// through flightd with the Go client and compares the rows with the peers'
// (with the differences feed/delta_fixtures_test.go states).
func TestDeltaFixtures(t *testing.T) {
	srv, root := serveDeltaFixtures(t, "--max-batch-rows", "5")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	client, err := sluice.Dial(ctx, srv.URI(), sluice.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		client.Close()
		mem.AssertSize(t, 0)
	}()
	checkDeltaFixtureQueries(t, ctx, client, root)
}

// checkDeltaFixtureQueries runs every query of the EXPECTED.json files of
// the Delta fixtures copied under root on flightd, each table served as
// delta.<folder>, and compares the answers with the peers'.
func checkDeltaFixtureQueries(t *testing.T, ctx context.Context, client *sluice.Client, root string) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(root, "*", "EXPECTED.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no EXPECTED.json under %s: %v", root, err)
	}
	queries := 0
	for _, path := range paths {
		exp, err := deltafx.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		name := "delta." + filepath.Base(filepath.Dir(path))
		t.Run(filepath.Base(filepath.Dir(path)), func(t *testing.T) {
			for _, q := range exp.Queries {
				queries++
				t.Run(q.ID, func(t *testing.T) {
					w, err := q.Window()
					if err != nil {
						t.Fatal(err)
					}
					req := sluice.ChangeRequest{Table: name, FromSnapshot: w.FromSnapshot, ToSnapshot: w.ToSnapshot,
						FromTimestampMs: w.FromTimestampMs, ToTimestampMs: w.ToTimestampMs, Filter: w.Filter}
					got, err := deltaRowsGo(ctx, client, req)
					if q.ExpectError != nil {
						want, ok := deltafx.Refusals[q.ID]
						switch {
						case !ok:
							t.Fatalf("no Sluice answer recorded for the peer's error %v", q.ExpectError)
						case want.Empty:
							if err != nil || len(got) != 0 {
								t.Fatalf("got %d rows, err %v; want an empty window", len(got), err)
							}
						case err == nil || !strings.Contains(err.Error(), want.Says) || sluice.Code(err) != deltaCodes[q.ID]:
							t.Fatalf("got err %v, want %s saying %q", err, deltaCodes[q.ID], want.Says)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					if d := deltafx.Compare(q, got); d != "" {
						t.Error(d)
					}
				})
			}
		})
	}
	if queries < 28 {
		t.Fatalf("%d queries in the fixtures, want the 28 testdata/delta/README.md counts", queries)
	}
}

// deltaRowsGo reads a window with the Go client and flattens it into Delta
// CDF rows. Every batch must carry its own version as snapshot and
// commit_seq.
func deltaRowsGo(ctx context.Context, c *sluice.Client, req sluice.ChangeRequest) ([]map[string]string, error) {
	rdr, err := c.Changes(ctx, req)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var out []map[string]string
	for b, err := range rdr.All() {
		if err != nil {
			return nil, err
		}
		if b.Meta.CommitSeq != b.Meta.Snapshot {
			return nil, fmt.Errorf("a batch of version %d says commit_seq %d", b.Meta.Snapshot, b.Meta.CommitSeq)
		}
		rows, err := deltafx.Flatten(b.Record)
		if err != nil {
			return nil, err
		}
		for _, row := range rows {
			if row["_commit_version"] != strconv.FormatInt(b.Meta.Snapshot, 10) {
				return nil, fmt.Errorf("a row of version %s in a batch of %d", row["_commit_version"], b.Meta.Snapshot)
			}
		}
		out = append(out, rows...)
	}
	return out, nil
}
