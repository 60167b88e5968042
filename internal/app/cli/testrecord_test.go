package cli

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// changeSchema is the renderable row of a table (id, name, amount).
func changeSchema() *arrow.Schema {
	img := arrow.StructOf(
		arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	)
	return arrow.NewSchema([]arrow.Field{
		{Name: "op", Type: arrow.BinaryTypes.String},
		{Name: "before", Type: img, Nullable: true},
		{Name: "after", Type: img, Nullable: true},
		{Name: "snapshot", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
}

// record builds a batch of sc from JSON lines.
func record(t *testing.T, mem memory.Allocator, sc *arrow.Schema, lines ...string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(mem, sc, strings.NewReader("["+strings.Join(lines, ",")+"]"))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func checkedMem(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// A history: an insert, an update pair, a folded update, a delete with a
// null name and a value that needs quoting.
var historyRows = []string{
	`{"op": "insert", "before": null, "after": {"id": 1, "name": "ann", "amount": 10.5}, "snapshot": 7036874417766400001, "ts": "2026-11-30T08:00:00Z"}`,
	`{"op": "update_before", "before": {"id": 1, "name": "ann", "amount": 10.5}, "after": null, "snapshot": 7036874417766400002, "ts": "2026-11-30T09:00:00Z"}`,
	`{"op": "update_after", "before": null, "after": {"id": 1, "name": "ann", "amount": 12}, "snapshot": 7036874417766400002, "ts": "2026-11-30T09:00:00Z"}`,
	`{"op": "update", "before": {"id": 2, "name": "bo", "amount": 1}, "after": {"id": 2, "name": "Bo Ek", "amount": 1}, "snapshot": 7036874417766400002, "ts": "2026-11-30T09:00:00Z"}`,
	`{"op": "delete", "before": {"id": 3, "name": null, "amount": 3}, "after": null, "snapshot": 7036874417766400003, "ts": "2026-11-30T10:00:00.5Z"}`,
}
