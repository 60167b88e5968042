package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/testkit/deltafx"
)

// The tests of this file serve a copy of the Delta fixtures
// (testdata/delta) with a real flightd --delta-root and check what the
// control calls, GetSchema, explain, the state start modes and the errors
// say about them through the Go client and arrow-go's Flight client.

// deltaStrategies is how each version of each fixture is read, as explain
// names it: cdc files when the commit wrote them, else the adds alone, the
// deletion vectors' difference, the adds and removes, or nothing when no
// action changed data.
var deltaStrategies = map[string][]string{
	"cdc_ict_table":                               {"no-data-change", "delta-add", "delta-cdc-files", "delta-cdc-files"},
	"cdf-table":                                   {"delta-add", "delta-cdc-files", "delta-cdc-files", "delta-cdc-files"},
	"cdf-table-data-change":                       {"delta-add", "no-data-change"},
	"cdf-table-non-partitioned":                   {"delta-add", "delta-cdc-files", "delta-cdc-files", "delta-cdc-files", "delta-add"},
	"cdf-table-partitioned":                       {"delta-add", "delta-cdc-files", "delta-add-remove"},
	"cdf-table-simple":                            {"delta-add", "delta-add-remove", "delta-cdc-files"},
	"cdf-table-update-ops":                        {"delta-add", "delta-cdc-files", "delta-cdc-files"},
	"cdf-table-with-dv":                           {"delta-add", "delta-dv-diff", "delta-dv-diff", "delta-dv-diff", "delta-dv-diff", "delta-dv-diff", "delta-dv-diff"},
	"checkpoint-v2-table":                         {"no-data-change", "delta-add", "delta-add", "delta-add", "delta-add", "no-data-change", "delta-add", "delta-add", "delta-add", "delta-add"},
	"simple_table_with_cdc":                       {"no-data-change", "delta-add", "delta-cdc-files"},
	"table-with-dv-small":                         {"delta-add", "delta-dv-diff"},
	"table_with_column_mapping":                   {"delta-add"},
	"v2-classic-checkpoint-parquet":               {"delta-add", "delta-add"},
	"v1-multi-part-partitioned-struct-stats-only": {"no-data-change", "delta-add", "delta-add", "delta-add", "delta-add", "delta-add"},
	"v2-checkpoints-json-with-sidecars":           {"delta-add", "delta-add", "delta-add", "delta-add", "delta-add", "delta-add", "delta-add"},
	// Commits 0-2 were cleaned up: windows start at 2 at the earliest.
	"checkpoint-cdf-table": {3: "delta-cdc-files", 4: "delta-add", 5: "delta-cdc-files"},
}

// deltaReasonWords is a phrase each strategy's reason holds.
var deltaReasonWords = map[string]string{
	"delta-cdc-files":  "change data files",
	"delta-add":        "only added",
	"delta-dv-diff":    "deletion vectors",
	"delta-add-remove": "removed",
	"no-data-change":   "dataChange",
}

// deltaLatest returns the newest version in the _delta_log of dir and the
// oldest one that has a commit file, from the file names.
func deltaLatest(t *testing.T, dir string) (oldest, latest int64) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "_delta_log"))
	if err != nil {
		t.Fatal(err)
	}
	oldest, latest = -1, -1
	for _, e := range entries {
		num, rest, ok := strings.Cut(e.Name(), ".")
		if !ok || len(num) != 20 {
			continue
		}
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			continue
		}
		if rest == "json" && (oldest < 0 || v < oldest) {
			oldest = v
		}
		if rest == "json" || strings.HasPrefix(rest, "checkpoint") {
			latest = max(latest, v)
		}
	}
	if latest < 0 {
		t.Fatalf("no commit in %s", dir)
	}
	return oldest, latest
}

