package pqread

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// randomFile is a file of random rows (ints, strings and a struct, with
// nulls) in row groups of random size, and its rows.
func randomFile(t *testing.T, rng *rand.Rand, mem memory.Allocator) (*bytes.Reader, arrow.RecordBatch) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(1)},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fid(2)},
		{Name: "st", Nullable: true, Metadata: fid(3), Type: arrow.StructOf(
			arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true, Metadata: fid(4)},
			arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fid(5)})},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	n := rng.IntN(3000)
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if rng.IntN(5) == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("v", rng.IntN(50)))
		}
		sb := b.Field(2).(*array.StructBuilder)
		if rng.IntN(7) == 0 {
			sb.AppendNull()
			continue
		}
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(rng.IntN(100)))
		sb.FieldBuilder(1).(*array.StringBuilder).Append(fmt.Sprint("b", i))
	}
	rec := b.NewRecordBatch()
	return writeParquet(t, rec, int64(1+rng.IntN(700))), rec
}

// TestReadMetamorphic reads random files with random batch sizes, row
// groups, parallelism and buffering, and checks each against the file's
// rows at the batches' positions; two reads share one footer at once.
func TestReadMetamorphic(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	target := arrow.NewSchema([]arrow.Field{
		field("t", arrow.StructOf(field("bb", arrow.BinaryTypes.String))), field("id", arrow.PrimitiveTypes.Int64),
		field("s", arrow.BinaryTypes.LargeString)}, nil)
	cols := []Column{{FieldID: ptr(3), Children: []Column{{FieldID: ptr(5)}}}, {FieldID: ptr(1)}, {Name: "s"}}
	for i := range 20 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			f, rows := randomFile(t, rng, mem)
			defer rows.Release()
			meta, err := Footer(f)
			if err != nil {
				t.Fatal(err)
			}
			var groups []int
			for g := range meta.RowGroups {
				if rng.IntN(3) > 0 {
					groups = append(groups, g)
				}
			}
			var wg sync.WaitGroup
			for range 2 {
				opts := Options{Allocator: mem, Meta: meta, RowGroups: groups, BatchRows: 1 + rng.IntN(1000),
					Parallelism: 1 + rng.IntN(3)}
				if rng.IntN(2) == 0 {
					opts.BufferSize = 1 + rng.Int64N(4096)
				}
				wg.Go(func() {
					covered := int64(0)
					err := Read(context.Background(), bytes.NewReader(readerBytes(f)), target, cols, opts, func(rec arrow.RecordBatch, first int64) error {
						defer rec.Release()
						covered += rec.NumRows()
						return sameRows(rec, rows, first)
					})
					if err != nil {
						t.Errorf("options %+v: %v", opts, err)
					}
					want := int64(0)
					for _, g := range groups {
						want += meta.RowGroups[g].Rows
					}
					if covered != want {
						t.Errorf("options %+v: %d rows, want %d", opts, covered, want)
					}
				})
			}
			wg.Wait()
		})
	}
}

// readerBytes is the whole of f.
func readerBytes(f *bytes.Reader) []byte {
	b := make([]byte, f.Size())
	_, _ = f.ReadAt(b, 0)
	return b
}

// sameRows checks rec (t.bb, id, s) against rows of the random file from
// position first.
func sameRows(rec, rows arrow.RecordBatch, first int64) error {
	ids := rows.Column(0).(*array.Int64)
	ss := rows.Column(1).(*array.String)
	st := rows.Column(2).(*array.Struct)
	bs := st.Field(1).(*array.String)
	gt, gid, gs := rec.Column(0).(*array.Struct), rec.Column(1).(*array.Int64), rec.Column(2).(*array.LargeString)
	gb := gt.Field(0).(*array.String)
	for i := range int(rec.NumRows()) {
		j := int(first) + i
		switch {
		case gid.Value(i) != ids.Value(j):
			return fmt.Errorf("row %d: id %d, want %d", j, gid.Value(i), ids.Value(j))
		case gs.IsNull(i) != ss.IsNull(j) || gs.Value(i) != ss.Value(j):
			return fmt.Errorf("row %d: s %q, want %q", j, gs.ValueStr(i), ss.ValueStr(j))
		case gt.IsNull(i) != st.IsNull(j) || (st.IsValid(j) && gb.Value(i) != bs.Value(j)):
			return fmt.Errorf("row %d: b %q, want %q", j, gb.ValueStr(i), bs.ValueStr(j))
		}
	}
	return nil
}
