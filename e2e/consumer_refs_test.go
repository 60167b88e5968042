package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflightsql "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"google.golang.org/grpc/codes"

	"github.com/sluicefeed/sluice/catalog"
	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// consumerRefsTable is the table of TestDurableConsumerOnBranch.
const consumerRefsTable = "wap.payments"

// branchWriter commits to a branch of a table through the catalog.
type branchWriter struct {
	t   *testing.T
	ctx context.Context
	tbl *table.Table
}

// commit runs one transaction on the branch and returns the branch's new
// head.
func (w *branchWriter) commit(branch string, do func(txn *table.Transaction) error) int64 {
	w.t.Helper()
	txn := w.tbl.NewTransactionOnBranch(branch)
	if err := do(txn); err != nil {
		w.t.Fatal(err)
	}
	tbl, err := txn.Commit(w.ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	w.tbl = tbl
	return tbl.Metadata().SnapshotByName(branch).SnapshotID
}

// appendRows appends rows (id, id*10) to the branch.
func (w *branchWriter) appendRows(branch string, ids ...int64) int64 {
	w.t.Helper()
	var rows []tablewrite.Row
	for _, id := range ids {
		rows = append(rows, tablewrite.Row{"id": id, "val": id * 10})
	}
	rec, err := tablewrite.Record(w.tbl, rows)
	if err != nil {
		w.t.Fatal(err)
	}
	arrTbl := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
	rec.Release()
	defer arrTbl.Release()
	return w.commit(branch, func(txn *table.Transaction) error { return txn.AppendTable(w.ctx, arrTbl, 10, nil) })
}

// deleteRow deletes the row of id on the branch.
func (w *branchWriter) deleteRow(branch string, id int64) int64 {
	w.t.Helper()
	return w.commit(branch, func(txn *table.Transaction) error {
		return txn.Delete(w.ctx, iceberg.EqualTo(iceberg.Reference("id"), id), nil)
	})
}

// TestDurableConsumerOnBranch runs write-audit-publish with durable
// consumers through flightd: a consumer of branch audit acks, flightd
// restarts, and the consumer resumes on the branch; a consumer of the same
// id on main has its own progress; WatchCommitsOn follows the branch's
// head; Flight SQL's table_changes reads the branch (ADBC); the CLI lists
// both consumers with their refs; main is fast-forwarded onto the branch,
// and main's consumer then reads the branch's commits as main's, once.
func TestDurableConsumerOnBranch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cat, tbl := idValTable(t, ctx, dir, consumerRefsTable)
	var err error
	if tbl, err = tablewrite.Append(ctx, tbl, []tablewrite.Row{{"id": 1, "val": 10}, {"id": 2, "val": 20}}); err != nil {
		t.Fatal(err)
	}
	base := tbl.CurrentSnapshot().SnapshotID
	tbl = setRef(t, ctx, cat, tbl, "audit", base, table.BranchRef)
	w := &branchWriter{t: t, ctx: ctx, tbl: tbl}
	flags := []string{"--warehouse", dir, "--poll-interval", "50ms", "--heartbeat-interval", "300ms",
		"--protect-consumers"}

	srv := launchFlightd(t, flags...)
	c, err := sluice.Dial(ctx, srv.URI())
	if err != nil {
		t.Fatal(err)
	}
	audit := sluice.OnRef("audit")
	sub, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: consumerRefsTable, Ref: "audit", Consumer: "mirror",
		Start: sluice.StartLatest})
	if err != nil {
		t.Fatal(err)
	}
	s1 := w.appendRows("audit", 3, 4)
	if got, want := nextChanges(t, sub, s1), []string{fmt.Sprintf("insert 3@%d", s1),
		fmt.Sprintf("insert 4@%d", s1)}; !slices.Equal(got, want) {
		t.Fatalf("the branch consumer's first changes: %v, want %v", got, want)
	}
	p, err := sub.Ack(ctx)
	if err != nil || p.Ref != "audit" || p.Snapshot != s1 || p.LagCommits != 0 {
		t.Fatalf("the branch consumer's ack: %+v %v", p, err)
	}
	sub.Release()
	if _, err := c.ConsumerProgress(ctx, "mirror", consumerRefsTable); sluice.Code(err) != codes.NotFound {
		t.Fatalf("the main consumer of the same id before its first ack: %v, want NotFound", err)
	}
	if p, err := c.Ack(ctx, "mirror", consumerRefsTable, base); err != nil || p.Ref != "" || p.Snapshot != base {
		t.Fatalf("the main consumer's ack: %+v %v", p, err)
	}
	if _, err := c.Ack(ctx, "mirror", consumerRefsTable, s1); sluice.Code(err) != codes.InvalidArgument {
		t.Fatalf("an ack on main of a snapshot only the branch has: %v, want InvalidArgument", err)
	}
	if _, err := c.Ack(ctx, "mirror", consumerRefsTable, s1, sluice.OnRef("nope")); sluice.Code(err) != codes.NotFound {
		t.Fatalf("an ack on an unknown ref: %v, want NotFound", err)
	}
	s2 := w.deleteRow("audit", 1)
	if p, err := c.ConsumerProgress(ctx, "mirror", consumerRefsTable, audit); err != nil || p.LagCommits != 1 ||
		p.Snapshot != s1 {
		t.Fatalf("the branch consumer's lag, measured on the branch: %+v %v", p, err)
	}
	if p, err := c.ConsumerProgress(ctx, "mirror", consumerRefsTable); err != nil || p.LagCommits != 0 {
		t.Fatalf("the main consumer's lag (main has not moved): %+v %v", p, err)
	}
	c.Close()

	// Restart: the progress of both consumers survives, each on its ref.
	srv.stop(t)
	srv = startFlightd(t, flags...)
	c = dialGo(t, ctx, srv.URI())
	sub, err = c.Subscribe(ctx, sluice.SubscribeRequest{Table: consumerRefsTable, Ref: "audit", Consumer: "mirror"})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Release()
	if got, want := nextChanges(t, sub, s2), []string{fmt.Sprintf("delete 1@%d", s2)}; !slices.Equal(got, want) {
		t.Fatalf("the branch consumer after a restart resumes on the branch: %v, want %v", got, want)
	}
	if _, err := sub.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	// Protection on the branch: the consumer's own tag pins its snapshot.
	if p, err := c.Ack(ctx, "mirror", consumerRefsTable, s2, audit, sluice.WithProtect()); err != nil || !p.Protected {
		t.Fatalf("a protected ack on the branch: %+v %v", p, err)
	}
	if got := consumerTags(t, ctx, cat); !slices.Equal(got, []string{fmt.Sprintf("sluice-consumer-mirror#audit@%d", s2)}) {
		t.Fatalf("the consumer tags after a protected ack on the branch: %v", got)
	}
	list, err := c.ListConsumers(ctx, consumerRefsTable)
	if err != nil || len(list) != 2 || list[0].Ref != "" || list[0].Snapshot != base || list[1].Ref != "audit" ||
		list[1].Snapshot != s2 || !list[1].Protected || list[0].Protected {
		t.Fatalf("the consumers of both refs: %+v %v", list, err)
	}
	out := runSluice(t, "consumers", consumerRefsTable, "-o", "json", "--uri", srv.URI())
	var rows []struct{ Consumer, Ref string }
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 2 || rows[1].Ref != "audit" {
		t.Fatalf("sluice consumers -o json: %s %v", out, err)
	}

	// WatchCommitsOn follows the branch's head; main's watch does not move.
	wctx, wcancel := context.WithCancel(ctx)
	heads := make(chan sluice.CommitSeq, 4)
	go func() {
		defer close(heads)
		for cs, err := range c.WatchCommitsOn(wctx, consumerRefsTable, "audit") {
			if err != nil {
				return
			}
			heads <- cs
		}
	}()
	if cs := <-heads; cs.Snapshot == nil || *cs.Snapshot != s2 || cs.Ref == nil || cs.Ref.Name != "audit" {
		t.Fatalf("the branch's first watched position: %v, want head %d", cs, s2)
	}
	s3 := w.appendRows("audit", 5)
	select {
	case cs := <-heads:
		if cs.Snapshot == nil || *cs.Snapshot != s3 || cs.Ref == nil || *cs.Ref.Snapshot != s3 {
			t.Fatalf("the branch's next watched position: %v, want %d", cs, s3)
		}
	case <-ctx.Done():
		t.Fatal("no position after a commit to the branch")
	}
	wcancel()
	for range heads {
	}
	for cs, err := range c.WatchCommitsOn(ctx, consumerRefsTable, "nope") {
		if sluice.Code(err) != codes.NotFound {
			t.Fatalf("watching an unknown ref: %v %v, want NotFound", cs, err)
		}
		break
	}

	// Flight SQL (ADBC): the branch's window by ref, main's unchanged.
	sqlRows := tableChangesADBC(t, ctx, srv.URI(), fmt.Sprintf(
		`SELECT id, _change_type FROM table_changes('%s', %d, ref => 'audit')`, consumerRefsTable, base))
	if want := []string{"delete 1", "insert 3", "insert 4", "insert 5"}; !slices.Equal(sqlRows, want) {
		t.Fatalf("table_changes with ref: %v, want %v", sqlRows, want)
	}
	if got := tableChangesADBC(t, ctx, srv.URI(), fmt.Sprintf(`SELECT id, _change_type FROM table_changes('%s', %d)`,
		consumerRefsTable, base)); len(got) != 0 {
		t.Fatalf("table_changes on main before the publish: %v, want none", got)
	}

	// Publish: main fast-forwarded onto the branch. Main's consumer reads
	// the branch's three commits as main's, once; the branch's goes on.
	setRef(t, ctx, cat, w.tbl, "main", s3, table.BranchRef)
	onMain, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: consumerRefsTable, Consumer: "mirror"})
	if err != nil {
		t.Fatal(err)
	}
	defer onMain.Release()
	want := []string{fmt.Sprintf("delete 1@%d", s2), fmt.Sprintf("insert 3@%d", s1), fmt.Sprintf("insert 4@%d", s1),
		fmt.Sprintf("insert 5@%d", s3)}
	slices.Sort(want)
	if got := nextChanges(t, onMain, s3); !slices.Equal(got, want) {
		t.Fatalf("main's consumer across the fast-forward: %v, want %v", got, want)
	}
	if got := nextChanges(t, sub, s3); !slices.Equal(got, []string{fmt.Sprintf("insert 5@%d", s3)}) {
		t.Fatalf("the branch consumer after the publish: %v", got)
	}

	// Reset the branch's consumer: main's keeps its progress.
	if removed, err := c.ResetConsumer(ctx, "mirror", consumerRefsTable, audit); err != nil || !removed {
		t.Fatalf("reset of the branch consumer: %v %v", removed, err)
	}
	if p, err := c.ConsumerProgress(ctx, "mirror", consumerRefsTable); err != nil || p.Snapshot != base {
		t.Fatalf("main's consumer after the branch's reset: %+v %v", p, err)
	}
	if _, err := c.ConsumerProgress(ctx, "mirror", consumerRefsTable, audit); sluice.Code(err) != codes.NotFound {
		t.Fatalf("the branch consumer after its reset: %v, want NotFound", err)
	}
	if got := consumerTags(t, ctx, cat); len(got) != 0 {
		t.Fatalf("the consumer tags after the branch consumer's reset: %v", got)
	}
}

