package feed

import (
	"github.com/apache/iceberg-go"

	icebergformat "github.com/sluicefeed/sluice/format/iceberg"
	"github.com/sluicefeed/sluice/lake"
)

// fileStats are a data file's manifest statistics.
type fileStats struct{ df iceberg.DataFile }

func (s fileStats) Bounds(c lake.Column) (lake.Value, lake.Value, bool) {
	lb, ub := s.df.LowerBoundValues()[c.FieldID], s.df.UpperBoundValues()[c.FieldID]
	if lb == nil || ub == nil {
		return lake.Value{}, lake.Value{}, false
	}
	t := icebergformat.TypeTo(c.Type)
	lo, ok1 := decodeBound(t, lb)
	hi, ok2 := decodeBound(t, ub)
	return statBounds(lo, hi, ok1 && ok2)
}

func (s fileStats) Counts(c lake.Column) (int64, int64, bool) {
	values, ok1 := s.df.ValueCounts()[c.FieldID]
	nulls, ok2 := s.df.NullValueCounts()[c.FieldID]
	return values, nulls, ok1 && ok2
}

// statBounds are decoded bounds as values that compare with a column's.
func statBounds(lo, hi any, ok bool) (lake.Value, lake.Value, bool) {
	if !ok {
		return lake.Value{}, lake.Value{}, false
	}
	l, ok1 := lake.StatValue(lo)
	h, ok2 := lake.StatValue(hi)
	return l, h, ok1 && ok2
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
	t := icebergformat.TypeTo(c.Type)
	lo, ok1 := decodeBound(t, st.EncodeMin())
	hi, ok2 := decodeBound(t, st.EncodeMax())
	return statBounds(lo, hi, ok1 && ok2)
}

func (s rowGroupStats) Counts(c lake.Column) (int64, int64, bool) {
	st := s.ft.stats(s.rg, c.FieldID)
	if st == nil || !st.HasNullCount() {
		return 0, 0, false
	}
	return st.NumValues() + st.NullCount(), st.NullCount(), true
}
