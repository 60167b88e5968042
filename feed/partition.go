package feed

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluicefeed/sluice/internal/lib/kernelctx"
	"github.com/sluicefeed/sluice/lake"
)

// Partitioning of spilled rows: each level splits by the next bits of the
// rows' 64-bit hashes, so rows of equal hash always land together.
const (
	partitionBits   = 4
	partitionFanout = 1 << partitionBits
	// maxPartitionLevel bounds the re-splitting of a partition still too
	// large for the budget: a partitioner of this level holds its rows in
	// memory whatever their size (rows of one hash cannot be split).
	maxPartitionLevel = 3
)

// partitioner gathers the rows of one or more sides (record batches of one
// schema per side), each row with a 64-bit hash, and hands them back
// partition by partition, every side's rows of equal hash in the same
// partition. While its lease has room the rows stay in memory, as one
// partition; once it has not, every row goes to partitionFanout run files
// per side on disk (Arrow IPC, the hash as an extra column), and
// partitions are read back one at a time.
type partitioner struct {
	ctx     context.Context
	mem     memory.Allocator
	spill   *spillDir
	lease   *lease
	schemas []*arrow.Schema
	level   int

	// In memory, per side.
	held   [][]arrow.RecordBatch
	hashes [][][]uint64
	bytes  int64 // held by the batches in memory (within the lease)
	// Spilled: runs[partition][side], nil while in memory.
	runs [][]*runWriter
	// beforeSpill, when set, runs before the rows held in memory go to
	// disk (the carry-over's early cancelling drops what it cancelled).
	beforeSpill func() error
}

func newPartitioner(ctx context.Context, mem memory.Allocator, spill *spillDir, l *lease, level int,
	schemas ...*arrow.Schema) *partitioner {
	return &partitioner{ctx: ctx, mem: mem, spill: spill, lease: l, schemas: schemas, level: level,
		held: make([][]arrow.RecordBatch, len(schemas)), hashes: make([][][]uint64, len(schemas))}
}

// recordSize is the memory a batch holds.
func recordSize(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += wholeSize(c.Data())
	}
	return n
}

// add takes over rec (a batch of side's schema) with one hash per row.
func (p *partitioner) add(side int, rec arrow.RecordBatch, hashes []uint64) error {
	if rec.NumRows() == 0 {
		rec.Release()
		return nil
	}
	if p.runs == nil {
		size := recordSize(rec) + int64(8*len(hashes))
		held := p.level >= maxPartitionLevel // the last level holds whatever the budget
		if held {
			p.lease.force(size)
		} else {
			held = p.lease.grow(size)
		}
		if held {
			p.held[side] = append(p.held[side], rec)
			p.hashes[side] = append(p.hashes[side], hashes)
			p.bytes += size
			return nil
		}
		if err := p.spillHeld(); err != nil {
			rec.Release()
			return err
		}
	}
	defer rec.Release()
	return p.write(side, rec, hashes)
}

// spilled reports whether the rows went to disk.
func (p *partitioner) spilled() bool { return p.runs != nil }

// spillHeld writes the rows held in memory to the partition runs and frees
// their memory.
func (p *partitioner) spillHeld() error {
	if p.beforeSpill != nil {
		if err := p.beforeSpill(); err != nil {
			return err
		}
	}
	p.runs = make([][]*runWriter, partitionFanout)
	for part := range p.runs {
		p.runs[part] = make([]*runWriter, len(p.schemas))
	}
	for side := range p.held {
		for i, rec := range p.held[side] {
			err := p.write(side, rec, p.hashes[side][i])
			rec.Release()
			p.held[side][i] = nil
			if err != nil {
				return err
			}
		}
		p.held[side], p.hashes[side] = nil, nil
	}
	p.lease.shrink(p.bytes)
	p.bytes = 0
	return nil
}

// heldBatches returns the batches of a side held in memory, in the order
// added (none once spilled); they stay the partitioner's.
func (p *partitioner) heldBatches(side int) []arrow.RecordBatch {
	if p.runs != nil {
		return nil
	}
	return p.held[side]
}

