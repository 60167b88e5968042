package delta

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// fixtures is the repository's copy of the shared Delta test tables.
const fixtures = "../../testdata/delta"

// fixtureTables returns the fixture tables, as folders relative to
// fixtures: the shared ones and those under written/.
func fixtureTables(t *testing.T) []string {
	t.Helper()
	var tables []string
	for _, pattern := range []string{"*/_delta_log", "written/*/_delta_log"} {
		logs, err := filepath.Glob(filepath.Join(fixtures, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range logs {
			rel, err := filepath.Rel(fixtures, filepath.Dir(l))
			if err != nil {
				t.Fatal(err)
			}
			tables = append(tables, rel)
		}
	}
	if len(tables) < 10 {
		t.Fatalf("only %d fixture tables under %s", len(tables), fixtures)
	}
	return tables
}

// fixtureActions calls fn with every action of table's JSON log files
// (commits and JSON checkpoints), in the order of their names, and the
// file's name.
func fixtureActions(t *testing.T, table string, fn func(file string, a *Action)) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(fixtures, table, "_delta_log", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no commits of %s: %v", table, err)
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var a Action
			if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			fn(filepath.Base(p), &a)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// logDVs returns the deletion vectors the adds of table's commits carry,
// by commit version (an add without one maps to nil).
func logDVs(t *testing.T, table string) map[int]*DeletionVector {
	t.Helper()
	dvs := map[int]*DeletionVector{}
	fixtureActions(t, table, func(file string, a *Action) {
		v, err := strconv.Atoi(strings.TrimSuffix(file, ".json"))
		if err == nil && a.Add != nil {
			dvs[v] = a.Add.DeletionVector
		}
	})
	return dvs
}

// TestReadDeletionVectorAllFixtures reads every deletion vector of every
// fixture (Spark's written ones hold several vectors per file): each
// decodes with the cardinality its descriptor says, and deletes only rows
// its file has (numRecords of the add's statistics).
func TestReadDeletionVectorAllFixtures(t *testing.T) {
	read := 0
	for _, table := range fixtureTables(t) {
		seen := map[string]bool{}
		fixtureActions(t, table, func(file string, a *Action) {
			var dv *DeletionVector
			var stats string
			switch {
			case a.Add != nil:
				dv, stats = a.Add.DeletionVector, a.Add.Stats
			case a.Remove != nil:
				dv, stats = a.Remove.DeletionVector, a.Remove.Stats
			}
			if dv == nil {
				return
			}
			id := dvID(dv)
			if seen[id] {
				return
			}
			seen[id] = true
			bm, err := ReadDeletionVector(os.DirFS(filepath.Join(fixtures, table)), dv)
			if err != nil {
				t.Fatalf("%s/%s: %v", table, file, err)
			}
			read++
			var s struct {
				NumRecords *uint64 `json:"numRecords"`
			}
			if stats != "" && json.Unmarshal([]byte(stats), &s) == nil && s.NumRecords != nil && !bm.IsEmpty() && uint64(bm.Maximum()) >= *s.NumRecords {
				t.Fatalf("%s/%s: %s deletes row %d of a file of %d rows", table, file, id, bm.Maximum(), *s.NumRecords)
			}
		})
	}
	if read < 10 {
		t.Fatalf("read only %d deletion vectors", read)
	}
}

// fixtureValues reads the int32 column "value" of a fixture's data file:
// value[i] is the value of row i.
func fixtureValues(t *testing.T, path string) []int32 {
	t.Helper()
	var values []int32
	for _, v := range fixtureColumn(t, path, "value") {
		values = append(values, int32(v))
	}
	return values
}

// fixtureColumn reads an integer column of a data file, by row.
func fixtureColumn(t *testing.T, path, column string) []int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tbl, err := pqarrow.ReadTable(context.Background(), f, nil, pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	idx := tbl.Schema().FieldIndices(column)
	if len(idx) != 1 {
		t.Fatalf("%s has no column %q", path, column)
	}
	var values []int64
	for _, c := range tbl.Column(idx[0]).Data().Chunks() {
		switch c := c.(type) {
		case *array.Int32:
			for _, v := range c.Int32Values() {
				values = append(values, int64(v))
			}
		case *array.Int64:
			values = append(values, c.Int64Values()...)
		default:
			t.Fatalf("%s: column %q is %s", path, column, c.DataType())
		}
	}
	return values
}

// TestReadDeletionVectorSparkSnapshots checks the vectors Spark wrote
// against Spark's own snapshots (EXPECTED.json): at every version, the
// ids of the rows the table's files hold, less the rows their vectors
// delete, are the ids of the snapshot's rows. The table's files at a
// version come from replaying its JSON commits (an add replaces the file
// of its path, a remove drops it).
func TestReadDeletionVectorSparkSnapshots(t *testing.T) {
	for _, table := range []string{"written/spark_dv", "written/spark_dv_cdf"} {
		t.Run(table, func(t *testing.T) {
			root := filepath.Join(fixtures, table)
			raw, err := os.ReadFile(filepath.Join(root, "EXPECTED.json"))
			if err != nil {
				t.Fatal(err)
			}
			var expected struct {
				Snapshots []struct {
					Version int                  `json:"version"`
					Rows    []struct{ ID int64 } `json:"rows"`
				} `json:"snapshots"`
			}
			if err := json.Unmarshal(raw, &expected); err != nil {
				t.Fatal(err)
			}
			// A logical file is its path and its vector ("Action
			// Reconciliation"): Spark's commits that replace a vector
			// add the new one before removing the old.
			type logical struct{ path, dv string }
			key := func(path string, dv *DeletionVector) logical { return logical{path, dvID(dv)} }
			files := map[logical]*DeletionVector{}
			byVersion := map[int]map[logical]*DeletionVector{}
			fixtureActions(t, table, func(file string, a *Action) {
				v, err := strconv.Atoi(strings.TrimSuffix(file, ".json"))
				if err != nil {
					return // a checkpoint
				}
				switch {
				case a.Add != nil:
					files[key(a.Add.Path, a.Add.DeletionVector)] = a.Add.DeletionVector
				case a.Remove != nil:
					delete(files, key(a.Remove.Path, a.Remove.DeletionVector))
				}
				byVersion[v] = maps.Clone(files)
			})
			ids := map[string][]int64{}
			checked := 0
			for _, snap := range expected.Snapshots {
				var want, got []int64
				for _, r := range snap.Rows {
					want = append(want, r.ID)
				}
				for f, dv := range byVersion[snap.Version] {
					path := f.path
					if ids[path] == nil {
						ids[path] = fixtureColumn(t, filepath.Join(root, path), "id")
					}
					deleted := roaring.New()
					if dv != nil {
						if deleted, err = ReadDeletionVector(os.DirFS(root), dv); err != nil {
							t.Fatalf("version %d, %s: %v", snap.Version, path, err)
						}
						checked++
					}
					for row, id := range ids[path] {
						if !deleted.Contains(uint32(row)) {
							got = append(got, id)
						}
					}
				}
				slices.Sort(want)
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Fatalf("version %d: live ids %v, Spark's snapshot %v", snap.Version, got, want)
				}
			}
			if checked < 5 {
				t.Fatalf("checked only %d vectors", checked)
			}
		})
	}
}

// deletedValues maps the rows bm deletes to their values.
func deletedValues(bm *roaring.Bitmap, values []int32) []int32 {
	var out []int32
	for _, r := range bm.ToArray() {
		out = append(out, values[r])
	}
	slices.Sort(out)
	return out
}

// TestReadDeletionVectorTableWithDVSmall: commit 1 is a DELETE of
// `value IN (0, 9)` and the README counts 8 of 10 rows visible, so the
// file vector deletes the two rows holding 0 and 9.
func TestReadDeletionVectorTableWithDVSmall(t *testing.T) {
	const table = "table-with-dv-small"
	dv := logDVs(t, table)[1]
	if dv == nil || dv.StorageType != dvRelative {
		t.Fatalf("commit 1 carries %+v, want a relative vector", dv)
	}
	bm, err := ReadDeletionVector(os.DirFS(filepath.Join(fixtures, table)), dv)
	if err != nil {
		t.Fatal(err)
	}
	if got := bm.ToArray(); !slices.Equal(got, []uint32{0, 9}) {
		t.Fatalf("rows %v, want [0 9]", got)
	}
	values := fixtureValues(t, filepath.Join(fixtures, table, "part-00000-fae5310a-a37d-4e51-827b-c3d5516560ca-c000.snappy.parquet"))
	if got := deletedValues(bm, values); !slices.Equal(got, []int32{0, 9}) {
		t.Fatalf("deleted values %v, want [0 9]", got)
	}
}

// TestReadDeletionVectorCDFTableWithDV checks every vector of
// cdf-table-with-dv (one in a file, three inline, one of those with the
// z85 crate's padding) against EXPECTED.json: the rows deleted after a
// commit are those deleted before it, plus the commit's delete rows, minus
// its inserts.
func TestReadDeletionVectorCDFTableWithDV(t *testing.T) {
	const table = "cdf-table-with-dv"
	root := filepath.Join(fixtures, table)
	values := fixtureValues(t, filepath.Join(root, "part-00000-fae5310a-a37d-4e51-827b-c3d5516560ca-c000.snappy.parquet"))
	raw, err := os.ReadFile(filepath.Join(root, "EXPECTED.json"))
	if err != nil {
		t.Fatal(err)
	}
	var expected struct {
		Queries []struct {
			Rows []struct {
				Value   int32  `json:"value"`
				Change  string `json:"_change_type"`
				Version int    `json:"_commit_version"`
			} `json:"rows"`
		} `json:"queries"`
	}
	if err := json.Unmarshal(raw, &expected); err != nil || len(expected.Queries) != 1 {
		t.Fatalf("EXPECTED.json: %v", err)
	}
	dvs := logDVs(t, table)
	deleted := map[int32]bool{}
	kinds := map[string]int{}
	for v := 1; v < len(dvs); v++ {
		for _, r := range expected.Queries[0].Rows {
			if r.Version == v {
				deleted[r.Value] = r.Change == "delete"
			}
		}
		var want []int32
		for value, del := range deleted {
			if del {
				want = append(want, value)
			}
		}
		slices.Sort(want)
		dv := dvs[v]
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			if dv == nil {
				if len(want) != 0 {
					t.Fatalf("no vector, want deleted values %v", want)
				}
				return
			}
			kinds[dv.StorageType]++
			bm, err := ReadDeletionVector(os.DirFS(root), dv)
			if err != nil {
				t.Fatal(err)
			}
			if got := deletedValues(bm, values); !slices.Equal(got, want) {
				t.Fatalf("deleted values %v, want %v", got, want)
			}
		})
	}
	if kinds[dvInline] != 3 || kinds[dvRelative] != 1 {
		t.Fatalf("read %v vectors, want 3 inline and 1 relative", kinds)
	}
}
