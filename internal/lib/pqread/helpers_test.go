package pqread

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// fid is arrow field metadata carrying a Parquet field id.
func fid(id int) arrow.Metadata {
	return arrow.NewMetadata([]string{fieldIDKey}, []string{strconv.Itoa(id)})
}

func ptr(i int) *int { return &i }

// fromJSON is a batch of sc from JSON rows.
func fromJSON(t testing.TB, mem memory.Allocator, sc *arrow.Schema, rows string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(mem, sc, strings.NewReader(rows))
	if err != nil {
		t.Fatalf("record from JSON: %v", err)
	}
	return rec
}

// writeParquet writes rec as a Parquet file of row groups of rgRows rows.
func writeParquet(t testing.TB, rec arrow.RecordBatch, rgRows int64, arrowOpts ...pqarrow.WriterOption) *bytes.Reader {
	t.Helper()
	tbl := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(rgRows))
	if err := pqarrow.WriteTable(tbl, &buf, rgRows, props, pqarrow.NewArrowWriterProperties(arrowOpts...)); err != nil {
		t.Fatalf("write parquet: %v", err)
	}
	return bytes.NewReader(buf.Bytes())
}

// openFile opens a fixture file, closed at the end of the test.
func openFile(t testing.TB, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// result is what a Read yielded: its batches' first positions and lengths,
// and their rows in one batch.
type result struct {
	firsts, lens []int64
	rec          arrow.RecordBatch // nil when no batch came
}

func (r *result) release() {
	if r.rec != nil {
		r.rec.Release()
	}
}

// readAll reads f whole into one batch; the caller releases it.
func readAll(t testing.TB, f parquet.ReaderAtSeeker, target *arrow.Schema, cols []Column, opts Options) (*result, error) {
	t.Helper()
	res := &result{}
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	err := Read(context.Background(), f, target, cols, opts, func(rec arrow.RecordBatch, first int64) error {
		if !rec.Schema().Equal(target) {
			rec.Release()
			t.Fatalf("batch schema %s, want %s", rec.Schema(), target)
		}
		recs = append(recs, rec)
		res.firsts = append(res.firsts, first)
		res.lens = append(res.lens, rec.NumRows())
		return nil
	})
	if err != nil || len(recs) == 0 {
		return res, err
	}
	res.rec = concat(t, opts.Allocator, target, recs)
	return res, nil
}

// concat is recs in one batch.
func concat(t testing.TB, mem memory.Allocator, sc *arrow.Schema, recs []arrow.RecordBatch) arrow.RecordBatch {
	t.Helper()
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	cols := make([]arrow.Array, sc.NumFields())
	n := int64(0)
	for _, r := range recs {
		n += r.NumRows()
	}
	for i := range cols {
		parts := make([]arrow.Array, len(recs))
		for j, r := range recs {
			parts[j] = r.Column(i)
		}
		c, err := array.Concatenate(parts, mem)
		if err != nil {
			t.Fatalf("concatenate: %v", err)
		}
		defer c.Release()
		cols[i] = c
	}
	return array.NewRecordBatch(sc, cols, n)
}

// wantEqual fails unless got has the rows of want, compared as JSON (which,
// unlike array.RecordEqual, ignores the children of a null struct).
func wantEqual(t testing.TB, got, want arrow.RecordBatch) {
	t.Helper()
	if got == nil {
		t.Fatalf("no rows, want %d", want.NumRows())
	}
	var g, w strings.Builder
	if err := array.RecordToJSON(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := array.RecordToJSON(want, &w); err != nil {
		t.Fatal(err)
	}
	if !got.Schema().Equal(want.Schema()) || g.String() != w.String() {
		t.Fatalf("got rows of %s\n%s\nwant of %s\n%s", got.Schema(), g.String(), want.Schema(), w.String())
	}
}
