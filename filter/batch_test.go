package filter_test

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/sluicefeed/sluice/lake"
)

// sampleBatch is rows (values in iceberg-go's Go types, schema order) as
// an Arrow record of schema's Arrow schema. The caller releases it; the
// test fails if memory leaks.
func sampleBatch(t testing.TB, schema *lake.Schema, rows []iceberg.StructLike) arrow.RecordBatch {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	b := array.NewRecordBuilder(mem, schema.ToArrow())
	defer b.Release()
	for _, r := range rows {
		for i := range b.Fields() {
			appendValue(t, b.Field(i), r.Get(i))
		}
	}
	return b.NewRecordBatch()
}

// appendValue appends one value (nil: null) to a builder.
func appendValue(t testing.TB, b array.Builder, v any) {
	t.Helper()
	if v == nil {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Int32Builder:
		b.Append(v.(int32))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.Float32Builder:
		b.Append(v.(float32))
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.Date32Builder:
		b.Append(arrow.Date32(v.(iceberg.Date)))
	case *array.TimestampBuilder:
		switch x := v.(type) {
		case iceberg.Timestamp:
			b.Append(arrow.Timestamp(x))
		case iceberg.TimestampNano:
			b.Append(arrow.Timestamp(x))
		}
	case *array.Decimal128Builder:
		b.Append(v.(iceberg.Decimal).Val)
	case *array.StructBuilder:
		b.Append(true)
		r := v.(row)
		for i := range b.NumField() {
			appendValue(t, b.FieldBuilder(i), r[i])
		}
	default:
		t.Fatalf("no appender for %T of %v", b, fmt.Sprint(v))
	}
}
