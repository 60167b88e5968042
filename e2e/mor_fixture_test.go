package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/internal/testkit/histgen"
)

// morFixture is a merge-on-read table with a random history and the full
// state at each of its snapshots, read by plain iceberg-go scans: the
// oracle the Python tests check the feed against. Rows are
// [id, grp, val, note, small].
type morFixture struct {
	Table     string        `json:"table"`
	Columns   []string      `json:"columns"`
	Log       []string      `json:"log"`
	Snapshots []morSnapshot `json:"snapshots"`
}

type morSnapshot struct {
	Snapshot  int64   `json:"snapshot"`
	Parent    *int64  `json:"parent"`
	Operation string  `json:"operation"`
	State     [][]any `json:"state"`
}

// writeMOR writes a random merge-on-read history (position deletes,
// equality deletes, upserts, overwrites, compactions) into the warehouse
// and returns the path of its fixture file.
func writeMOR(t *testing.T, warehouse string, seed uint64) string {
	t.Helper()
	ctx := context.Background()
	h, err := histgen.Generate(ctx, warehouse, seed, histgen.Config{FormatVersion: 2,
		DeleteMode: table.WriteModeMergeOnRead, Partitioned: true, Commits: 12})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Catalog.Close()
	fix := morFixture{Table: histgen.Table, Columns: []string{"id", "grp", "val", "note", "small"}, Log: h.Log}
	for _, id := range h.Snapshots {
		s := h.Table.SnapshotByID(id)
		ms := morSnapshot{Snapshot: id, Parent: s.ParentSnapshotID, Operation: string(s.Summary.Operation), State: [][]any{}}
		arr, err := h.Table.Scan(table.WithSnapshotID(id), table.WithSelectedFields(fix.Columns...)).ToArrowTable(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rdr := array.NewTableReader(arr, 1024)
		for rdr.Next() {
			rec := rdr.RecordBatch()
			for i := range int(rec.NumRows()) {
				row := make([]any, len(fix.Columns))
				for c := range fix.Columns {
					if col := rec.Column(c); !col.IsNull(i) {
						row[c] = col.GetOneForMarshal(i)
					}
				}
				ms.State = append(ms.State, row)
			}
		}
		rdr.Release()
		arr.Release()
		fix.Snapshots = append(fix.Snapshots, ms)
	}
	path := filepath.Join(t.TempDir(), "mor.json")
	b, err := json.Marshal(fix)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
