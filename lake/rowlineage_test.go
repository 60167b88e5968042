package lake_test

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/lake"
)

// TestWithLineage checks the inheritance rules: a materialized id or
// sequence wins; a null id is the file's first row id plus the row's
// position (the batch's first position plus its index), a null sequence
// the file's; a file without a first row id leaves ids it does not
// materialize null, and their sequences with them.
func TestWithLineage(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	i64 := func(v int64) *int64 { return &v }
	longs := func(vals []int64, valid []bool) arrow.Array {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		b.AppendValues(vals, valid)
		return b.NewArray()
	}
	tests := []struct {
		name            string
		ids, seqs       []int64
		idOK, seqOK     []bool
		fl              lake.FileLineage
		wantID, wantSeq []string
	}{
		{"inherited", nil, nil, nil, nil, lake.FileLineage{FirstRowID: i64(100), Seq: i64(7)},
			[]string{"110", "111", "112"}, []string{"7", "7", "7"}},
		{"materialized wins", []int64{5, 0, 9}, []int64{3, 0, 0}, []bool{true, false, true}, []bool{true, false, false},
			lake.FileLineage{FirstRowID: i64(100), Seq: i64(7)}, []string{"5", "111", "9"}, []string{"3", "7", "7"}},
		{"no first row id", []int64{5, 0, 0}, []int64{0, 0, 0}, []bool{true, false, false}, []bool{false, false, false},
			lake.FileLineage{Seq: i64(7)}, []string{"5", "(null)", "(null)"}, []string{"7", "(null)", "(null)"}},
		{"no lineage", nil, nil, nil, nil, lake.FileLineage{}, []string{"(null)", "(null)", "(null)"},
			[]string{"(null)", "(null)", "(null)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := longs([]int64{1, 2, 3}, nil)
			rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil),
				[]arrow.Array{data}, 3)
			data.Release()
			var ids, seqs arrow.Array
			if tc.ids != nil {
				ids, seqs = longs(tc.ids, tc.idOK), longs(tc.seqs, tc.seqOK)
				defer ids.Release()
				defer seqs.Release()
			}
			out, err := lake.WithLineage(mem, rec, 10, ids, seqs, tc.fl)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Release()
			if out.NumCols() != 3 || out.Schema().Field(1).Name != lake.RowIDColumn ||
				out.Schema().Field(2).Name != lake.RowSeqColumn {
				t.Fatalf("schema %s", out.Schema())
			}
			for r := range 3 {
				if got := out.Column(1).ValueStr(r); got != tc.wantID[r] {
					t.Errorf("row %d: id %s, want %s", r, got, tc.wantID[r])
				}
				if got := out.Column(2).ValueStr(r); got != tc.wantSeq[r] {
					t.Errorf("row %d: seq %s, want %s", r, got, tc.wantSeq[r])
				}
			}
		})
	}
	t.Run("a column of another type", func(t *testing.T) {
		data := longs([]int64{1}, nil)
		rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil),
			[]arrow.Array{data}, 1)
		data.Release()
		b := array.NewStringBuilder(mem)
		b.Append("a")
		bad := b.NewArray()
		b.Release()
		defer bad.Release()
		if _, err := lake.WithLineage(mem, rec, 0, bad, nil, lake.FileLineage{}); !errors.Is(err, lake.ErrUnsupported) {
			t.Fatalf("err %v, want ErrUnsupported", err)
		}
	})
}
