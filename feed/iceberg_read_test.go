package feed_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/sluicefeed/sluice/feed"
	"github.com/sluicefeed/sluice/internal/lib/arrowpool"
	"github.com/sluicefeed/sluice/internal/lib/tablewrite"
)

// refSchema is the schema of the benchmark's reference-like table: the 11
// columns of internal/app/bench's reference workload.
func refSchema() *iceberg.Schema {
	f := func(id int, name string, t iceberg.Type, req bool) iceberg.NestedField {
		return iceberg.NestedField{ID: id, Name: name, Type: t, Required: req}
	}
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		f(1, "id", iceberg.PrimitiveTypes.Int64, true),
		f(2, "customer_id", iceberg.PrimitiveTypes.Int64, false),
		f(3, "country", iceberg.PrimitiveTypes.String, false),
		f(4, "name", iceberg.PrimitiveTypes.String, false),
		f(5, "email", iceberg.PrimitiveTypes.String, false),
		f(6, "amount", iceberg.PrimitiveTypes.Float64, false),
		f(7, "discount", iceberg.PrimitiveTypes.Float64, false),
		f(8, "created_at", iceberg.PrimitiveTypes.TimestampTz, false),
		f(9, "updated_at", iceberg.PrimitiveTypes.TimestampTz, false),
		f(10, "active", iceberg.PrimitiveTypes.Bool, false),
		f(11, "priority", iceberg.PrimitiveTypes.Int32, false),
	)
}

// refRows builds n rows of refSchema with ids from 1, sorted by country.
func refRows(sc *arrow.Schema, n int) arrow.RecordBatch {
	r := rand.New(rand.NewPCG(1, 1))
	countries := []string{"DE", "DK", "ES", "FI", "FR", "IT", "NL", "NO", "PL", "SE", "SE", "SE"}
	cs := make([]string, n)
	for i := range cs {
		cs[i] = countries[r.IntN(len(countries))]
	}
	slices.Sort(cs)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i + 1))
		b.Field(1).(*array.Int64Builder).Append(r.Int64N(1_000_000))
		b.Field(2).(*array.StringBuilder).Append(cs[i])
		b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("customer %d", r.IntN(100000)))
		b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("user%d@example.com", r.IntN(1_000_000)))
		b.Field(5).(*array.Float64Builder).Append(float64(r.IntN(1_000_000)) / 100)
		b.Field(6).(*array.Float64Builder).Append(r.Float64())
		b.Field(7).(*array.TimestampBuilder).Append(arrow.Timestamp(base + r.Int64N(365*24*3600*1_000_000)))
		b.Field(8).(*array.TimestampBuilder).Append(arrow.Timestamp(base + r.Int64N(365*24*3600*1_000_000)))
		b.Field(9).(*array.BooleanBuilder).Append(r.IntN(2) == 0)
		b.Field(10).(*array.Int32Builder).Append(int32(r.IntN(10)))
	}
	return b.NewRecordBatch()
}

