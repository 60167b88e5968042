package feed

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
)

// TestOrderChangesPairColumnNulls: a commit whose change data file holds
// an update pair, a plain delete and a plain insert (a MERGE that updates,
// deletes and inserts, as delta-rs writes it) pairs only the update's
// images by the format's pair column, whose nulls (the plain delete and
// insert) never pair; a request's identity still pairs equal keys, nulls
// included.
func TestOrderChangesPairColumnNulls(t *testing.T) {
	const pairColumn = "__sluice_update_pair" // format/delta's pair column
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: pairColumn, Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	batch := func(ids []int64, pairs []int64, valid []bool) arrow.RecordBatch {
		ib, pb := array.NewInt64Builder(mem), array.NewInt64Builder(mem)
		defer ib.Release()
		defer pb.Release()
		ib.AppendValues(ids, nil)
		pb.AppendValues(pairs, valid)
		ic, pc := ib.NewArray(), pb.NewArray()
		defer ic.Release()
		defer pc.Release()
		return array.NewRecordBatch(schema, []arrow.Array{ic, pc}, int64(len(ids)))
	}
	// Deleted: id 5 (a plain delete), id 4 (update pre-image 0).
	// Inserted: id 7 (a plain insert), id 4 (update post-image 0).
	cs := &changeSet{dels: []arrow.RecordBatch{batch([]int64{5, 4}, []int64{0, 0}, []bool{false, true})},
		ins: []arrow.RecordBatch{batch([]int64{7, 4}, []int64{0, 0}, []bool{false, true})}}
	defer cs.dels[0].Release()
	defer cs.ins[0].Release()
	render := func(rows []change) string {
		var out []string
		for _, c := range rows {
			var id int64
			if c.before >= 0 {
				id = cs.dels[0].Column(0).(*array.Int64).Value(c.before)
			} else {
				id = cs.ins[0].Column(0).(*array.Int64).Value(c.after)
			}
			out = append(out, fmt.Sprintf("%s %d", c.op, id))
		}
		return strings.Join(out, ", ")
	}
	for _, tc := range []struct {
		name      string
		key       []int
		nullsPair bool
		want      string
	}{
		{"pair column", []int{1}, false, "delete 5, update_before 4, update_after 4, insert 7"},
		{"identity", []int{0}, true, "delete 5, update_before 4, update_after 4, insert 7"},
		{"no key", nil, true, "delete 5, delete 4, insert 7, insert 4"},
	} {
		rows, err := orderChanges(cs, refs(cs.dels), refs(cs.ins), tc.key, tc.nullsPair, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := render(rows); got != tc.want {
			t.Errorf("%s: %s; want %s", tc.name, got, tc.want)
		}
	}
}
