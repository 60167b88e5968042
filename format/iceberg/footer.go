package iceberg

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"

	"github.com/sluicefeed/sluice/internal/lib/pqread"
)

// footer is what the engine needs of a data file's Parquet footer to read
// only some of its row groups: their sizes, the offsets iceberg-go selects
// row groups by, and their column statistics.
type footer struct {
	rows     []int64 // rows per row group
	first    []int64 // position of each row group's first row
	offsets  []int64 // split offset of each row group
	fileSize int64
	meta     *metadata.FileMetaData
	colByID  map[int]int // field id -> leaf column index, for top-level fields
}

// readFooter reads the footer of a Parquet data file.
func readFooter(fs iceio.IO, df iceberg.DataFile) (*footer, error) {
	f, err := fs.Open(df.FilePath())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := pqread.Footer(f)
	if err != nil {
		return nil, fmt.Errorf("read the footer of %s: %w", df.FilePath(), err)
	}
	return footerOf(m, df), nil
}

// splitOffset is where iceberg-go considers a row group to start.
func splitOffset(rgm *metadata.RowGroupMetaData) int64 {
	if rgm.NumColumns() > 0 {
		if c, err := rgm.ColumnChunk(0); err == nil {
			data := c.DataPageOffset()
			if c.HasDictionaryPage() {
				if dict := c.DictionaryPageOffset(); dict >= 0 && (data < 0 || dict < data) {
					return dict
				}
			}
			if data >= 0 {
				return data
			}
		}
	}
	return rgm.FileOffset()
}

// runs groups sorted row groups into contiguous runs, each as the byte
// range that selects it and its number of rows.
func (ft *footer) runs(rgs []int) []rowGroupRun {
	var out []rowGroupRun
	for i := 0; i < len(rgs); {
		j := i
		for j+1 < len(rgs) && rgs[j+1] == rgs[j]+1 {
			j++
		}
		run := rowGroupRun{first: rgs[i], last: rgs[j], start: ft.offsets[rgs[i]], pos: ft.first[rgs[i]]}
		end := ft.fileSize
		if rgs[j]+1 < len(ft.offsets) {
			end = ft.offsets[rgs[j]+1]
		}
		run.length = end - run.start
		for rg := rgs[i]; rg <= rgs[j]; rg++ {
			run.rows += ft.rows[rg]
		}
		out = append(out, run)
		i = j + 1
	}
	return out
}

// rowGroupRun is a contiguous range of row groups.
type rowGroupRun struct {
	first, last   int
	start, length int64 // the byte range selecting them
	pos, rows     int64 // the first row's position and the number of rows
}

// stats returns the statistics of a top-level field's column in row group
// rg, or nil.
func (ft *footer) stats(rg int, fieldID int) metadata.TypedStatistics {
	col, ok := ft.colByID[fieldID]
	if !ok {
		return nil
	}
	cc, err := ft.meta.RowGroup(rg).ColumnChunk(col)
	if err != nil {
		return nil
	}
	if set, err := cc.StatsSet(); err != nil || !set {
		return nil
	}
	st, err := cc.Statistics()
	if err != nil {
		return nil
	}
	return st
}

// mayContain reports whether row group rg may hold a row whose value of
// field equals one of values (false only when its statistics rule it out).
func (ft *footer) mayContain(rg int, field iceberg.NestedField, values []any) bool {
	st := ft.stats(rg, field.ID)
	if st == nil || !st.HasMinMax() {
		return true
	}
	lo, okLo := decodeBound(field.Type, st.EncodeMin())
	hi, okHi := decodeBound(field.Type, st.EncodeMax())
	if !okLo || !okHi {
		return true
	}
	return anyInRange(values, lo, hi)
}

// fileMayContain is mayContain for a whole data file, by its manifest
// bounds.
func fileMayContain(df iceberg.DataFile, field iceberg.NestedField, values []any) bool {
	lb, ub := df.LowerBoundValues()[field.ID], df.UpperBoundValues()[field.ID]
	if lb == nil || ub == nil {
		return true
	}
	lo, okLo := decodeBound(field.Type, lb)
	hi, okHi := decodeBound(field.Type, ub)
	if !okLo || !okHi {
		return true
	}
	return anyInRange(values, lo, hi)
}

func anyInRange(values []any, lo, hi any) bool {
	for _, v := range values {
		if v == nil {
			return true // a null key: statistics say nothing of nulls here
		}
		c1, ok1 := compareAny(v, lo)
		c2, ok2 := compareAny(v, hi)
		if !ok1 || !ok2 || (c1 >= 0 && c2 <= 0) {
			return true
		}
	}
	return false
}

// decodeBound decodes a bound (Iceberg's single-value serialization, or
// Parquet's plain encoding, which agree for these types) of a column of
// type t into a comparable value. ok is false for types it does not
// compare; callers then assume the bound admits anything.
func decodeBound(t iceberg.Type, b []byte) (any, bool) {
	switch t.(type) {
	case iceberg.Int32Type, iceberg.Int64Type, iceberg.DateType, iceberg.TimeType, iceberg.TimestampType,
		iceberg.TimestampTzType:
		switch len(b) {
		case 4:
			return int64(int32(binary.LittleEndian.Uint32(b))), true
		case 8:
			return int64(binary.LittleEndian.Uint64(b)), true
		}
	case iceberg.Float32Type, iceberg.Float64Type:
		switch len(b) {
		case 4:
			f := float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
			return f, !math.IsNaN(f)
		case 8:
			f := math.Float64frombits(binary.LittleEndian.Uint64(b))
			return f, !math.IsNaN(f)
		}
	case iceberg.StringType:
		// Truncated bounds stay bounds: writers shorten a lower bound to a
		// prefix and round a truncated upper bound up (Iceberg spec).
		return string(b), true
	case iceberg.BooleanType:
		if len(b) == 1 {
			return int64(b[0]), true
		}
	}
	return nil, false
}

func compareAny(a, b any) (int, bool) {
	switch x := a.(type) {
	case int64:
		if y, ok := b.(int64); ok {
			return cmp.Compare(x, y), true
		}
	case float64:
		if y, ok := b.(float64); ok {
			return cmp.Compare(x, y), true
		}
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y), true
		}
	}
	return 0, false
}