// consumerTags returns the consumer tags of the table, as "name@snapshot",
// sorted.
func consumerTags(t *testing.T, ctx context.Context, cat *catalog.Catalog) []string {
	t.Helper()
	tbl, err := cat.LoadTable(ctx, consumerRefsTable)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for name, ref := range tbl.Metadata().Refs() {
		if strings.HasPrefix(name, catalog.ConsumerTagPrefix) {
			out = append(out, fmt.Sprintf("%s@%d", name, ref.SnapshotID))
		}
	}
	slices.Sort(out)
	return out
}

// tableChangesADBC runs a Flight SQL query through the ADBC driver and
// returns its rows as "<_change_type> <id>", sorted.
func tableChangesADBC(t *testing.T, ctx context.Context, uri, query string) []string {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	db, err := adbcflightsql.NewDriver(mem).NewDatabase(map[string]string{adbc.OptionKeyURI: uri})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cnxn, err := db.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cnxn.Close()
	var out []string
	for _, row := range adbcRows(t, ctx, cnxn, query) {
		var r struct {
			ID         int64  `json:"id"`
			ChangeType string `json:"_change_type"`
		}
		if err := json.Unmarshal([]byte(row), &r); err != nil {
			t.Fatalf("row %s: %v", row, err)
		}
		out = append(out, fmt.Sprintf("%s %d", r.ChangeType, r.ID))
	}
	slices.Sort(out)
	return out
}

