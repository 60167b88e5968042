package feed

import (
	"context"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
)

// TestPartitionerKeepsEqualHashesTogether: whatever the budget, every row
// comes back exactly once, each side's rows of one hash in one partition
// with the other side's; past the budget rows go to disk, and a hash too
// common to split (here half the rows) is processed whole at the last
// level.
func TestPartitionerKeepsEqualHashesTogether(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for _, tc := range []struct {
		name   string
		budget int64
		spills bool
	}{{"in memory", 1 << 30, false}, {"spilled to the last level", 1, true}} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(arrowpool.Shared())
			defer mem.AssertSize(t, 0)
			stats := &counters{}
			dir := t.TempDir()
			spill := newSpillDir(dir, mem, stats)
			b := newBudget(tc.budget)
			l := b.lease()
			p := newPartitioner(context.Background(), mem, spill, l, 0, schema, schema)
			const n = 2000
			hashOf := func(v int64) uint64 {
				if v%2 == 0 {
					return 42 // half the rows share one hash
				}
				return uint64(v) * 0x9e3779b97f4a7c15
			}
			for side := range 2 {
				for start := int64(0); start < n; start += 250 {
					bld := array.NewInt64Builder(mem)
					var hashes []uint64
					for v := start; v < start+250; v++ {
						bld.Append(v)
						hashes = append(hashes, hashOf(v))
					}
					col := bld.NewArray()
					bld.Release()
					rec := array.NewRecordBatch(schema, []arrow.Array{col}, 250)
					col.Release()
					if err := p.add(side, rec, hashes); err != nil {
						t.Fatal(err)
					}
				}
			}
			if p.spilled() != tc.spills {
				t.Fatalf("spilled %v, want %v", p.spilled(), tc.spills)
			}
			seen := [2]map[int64]int{{}, {}}
			partOf := map[uint64]int{}
			parts := 0
			err := p.each(func(pt partition) error {
				parts++
				for side := range 2 {
					for i, rec := range pt.batches[side] {
						vs := rec.Column(0).(*array.Int64)
						for r := range int(rec.NumRows()) {
							v, h := vs.Value(r), pt.hashes[side][i][r]
							if h != hashOf(v) {
								t.Fatalf("row %d came back with hash %x", v, h)
							}
							if q, ok := partOf[h]; ok && q != parts {
								t.Fatalf("hash %x in partitions %d and %d", h, q, parts)
							}
							partOf[h] = parts
							seen[side][v]++
						}
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			p.close()
			for side := range 2 {
				if len(seen[side]) != n {
					t.Fatalf("side %d: %d distinct rows back, want %d", side, len(seen[side]), n)
				}
				for v, c := range seen[side] {
					if c != 1 {
						t.Fatalf("side %d: row %d back %d times", side, v, c)
					}
				}
			}
			if tc.spills && (parts < 2 || stats.spillFiles.Load() == 0) {
				t.Fatalf("%d partitions, %d spill files: the rows did not go to disk", parts, stats.spillFiles.Load())
			}
			l.free()
			if got := b.inUse(); got != 0 {
				t.Fatalf("%d bytes of the budget still held", got)
			}
			if err := spill.close(); err != nil {
				t.Fatal(err)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("%d entries left in the spill directory", len(left))
			}
		})
	}
}
