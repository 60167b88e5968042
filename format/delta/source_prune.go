package delta

import (
	"encoding/json"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/sluicefeed/sluice/lake"
)

// deltaStatsStringMax is the longest string statistic taken as an exact
// bound: writers truncate longer ones (Delta's default is 32 characters),
// and a truncated maximum need not bound the column.
const deltaStatsStringMax = 32

// deltaFileStats is what a Delta add action says of its file's columns:
// its partition values (exact) and its statistics (numRecords, minValues,
// maxValues, nullCount, keyed by physical name).
type deltaFileStats struct {
	schema    *deltaSchema
	partition map[string]*string
	stats     struct {
		NumRecords *int64                     `json:"numRecords"`
		MinValues  map[string]json.RawMessage `json:"minValues"`
		MaxValues  map[string]json.RawMessage `json:"maxValues"`
		NullCount  map[string]json.RawMessage `json:"nullCount"`
	}
}

func newDeltaFileStats(sc *deltaSchema, a *Add) deltaFileStats {
	st := deltaFileStats{schema: sc, partition: a.PartitionValues}
	if a.Stats != "" {
		_ = json.Unmarshal([]byte(a.Stats), &st.stats) // unreadable statistics rule nothing out
	}
	return st
}

// field returns the top-level Delta field, in the schema the file was
// added with, of a field of the window's end schema: the same column (the
// same name, and the same column mapping id) of the same type; false when
// its statistics cannot be compared with the end schema's values.
func (s deltaFileStats) field(c lake.Column) (StructField, bool) {
	vf, ok := s.schema.logical.FieldByName(c.Path)
	if !ok || !lake.Equal(vf.Type, c.Type) || (s.schema.mode != MappingNone && vf.ID != c.FieldID) {
		return StructField{}, false
	}
	sf, ok := s.schema.fields[c.Path]
	return sf, ok
}

func (s deltaFileStats) Bounds(c lake.Column) (lake.Value, lake.Value, bool) {
	sf, ok := s.field(c)
	if !ok {
		return lake.Value{}, lake.Value{}, false
	}
	phys := sf.PhysicalName(s.schema.mode)
	if s.schema.partition[c.Path] {
		v, err := PartitionValue(s.partition[phys], sf.Type)
		if err != nil || !v.IsValid() {
			return lake.Value{}, lake.Value{}, false
		}
		b, ok := comparableScalar(v)
		if !ok {
			return lake.Value{}, lake.Value{}, false
		}
		return lake.StatBounds(b, b)
	}
	lo, ok1 := statValue(s.stats.MinValues[phys], sf.Type, false)
	hi, ok2 := statValue(s.stats.MaxValues[phys], sf.Type, true)
	if !ok1 || !ok2 {
		return lake.Value{}, lake.Value{}, false
	}
	return lake.StatBounds(lo, hi)
}

func (s deltaFileStats) Counts(c lake.Column) (int64, int64, bool) {
	sf, ok := s.field(c)
	if !ok || s.stats.NumRecords == nil {
		return 0, 0, false
	}
	phys := sf.PhysicalName(s.schema.mode)
	if s.schema.partition[c.Path] {
		if s.partition[phys] == nil || *s.partition[phys] == "" {
			return *s.stats.NumRecords, *s.stats.NumRecords, true
		}
		return *s.stats.NumRecords, 0, true
	}
	var nulls int64
	raw, ok := s.stats.NullCount[phys]
	if !ok || json.Unmarshal(raw, &nulls) != nil {
		return 0, 0, false
	}
	return *s.stats.NumRecords, nulls, true
}

// comparableScalar turns a partition value into the pruner's comparable
// values: int64 for integers, dates (days) and timestamps (microseconds),
// float64, string.
func comparableScalar(v scalar.Scalar) (any, bool) {
	switch x := v.(type) {
	case *scalar.Int8:
		return int64(x.Value), true
	case *scalar.Int16:
		return int64(x.Value), true
	case *scalar.Int32:
		return int64(x.Value), true
	case *scalar.Int64:
		return x.Value, true
	case *scalar.Date32:
		return int64(x.Value), true
	case *scalar.Timestamp:
		return int64(x.Value), true
	case *scalar.Float32:
		f := float64(x.Value)
		return f, !math.IsNaN(f)
	case *scalar.Float64:
		return x.Value, !math.IsNaN(x.Value)
	case *scalar.String:
		return string(x.Value.Bytes()), true
	case *scalar.Boolean:
		if x.Value {
			return int64(1), true
		}
		return int64(0), true
	}
	return nil, false
}

// statValue decodes a minValues (upper false) or maxValues (upper true)
// entry as a comparable value, or false when it cannot be trusted as a
// bound.
func statValue(raw json.RawMessage, t DataType, upper bool) (any, bool) {
	if raw == nil {
		return nil, false
	}
	switch t {
	case TypeByte, TypeShort, TypeInteger, TypeLong:
		var n int64
		return n, json.Unmarshal(raw, &n) == nil
	case TypeFloat, TypeDouble:
		var f float64
		if json.Unmarshal(raw, &f) != nil || math.IsNaN(f) {
			return nil, false
		}
		return f, true
	case TypeString:
		var s string
		if json.Unmarshal(raw, &s) != nil || utf8.RuneCountInString(s) >= deltaStatsStringMax {
			return nil, false
		}
		return s, true
	case TypeDate:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, false
		}
		d, err := time.Parse("2006-01-02", s)
		if err != nil {
			return nil, false
		}
		return d.Unix() / 86400, true
	case TypeTimestamp:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, false
		}
		ts, err := time.Parse(time.RFC3339Nano, strings.Replace(s, " ", "T", 1))
		if err != nil {
			return nil, false
		}
		us := ts.UnixMicro()
		if upper {
			// Writers truncate timestamp statistics to milliseconds.
			us += 999
		}
		return us, true
	}
	return nil, false
}
