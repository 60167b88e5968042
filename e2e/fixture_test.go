package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// eventsTable is the table the e2e tests write with iceberg-go.
const eventsTable = "e2e.events"

func eventsSchema() *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 4, Name: "flag", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 5, Name: "qty", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 6, Name: "created", Type: iceberg.PrimitiveTypes.TimestampTz},
	)
}

// fixture is what the writer committed, as the Python tests read it from
// SLUICE_E2E_FIXTURE. Timestamps are microseconds since the epoch.
type fixture struct {
	Table     string             `json:"table"`
	Warehouse string             `json:"warehouse"`
	Catalog   string             `json:"catalog"`
	Columns   []string           `json:"columns"`
	Snapshots []fixtureSnapshot  `json:"snapshots"`
	byID      map[int64][]fixRow `json:"-"`
}

type fixtureSnapshot struct {
	Snapshot    int64    `json:"snapshot"`
	Parent      *int64   `json:"parent"`
	CommitSeq   int64    `json:"commit_seq"`
	TimestampMs int64    `json:"timestamp_ms"`
	Rows        []fixRow `json:"rows"`
}

// fixRow is one appended row with the values a reader must get back.
type fixRow struct {
	ID        int64   `json:"id"`
	Name      *string `json:"name"`
	Amount    float64 `json:"amount"`
	Flag      bool    `json:"flag"`
	Qty       int32   `json:"qty"`
	CreatedUs int64   `json:"created"`
}

// writeEvents writes e2e.events into a new warehouse: `commits` appends of
// a seeded random number of rows (some names null), with iceberg-go's own
// writer, and returns what it wrote.
func writeEvents(t *testing.T, commits int, seed uint64) *fixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	cat, err := tablewrite.OpenWarehouse(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := tablewrite.CreateTable(ctx, cat, eventsTable, eventsSchema())
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 1))
	f := &fixture{Table: eventsTable, Warehouse: dir, Catalog: filepath.Join(dir, "catalog.db"),
		Columns: []string{"id", "name", "amount", "flag", "qty", "created"}, byID: map[int64][]fixRow{}}
	next := int64(1)
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for range commits {
		n := 1 + r.IntN(40)
		var rows []tablewrite.Row
		var want []fixRow
		for range n {
			created := base.Add(time.Duration(r.IntN(1e6)) * time.Second)
			fr := fixRow{ID: next, Amount: float64(r.IntN(100000)) / 100, Flag: r.IntN(2) == 0,
				Qty: int32(r.IntN(1000) - 500), CreatedUs: created.UnixMicro()}
			row := tablewrite.Row{"id": fr.ID, "amount": fr.Amount, "flag": fr.Flag, "qty": fr.Qty,
				"created": created.Format(time.RFC3339)}
			if r.IntN(5) > 0 {
				name := fmt.Sprintf("event-%d-%x", fr.ID, r.Uint32())
				fr.Name = &name
				row["name"] = name
			}
			rows = append(rows, row)
			want = append(want, fr)
			next++
		}
		if tbl, err = tablewrite.Append(ctx, tbl, rows); err != nil {
			t.Fatal(err)
		}
		s := tbl.CurrentSnapshot()
		f.Snapshots = append(f.Snapshots, fixtureSnapshot{Snapshot: s.SnapshotID, Parent: s.ParentSnapshotID,
			CommitSeq: s.SequenceNumber, TimestampMs: s.TimestampMs, Rows: want})
		f.byID[s.SnapshotID] = want
	}
	return f
}

// save writes the fixture as JSON and returns its path.
func (f *fixture) save(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fixture.json")
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
