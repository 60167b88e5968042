package pqread_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/sluicefeed/sluice/internal/lib/pqread"
)

// A file written with Iceberg field ids (id 1: an int32 "n", id 2: a
// string "s") read into a target that widens n, renames s, adds a
// partition value and a column the file predates.
func ExampleRead() {
	mem := memory.DefaultAllocator
	fileSchema := arrow.NewSchema([]arrow.Field{
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"1"})},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"2"})},
	}, nil)
	rec, _, _ := array.RecordFromJSON(mem, fileSchema, bytes.NewReader([]byte(`[{"n": 1, "s": "a"}, {"n": 2, "s": null}, {"n": 3, "s": "c"}]`)))
	tbl := array.NewTableFromRecords(fileSchema, []arrow.RecordBatch{rec})
	rec.Release()
	var buf bytes.Buffer
	if err := pqarrow.WriteTable(tbl, &buf, 2, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps()); err != nil {
		fmt.Println(err)
	}
	tbl.Release()

	target := arrow.NewSchema([]arrow.Field{
		{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
		{Name: "region", Type: arrow.BinaryTypes.String},
		{Name: "added_later", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
	two, one := 2, 1
	columns := []pqread.Column{
		{FieldID: &two},
		{FieldID: &one},
		{Constant: scalar.NewStringScalar("eu")},
		{},
	}
	err := pqread.Read(context.Background(), bytes.NewReader(buf.Bytes()), target, columns, pqread.Options{Allocator: mem},
		func(rec arrow.RecordBatch, first int64) error {
			defer rec.Release()
			for i := range int(rec.NumRows()) {
				fmt.Printf("row %d:", first+int64(i))
				for _, c := range rec.Columns() {
					fmt.Printf(" %s", c.ValueStr(i))
				}
				fmt.Println()
			}
			return nil
		})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// row 0: a 1 eu (null)
	// row 1: (null) 2 eu (null)
	// row 2: c 3 eu (null)
}
