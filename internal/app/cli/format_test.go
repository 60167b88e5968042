package cli

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// writeAll writes historyRows in two batches in format.
func writeAll(t *testing.T, format string) []byte {
	t.Helper()
	mem := checkedMem(t)
	var out bytes.Buffer
	rw, err := newRecordWriter(format, &out, changeSchema(), mem, painter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rows := range [][]string{historyRows[:2], historyRows[2:]} {
		rec := record(t, mem, changeSchema(), rows...)
		if err := rw.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestJSONL(t *testing.T) {
	want := strings.Join([]string{
		`{"op":"insert","before":null,"after":{"id":1,"name":"ann","amount":10.5},"snapshot":7036874417766400001,"ts":"2026-11-30T08:00:00Z"}`,
		`{"op":"update_before","before":{"id":1,"name":"ann","amount":10.5},"after":null,"snapshot":7036874417766400002,"ts":"2026-11-30T09:00:00Z"}`,
		`{"op":"update_after","before":null,"after":{"id":1,"name":"ann","amount":12},"snapshot":7036874417766400002,"ts":"2026-11-30T09:00:00Z"}`,
		`{"op":"update","before":{"id":2,"name":"bo","amount":1},"after":{"id":2,"name":"Bo Ek","amount":1},"snapshot":7036874417766400002,"ts":"2026-11-30T09:00:00Z"}`,
		`{"op":"delete","before":{"id":3,"name":null,"amount":3},"after":null,"snapshot":7036874417766400003,"ts":"2026-11-30T10:00:00.5Z"}`,
		""}, "\n")
	if got := string(writeAll(t, "jsonl")); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestJSONLEscapes(t *testing.T) {
	mem := checkedMem(t)
	rec := record(t, mem, changeSchema(),
		`{"op": "insert", "after": {"id": -9223372036854775808, "name": "a \"q\"\n\u00e5\u0001", "amount": 1e300}, "snapshot": 9223372036854775807}`)
	defer rec.Release()
	var out bytes.Buffer
	w := newJSONLWriter(&out)
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := `{"op":"insert","before":null,"after":{"id":-9223372036854775808,"name":"a \"q\"\nå\u0001","amount":1e+300},"snapshot":9223372036854775807,"ts":null}` + "\n"
	if out.String() != want {
		t.Fatalf("got  %s\nwant %s", out.String(), want)
	}
}

func TestCSV(t *testing.T) {
	// A null image leaves its fields empty even where the struct's child
	// arrays hold a value under the null (the insert's before below).
	want := strings.Join([]string{
		"op,before.id,before.name,before.amount,after.id,after.name,after.amount,snapshot,ts",
		"insert,,,,1,ann,10.5,7036874417766400001,2026-11-30 08:00:00Z",
		"update_before,1,ann,10.5,,,,7036874417766400002,2026-11-30 09:00:00Z",
		"update_after,,,,1,ann,12,7036874417766400002,2026-11-30 09:00:00Z",
		"update,2,bo,1,2,Bo Ek,1,7036874417766400002,2026-11-30 09:00:00Z",
		"delete,3,,3,,,,7036874417766400003,2026-11-30 10:00:00.5Z",
		""}, "\n")
	if got := string(writeAll(t, "csv")); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestCSVHidesValuesUnderNullStructs(t *testing.T) {
	mem := checkedMem(t)
	// A before struct whose children hold values under a null struct (row
	// 0), as a writer may leave them; row 1 is valid, from offset 1.
	rec := record(t, mem, changeSchema(),
		`{"op": "x", "before": {"id": 9, "name": "y", "amount": 0}, "after": null}`,
		`{"op": "insert", "before": {"id": 5, "name": "x", "amount": 2}, "after": {"id": 5, "name": "x", "amount": 2}}`,
		`{"op": "delete", "before": {"id": 6, "name": "z", "amount": 3}, "after": null}`)
	defer rec.Release()
	before := rec.Column(1).(*array.Struct)
	bm := memory.NewResizableBuffer(mem)
	bm.Resize(1)
	bm.Bytes()[0] = 0b101 // rows 0 and 2 valid; row 1 null
	st := changeSchema().Field(1).Type.(*arrow.StructType)
	nulled, err := array.NewStructArrayWithFieldsAndNulls(
		[]arrow.Array{before.Field(0), before.Field(1), before.Field(2)}, st.Fields(), bm, 1, 0)
	bm.Release()
	if err != nil {
		t.Fatal(err)
	}
	defer nulled.Release()
	cols := []arrow.Array{rec.Column(0), nulled, rec.Column(2), rec.Column(3), rec.Column(4)}
	withNull := array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
	defer withNull.Release()
	sliced := withNull.NewSlice(1, 3)
	defer sliced.Release()
	var out bytes.Buffer
	w := newCSVWriter(&out, rec.Schema(), mem)
	if err := w.Write(sliced); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := "op,before.id,before.name,before.amount,after.id,after.name,after.amount,snapshot,ts\n" +
		"insert,,,,5,x,2,,\n" +
		"delete,6,z,3,,,,,\n"
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestParquetAndArrowRoundTrip(t *testing.T) {
	mem := checkedMem(t)
	want := record(t, mem, changeSchema(), historyRows...)
	defer want.Release()
	for _, format := range []string{"parquet", "arrow"} {
		t.Run(format, func(t *testing.T) {
			b := writeAll(t, format)
			var got arrow.Table
			switch format {
			case "parquet":
				rdr, err := file.NewParquetReader(bytes.NewReader(b))
				if err != nil {
					t.Fatal(err)
				}
				fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, mem)
				if err != nil {
					t.Fatal(err)
				}
				if got, err = fr.ReadTable(t.Context()); err != nil {
					t.Fatal(err)
				}
				rdr.Close()
			case "arrow":
				fr, err := ipc.NewFileReader(bytes.NewReader(b), ipc.WithAllocator(mem))
				if err != nil {
					t.Fatal(err)
				}
				var recs []arrow.RecordBatch
				for i := range fr.NumRecords() {
					r, err := fr.RecordBatchAt(i)
					if err != nil {
						t.Fatal(err)
					}
					defer r.Release()
					recs = append(recs, r)
				}
				got = array.NewTableFromRecords(fr.Schema(), recs)
				fr.Close()
			}
			defer got.Release()
			tr := array.NewTableReader(got, -1)
			defer tr.Release()
			var n int64
			for tr.Next() {
				r := tr.RecordBatch()
				exp := want.NewSlice(n, n+r.NumRows())
				if !array.RecordEqual(exp, r) {
					t.Errorf("rows %d..: got\n%v\nwant\n%v", n, r, exp)
				}
				exp.Release()
				n += r.NumRows()
			}
			if n != want.NumRows() || !sameFields(got.Schema(), want.Schema()) {
				t.Fatalf("%d rows of %s, want %d of %s", n, got.Schema(), want.NumRows(), want.Schema())
			}
		})
	}
}

func TestWriteFileAtomically(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.jsonl")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("stream broke")
	err := writeFileAtomically(path, func(w io.Writer) error {
		if _, err := io.WriteString(w, "half a window\n"); err != nil {
			t.Fatal(err)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old\n" {
		t.Fatalf("a failed write changed the file: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("a failed write left %d files", len(ents))
	}
	if err := writeFileAtomically(path, func(w io.Writer) error {
		_, err := io.WriteString(w, "whole\n")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "whole\n" {
		t.Fatalf("file %q", b)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d files, want 1", len(ents))
	}
}

// sameFields compares names, types and nullability, not metadata (Parquet
// adds field ids).
func sameFields(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i, f := range a.Fields() {
		g := b.Field(i)
		if f.Name != g.Name || f.Nullable != g.Nullable || !arrow.TypeEqual(f.Type, g.Type) {
			return false
		}
	}
	return true
}