// runSluice runs the sluice CLI and returns its stdout; a failure fails
// the test with its stderr.
func runSluice(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(sluiceBin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sluice %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// TestPythonLineage: the Python client's lineage=True adds each row's id,
// _row_id, to the images of a Delta table with row tracking, the ids the
// writer (Spark) reads; without it the images have no such field.
func TestPythonLineage(t *testing.T) {
	py := python(t)
	root, err := filepath.Abs(filepath.Join("..", "testdata", "delta", "written"))
	if err != nil {
		t.Fatal(err)
	}
	client, err := filepath.Abs(filepath.Join("..", "clients", "python"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "spark4_row_tracking", "EXPECTED.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exp struct {
		Snapshots []struct {
			Version int64 `json:"version"`
			Lineage []struct {
				ID    int64 `json:"id"`
				RowID int64 `json:"_row_id"`
			} `json:"lineage"`
		} `json:"snapshots"`
	}
	if err := json.Unmarshal(raw, &exp); err != nil {
		t.Fatal(err)
	}
	if len(exp.Snapshots) < 2 || exp.Snapshots[1].Version != 1 || len(exp.Snapshots[1].Lineage) == 0 {
		t.Fatal("EXPECTED.json: version 1 with its rows' lineage expected")
	}
	want := map[int64]int64{}
	for _, l := range exp.Snapshots[1].Lineage {
		want[l.ID] = l.RowID
	}
	srv := startFlightd(t, "--warehouse", t.TempDir(), "--delta-root", root)
	const script = `import json, sys
import sluice
with sluice.connect(sys.argv[1]) as c:
    t = c.changes_table("delta.spark4_row_tracking", from_snapshot=0, to_snapshot=1, lineage=True)
    after = t.schema.field("after").type
    plain = c.changes_table("delta.spark4_row_tracking", from_snapshot=0, to_snapshot=1).schema.field("after").type
    rows = [r["after"] for r in t.to_pylist()]
    print(json.dumps({"last": after[after.num_fields - 1].name, "type": str(after[after.num_fields - 1].type),
        "plain": [plain[i].name for i in range(plain.num_fields)],
        "ids": {str(r["id"]): r["_row_id"] for r in rows}}))
`
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-c", script, srv.URI())
	cmd.Env = append(os.Environ(), "PYTHONPATH="+client)
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("python: %v\n%s", err, out)
		}
		t.Fatal(err)
	}
	var got struct {
		Last, Type string
		Plain      []string
		IDs        map[string]*int64
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("python's output %s: %v", out, err)
	}
	if got.Last != "_row_id" || got.Type != "int64" || slices.Contains(got.Plain, "_row_id") {
		t.Fatalf("lineage=True: last field %q of %s, without it %v; want _row_id int64, and none without", got.Last,
			got.Type, got.Plain)
	}
	if len(got.IDs) != len(want) {
		t.Fatalf("row ids of version 1: %v, want %v", got.IDs, want)
	}
	for id, rid := range want {
		if g := got.IDs[fmt.Sprint(id)]; g == nil || *g != rid {
			t.Errorf("row %d: _row_id %v, want %d (Spark's)", id, g, rid)
		}
	}
}
