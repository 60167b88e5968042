package iceberg

import (
	"github.com/apache/iceberg-go"

	"github.com/sluicefeed/sluice/lake"
)

// fileStats are a data file's manifest statistics.
type fileStats struct{ df iceberg.DataFile }

func (s fileStats) Bounds(c lake.Column) (lake.Value, lake.Value, bool) {
	lb, ub := s.df.LowerBoundValues()[c.FieldID], s.df.UpperBoundValues()[c.FieldID]
	if lb == nil || ub == nil {
		return lake.Value{}, lake.Value{}, false
	}
	t := TypeTo(c.Type)
	return bounds(t, lb, ub)
}

func (s fileStats) Counts(c lake.Column) (int64, int64, bool) {
	values, ok1 := s.df.ValueCounts()[c.FieldID]
	nulls, ok2 := s.df.NullValueCounts()[c.FieldID]
	return values, nulls, ok1 && ok2
}

// rowGroupStats are a row group's Parquet column statistics.
type rowGroupStats struct {
	ft *footer
	rg int
}

func (s rowGroupStats) Bounds(c lake.Column) (lake.Value, lake.Value, bool) {
	st := s.ft.stats(s.rg, c.FieldID)
	if st == nil || !st.HasMinMax() {
		return lake.Value{}, lake.Value{}, false
	}
	t := TypeTo(c.Type)
	return bounds(t, st.EncodeMin(), st.EncodeMax())
}

func (s rowGroupStats) Counts(c lake.Column) (int64, int64, bool) {
	st := s.ft.stats(s.rg, c.FieldID)
	if st == nil || !st.HasNullCount() {
		return 0, 0, false
	}
	return st.NumValues() + st.NullCount(), st.NullCount(), true
}

// bounds decodes the lower and upper bounds of a column of type t.
func bounds(t iceberg.Type, lb, ub []byte) (lake.Value, lake.Value, bool) {
	lo, ok1 := decodeBound(t, lb)
	hi, ok2 := decodeBound(t, ub)
	if !ok1 || !ok2 {
		return lake.Value{}, lake.Value{}, false
	}
	return lake.StatBounds(lo, hi)
}
