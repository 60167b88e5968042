package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// formats are the outputs of `sluice changes -o`.
var formats = []string{"table", "jsonl", "csv", "parquet", "arrow"}

// binaryFormat reports a format a terminal must not receive.
func binaryFormat(f string) bool { return f == "parquet" || f == "arrow" }

// formatOfPath guesses the format from a file name's extension; "" when
// it does not tell.
func formatOfPath(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson", ".json":
		return "jsonl"
	case ".csv":
		return "csv"
	case ".parquet", ".pq":
		return "parquet"
	case ".arrow", ".arrows", ".ipc", ".feather":
		return "arrow"
	case ".txt":
		return "table"
	}
	return ""
}

// recordWriter writes the batches of one stream in a format.
type recordWriter interface {
	Write(rec arrow.RecordBatch) error
	// Close writes what the format keeps for its end (a footer) and
	// flushes; it does not close the underlying writer.
	Close() error
}

// newRecordWriter returns the writer of format to w for batches of schema.
func newRecordWriter(format string, w io.Writer, schema *arrow.Schema, mem memory.Allocator, p painter) (recordWriter, error) {
	switch format {
	case "table":
		return &tableWriter{w: w, p: p}, nil
	case "jsonl":
		return newJSONLWriter(w), nil
	case "csv":
		return newCSVWriter(w, schema, mem), nil
	case "parquet":
		props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithAllocator(mem))
		fw, err := pqarrow.NewFileWriter(schema, w, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			return nil, fmt.Errorf("parquet: %w", err)
		}
		return fw, nil
	case "arrow":
		return ipc.NewFileWriter(w, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	}
	return nil, usagef("-o %q: want one of %s", format, strings.Join(formats, ", "))
}

// jsonlWriter writes one JSON object per change row, the columns in schema
// order: structs as objects, timestamps as RFC 3339 strings, int64 ids as
// exact JSON numbers, nulls as null.
type jsonlWriter struct {
	w   *bufio.Writer
	buf []byte
}

func newJSONLWriter(w io.Writer) *jsonlWriter {
	return &jsonlWriter{w: bufio.NewWriterSize(w, 64<<10)}
}