// filterHeld keeps, of each batch of side held in memory whose mask in keep
// is set, the rows the mask keeps (and their hashes), and gives what it
// frees back to the lease.
func (p *partitioner) filterHeld(side int, keep [][]bool) error {
	if p.runs != nil {
		return nil
	}
	all, allHashes := p.held[side], p.hashes[side]
	held, hashes := all[:0], allHashes[:0] // compacted in place
	done := func(rest int) {
		held, hashes = append(held, all[rest:]...), append(hashes, allHashes[rest:]...)
		clear(all[len(held):])
		p.held[side], p.hashes[side] = held, hashes
	}
	for b, rec := range all {
		h := allHashes[b]
		if b < len(keep) && keep[b] != nil {
			mask := keep[b]
			sel, err := lake.SelectRows(p.ctx, p.mem, rec, func(r int) bool { return mask[r] })
			if err != nil {
				done(b) // the batches not filtered stay whole
				return err
			}
			freed := recordSize(rec) + int64(8*len(h))
			rec.Release()
			kept := h[:0] // in place: a row's hash moves only down
			for r, v := range h {
				if mask[r] {
					kept = append(kept, v)
				}
			}
			rec, h = sel, kept
			if rec != nil {
				freed -= recordSize(rec) + int64(8*len(h))
			}
			if freed >= 0 {
				p.lease.shrink(freed)
			} else {
				p.lease.force(-freed) // the selection's buffers may be the larger
			}
			p.bytes -= freed
			if rec == nil {
				continue
			}
		}
		held, hashes = append(held, rec), append(hashes, h)
	}
	done(len(all))
	return nil
}

// partitionOf returns the partition of a hash at the partitioner's level:
// the next bits of the hash, finalized first (the row hashes are built to
// be compared, not to spread: the hash of one integer column is the value
// plus a constant, whose high bits hardly vary).
func (p *partitioner) partitionOf(h uint64) int {
	return int(fmix64(h)>>(64-partitionBits*(p.level+1))) & (partitionFanout - 1)
}

