package pqread

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

const benchRows = 1 << 20

// benchSchema is the benchmark file's: ints, strings, doubles and
// timestamps, ten columns with field ids.
var benchSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(1)},
	{Name: "qty", Type: arrow.PrimitiveTypes.Int32, Nullable: true, Metadata: fid(2)},
	{Name: "seq", Type: arrow.PrimitiveTypes.Int64, Nullable: true, Metadata: fid(3)},
	{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fid(4)},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fid(5)},
	{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true, Metadata: fid(6)},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true, Metadata: fid(7)},
	{Name: "created", Type: tsUTC, Nullable: true, Metadata: fid(8)},
	{Name: "updated", Type: tsUTC, Nullable: true, Metadata: fid(9)},
	{Name: "maybe", Type: arrow.PrimitiveTypes.Int64, Nullable: true, Metadata: fid(10)},
}, nil)

var benchFile = sync.OnceValue(func() []byte {
	mem := memory.DefaultAllocator
	b := array.NewRecordBuilder(mem, benchSchema)
	defer b.Release()
	kinds := []string{"insert", "update", "delete", "merge", "noop"}
	for i := range benchRows {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.Int32Builder).Append(int32(i % 1000))
		b.Field(2).(*array.Int64Builder).Append(int64(i) * 7919 % 1000003)
		b.Field(3).(*array.StringBuilder).Append(kinds[i%len(kinds)])
		b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("customer-%08d", i*31%benchRows))
		b.Field(5).(*array.Float64Builder).Append(float64(i%10000) / 100)
		b.Field(6).(*array.Float64Builder).Append(float64(i) * 1.000001)
		b.Field(7).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + int64(i)*1000))
		b.Field(8).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + int64(i*7919%benchRows)*1_000_000))
		if i%3 == 0 {
			b.Field(9).AppendNull()
		} else {
			b.Field(9).(*array.Int64Builder).Append(int64(i))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(benchSchema, []arrow.RecordBatch{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(1<<18))
	if err := pqarrow.WriteTable(tbl, &buf, 1<<18, props, pqarrow.DefaultWriterProps()); err != nil {
		panic(err)
	}
	return buf.Bytes()
})

// BenchmarkRead reads a 1Mi-row, 10-column file (snappy, 4 row groups) in
// batches of 16Ki rows: with Read, and with a plain pqarrow record reader
// of the same columns for comparison.
func BenchmarkRead(b *testing.B) {
	data := benchFile()
	ctx := context.Background()
	fields := withoutMetadata(benchSchema.Fields())
	target := arrow.NewSchema(fields, nil)
	cols := make([]Column, len(fields))
	for i := range cols {
		cols[i] = Column{FieldID: ptr(i + 1)}
	}
	// A target that widens qty and drops created's zone.
	castFields := withoutMetadata(benchSchema.Fields())
	castFields[1].Type, castFields[7].Type = arrow.PrimitiveTypes.Int64, tsNTZ
	castTarget := arrow.NewSchema(castFields, nil)
	// On a shared machine the wall clock counts other processes' load:
	// cpu-ms/op (this process's CPU time, GC included) is the steadier
	// measure of the work.
	var cpu0 time.Duration
	start := func() { cpu0 = cpuTime() }
	report := func(b *testing.B, rows int64) {
		if rows != benchRows {
			b.Fatalf("%d rows", rows)
		}
		b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
	}
	b.Run("pqarrow", func(b *testing.B) {
		b.ReportAllocs()
		start()
		var rows int64
		for b.Loop() {
			rows = 0
			pf, err := file.NewParquetReader(bytes.NewReader(data))
			if err != nil {
				b.Fatal(err)
			}
			fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: DefaultBatchRows}, memory.DefaultAllocator)
			if err != nil {
				b.Fatal(err)
			}
			rr, err := fr.GetRecordReader(ctx, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			for rr.Next() {
				rows += rr.RecordBatch().NumRows()
			}
			if err := rr.Err(); err != nil {
				b.Fatal(err)
			}
			rr.Release()
		}
		report(b, rows)
	})
	for _, bc := range []struct {
		name   string
		target *arrow.Schema
		opts   Options
	}{
		{"Read", target, Options{}},
		{"Read/parallel=2", target, Options{Parallelism: 2}},
		{"Read/casts", castTarget, Options{}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			start()
			var rows int64
			for b.Loop() {
				rows = 0
				err := Read(ctx, bytes.NewReader(data), bc.target, cols, bc.opts, func(rec arrow.RecordBatch, _ int64) error {
					rows += rec.NumRows()
					rec.Release()
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			report(b, rows)
		})
	}
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
