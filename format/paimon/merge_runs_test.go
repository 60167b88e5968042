package paimon

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// peakAllocator counts the bytes an allocator holds, and their peak.
type peakAllocator struct {
	*memory.CheckedAllocator
	// mu guards peak.
	mu   sync.Mutex
	peak int
}

func (a *peakAllocator) track() {
	a.mu.Lock()
	a.peak = max(a.peak, a.CurrentAlloc())
	a.mu.Unlock()
}

func (a *peakAllocator) Allocate(n int) []byte {
	b := a.CheckedAllocator.Allocate(n)
	a.track()
	return b
}

func (a *peakAllocator) Reallocate(n int, b []byte) []byte {
	b = a.CheckedAllocator.Reallocate(n, b)
	a.track()
	return b
}

func (a *peakAllocator) Peak() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.peak
}

// TestMergeSmallBatches merges every bucket of every primary-key
// fixture's latest snapshot in batches of 3 rows, so that every run of
// several files is read across many batches and the merge crosses batch
// boundaries at every step: the merged states are exactly the writer's,
// and no batch holds more than 3 rows.
func TestMergeSmallBatches(t *testing.T) {
	ctx := context.Background()
	buckets := 0
	for _, f := range fixtures(t) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		tbl := f.open(t, mem)
		if refusedEngine(t, tbl) != "" {
			continue
		}
		s, err := tbl.Latest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		target, err := tbl.SnapshotSchema(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if len(target.PrimaryKeys) == 0 {
			continue
		}
		t.Run(f.db+"."+f.name, func(t *testing.T) {
			defer mem.AssertSize(t, 0)
			splits, err := tbl.Splits(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i := range splits {
				buckets++
				err := tbl.readSplit(ctx, target, nil, &splits[i], 3, func(rec arrow.RecordBatch) error {
					defer rec.Release()
					if rec.NumRows() > 3 {
						t.Errorf("bucket %d: a batch of %d rows, want at most 3", splits[i].Bucket, rec.NumRows())
					}
					got = append(got, canonRows(t, []arrow.RecordBatch{rec}, false)...)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			slices.Sort(got)
			want := readLines(t, filepath.Join(f.expected, "state", strconv.FormatInt(s.ID, 10)+".jsonl"))
			if d := diffLines(got, want); d != "" {
				t.Errorf("snapshot %d merged in 3-row batches differs from %s's read:\n%s", s.ID, f.meta.Writer, d)
			}
		})
	}
	if buckets == 0 {
		t.Fatal("no bucket merged")
	}
}

// syntheticRun is a sorted run of a bucket of keys 0 to keys-1: run r
// holds the keys k with (k*7+r*3)%5 < 3, each record of sequence number
// r*keys+k (a later run is newer), deleted (-D) when r > 0 and k%4 == r,
// and a value of 120 characters that names its run and key.
func syntheticRun(mem memory.Allocator, schema *arrow.Schema, r, keys, batch int, made *int) func(func(arrow.RecordBatch, error) bool) {
	return func(yield func(arrow.RecordBatch, error) bool) {
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		seqs := b.Field(0).(*array.Int64Builder)
		kinds := b.Field(1).(*array.Int8Builder)
		ids := b.Field(2).(*array.Int64Builder)
		vs := b.Field(3).(*array.StringBuilder)
		for k := 0; k < keys; k++ {
			if (k*7+r*3)%5 >= 3 {
				continue
			}
			seqs.Append(int64(r*keys + k))
			kind := RowInsert
			if r > 0 && k%4 == r {
				kind = RowDelete
			}
			kinds.Append(int8(kind))
			ids.Append(int64(k))
			vs.Append(syntheticValue(r, k))
			if seqs.Len() == batch || k == keys-1 {
				rec := b.NewRecordBatch()
				*made += recordBytes(rec)
				if !yield(rec, nil) {
					return
				}
			}
		}
		if seqs.Len() > 0 {
			rec := b.NewRecordBatch()
			*made += recordBytes(rec)
			yield(rec, nil)
		}
	}
}

func syntheticValue(r, k int) string {
	return fmt.Sprintf("run %d key %d %s", r, k, strings.Repeat("x", 100))
}

// recordBytes is the size of a batch's buffers.
func recordBytes(rec arrow.RecordBatch) int {
	n := 0
	for _, c := range rec.Columns() {
		for _, b := range c.Data().Buffers() {
			if b != nil {
				n += b.Len()
			}
		}
	}
	return n
}

// TestMergeBoundedMemory merges a bucket far larger than a memory budget:
// four sorted runs of 40,000 keys with values of 120 bytes, whose
// records take about 13 MB, through a budget of 2 MiB. The merge holds a
// batch per run and the rows it has picked, never the bucket: its
// allocator never holds more than the budget, and the merged rows are
// exactly each key's newest record, in key order, without the keys whose
// newest record deletes them.
func TestMergeBoundedMemory(t *testing.T) {
	const keys, runs, batch, budget = 40000, 4, 1024, 2 << 20
	mem := &peakAllocator{CheckedAllocator: memory.NewCheckedAllocator(memory.NewGoAllocator())}
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{{Name: SequenceNumberColumn, Type: arrow.PrimitiveTypes.Int64},
		{Name: ValueKindColumn, Type: arrow.PrimitiveTypes.Int8}, {Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	out := arrow.NewSchema(schema.Fields()[2:], nil)
	made := 0
	var cursors []*runCursor
	defer func() {
		for _, c := range cursors {
			c.close()
		}
	}()
	for r := range runs {
		c, err := newRunCursor(r, syntheticRun(mem, schema, r, keys, batch, &made))
		if err != nil {
			t.Fatal(err)
		}
		cursors = append(cursors, c)
	}
	// Each key's newest record: the last run that holds it.
	want := map[int64]string{}
	for k := range keys {
		for r := runs - 1; r >= 0; r-- {
			if (k*7+r*3)%5 < 3 {
				if r == 0 || k%4 != r {
					want[int64(k)] = syntheticValue(r, k)
				}
				break
			}
		}
	}
	tbl := &Table{name: "synthetic", mem: mem}
	got, last := 0, int64(-1)
	err := tbl.mergeInto(ctx, nil, out, nil, []int{2}, batch, cursors, func(rec arrow.RecordBatch) error {
		defer rec.Release()
		ids, vs := rec.Column(0).(*array.Int64), rec.Column(1).(*array.String)
		for i := range int(rec.NumRows()) {
			id := ids.Value(i)
			if id <= last {
				t.Fatalf("key %d after key %d: the merge is not in key order", id, last)
			}
			last = id
			if w, ok := want[id]; !ok || vs.Value(i) != w {
				t.Fatalf("key %d: merged %q, want %q (present %v)", id, vs.Value(i), w, ok)
			}
			got++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != len(want) {
		t.Errorf("%d rows merged, want %d", got, len(want))
	}
	if made <= 4*budget {
		t.Fatalf("the bucket's records take %d bytes, not far above the budget of %d", made, budget)
	}
	if p := mem.Peak(); p > budget {
		t.Errorf("the merge of %d bytes of records held up to %d bytes, above the budget of %d", made, p, budget)
	} else {
		t.Logf("the merge of %d bytes of records held up to %d bytes (budget %d)", made, p, budget)
	}
}

// A run whose records are not in key order cannot be merged by key: the
// merge refuses it with ErrCorrupt rather than return a wrong state.
func TestMergeRefusesUnsortedRun(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: SequenceNumberColumn, Type: arrow.PrimitiveTypes.Int64},
		{Name: ValueKindColumn, Type: arrow.PrimitiveTypes.Int8}, {Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	run := func(yield func(arrow.RecordBatch, error) bool) {
		for _, ids := range [][]int64{{1, 5}, {3}} { // 5 then 3: out of order across batches
			b := array.NewRecordBuilder(mem, schema)
			for _, id := range ids {
				b.Field(0).(*array.Int64Builder).Append(id)
				b.Field(1).(*array.Int8Builder).Append(int8(RowInsert))
				b.Field(2).(*array.Int64Builder).Append(id)
			}
			rec := b.NewRecordBatch()
			b.Release()
			if !yield(rec, nil) {
				return
			}
		}
	}
	c, err := newRunCursor(0, run)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	tbl := &Table{name: "unsorted", mem: mem}
	out := arrow.NewSchema(schema.Fields()[2:], nil)
	err = tbl.mergeInto(context.Background(), nil, out, nil, []int{2}, 16, []*runCursor{c},
		func(rec arrow.RecordBatch) error {
			rec.Release()
			return nil
		})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v, want ErrCorrupt", err)
	}
}
