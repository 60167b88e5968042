package paimon

import (
	"cmp"
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// TestValueStatsBoundFiles decodes every live data file's value
// statistics (binary rows written by both writers) and checks them
// against the file's rows: every value of an integer, float or string
// column lies within [min, max], and the null counts match.
func TestValueStatsBoundFiles(t *testing.T) {
	ctx := context.Background()
	checked := 0
	for _, f := range fixtures(t) {
		tbl := f.open(t, nil)
		s, err := tbl.Latest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		live, err := tbl.LiveFiles(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		for i := range live {
			e := &live[i]
			fs, err := tbl.Schema(ctx, e.File.SchemaID)
			if err != nil {
				t.Fatal(err)
			}
			fields, err := e.File.ValueStatsFields(fs)
			if err != nil {
				t.Fatal(err)
			}
			st := e.File.ValueStats
			if st.Min.Arity() == 0 || len(fields) == 0 {
				continue
			}
			if st.Min.Arity() != len(fields) || st.Max.Arity() != len(fields) {
				t.Fatalf("%s: stats of arity %d/%d for %d columns", e.File.FileName, st.Min.Arity(), st.Max.Arity(), len(fields))
			}
			var batches []arrow.RecordBatch
			err = tbl.ReadFile(ctx, fs, e, ReadOptions{}, func(b arrow.RecordBatch) error {
				batches = append(batches, b)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for fi, fld := range fields {
				lo, err := st.Min.Value(fi, fld.Type)
				if err != nil {
					t.Fatalf("%s: min of %s: %v", e.File.FileName, fld.Name, err)
				}
				hi, err := st.Max.Value(fi, fld.Type)
				if err != nil {
					t.Fatalf("%s: max of %s: %v", e.File.FileName, fld.Name, err)
				}
				col := -1
				for c, af := range fs.Fields {
					if af.ID == fld.ID {
						col = c
					}
				}
				nulls := int64(0)
				for _, b := range batches {
					a := b.Column(col)
					nulls += int64(a.NullN())
					for r := range a.Len() {
						if a.IsNull(r) {
							continue
						}
						if !within(a, r, lo, hi) {
							t.Errorf("%s: %s row %d = %s outside [%v, %v]", e.File.FileName, fld.Name, r, a.ValueStr(r), lo, hi)
						}
					}
				}
				if fi < len(st.NullCounts) && st.NullCounts[fi] >= 0 && st.NullCounts[fi] != nulls {
					t.Errorf("%s: %s has %d nulls, statistics say %d", e.File.FileName, fld.Name, nulls, st.NullCounts[fi])
				}
				checked++
			}
			for _, b := range batches {
				b.Release()
			}
		}
	}
	if checked == 0 {
		t.Fatal("no file statistics checked")
	}
	t.Logf("%d column statistics checked", checked)
}

// within reports a[r] in [lo, hi] for the types statistics are compared
// on here (other types, and missing bounds, pass).
func within(a arrow.Array, r int, lo, hi any) bool {
	in := func(c int, d int) bool { return c >= 0 && d <= 0 }
	switch c := a.(type) {
	case *array.Int32:
		l, ok1 := lo.(int32)
		h, ok2 := hi.(int32)
		return !ok1 || !ok2 || in(cmp.Compare(c.Value(r), l), cmp.Compare(c.Value(r), h))
	case *array.Int64:
		l, ok1 := lo.(int64)
		h, ok2 := hi.(int64)
		return !ok1 || !ok2 || in(cmp.Compare(c.Value(r), l), cmp.Compare(c.Value(r), h))
	case *array.Float64:
		l, ok1 := lo.(float64)
		h, ok2 := hi.(float64)
		return !ok1 || !ok2 || in(cmp.Compare(c.Value(r), l), cmp.Compare(c.Value(r), h))
	case *array.String:
		l, ok1 := lo.(string)
		h, ok2 := hi.(string)
		return !ok1 || !ok2 || in(cmp.Compare(c.Value(r), l), cmp.Compare(c.Value(r), h))
	}
	return true
}
