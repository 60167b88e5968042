package feed

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	icebergformat "github.com/sluicefeed/sluice/format/iceberg"
)

// BenchmarkFlatten measures turning one renderable batch of 8192 rows (an
// id, a string and a double) into the flat layout: a batch of inserts (the
// after-images' own arrays), and a batch of update pairs (gathered).
func BenchmarkFlatten(b *testing.B) {
	mem := memory.NewGoAllocator()
	const n = 8192
	end, err := icebergformat.SchemaFrom(iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.PrimitiveTypes.Float64}))
	if err != nil {
		b.Fatal(err)
	}
	renderable, err := changeSchema(end, []string{"id", "name", "amount"})
	if err != nil {
		b.Fatal(err)
	}
	flat, err := flatSchema("b.t", renderable)
	if err != nil {
		b.Fatal(err)
	}
	image := imageType(renderable)
	ib, sb, fb := array.NewInt64Builder(mem), array.NewStringBuilder(mem), array.NewFloat64Builder(mem)
	for i := range n {
		ib.Append(int64(i))
		sb.Append(fmt.Sprintf("customer-%d", i))
		fb.Append(float64(i) / 3)
	}
	cols := []arrow.Array{ib.NewArray(), sb.NewArray(), fb.NewArray()}
	images, err := array.NewStructArrayWithFields(cols, image.Fields())
	if err != nil {
		b.Fatal(err)
	}
	asm := newAssembler(mem, renderable, n, HardMaxBatchBytes)
	s := Snapshot{ID: 7, TimestampMs: 1}
	ins, err := asm.assemble(OpInsert, nil, images, span{0, n}, s)
	if err != nil {
		b.Fatal(err)
	}
	var pairs []change
	for i := 0; i < n; i += 2 {
		pairs = append(pairs, change{op: OpUpdateBefore, before: i, after: -1},
			change{op: OpUpdateAfter, before: -1, after: i + 1})
	}
	upd, err := asm.assembleChanges(context.Background(), images, images, pairs, s)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		rec  arrow.RecordBatch
	}{{"inserts", ins}, {"update-pairs", upd}} {
		b.Run(bc.name, func(b *testing.B) {
			f := &flattener{mem: mem, schema: flat, types: map[string]arrow.Array{}, maxRows: n}
			defer f.release()
			b.ReportAllocs()
			for b.Loop() {
				bc.rec.Retain()
				out, err := f.flatten(context.Background(), bc.rec)
				if err != nil {
					b.Fatal(err)
				}
				out.Release()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
