package paimon_test

import (
	"context"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluicefeed/sluice/format/paimon"
)

// Open a table, list its snapshots, and read a snapshot's full state.
func Example() {
	ctx := context.Background()
	tbl, err := paimon.Open(ctx, os.DirFS("../../testdata/paimon/warehouse/java.db/pk_compact"), "java.pk_compact")
	if err != nil {
		fmt.Println(err)
		return
	}
	snaps, err := tbl.SnapshotList(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	s := snaps[2]
	rows := int64(0)
	err = tbl.ReadSnapshot(ctx, s, func(b arrow.RecordBatch) error {
		rows += b.NumRows()
		b.Release()
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("snapshot %d (parent %d, %s): %d rows\n", s.ID, s.Parent(), s.CommitKind, rows)
	// Output: snapshot 3 (parent 2, APPEND): 14 rows
}
