package pqread

import (
	"context"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Real files: Iceberg data and delete files Spark and pyiceberg wrote
// (with field ids), and Delta data, change and checkpoint files Spark,
// Databricks and delta-rs wrote.
const (
	icebergFixtures = "../../../feed/testdata/fixtures/*/data/*.parquet"
	deltaFixtures   = "../../../testdata/delta"
)

func deltaFiles(t *testing.T, under string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(deltaFixtures, under), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// oracle reads f whole with pqarrow, in the file's own types.
func oracle(t testing.TB, mem memory.Allocator, f parquet.ReaderAtSeeker) arrow.RecordBatch {
	t.Helper()
	tbl, err := pqarrow.ReadTable(context.Background(), f, parquet.NewReaderProperties(mem), pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		t.Fatalf("pqarrow: %v", err)
	}
	defer tbl.Release()
	cols := make([]arrow.Array, tbl.NumCols())
	for i := range cols {
		c, err := array.Concatenate(tbl.Column(i).Data().Chunks(), mem)
		if err != nil {
			if len(tbl.Column(i).Data().Chunks()) == 0 {
				c = array.MakeArrayOfNull(mem, tbl.Column(i).DataType(), 0)
			} else {
				t.Fatal(err)
			}
		}
		defer c.Release()
		cols[i] = c
	}
	return array.NewRecordBatch(tbl.Schema(), cols, tbl.NumRows())
}

// reversed is rec's columns in reverse order, under a schema without field
// metadata.
func reversed(rec arrow.RecordBatch) arrow.RecordBatch {
	fields := withoutMetadata(rec.Schema().Fields())
	cols := slices.Clone(rec.Columns())
	slices.Reverse(fields)
	slices.Reverse(cols)
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
}

// TestReadFixtures reads every fixture file with its columns reversed, by
// field id (Iceberg) or name (Delta), and checks the rows against
// pqarrow's reading of the whole file.
func TestReadFixtures(t *testing.T) {
	iceberg, err := filepath.Glob(icebergFixtures)
	if err != nil || len(iceberg) == 0 {
		t.Fatalf("no Iceberg fixtures: %v", err)
	}
	delta := deltaFiles(t, "")
	if len(delta) == 0 {
		t.Fatal("no Delta fixtures")
	}
	for _, p := range append(iceberg, delta...) {
		byID := !strings.HasPrefix(p, deltaFixtures)
		name, _ := filepath.Rel("../../..", p)
		t.Run(name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			f := openFile(t, p)
			full := oracle(t, mem, f)
			defer full.Release()
			want := reversed(full)
			defer want.Release()
			cols := make([]Column, want.NumCols())
			for i := range cols {
				src := full.Schema().Field(full.Schema().NumFields() - 1 - i)
				cols[i] = Column{Name: src.Name}
				if byID {
					id, ok := src.Metadata.GetValue(fieldIDKey)
					if !ok || id == "-1" {
						t.Fatalf("column %s has no field id", src.Name)
					}
					cols[i] = Column{FieldID: ptr(atoi(t, id))}
				}
			}
			res, err := readAll(t, f, want.Schema(), cols, Options{Allocator: mem, Path: name, BatchRows: 7})
			if err != nil {
				t.Fatal(err)
			}
			defer res.release()
			if want.NumRows() == 0 {
				if res.rec != nil {
					t.Fatalf("%d rows from an empty file", res.rec.NumRows())
				}
				return
			}
			wantEqual(t, res.rec, want)
			if res.firsts[0] != 0 {
				t.Errorf("first batch at %d", res.firsts[0])
			}
		})
	}
}

// TestReadDeltaPartitions reads the files delta-rs wrote to a table
// partitioned by region, with the partition value as a constant: null for
// Hive's default partition.
func TestReadDeltaPartitions(t *testing.T) {
	files := deltaFiles(t, "written/deltars_seed1")
	n := 0
	for _, p := range files {
		dir := filepath.Base(filepath.Dir(p))
		region, ok := strings.CutPrefix(dir, "region=")
		if !ok {
			continue
		}
		n++
		t.Run(dir+"/"+filepath.Base(p), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			f := openFile(t, p)
			full := oracle(t, mem, f)
			defer full.Release()
			fields := withoutMetadata(full.Schema().Fields())
			cols := make([]Column, len(fields))
			for i, fl := range fields {
				cols[i] = Column{Name: fl.Name}
			}
			var c scalar.Scalar = scalar.NewStringScalar(region)
			if region == "__HIVE_DEFAULT_PARTITION__" {
				c = scalar.MakeNullScalar(arrow.BinaryTypes.String)
			}
			fields = append(fields, field("region", arrow.BinaryTypes.String))
			cols = append(cols, Column{Constant: c})
			target := arrow.NewSchema(fields, nil)
			res, err := readAll(t, f, target, cols, Options{Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			defer res.release()
			got := res.rec.Column(len(fields) - 1).(*array.String)
			for i := range got.Len() {
				if got.IsValid(i) != c.IsValid() || (c.IsValid() && got.Value(i) != region) {
					t.Fatalf("row %d: region %v, want %v", i, got.ValueStr(i), c)
				}
			}
			for i := range int(full.NumCols()) {
				if !array.Equal(res.rec.Column(i), full.Column(i)) {
					t.Fatalf("column %s differs", fields[i].Name)
				}
			}
		})
	}
	if n == 0 {
		t.Fatal("no partitioned files")
	}
}

// TestReadColumnMapping reads a Databricks table with column mapping: its
// column by the mapping's id and by its physical name, its partition
// column as a constant.
func TestReadColumnMapping(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	files := deltaFiles(t, "table_with_column_mapping/BH")
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	f := openFile(t, files[0])
	target := arrow.NewSchema([]arrow.Field{field("Company Very Short", arrow.BinaryTypes.String), field("Super Name", arrow.BinaryTypes.String)}, nil)
	company := Column{Constant: scalar.NewStringScalar("BMS")}
	byID, err := readAll(t, f, target, []Column{company, {FieldID: ptr(2)}}, Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer byID.release()
	byName, err := readAll(t, f, target, []Column{company, {Name: "col-3877fd94-0973-4941-ac6b-646849a1ff65"}}, Options{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer byName.release()
	wantEqual(t, byName.rec, byID.rec)
	names := byID.rec.Column(1).(*array.String)
	var all []string
	for i := range names.Len() {
		all = append(all, names.Value(i))
	}
	// The file's statistics give its least and greatest name.
	if byID.rec.NumRows() != 4 || !slices.Contains(all, "Anthony Johnson") || !slices.Contains(all, "Stephanie Mcgrath") {
		t.Fatalf("names %q", all)
	}
	if c := byID.rec.Column(0).(*array.String); c.NullN() != 0 || c.Value(3) != "BMS" {
		t.Fatalf("company %v", c)
	}
}

// TestReadInt96Fixture reads the INT96 timestamps a Databricks (Photon)
// writer wrote, as microseconds.
func TestReadInt96Fixture(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	f := openFile(t, filepath.Join(deltaFixtures, "checkpoint-v2-table/part-00000-247edc12-0eb3-44dc-9d39-42b50dbe6a6b.c000.snappy.parquet"))
	m, err := Footer(f)
	if err != nil {
		t.Fatal(err)
	}
	leaf, ok := m.LeafIndex(Column{Name: "created_at"})
	if !ok || m.File.Schema.Column(leaf).PhysicalType() != parquet.Types.Int96 {
		t.Fatalf("created_at is not INT96")
	}
	full := oracle(t, mem, f)
	defer full.Release()
	target := arrow.NewSchema([]arrow.Field{field("created_at", tsUTC)}, nil)
	res, err := readAll(t, f, target, []Column{{Name: "created_at"}}, Options{Allocator: mem, Meta: m})
	if err != nil {
		t.Fatal(err)
	}
	defer res.release()
	ns := full.Column(2).(*array.Timestamp)
	us := res.rec.Column(0).(*array.Timestamp)
	for i := range ns.Len() {
		if us.Value(i)*1000 != ns.Value(i) {
			t.Fatalf("row %d: %d µs from %d ns", i, us.Value(i), ns.Value(i))
		}
	}
}

func atoi(t testing.TB, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
