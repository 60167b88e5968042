package registry

import (
	"context"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/format/delta"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// TestProtectorFormats: the protector pins an Iceberg table's snapshot
// with the consumer's tag (and drops it), pins nothing of a Delta table,
// whose retention it reads from the table's configuration (a delta-rs
// table that sets delta.logRetentionDuration, a Spark table with the
// defaults), and reports no retention for an Iceberg table.
func TestProtectorFormats(t *testing.T) {
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	tbl, err := tablewrite.CreateTable(ctx, cat, "ice.t", sc)
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err = tablewrite.Append(ctx, tbl, []tablewrite.Row{{"id": 1}}); err != nil {
		t.Fatal(err)
	}
	dt := catalog.NewDeltaTables(ctx, catalog.DeltaConfig{Root: "../testdata/delta/written"}, nil)
	p := New(cat, Options{Delta: dt}).Protector(time.Hour)
	if err := p.CheckWritable(); err != nil {
		t.Fatal(err)
	}

	snap := tbl.CurrentSnapshot().SnapshotID
	how, err := p.Protect(ctx, "ice.t", "c1", snap)
	if err != nil || how != ProtectTag {
		t.Fatalf("protect an Iceberg table: %q %v", how, err)
	}
	tagged := func() bool {
		tbl, err := cat.LoadTable(ctx, "ice.t")
		if err != nil {
			t.Fatal(err)
		}
		for name, ref := range tbl.Metadata().Refs() {
			if name == catalog.ConsumerTag("c1") && ref.SnapshotID == snap {
				return true
			}
		}
		return false
	}
	if !tagged() {
		t.Fatal("no tag after Protect")
	}
	if err := p.Release(ctx, "ice.t", "c1"); err != nil || tagged() {
		t.Fatalf("release: %v, tagged %v", err, tagged())
	}
	if _, _, ok, err := p.Retention(ctx, "ice.t"); ok || err != nil {
		t.Fatalf("an Iceberg table's retention: ok %v, %v", ok, err)
	}

	if how, err := p.Protect(ctx, "delta.deltars_seed5", "c1", 3); err != nil || how != ProtectLagWatch {
		t.Fatalf("protect a Delta table: %q %v", how, err)
	}
	for _, tt := range []struct {
		table       string
		log, delete time.Duration
	}{
		{"delta.deltars_seed5", 0, delta.DefaultDeletedFileRetention}, // "interval 0 seconds"
		{"delta.spark_dv", delta.DefaultLogRetention, delta.DefaultDeletedFileRetention},
	} {
		logR, files, ok, err := p.Retention(ctx, tt.table)
		if err != nil || !ok || logR != tt.log || files != tt.delete {
			t.Errorf("%s: retention %v %v %v %v, want %v and %v", tt.table, logR, files, ok, err, tt.log, tt.delete)
		}
	}
}