// fmix64 is MurmurHash3's 64-bit finalizer: every input bit affects every
// output bit.
func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// write appends the rows of rec to their partitions' runs: one take puts
// the rows in partition order, and each partition's rows go out as a
// slice of it.
func (p *partitioner) write(side int, rec arrow.RecordBatch, hashes []uint64) error {
	var counts [partitionFanout + 1]int
	parts := make([]uint8, len(hashes))
	for r, h := range hashes {
		part := p.partitionOf(h)
		parts[r] = uint8(part)
		counts[part+1]++
	}
	for part := range partitionFanout {
		if counts[part+1] == len(hashes) {
			return p.writeRun(part, side, rec, hashes) // every row in one partition
		}
		counts[part+1] += counts[part]
	}
	order := make([]int32, len(hashes))
	sorted := make([]uint64, len(hashes))
	next := counts
	for r, part := range parts {
		order[next[part]] = int32(r)
		sorted[next[part]] = hashes[r]
		next[part]++
	}
	ib := array.NewInt32Builder(p.mem)
	ib.AppendValues(order, nil)
	indices := ib.NewArray()
	ib.Release()
	defer indices.Release()
	taken, err := compute.Take(kernelctx.For(p.ctx, p.mem), *compute.DefaultTakeOptions(),
		compute.NewDatumWithoutOwning(rec), compute.NewDatumWithoutOwning(indices))
	if err != nil {
		return fmt.Errorf("partition rows: %w", err)
	}
	defer taken.Release()
	all := taken.(*compute.RecordDatum).Value
	for part := range partitionFanout {
		lo, hi := counts[part], counts[part+1]
		if lo == hi {
			continue
		}
		slice := all.NewSlice(int64(lo), int64(hi))
		err := p.writeRun(part, side, slice, sorted[lo:hi])
		slice.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// writeRun appends rec, with its rows' hashes, to a partition's run.
func (p *partitioner) writeRun(part, side int, rec arrow.RecordBatch, hashes []uint64) error {
	w := p.runs[part][side]
	if w == nil {
		var err error
		if w, err = p.spill.newRun(withHashColumn(p.schemas[side])); err != nil {
			return err
		}
		p.runs[part][side] = w
	}
	hb := array.NewUint64Builder(p.mem)
	defer hb.Release()
	hb.AppendValues(hashes, nil)
	hcol := hb.NewArray()
	defer hcol.Release()
	cols := append(append([]arrow.Array(nil), rec.Columns()...), hcol)
	out := array.NewRecordBatch(w.schema, cols, rec.NumRows())
	defer out.Release()
	return w.write(out)
}

// withHashColumn appends the hash column to a schema.
func withHashColumn(s *arrow.Schema) *arrow.Schema {
	fields := append(append([]arrow.Field(nil), s.Fields()...),
		arrow.Field{Name: "_sluice_hash", Type: arrow.PrimitiveTypes.Uint64})
	return arrow.NewSchema(fields, nil)
}

// partition is the rows of one partition, per side: batches and the hash
// of each row.
type partition struct {
	batches [][]arrow.RecordBatch
	hashes  [][][]uint64
}

func (pt *partition) release() {
	for _, side := range pt.batches {
		for _, rec := range side {
			rec.Release()
		}
	}
}

// each hands every partition to fn, in memory, one at a time; the batches
// are released when fn returns. A spilled partition larger than the budget
// allows is split again by the next bits of the hashes (up to
// maxPartitionLevel).
func (p *partitioner) each(fn func(partition) error) error {
	if p.runs == nil {
		pt := partition{batches: p.held, hashes: p.hashes}
		p.held, p.hashes = make([][]arrow.RecordBatch, len(p.schemas)), make([][][]uint64, len(p.schemas))
		defer func() {
			pt.release()
			p.lease.shrink(p.bytes)
			p.bytes = 0
		}()
		return fn(pt)
	}
	runs := p.runs
	p.runs = nil
	finished := make([][]*run, len(runs))
	defer func() {
		for _, sides := range finished {
			for _, r := range sides {
				r.close()
			}
		}
	}()
	for part, sides := range runs {
		finished[part] = make([]*run, len(sides))
		for side, w := range sides {
			if w == nil {
				continue
			}
			r, err := w.finish()
			if err != nil {
				return err
			}
			finished[part][side] = r
		}
	}
	for part := range finished {
		if err := p.eachRun(finished[part], fn); err != nil {
			return err
		}
		for _, r := range finished[part] {
			r.close()
		}
		finished[part] = nil
	}
	return nil
}

// eachRun processes one spilled partition: in memory when the budget has
// room for it, else split again (up to maxPartitionLevel).
func (p *partitioner) eachRun(sides []*run, fn func(partition) error) error {
	var rows int64
	for _, r := range sides {
		if r != nil {
			rows += r.rows
		}
	}
	if rows == 0 {
		return nil
	}
	// Re-split through a partitioner of the next level: it keeps the rows in
	// memory while the lease has room, and spills again when not; at the
	// last level it keeps them whatever the budget (rows of one hash cannot
	// be split further).
	child := newPartitioner(p.ctx, p.mem, p.spill, p.lease, p.level+1, p.schemas...)
	defer child.close()
	if err := child.load(sides); err != nil {
		return err
	}
	return child.each(fn)
}

// load adds the rows of spilled runs (one per side, nil: none).
func (p *partitioner) load(sides []*run) error {
	for side, r := range sides {
		if r == nil {
			continue
		}
		for i := range r.batches {
			rec, h, err := readHashed(r, i, p.schemas[side])
			if err != nil {
				return err
			}
			if err := p.add(side, rec, h); err != nil {
				return err
			}
		}
	}
	return nil
}

// readHashed reads batch i of a run and splits off its hash column.
func readHashed(r *run, i int, schema *arrow.Schema) (arrow.RecordBatch, []uint64, error) {
	rec, err := r.batch(i)
	if err != nil {
		return nil, nil, err
	}
	defer rec.Release()
	n := int(rec.NumCols()) - 1
	hcol, ok := rec.Column(n).(*array.Uint64)
	if !ok {
		return nil, nil, fmt.Errorf("%w: a run lacks its hash column", ErrSpill)
	}
	hashes := append([]uint64(nil), hcol.Uint64Values()...)
	out := array.NewRecordBatch(schema, rec.Columns()[:n], rec.NumRows())
	return out, hashes, nil
}

// close releases what the partitioner still holds (its runs' files are
// removed with the spill directory).
func (p *partitioner) close() {
	for side := range p.held {
		for _, rec := range p.held[side] {
			rec.Release()
		}
	}
	p.held = nil
	p.lease.shrink(p.bytes)
	p.bytes = 0
	for _, sides := range p.runs {
		for _, w := range sides {
			if w != nil {
				w.abort()
			}
		}
	}
	p.runs = nil
}
