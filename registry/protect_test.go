package registry

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/sluicefeed/sluice/catalog"
	"github.com/sluicefeed/sluice/format/delta"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
	"github.com/sluicefeed/sluice/lake"
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
	how, err := p.Protect(ctx, "ice.t", "c1", lake.Ref{}, snap)
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
	if err := p.Release(ctx, "ice.t", "c1", lake.Ref{}); err != nil || tagged() {
		t.Fatalf("release: %v, tagged %v", err, tagged())
	}
	// A consumer of a branch has its own tag, beside main's consumer of the
	// same id, and releasing one leaves the other.
	audit := lake.Ref{Name: "audit", Kind: lake.RefBranch}
	if _, err := p.Protect(ctx, "ice.t", "c1", lake.Ref{}, snap); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Protect(ctx, "ice.t", "c1", audit, snap); err != nil {
		t.Fatal(err)
	}
	tags := func() []string {
		tbl, err := cat.LoadTable(ctx, "ice.t")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for name := range tbl.Metadata().Refs() {
			if strings.HasPrefix(name, catalog.ConsumerTagPrefix) {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	if got := tags(); !slices.Equal(got, []string{"sluice-consumer-c1", "sluice-consumer-c1#audit"}) {
		t.Fatalf("tags of main's and the branch's c1: %q", got)
	}
	if err := p.Release(ctx, "ice.t", "c1", audit); err != nil {
		t.Fatal(err)
	}
	if got := tags(); !slices.Equal(got, []string{"sluice-consumer-c1"}) {
		t.Fatalf("tags after releasing the branch's c1: %q", got)
	}
	if err := p.Release(ctx, "ice.t", "c1", lake.Ref{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Protect(ctx, "delta.deltars_seed5", "c1", audit, 3); !errors.Is(err, lake.ErrNoRefs) {
		t.Fatalf("protect a consumer of a Delta table's ref: %v, want ErrNoRefs", err)
	}
	if _, _, ok, err := p.Retention(ctx, "ice.t"); ok || err != nil {
		t.Fatalf("an Iceberg table's retention: ok %v, %v", ok, err)
	}

	if how, err := p.Protect(ctx, "delta.deltars_seed5", "c1", lake.Ref{}, 3); err != nil || how != ProtectLagWatch {
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
