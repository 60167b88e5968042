package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"google.golang.org/grpc/codes"

	"github.com/sluicefeed/sluice/catalog"
	sluice "github.com/sluicefeed/sluice/clients/go"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// wapTable is the table of the write-audit-publish run.
const wapTable = "wap.orders"

// idValTable creates the format-v2 Iceberg table name (id, the identifier
// field, and val, both longs) in a new local warehouse in dir, and returns
// the warehouse's catalog (closed when the test ends) and the table.
func idValTable(t *testing.T, ctx context.Context, dir, name string) (*catalog.Catalog, *table.Table) {
	t.Helper()
	cat, err := tablewrite.OpenWarehouse(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "val", Type: iceberg.PrimitiveTypes.Int64})
	tbl, err := tablewrite.CreateTable(ctx, cat, name, sc,
		icecatalog.WithProperties(iceberg.Properties{"format-version": "2"}))
	if err != nil {
		t.Fatal(err)
	}
	return cat, tbl
}

// setRef points branch or tag name of tbl at snapshot id through the
// catalog (a fast-forward, when name is main and id descends from its
// head), and returns the table after the commit.
func setRef(t *testing.T, ctx context.Context, cat *catalog.Catalog, tbl *table.Table, name string, id int64,
	kind table.RefType) *table.Table {
	t.Helper()
	if _, _, err := cat.Iceberg().CommitTable(ctx, tbl.Identifier(), nil,
		[]table.Update{table.NewSetSnapshotRefUpdate(name, id, kind, 0, 0, 0)}); err != nil {
		t.Fatalf("set %s %s to %d: %v", kind, name, id, err)
	}
	out, err := cat.Iceberg().LoadTable(ctx, tbl.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// nextChanges reads a subscription up to the complete batch of snapshot
// until, and returns its change rows as "op id" strings, sorted.
func nextChanges(t *testing.T, sub *sluice.Subscription, until int64) []string {
	t.Helper()
	var out []string
	for sub.Next() {
		b := sub.Batch()
		rec := b.Record
		ops := rec.Column(0).(*array.String)
		for i := range int(rec.NumRows()) {
			img := rec.Column(2).(*array.Struct)
			if ops.Value(i) == "delete" || ops.Value(i) == "update_before" {
				img = rec.Column(1).(*array.Struct)
			}
			out = append(out, fmt.Sprintf("%s %d@%d", ops.Value(i), img.Field(0).(*array.Int64).Value(i), b.Meta.Snapshot))
		}
		if b.Meta.SnapshotComplete && b.Meta.Snapshot == until {
			slices.Sort(out)
			return out
		}
	}
	t.Fatalf("the stream ended before snapshot %d: %v", until, sub.Err())
	return nil
}

// TestBranchFollowedThenFastForwarded runs write-audit-publish through
// flightd: a stream follows branch audit while commits land on it, main
// does not move, then main is fast-forwarded onto audit and main's stream
// reads audit's commits as its own, once.
func TestBranchFollowedThenFastForwarded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cat, tbl := idValTable(t, ctx, dir, wapTable)
	var err error
	rows := func(ids ...int64) []tablewrite.Row {
		var out []tablewrite.Row
		for _, id := range ids {
			out = append(out, tablewrite.Row{"id": id, "val": id * 10})
		}
		return out
	}
	if tbl, err = tablewrite.Append(ctx, tbl, rows(1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	base := tbl.CurrentSnapshot().SnapshotID
	tbl = setRef(t, ctx, cat, tbl, "audit", base, table.BranchRef)
	tbl = setRef(t, ctx, cat, tbl, "before-audit", base, table.TagRef)

	srv := startFlightd(t, "--warehouse", dir, "--poll-interval", "50ms", "--heartbeat-interval", "300ms")
	c := dialGo(t, ctx, srv.URI())
	audit, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: wapTable, Ref: "audit", Start: sluice.StartLatest})
	if err != nil {
		t.Fatal(err)
	}
	defer audit.Release()
	main, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: wapTable, Start: sluice.StartLatest})
	if err != nil {
		t.Fatal(err)
	}
	defer main.Release()

	// Write: an append and a delete, on audit only.
	txn := tbl.NewTransactionOnBranch("audit")
	rec, err := tablewrite.Record(tbl, rows(4, 5))
	if err != nil {
		t.Fatal(err)
	}
	arrTbl := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
	rec.Release()
	defer arrTbl.Release()
	if err := txn.AppendTable(ctx, arrTbl, 10, nil); err != nil {
		t.Fatal(err)
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	appended := tbl.Metadata().SnapshotByName("audit").SnapshotID
	txn = tbl.NewTransactionOnBranch("audit")
	if err := txn.Delete(ctx, iceberg.EqualTo(iceberg.Reference("id"), int64(2)), nil); err != nil {
		t.Fatal(err)
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	head := tbl.Metadata().SnapshotByName("audit").SnapshotID
	if tbl.CurrentSnapshot().SnapshotID != base {
		t.Fatalf("main moved to %d: the writes were to go to audit", tbl.CurrentSnapshot().SnapshotID)
	}
	want := []string{fmt.Sprintf("delete 2@%d", head), fmt.Sprintf("insert 4@%d", appended),
		fmt.Sprintf("insert 5@%d", appended)}
	slices.Sort(want)

	// Audit: the stream on the branch sees both commits.
	if got := nextChanges(t, audit, head); !slices.Equal(got, want) {
		t.Fatalf("the stream on audit: %v, want %v", got, want)
	}
	cs, err := c.CommitSeqOn(ctx, wapTable, "audit")
	if err != nil || cs.Snapshot == nil || *cs.Snapshot != head || cs.Ref == nil || cs.Ref.Kind != "branch" {
		t.Fatalf("commit_seq on audit: %v, %v; want head %d", cs, err, head)
	}
	if cs, err := c.CommitSeq(ctx, wapTable); err != nil || *cs.Snapshot != base {
		t.Fatalf("commit_seq on main: %v, %v; want %d (main has not moved)", cs, err, base)
	}
	snaps, err := c.SnapshotsOn(ctx, wapTable, "audit")
	if err != nil || len(snaps) != 3 || snaps[2].ID != head {
		t.Fatalf("snapshots on audit: %v, %v", snaps, err)
	}
	p, err := c.Explain(ctx, sluice.ChangeRequest{Table: wapTable, Ref: "audit", FromRef: "before-audit"})
	if err != nil || p.Ref == nil || p.Ref.Name != "audit" || len(p.Snapshots) != 2 || *p.FromSnapshot != base {
		t.Fatalf("explain on audit from the tag: %v, %v", p, err)
	}

	// Publish: main fast-forwarded onto audit's head; main's stream reads
	// the two commits as main's.
	setRef(t, ctx, cat, tbl, "main", head, table.BranchRef)
	if got := nextChanges(t, main, head); !slices.Equal(got, want) {
		t.Fatalf("the stream on main across the fast-forward: %v, want %v", got, want)
	}

	// Refused: an unknown ref, following a tag.
	if _, err := c.Explain(ctx, sluice.ChangeRequest{Table: wapTable, Ref: "nope"}); sluice.Code(err) != codes.NotFound {
		t.Errorf("explain on an unknown ref: %v, want NotFound", err)
	}
	tag, err := c.Subscribe(ctx, sluice.SubscribeRequest{Table: wapTable, Ref: "before-audit", Start: sluice.StartLatest})
	if err == nil {
		for tag.Next() {
		}
		err = tag.Err()
		tag.Release()
	}
	if sluice.Code(err) != codes.InvalidArgument {
		t.Errorf("follow on a tag: %v, want InvalidArgument", err)
	}
}