func (j *jsonlWriter) Write(rec arrow.RecordBatch) error {
	fields := rec.Schema().Fields()
	for i := range int(rec.NumRows()) {
		b := append(j.buf[:0], '{')
		for c, f := range fields {
			if c > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendQuote(b, f.Name)
			b = append(b, ':')
			var err error
			if b, err = appendJSON(b, rec.Column(c), i); err != nil {
				return fmt.Errorf("column %s: %w", f.Name, err)
			}
		}
		b = append(b, '}', '\n')
		j.buf = b
		if _, err := j.w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

func (j *jsonlWriter) Close() error { return j.w.Flush() }

// Flush writes out the rows written so far.
func (j *jsonlWriter) Flush() error { return j.w.Flush() }

// appendJSON appends the JSON of a's value at i.
func appendJSON(b []byte, a arrow.Array, i int) ([]byte, error) {
	if a.IsNull(i) {
		return append(b, "null"...), nil
	}
	switch a := a.(type) {
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		b = append(b, '{')
		for k := range a.NumField() {
			if k > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, st.Field(k).Name)
			b = append(b, ':')
			var err error
			if b, err = appendJSON(b, a.Field(k), i); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case *array.Timestamp:
		return appendJSONString(b, display(a, i).text), nil
	case *array.String:
		return appendJSONString(b, a.Value(i)), nil
	case *array.Int64:
		return strconv.AppendInt(b, a.Value(i), 10), nil
	}
	v, err := json.Marshal(a.GetOneForMarshal(i))
	if err != nil {
		return nil, err
	}
	return append(b, v...), nil
}

func appendJSONString(b []byte, s string) []byte {
	v, _ := json.Marshal(s) // a string always marshals
	return append(b, v...)
}

// csvWriter writes CSV with a header: struct columns are flattened into
// one column per field ("before.order_id", "after.order_id"), null as an
// empty field, timestamps as arrow's CSV writer prints them, nested lists
// and maps as JSON.
type csvWriter struct {
	w   *csv.Writer
	mem memory.Allocator
}

func newCSVWriter(w io.Writer, schema *arrow.Schema, mem memory.Allocator) *csvWriter {
	flat := arrow.NewSchema(flattenFields("", schema.Fields()), nil)
	return &csvWriter{mem: mem, w: csv.NewWriter(w, flat, csv.WithHeader(true), csv.WithNullWriter(""),
		csv.WithCustomTypeConverter(nestedAsJSON))}
}

func (c *csvWriter) Write(rec arrow.RecordBatch) error {
	var cols []arrow.Array
	defer func() {
		for _, a := range cols {
			a.Release()
		}
	}()
	for j := range int(rec.NumCols()) {
		rec.Column(j).Retain()
		cols = flattenArray(cols, rec.Column(j), c.mem)
	}
	flat := array.NewRecordBatch(c.w.Schema(), cols, rec.NumRows())
	defer flat.Release()
	return c.w.Write(flat)
}

func (c *csvWriter) Close() error { return c.w.Flush() }

// Flush writes out the rows written so far.
func (c *csvWriter) Flush() error { return c.w.Flush() }

// nestedAsJSON is the CSV of the types arrow's CSV writer does not write.
func nestedAsJSON(typ arrow.DataType, col arrow.Array) ([]string, bool) {
	switch typ.(type) {
	case *arrow.ListType, *arrow.LargeListType, *arrow.FixedSizeListType, *arrow.MapType,
		*arrow.ListViewType, *arrow.LargeListViewType, *arrow.StructType:
	default:
		return nil, false
	}
	out := make([]string, col.Len())
	for i := range out {
		if col.IsValid(i) {
			b, _ := appendJSON(nil, col, i)
			out[i] = string(b)
		}
	}
	return out, true
}

// flattenFields lists the leaf fields of structs as "parent.child", all
// nullable.
func flattenFields(prefix string, fields []arrow.Field) []arrow.Field {
	var out []arrow.Field
	for _, f := range fields {
		name := prefix + f.Name
		if st, ok := f.Type.(*arrow.StructType); ok {
			out = append(out, flattenFields(name+".", st.Fields())...)
			continue
		}
		out = append(out, arrow.Field{Name: name, Type: f.Type, Nullable: true})
	}
	return out
}

// flattenArray appends a (which it takes over) or, for a struct, its
// fields, each null where the struct is null, recursively.
func flattenArray(out []arrow.Array, a arrow.Array, mem memory.Allocator) []arrow.Array {
	s, ok := a.(*array.Struct)
	if !ok {
		return append(out, a)
	}
	defer s.Release()
	for k := range s.NumField() {
		out = flattenArray(out, withParentNulls(s, s.Field(k), mem), mem)
	}
	return out
}

// withParentNulls returns child (retained) with nulls also where parent
// is null: a struct's child arrays keep their own validity only.
func withParentNulls(parent, child arrow.Array, mem memory.Allocator) arrow.Array {
	if parent.NullN() == 0 || child.DataType().ID() == arrow.NULL {
		child.Retain()
		return child
	}
	d := child.Data()
	off, n := d.Offset(), d.Len()
	bm := memory.NewResizableBuffer(mem)
	bm.Resize(int(bitutil.BytesForBits(int64(off + n))))
	bits := bm.Bytes()
	clear(bits)
	nulls := 0
	for i := range n {
		if parent.IsValid(i) && child.IsValid(i) {
			bitutil.SetBit(bits, off+i)
		} else {
			nulls++
		}
	}
	bufs := slices.Clone(d.Buffers())
	bufs[0] = bm
	nd := array.NewData(d.DataType(), n, bufs, d.Children(), nulls, off)
	bm.Release()
	defer nd.Release()
	return array.MakeFromData(nd)
}