// BenchmarkIcebergRead reads the plain feed of a window shaped like the
// benchmark's reference window (docs/BENCHMARKS.md): 1,000,000 rows of 11
// columns appended in 4 files of 65,536-row row groups, then a snapshot of
// 3 equality deletes, read in process from before the first append to the
// end (1,000,003 changes), with every column and with 2.
func BenchmarkIcebergRead(b *testing.B) {
	const rows = 1_000_000
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer cat.Close()
	tbl, err := tablewrite.CreateTable(ctx, cat, tableName, refSchema(),
		icecatalog.WithProperties(iceberg.Properties{"format-version": "2",
			"write.parquet.row-group-limit": "65536", "write.target-file-size-bytes": "1073741824"}))
	if err != nil {
		b.Fatal(err)
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		b.Fatal(err)
	}
	all := refRows(sc, rows)
	defer all.Release()
	for i := range 4 {
		part := all.NewSlice(int64(i*rows/4), int64((i+1)*rows/4))
		at := array.NewTableFromRecords(sc, []arrow.RecordBatch{part})
		tbl, err = tbl.AppendTable(ctx, at, rows/4+1, nil)
		at.Release()
		part.Release()
		if err != nil {
			b.Fatal(err)
		}
	}
	keys := []tablewrite.Row{{"id": 17}, {"id": rows / 2}, {"id": rows - 5}}
	if tbl, err = tablewrite.EqualityDelete(ctx, tbl, "id", keys, nil); err != nil {
		b.Fatal(err)
	}
	end := tbl.CurrentSnapshot().SnapshotID
	eng := feed.New(fixedTable{tableName, tbl}, feed.Options{})
	for _, tc := range []struct {
		name    string
		columns []string
	}{{"11 columns", nil}, {"2 columns", []string{"id", "amount"}}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var n int64
			cpu0 := cpuTime(b)
			for b.Loop() {
				p, err := eng.Plan(ctx, feed.Request{Table: tableName, ToSnapshot: &end, Columns: tc.columns})
				if err != nil {
					b.Fatal(err)
				}
				n = 0
				for batch, err := range eng.Read(ctx, p) {
					if err != nil {
						b.Fatal(err)
					}
					n += batch.Record.NumRows()
					batch.Record.Release()
				}
				if n != rows+3 {
					b.Fatalf("%d changes, want %d", n, rows+3)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			// The process's CPU time per read: what the read costs, whatever
			// else the machine runs.
			b.ReportMetric((cpuTime(b)-cpu0).Seconds()*1000/float64(b.N), "cpu-ms/op")
		})
	}
	if err := eng.Close(); err != nil {
		b.Fatal(err)
	}
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestCorruptDataFileEndsThatReadOnly: a data file whose bytes make
// arrow-go's Parquet decoder panic fails the read that decodes it (an
// appended file, a state read, the files of a copy-on-write delete) with an
// error instead of ending the process (iceberg-go's scan decoded it in
// goroutines of its own, where no recover of the engine's reached), and the
// same engine serves the next read.
func TestCorruptDataFileEndsThatReadOnly(t *testing.T) {
	ctx := context.Background()
	h := newHistory(t, 2, 300)
	// A copy-on-write delete of a row of the second append's file: its
	// snapshot decodes that file through the diff path.
	tbl, err := h.tbl.Delete(ctx, iceberg.EqualTo(iceberg.Reference("id"), int64(301)), nil)
	if err != nil {
		t.Fatal(err)
	}
	del := tbl.CurrentSnapshot().SnapshotID
	s0, s1 := h.snapshots[0], h.snapshots[1]
	path := addedDataFile(t, tbl, s0, s1)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := panickingCorruption(t, good)

	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	eng := feed.New(fixedTable{tableName, tbl}, feed.Options{Allocator: mem, MaxBatchRows: 64})
	for _, tc := range []struct {
		name  string
		state bool
		req   feed.Request
	}{
		{"append", false, feed.Request{Table: tableName, FromSnapshot: &s0, ToSnapshot: &s1}},
		{"state", true, feed.Request{Table: tableName, ToSnapshot: &s1}},
		{"copy-on-write delete", false, feed.Request{Table: tableName, FromSnapshot: &s1, ToSnapshot: &del}},
		{"copy-on-write delete, net changes", false,
			feed.Request{Table: tableName, FromSnapshot: &s1, ToSnapshot: &del, NetChanges: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			// pqread turns the decoder's panic into ErrCorrupt, which the
			// engine reports as the file's: ErrUnreadable, naming it.
			_, err := readOnce(ctx, eng, tc.req, tc.state)
			if !errors.Is(err, feed.ErrUnreadable) || !strings.Contains(err.Error(), path) {
				t.Fatalf("read of a corrupt data file: err = %v, want ErrUnreadable naming %s", err, path)
			}
			if err := os.WriteFile(path, good, 0o644); err != nil {
				t.Fatal(err)
			}
			rows, err := readOnce(ctx, eng, tc.req, tc.state)
			if err != nil {
				t.Fatalf("the next read: %v", err)
			}
			if rows == 0 {
				t.Fatal("the next read returned no change")
			}
		})
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
}

// readOnce plans and reads a window (or, with state, the state at
// req.ToSnapshot) to its end and returns its number of rows.
func readOnce(ctx context.Context, eng *feed.Engine, req feed.Request, state bool) (int64, error) {
	rows := int64(0)
	var seq func(func(feed.Batch, error) bool)
	if state {
		sp, err := eng.PlanState(ctx, req)
		if err != nil {
			return 0, err
		}
		seq = eng.ReadState(ctx, sp)
	} else {
		p, err := eng.Plan(ctx, req)
		if err != nil {
			return 0, err
		}
		seq = eng.Read(ctx, p)
	}
	for b, err := range seq {
		if err != nil {
			return rows, err
		}
		rows += b.Record.NumRows()
		b.Record.Release()
	}
	return rows, nil
}

// addedDataFile returns the local path of the one data file snapshot s
// added to its parent's files.
func addedDataFile(t *testing.T, tbl *table.Table, parent, s int64) string {
	t.Helper()
	files := func(id int64) []string {
		tasks, err := tbl.Scan(table.WithSnapshotID(id)).PlanFiles(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, task := range tasks {
			out = append(out, strings.TrimPrefix(task.File.FilePath(), "file://"))
		}
		return out
	}
	before := files(parent)
	var added []string
	for _, p := range files(s) {
		if !slices.Contains(before, p) {
			added = append(added, p)
		}
	}
	if len(added) != 1 {
		t.Fatalf("snapshot %d added data files %v, want one", s, added)
	}
	return added[0]
}

// panickingCorruption returns good (a Parquet file) with four bytes of its
// pages overwritten so that arrow-go's decoder panics reading it (rather
// than failing with an error): the first such corruption found, by
// decoding every candidate with plain pqarrow.
func panickingCorruption(t *testing.T, good []byte) []byte {
	t.Helper()
	footer := len(good) - 8 - int(binary.LittleEndian.Uint32(good[len(good)-8:]))
	for pos := 4; pos+4 <= footer; pos++ {
		for _, v := range []uint32{0xffffffff, 0x7fffffff, 0x80000000, 0xff, 0x7f} {
			bad := bytes.Clone(good)
			binary.LittleEndian.PutUint32(bad[pos:], v)
			if decodePanics(bad) {
				return bad
			}
		}
	}
	t.Fatal("no corruption of the file's pages makes the decoder panic")
	return nil
}

// decodePanics reports whether decoding b whole with pqarrow's record
// reader (as iceberg-go's scan does) panics.
func decodePanics(b []byte) (panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	pf, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		return false
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64}, memory.DefaultAllocator)
	if err != nil {
		return false
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		return false
	}
	defer rr.Release()
	for rr.Next() {
	}
	return false
}

// afterImages returns the after images of the inserts of a window (or a
// state), as sorted JSON objects.
func afterImages(t *testing.T, changes []change) []string {
	t.Helper()
	var out []string
	for _, c := range changes {
		if c.Op != feed.OpInsert {
			t.Fatalf("a %s change where only inserts are expected", c.Op)
		}
		b, err := json.Marshal(c.After)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}

// readState reads the state of req.ToSnapshot and returns its rows as
// changes, with the plan.
func readState(t *testing.T, eng *feed.Engine, req feed.Request) (*feed.StatePlan, []change) {
	t.Helper()
	ctx := context.Background()
	sp, err := eng.PlanState(ctx, req)
	if err != nil {
		t.Fatalf("plan state: %v", err)
	}
	var changes []change
	for b, err := range eng.ReadState(ctx, sp) {
		if err != nil {
			t.Fatalf("read state: %v", err)
		}
		var buf bytes.Buffer
		if err := array.RecordToJSON(b.Record, &buf); err != nil {
			t.Fatal(err)
		}
		b.Record.Release()
		for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
			if line == "" {
				continue
			}
			var c change
			if err := json.Unmarshal([]byte(line), &c); err != nil {
				t.Fatal(err)
			}
			changes = append(changes, c)
		}
	}
	return sp, changes
}

// jsonRows is rows as sorted JSON objects, for comparison with
// afterImages.
func jsonRows(t *testing.T, rows []map[string]any) []string {
	t.Helper()
	var out []string
	for _, r := range rows {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}

// TestIcebergReadNameMapping: a data file written without field ids (as a
// table migrated from plain Parquet has, added with add_files) is read by
// the names the table's name mapping gives its columns' ids, also after a
// rename; without a name mapping the engine leaves it to iceberg-go's scan,
// and says what iceberg-go says.
func TestIcebergReadNameMapping(t *testing.T) {
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "score", Type: iceberg.PrimitiveTypes.Float64})
	tbl, err := tablewrite.CreateTable(ctx, cat, tableName, sc)
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err = tablewrite.Append(ctx, tbl, []tablewrite.Row{{"id": 1, "name": "a", "score": 1.5}}); err != nil {
		t.Fatal(err)
	}
	// A plain Parquet file, its columns in another order and without
	// field ids.
	plain := arrow.NewSchema([]arrow.Field{
		{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, plain,
		strings.NewReader(`[{"score": 2.5, "name": "b", "id": 2}, {"score": null, "name": "c", "id": 3}]`))
	if err != nil {
		t.Fatal(err)
	}
	loc := tbl.Location() + "/data/migrated.parquet"
	fh, err := os.Create(strings.TrimPrefix(loc, "file://"))
	if err != nil {
		t.Fatal(err)
	}
	at := array.NewTableFromRecords(plain, []arrow.RecordBatch{rec})
	rec.Release()
	err = pqarrow.WriteTable(at, fh, 1024, nil, pqarrow.DefaultWriterProps()) // closes fh
	at.Release()
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.AddFiles(ctx, []string{loc}, nil, false); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if tbl.Metadata().NameMapping() == nil {
		t.Fatal("add_files set no name mapping")
	}
	added := tbl.CurrentSnapshot().SnapshotID
	want := jsonRows(t, []map[string]any{{"id": 1, "name": "a", "score": 1.5}, {"id": 2, "name": "b", "score": 2.5},
		{"id": 3, "name": "c", "score": nil}})

	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	eng := feed.New(fixedTable{tableName, tbl}, feed.Options{Allocator: mem})
	_, got, _ := read(t, eng, feed.Request{Table: tableName})
	if g := afterImages(t, got); !slices.Equal(g, want) {
		t.Fatalf("window: %v, want %v", g, want)
	}
	if _, got := readState(t, eng, feed.Request{Table: tableName}); !slices.Equal(afterImages(t, got), want) {
		t.Fatalf("state: %v, want %v", afterImages(t, got), want)
	}

	t.Run("renamed", func(t *testing.T) {
		tx := tbl.NewTransaction()
		if err := tx.UpdateSchema(true, false).RenameColumn([]string{"name"}, "label").Commit(); err != nil {
			t.Fatal(err)
		}
		renamed, err := tx.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// A snapshot in the new schema, whose window ends there.
		if renamed, err = tablewrite.Append(ctx, renamed, []tablewrite.Row{{"id": 4, "label": "d", "score": 4}}); err != nil {
			t.Fatal(err)
		}
		end := renamed.CurrentSnapshot().SnapshotID
		oracle := scanState(t, renamed, &end, renamed.Schema())
		eng := feed.New(fixedTable{tableName, renamed}, feed.Options{Allocator: mem})
		_, got := readState(t, eng, feed.Request{Table: tableName})
		wantRenamed := strings.ReplaceAll(strings.Join(append(slices.Clone(want), `{"id":4,"label":"d","score":4}`),
			"\n"), `"name"`, `"label"`)
		if g := strings.Join(afterImages(t, got), "\n"); g != wantRenamed {
			t.Fatalf("state after the rename:\n%s\nwant\n%s", g, wantRenamed)
		}
		if len(oracle) != 4 {
			t.Fatalf("iceberg-go's scan of the renamed table has %d rows", len(oracle))
		}
		if err := eng.Close(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("no name mapping", func(t *testing.T) {
		cur, err := cat.LoadTable(ctx, tableName)
		if err != nil {
			t.Fatal(err)
		}
		tx := cur.NewTransaction()
		if err := tx.RemoveProperties([]string{table.DefaultNameMappingKey}); err != nil {
			t.Fatal(err)
		}
		unmapped, err := tx.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if unmapped.Metadata().NameMapping() != nil {
			t.Fatal("the name mapping is still there")
		}
		_, scanErr := unmapped.Scan(table.WithSnapshotID(added)).ToArrowTable(ctx)
		eng := feed.New(fixedTable{tableName, unmapped}, feed.Options{Allocator: mem})
		s0 := unmapped.Metadata().Snapshots()[0].SnapshotID
		_, err = readOnce(ctx, eng, feed.Request{Table: tableName, FromSnapshot: &s0, ToSnapshot: &added}, false)
		if (err != nil) != (scanErr != nil) || (err != nil && !errors.Is(err, feed.ErrUnreadable)) {
			t.Fatalf("engine: %v; iceberg-go's scan: %v", err, scanErr)
		}
		if err := eng.Close(); err != nil {
			t.Fatal(err)
		}
	})
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestIcebergReadSchemaEvolution: rows of files written before a schema
// change read in the window's end schema: promoted types widened (int to
// long, float to double, a decimal's precision), added columns with their
// initial-default (Iceberg v3), else null.
func TestIcebergReadSchemaEvolution(t *testing.T) {
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "small", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 3, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 4, Name: "d", Type: iceberg.DecimalTypeOf(9, 2)})
	tbl, err := tablewrite.CreateTable(ctx, cat, tableName, sc,
		icecatalog.WithProperties(iceberg.Properties{"format-version": "3"}))
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err = tablewrite.Append(ctx, tbl, []tablewrite.Row{{"id": 1, "small": 7, "f": 0.5, "d": "12.34"}}); err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	upd := tx.UpdateSchema(true, false)
	upd.UpdateColumn([]string{"small"}, table.ColumnUpdate{
		FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.PrimitiveTypes.Int64}})
	upd.UpdateColumn([]string{"f"}, table.ColumnUpdate{
		FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.PrimitiveTypes.Float64}})
	upd.UpdateColumn([]string{"d"}, table.ColumnUpdate{
		FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.DecimalTypeOf(18, 2)}})
	upd.AddColumn([]string{"tag"}, iceberg.PrimitiveTypes.String, "", false, iceberg.NewLiteral("none"))
	upd.AddColumn([]string{"n"}, iceberg.PrimitiveTypes.Int32, "", true, iceberg.NewLiteral(int32(42)))
	upd.AddColumn([]string{"day"}, iceberg.PrimitiveTypes.Date, "", false, iceberg.NewLiteral(iceberg.Date(19000)))
	upd.AddColumn([]string{"opt"}, iceberg.PrimitiveTypes.String, "", false, nil)
	if err := upd.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// Loaded again from its metadata file: defaults as JSON gives them.
	if tbl, err = cat.LoadTable(ctx, tableName); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tablewrite.Append(ctx, tbl, []tablewrite.Row{{"id": 2, "small": 1 << 40, "f": 2.25, "d": "1234567.89",
		"tag": "t", "n": 1, "day": "2024-01-02", "opt": "o"}}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"d":"12.34","day":"2022-01-08","f":0.5,"id":1,"n":42,"opt":null,"small":7,"tag":"none"}`,
		`{"d":"1234567.89","day":"2024-01-02","f":2.25,"id":2,"n":1,"opt":"o","small":1099511627776,"tag":"t"}`,
	}
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	eng := feed.New(fixedTable{tableName, tbl}, feed.Options{Allocator: mem})
	_, got, _ := read(t, eng, feed.Request{Table: tableName})
	if g := afterImages(t, got); !slices.Equal(g, want) {
		t.Fatalf("window:\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(want, "\n"))
	}
	if _, got := readState(t, eng, feed.Request{Table: tableName}); !slices.Equal(afterImages(t, got), want) {
		t.Fatalf("state:\n%s\nwant\n%s", strings.Join(afterImages(t, got), "\n"), strings.Join(want, "\n"))
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestIcebergReadPartialTasks: tasks that read some row groups of a file
// (the runs of row groups a filter's pushdown keeps; a state's large file
// split into several tasks) read exactly those rows; and a state read
// that projects away the key of its equality deletes still applies them.
func TestIcebergReadPartialTasks(t *testing.T) {
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := tablewrite.CreateTable(ctx, cat, tableName, ordersSchema(),
		icecatalog.WithProperties(iceberg.Properties{"write.parquet.row-group-limit": "100",
			"read.split.target-size": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	var rows []tablewrite.Row
	for i := range 1000 {
		rows = append(rows, tablewrite.Row{"id": i + 1, "country": []string{"SE", "NO"}[i%2],
			"amount": float64(i), "created": "2024-01-01T10:00:00Z"})
	}
	if tbl, err = tablewrite.Append(ctx, tbl, rows); err != nil {
		t.Fatal(err)
	}
	appended := tbl.CurrentSnapshot().SnapshotID
	keys := []tablewrite.Row{{"id": 5}, {"id": 6}, {"id": 950}}
	if tbl, err = tablewrite.EqualityDelete(ctx, tbl, "id", keys, nil); err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	eng := feed.New(fixedTable{tableName, tbl}, feed.Options{Allocator: mem, MaxBatchRows: 64})

	t.Run("pushdown", func(t *testing.T) {
		p, got, _ := read(t, eng, feed.Request{Table: tableName, ToSnapshot: &appended, Columns: []string{"id"},
			Filter: "id > 850 OR id <= 20"})
		if p.RowGroupsSkipped == 0 {
			t.Fatalf("the filter's pushdown skipped no row group: %+v", p)
		}
		var want []map[string]any
		for i := 1; i <= 1000; i++ {
			if i > 850 || i <= 20 {
				want = append(want, map[string]any{"id": i})
			}
		}
		if g := afterImages(t, got); !slices.Equal(g, jsonRows(t, want)) {
			t.Fatalf("%d rows, want %d", len(g), len(want))
		}
	})
	t.Run("split state, equality deletes projected away", func(t *testing.T) {
		sp, got := readState(t, eng, feed.Request{Table: tableName, Columns: []string{"country"}})
		if sp.FilesRead < 2 {
			t.Fatalf("the state's file was not split into tasks (%d)", sp.FilesRead)
		}
		counts := map[string]int{}
		for _, c := range got {
			counts[c.After["country"].(string)]++
		}
		if counts["SE"] != 499 || counts["NO"] != 498 || len(got) != 997 {
			t.Fatalf("state: %v (%d rows), want 499 SE and 498 NO", counts, len(got))
		}
	})
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestIcebergReadNestedColumns: structs (nested), lists of primitives and
// of structs, maps with struct and primitive values, through a promotion
// and added fields inside a struct and a list's element struct, read the
// same as iceberg-go's scan reads them: every state, and the window from
// the start applied to the empty state.
func TestIcebergReadNestedColumns(t *testing.T) {
	ctx := context.Background()
	cat, err := tablewrite.OpenWarehouse(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	f := func(id int, name string, typ iceberg.Type) iceberg.NestedField {
		return iceberg.NestedField{ID: id, Name: name, Type: typ}
	}
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		f(2, "s", &iceberg.StructType{FieldList: []iceberg.NestedField{
			f(3, "a", iceberg.PrimitiveTypes.Int32), f(4, "b", iceberg.PrimitiveTypes.String),
			f(5, "inner", &iceberg.StructType{FieldList: []iceberg.NestedField{f(6, "x", iceberg.PrimitiveTypes.Float64)}}),
		}}),
		f(7, "l", &iceberg.ListType{ElementID: 8, Element: iceberg.PrimitiveTypes.Int32, ElementRequired: false}),
		f(9, "ls", &iceberg.ListType{ElementID: 10, Element: &iceberg.StructType{FieldList: []iceberg.NestedField{
			f(11, "p", iceberg.PrimitiveTypes.String), f(12, "q", iceberg.PrimitiveTypes.Int32)}}}),
		f(13, "m", &iceberg.MapType{KeyID: 14, KeyType: iceberg.PrimitiveTypes.String, ValueID: 15,
			ValueType: &iceberg.StructType{FieldList: []iceberg.NestedField{f(16, "v", iceberg.PrimitiveTypes.Int64)}}}),
		f(17, "mi", &iceberg.MapType{KeyID: 18, KeyType: iceberg.PrimitiveTypes.String, ValueID: 19,
			ValueType: iceberg.PrimitiveTypes.Int32}),
	)
	tbl, err := tablewrite.CreateTable(ctx, cat, tableName, sc,
		icecatalog.WithProperties(iceberg.Properties{"format-version": "3"}))
	if err != nil {
		t.Fatal(err)
	}
	var snaps []int64
	appendRows := func(rows string) {
		t.Helper()
		var rs []tablewrite.Row
		if err := json.Unmarshal([]byte(rows), &rs); err != nil {
			t.Fatal(err)
		}
		if tbl, err = tablewrite.Append(ctx, tbl, rs); err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, tbl.CurrentSnapshot().SnapshotID)
	}
	appendRows(`[
		{"id": 1, "s": {"a": 1, "b": "x", "inner": {"x": 1.5}}, "l": [1, 2], "ls": [{"p": "a", "q": 1}, null],
		 "m": [{"key": "k", "value": {"v": 5}}], "mi": [{"key": "a", "value": 1}, {"key": "b", "value": null}]},
		{"id": 2, "s": null, "l": null, "ls": [], "m": null, "mi": []},
		{"id": 3, "s": {"a": null, "b": "y", "inner": null}, "l": [null], "ls": null, "m": [], "mi": null}]`)
	tx := tbl.NewTransaction()
	upd := tx.UpdateSchema(true, false)
	upd.UpdateColumn([]string{"s", "a"}, table.ColumnUpdate{
		FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.PrimitiveTypes.Int64}})
	upd.UpdateColumn([]string{"l", "element"}, table.ColumnUpdate{
		FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.PrimitiveTypes.Int64}})
	upd.AddColumn([]string{"s", "c"}, iceberg.PrimitiveTypes.String, "", false, iceberg.NewLiteral("dc"))
	upd.AddColumn([]string{"ls", "r"}, iceberg.PrimitiveTypes.String, "", false, nil)
	if err := upd.Commit(); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	appendRows(`[
		{"id": 4, "s": {"a": 1099511627776, "b": "z", "inner": {"x": 2.5}, "c": "new"}, "l": [1099511627776],
		 "ls": [{"p": "b", "q": 2, "r": "rr"}], "m": [{"key": "k2", "value": null}], "mi": [{"key": "c", "value": 3}]}]`)

	mem := memory.NewCheckedAllocator(arrowpool.Shared())
	defer mem.AssertSize(t, 0)
	eng := feed.New(fixedTable{tableName, tbl}, feed.Options{Allocator: mem, MaxBatchRows: 2})
	for _, id := range snaps {
		want := scanState(t, tbl, &id, tbl.Schema())
		sp, err := eng.PlanState(ctx, feed.Request{Table: tableName, ToSnapshot: &id})
		if err != nil {
			t.Fatal(err)
		}
		got := state{}
		for b, err := range eng.ReadState(ctx, sp) {
			if err != nil {
				t.Fatal(err)
			}
			after := b.Record.Column(2).(*array.Struct)
			for i := range int(b.Record.NumRows()) {
				got[imageRow(after, i)]++
			}
			b.Record.Release()
		}
		if d := diffStates(got, want); d != "" {
			t.Fatalf("state of snapshot %d differs from iceberg-go's scan: %s", id, d)
		}
	}
	last := snaps[len(snaps)-1]
	got, _ := applyFeed(t, eng, feed.Request{Table: tableName, ToSnapshot: &last}, state{})
	if d := diffStates(got, scanState(t, tbl, &last, tbl.Schema())); d != "" {
		t.Fatalf("the window from the start differs from iceberg-go's scan: %s", d)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
}