// deltaCommitTime returns the commit time of version v of the table in dir
// as the Delta protocol orders it: the commitInfo's inCommitTimestamp, else
// its timestamp, else the commit file's modification time.
func deltaCommitTime(t *testing.T, dir string, v int64) int64 {
	t.Helper()
	path := filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", v))
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var action struct {
			CommitInfo *struct {
				Timestamp         *int64 `json:"timestamp"`
				InCommitTimestamp *int64 `json:"inCommitTimestamp"`
			} `json:"commitInfo"`
		}
		if err := json.Unmarshal(sc.Bytes(), &action); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if ci := action.CommitInfo; ci != nil {
			switch {
			case ci.InCommitTimestamp != nil:
				return *ci.InCommitTimestamp
			case ci.Timestamp != nil:
				return *ci.Timestamp
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return st.ModTime().UnixMilli()
}

// deltaTableDirs returns the Delta tables under root by folder name.
func deltaTableDirs(t *testing.T, root string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if st, err := os.Stat(filepath.Join(root, e.Name(), "_delta_log")); err == nil && st.IsDir() {
			out[e.Name()] = filepath.Join(root, e.Name())
		}
	}
	return out
}

// explainJSON runs the explain action and decodes its JSON result.
func explainJSON(t *testing.T, ctx context.Context, addr string, req map[string]any) (map[string]any, error) {
	t.Helper()
	fc, err := flight.NewClientWithMiddlewareCtx(ctx, addr, nil, nil,
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := fc.DoAction(ctx, &flight.Action{Type: "explain", Body: body})
	if err != nil {
		return nil, err
	}
	res, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(res.GetBody(), &out); err != nil {
		t.Fatalf("explain result %s: %v", res.GetBody(), err)
	}
	return out, nil
}

// TestDelta serves the Delta fixtures and checks the control calls,
// GetSchema, explain, the state start modes and the errors.
func TestDelta(t *testing.T) {
	root := copyDeltaFixtures(t)
	// A commit without commitInfo is dated by its file: give one a time
	// of its own, to tell it from the others.
	mtime := time.Date(2021, 3, 4, 5, 6, 7, 891e6, time.UTC)
	if err := os.Chtimes(filepath.Join(root, "cdf-table-with-dv", "_delta_log", fmt.Sprintf("%020d.json", 3)),
		mtime, mtime); err != nil {
		t.Fatal(err)
	}
	srv := startFlightd(t, "--warehouse", t.TempDir(), "--delta-root", root, "--poll-interval", "50ms",
		"--heartbeat-interval", "200ms")
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
	dirs := deltaTableDirs(t, root)
	if len(dirs) != len(deltaStrategies) {
		t.Fatalf("%d Delta tables in the fixtures, %d in deltaStrategies: update it", len(dirs), len(deltaStrategies))
	}

	t.Run("list_tables", func(t *testing.T) {
		tables, err := client.ListTables(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tbl := range tables {
			names = append(names, tbl.Name)
			folder := strings.TrimPrefix(tbl.Name, "delta.")
			dir, ok := dirs[folder]
			if !ok {
				t.Errorf("listed %s, which is no Delta table of the root", tbl.Name)
				continue
			}
			_, latest := deltaLatest(t, dir)
			if tbl.Format != "delta" || tbl.CurrentSnapshot == nil || *tbl.CurrentSnapshot != latest ||
				tbl.CommitSeq != latest {
				t.Errorf("%v, want format delta at version %d", tbl, latest)
			}
		}
		if len(names) != len(dirs) {
			t.Errorf("listed %v, want the %d Delta tables", names, len(dirs))
		}
	})

	t.Run("list_snapshots", func(t *testing.T) {
		for folder, dir := range dirs {
			name := "delta." + folder
			oldest, latest := deltaLatest(t, dir)
			snaps, err := client.Snapshots(ctx, name)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if int64(len(snaps)) != latest-oldest+1 {
				t.Errorf("%s: %d snapshots, want versions %d..%d", name, len(snaps), oldest, latest)
				continue
			}
			for i, s := range snaps {
				v := oldest + int64(i)
				wantParent := v - 1
				if s.ID != v || s.CommitSeq != v || s.SequenceNumber != v ||
					(v == 0) != (s.Parent == nil) || (s.Parent != nil && *s.Parent != wantParent) {
					t.Errorf("%s: snapshot %d is %v, want version %d with commit_seq %d after %d", name, i, s, v, v,
						wantParent)
				}
				if want := deltaCommitTime(t, dir, v); s.TimestampMs != want {
					t.Errorf("%s version %d: timestamp_ms %d, want %d (in-commit timestamp, commitInfo.timestamp "+
						"or the commit file's time)", name, v, s.TimestampMs, want)
				}
			}
			seq, err := client.CommitSeq(ctx, name)
			if err != nil || seq.CommitSeq != latest || seq.Snapshot == nil || *seq.Snapshot != latest ||
				seq.TimestampMs != snaps[len(snaps)-1].TimestampMs {
				t.Errorf("%s: commit_seq %v, %v; want version %d", name, seq, err, latest)
			}
		}
		snaps, err := client.Snapshots(ctx, "delta.cdf-table-with-dv")
		if err != nil || len(snaps) != 7 || snaps[3].TimestampMs != mtime.UnixMilli() {
			t.Errorf("a commit without commitInfo: %v, %v; want version 3 dated by its file, %d", snaps, err,
				mtime.UnixMilli())
		}
	})

	t.Run("expired history", func(t *testing.T) {
		// checkpoint-cdf-table's commits 0-2 were cleaned up: its lineage
		// starts at 3, and a window from before must say resync.
		const name = "delta.checkpoint-cdf-table"
		snaps, err := client.Snapshots(ctx, name)
		if err != nil || len(snaps) != 3 || snaps[0].ID != 3 {
			t.Fatalf("snapshots %v, %v; want 3, 4, 5", snaps, err)
		}
		for _, from := range []*int64{nil, ptr(0), ptr(1)} {
			n, err := countChanges(ctx, client, sluice.ChangeRequest{Table: name, FromSnapshot: from})
			if sluice.Code(err) != codes.FailedPrecondition || !strings.Contains(errString(err), "resync required") ||
				n != 0 {
				t.Errorf("from %s: %d rows, %v; want FailedPrecondition saying resync required", fmtPtr(from), n, err)
			}
			_, err = client.Explain(ctx, sluice.ChangeRequest{Table: name, FromSnapshot: from})
			if sluice.Code(err) != codes.FailedPrecondition {
				t.Errorf("explain from %s: %v, want FailedPrecondition", fmtPtr(from), err)
			}
		}
		n, err := countChanges(ctx, client, sluice.ChangeRequest{Table: name, FromSnapshot: ptr(2)})
		if err != nil || n == 0 {
			t.Errorf("the window (2, 5]: %d rows, %v", n, err)
		}
	})

	t.Run("GetSchema", func(t *testing.T) {
		for _, c := range []struct {
			table   string
			columns []string
			image   string
		}{
			{"delta.cdf-table", nil, "struct<id: int32 nullable, name: utf8 nullable, birthday: date32 nullable>"},
			{"delta.cdf-table", []string{"birthday", "id"}, "struct<birthday: date32 nullable, id: int32 nullable>"},
			// Delta's short (like byte) is served as int32, as its Iceberg
			// form has it.
			{"delta.cdf-table-non-partitioned", nil, "struct<id: int32 nullable, name: utf8 nullable, " +
				"birthday: date32 nullable, long_field: int64 nullable, boolean_field: bool nullable, " +
				"double_field: float64 nullable, smallint_field: int32 nullable>"},
		} {
			req := sluice.ChangeRequest{Table: c.table, Columns: c.columns}
			sc, err := client.Schema(ctx, req)
			if err != nil {
				t.Fatalf("%s %v: %v", c.table, c.columns, err)
			}
			var names []string
			for _, f := range sc.Fields() {
				names = append(names, f.Name)
			}
			if !slices.Equal(names, []string{"op", "before", "after", "snapshot", "ts"}) {
				t.Errorf("%s: columns %v", c.table, names)
			}
			for _, i := range []int{1, 2} {
				if got := sc.Field(i).Type.String(); got != c.image {
					t.Errorf("%s %v: %s is %s, want %s", c.table, c.columns, sc.Field(i).Name, got, c.image)
				}
			}
			rdr, err := client.Changes(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if !rdr.Schema().Equal(sc) {
				t.Errorf("%s: GetSchema says %s, the stream %s", c.table, sc, rdr.Schema())
			}
			rdr.Release()
		}
	})

	t.Run("explain", func(t *testing.T) {
		for folder, want := range deltaStrategies {
			name := "delta." + folder
			req := sluice.ChangeRequest{Table: name}
			body := map[string]any{"table": name}
			if folder == "checkpoint-cdf-table" {
				req.FromSnapshot = ptr(2)
				body["from_snapshot"] = 2
			}
			plan, err := client.Explain(ctx, req)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			js, err := explainJSON(t, ctx, srv.Addr, body)
			if err != nil {
				t.Errorf("%s: the explain action: %v", name, err)
				continue
			}
			jsSnaps, _ := js["snapshots"].([]any)
			if js["format"] != "delta" || len(jsSnaps) != len(plan.Snapshots) {
				t.Errorf("%s: the explain action says format %v and %d snapshots, Explain %d", name, js["format"],
					len(jsSnaps), len(plan.Snapshots))
				continue
			}
			var got []string
			first := int(plan.Snapshots[0].Snapshot)
			for i, sp := range plan.Snapshots {
				if sp.Snapshot != int64(first+i) || sp.CommitSeq != sp.Snapshot {
					t.Errorf("%s: snapshot %d of the plan is version %d (commit_seq %d)", name, i, sp.Snapshot,
						sp.CommitSeq)
				}
				got = append(got, sp.Strategy)
				js := jsSnaps[i].(map[string]any)
				reason, _ := js["reason"].(string)
				if js["strategy"] != sp.Strategy || !strings.Contains(reason, deltaReasonWords[sp.Strategy]) {
					t.Errorf("%s version %d: the explain action says %v because %q; want %s because of %q", name,
						sp.Snapshot, js["strategy"], reason, sp.Strategy, deltaReasonWords[sp.Strategy])
				}
			}
			if !slices.Equal(got, want[first:]) {
				t.Errorf("%s: strategies of versions %d.. are %v, want %v", name, first, got, want[first:])
			}
		}
	})

	t.Run("full state", func(t *testing.T) {
		// table-with-dv-small: 10 rows written, 2 deleted by a deletion
		// vector: the state is 8 rows, the feed's inserts less its
		// deletes.
		const name = "delta.table-with-dv-small"
		feed, err := deltaRowsGo(ctx, client, sluice.ChangeRequest{Table: name})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{}
		for _, row := range feed {
			k := deltafx.Key(row, []string{"value"})
			switch row["_change_type"] {
			case "insert":
				want[k]++
			case "delete":
				want[k]--
			default:
				t.Fatalf("a %s in the feed of a table with no updates", row["_change_type"])
			}
		}
		for _, start := range []string{sluice.StartLatestFull, sluice.StartFromSnapshotFull} {
			req := sluice.SubscribeRequest{Table: name, Start: start, NoFollow: true}
			if start == sluice.StartFromSnapshotFull {
				req.FromSnapshot = ptr(1)
			}
			sub, err := client.Subscribe(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			n := 0
			for b, err := range sub.All() {
				if err != nil {
					t.Fatal(err)
				}
				if !b.Meta.FullState || b.Meta.Snapshot != 1 || b.Meta.CommitSeq != 1 {
					t.Errorf("%s: a batch %+v, want the full state at version 1", start, b.Meta)
				}
				rows, err := deltafx.Flatten(b.Record)
				if err != nil {
					t.Fatal(err)
				}
				for _, row := range rows {
					if row["_change_type"] != "insert" {
						t.Errorf("%s: a %s in the full state", start, row["_change_type"])
					}
					got[deltafx.Key(row, []string{"value"})]++
					n++
				}
			}
			sub.Release()
			for k, c := range want {
				if c == 0 {
					delete(want, k)
				}
			}
			if n != 8 || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: %d rows %v, want the 8 rows %v", start, n, got, want)
			}
		}
	})

	t.Run("errors", func(t *testing.T) {
		const name = "delta.cdf-table"
		for _, c := range []struct {
			what string
			req  sluice.ChangeRequest
			code codes.Code
			msg  string
		}{
			{"unknown table", sluice.ChangeRequest{Table: "delta.nope"}, codes.NotFound, "delta.nope"},
			{"unknown folder", sluice.ChangeRequest{Table: "delta.gen"}, codes.NotFound, "delta.gen"},
			{"unknown start version", sluice.ChangeRequest{Table: name, FromSnapshot: ptr(99)}, codes.NotFound, "99"},
			{"unknown end version", sluice.ChangeRequest{Table: name, ToSnapshot: ptr(99)}, codes.NotFound, "99"},
			{"from > to", sluice.ChangeRequest{Table: name, FromSnapshot: ptr(3), ToSnapshot: ptr(1)},
				codes.InvalidArgument, "swap them"},
			{"unknown column", sluice.ChangeRequest{Table: name, Columns: []string{"nope"}}, codes.InvalidArgument,
				"nope"},
		} {
			n, err := countChanges(ctx, client, c.req)
			if sluice.Code(err) != c.code || !strings.Contains(errString(err), c.msg) || n != 0 {
				t.Errorf("%s: %d rows, %v; want %s saying %q", c.what, n, err, c.code, c.msg)
			}
			if _, err := client.Explain(ctx, c.req); sluice.Code(err) != c.code {
				t.Errorf("%s: explain %v, want %s", c.what, err, c.code)
			}
		}
		for _, call := range []func() error{
			func() error { _, err := client.Snapshots(ctx, "delta.nope"); return err },
			func() error { _, err := client.CommitSeq(ctx, "delta.nope"); return err },
			func() error { _, err := client.Schema(ctx, sluice.ChangeRequest{Table: "delta.nope"}); return err },
		} {
			if err := call(); sluice.Code(err) != codes.NotFound {
				t.Errorf("%v, want NotFound", err)
			}
		}
	})

	t.Run("unsupported reader feature", func(t *testing.T) {
		// A copy of cdf-table-simple (versions 0-2), followed from its
		// latest version; then a commit makes it a catalog-managed table,
		// a reader feature Sluice does not support: the stream ends with
		// FailedPrecondition naming it, and every read after says so too,
		// without a row.
		const name = "delta.catalog_managed"
		dir := filepath.Join(root, "catalog_managed")
		copyTree(t, filepath.Join(root, "cdf-table-simple"), dir)
		sub, err := client.Subscribe(ctx, sluice.SubscribeRequest{Table: name, Start: sluice.StartLatest,
			Heartbeats: true})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Release()
		if !sub.Next() || !sub.Batch().Meta.Heartbeat || sub.Batch().Meta.Snapshot != 2 {
			t.Fatalf("the follow stream's first message: %+v, %v; want a heartbeat at version 2",
				sub.Batch().Meta, sub.Err())
		}
		protocol := `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["catalogManaged"],` +
			`"writerFeatures":["catalogManaged"]}}` + "\n"
		writeFile(t, filepath.Join(dir, "_delta_log"), fmt.Sprintf("%020d.json", 3), protocol)
		rows, heartbeats := 0, 0
		for sub.Next() {
			b := sub.Batch()
			if !b.Meta.Heartbeat {
				rows += int(b.Record.NumRows())
				t.Errorf("the follow stream sent %+v after the protocol change", b.Meta)
			}
			if heartbeats++; heartbeats > 50 {
				t.Fatalf("the follow stream goes on after the protocol change (at version %d)", b.Meta.Snapshot)
			}
		}
		wantUnsupported(t, "the follow stream", rows, sub.Err())

		for _, req := range []sluice.ChangeRequest{{Table: name}, {Table: name, FromSnapshot: ptr(2)}} {
			n, err := countChanges(ctx, client, req)
			wantUnsupported(t, "changes from "+fmtPtr(req.FromSnapshot), n, err)
			_, err = client.Explain(ctx, req)
			wantUnsupported(t, "explain", 0, err)
		}
		for _, start := range []string{sluice.StartLatestFull, sluice.StartLatest} {
			sub, err := client.Subscribe(ctx, sluice.SubscribeRequest{Table: name, Start: start, NoFollow: true})
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
			wantUnsupported(t, "subscribe "+start, n, err)
		}
	})
}

// wantUnsupported checks that a read of a table with the reader feature
// catalogManaged returned no row and FailedPrecondition naming it.
func wantUnsupported(t *testing.T, what string, rows int, err error) {
	t.Helper()
	if rows != 0 || sluice.Code(err) != codes.FailedPrecondition || !strings.Contains(errString(err), "catalogManaged") {
		t.Errorf("%s: %d rows, %v; want FailedPrecondition naming catalogManaged", what, rows, err)
	}
}

// countChanges reads a window and returns its number of rows, and the
// error that ended it.
func countChanges(ctx context.Context, c *sluice.Client, req sluice.ChangeRequest) (int, error) {
	rdr, err := c.Changes(ctx, req)
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	n := 0
	for b, err := range rdr.All() {
		if err != nil {
			return n, err
		}
		n += int(b.Record.NumRows())
	}
	return n, nil
}

func ptr(v int64) *int64 { return &v }

func fmtPtr(p *int64) string {
	if p == nil {
		return "the start"
	}
	return strconv.FormatInt(*p, 10)
}
