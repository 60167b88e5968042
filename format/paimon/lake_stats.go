package paimon

import (
	"context"
	"time"

	"github.com/sluicefeed/sluice/lake"
)

// fileStats is what a data file's value statistics (its manifest entry's
// binary rows of minimums, maximums and null counts) say of its columns,
// as the engine's pruning asks (lake.Stats). Columns are top-level fields
// matched by field id through the schema the file was written with.
type fileStats struct {
	rows int64
	// cols are the statistics of the file's columns, by field id.
	cols map[int]colStats
}

// colStats is one column's statistics.
type colStats struct {
	lo, hi any // decoded values (BinaryRow.Value); nil when unknown
	nulls  int64
}

// newFileStats decodes entry e's value statistics; a column the file
// lacks (added later) is all nulls, and a partition column holds the
// entry's partition value alone (statistics or not: pypaimon writes
// none).
func newFileStats(ctx context.Context, t *Table, end *Schema, e *ManifestEntry) (*fileStats, error) {
	st, err := valueStats(ctx, t, end, e)
	if err != nil {
		return nil, err
	}
	vals, err := PartitionValues(end, e.Partition)
	if err != nil {
		return nil, err
	}
	for i, f := range end.PartitionFields() {
		if vals[i] == nil {
			st.cols[f.ID] = colStats{nulls: e.File.RowCount}
		} else {
			st.cols[f.ID] = colStats{lo: vals[i], hi: vals[i]}
		}
	}
	return st, nil
}

// valueStats decodes entry e's value statistics.
func valueStats(ctx context.Context, t *Table, end *Schema, e *ManifestEntry) (*fileStats, error) {
	fs, err := t.Schema(ctx, e.File.SchemaID)
	if err != nil {
		return nil, err
	}
	st := &fileStats{rows: e.File.RowCount, cols: map[int]colStats{}}
	for _, f := range end.Fields {
		if _, ok := fs.Field(f.ID); !ok {
			st.cols[f.ID] = colStats{nulls: e.File.RowCount}
		}
	}
	fields, err := e.File.ValueStatsFields(fs)
	if err != nil {
		return nil, err
	}
	vs := e.File.ValueStats
	if vs.Min.Arity() != len(fields) || vs.Max.Arity() != len(fields) {
		return st, nil // no statistics (or not for these columns): nothing pruned
	}
	for i, f := range fields {
		cs := colStats{nulls: -1}
		if i < len(vs.NullCounts) {
			cs.nulls = vs.NullCounts[i]
		}
		// A type the rows do not hold (nested) has no bounds.
		cs.lo, _ = vs.Min.Value(i, f.Type)
		cs.hi, _ = vs.Max.Value(i, f.Type)
		st.cols[f.ID] = cs
	}
	return st, nil
}

// Bounds returns the column's least and greatest values, in the domain
// lake.StatBounds compares them in.
func (s *fileStats) Bounds(c lake.Column) (lake.Value, lake.Value, bool) {
	cs, ok := s.cols[c.FieldID]
	if !ok || cs.lo == nil || cs.hi == nil {
		return lake.Value{}, lake.Value{}, false
	}
	lo, ok1 := statDomain(cs.lo, c.Type)
	hi, ok2 := statDomain(cs.hi, c.Type)
	if !ok1 || !ok2 {
		return lake.Value{}, lake.Value{}, false
	}
	return lake.StatBounds(lo, hi)
}

// Counts returns the file's rows and the column's nulls.
func (s *fileStats) Counts(c lake.Column) (int64, int64, bool) {
	cs, ok := s.cols[c.FieldID]
	if !ok || cs.nulls < 0 {
		return 0, 0, false
	}
	return s.rows, cs.nulls, true
}

// statDomain converts a decoded statistics value into the comparison
// domain of lake.StatBounds for a column of type t: integers, dates (days)
// and timestamps (in t's unit) as int64, floats as float64, strings as
// string. Other values (decimals, binaries, booleans) are not used.
func statDomain(v any, t lake.Type) (any, bool) {
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		if _, ok := t.(lake.TimeType); ok {
			return int64(x) * 1000, true // milliseconds to microseconds
		}
		return int64(x), true
	case int64:
		return x, true
	case float32:
		return float64(x), true
	case float64:
		return x, true
	case string:
		return x, true
	case time.Time:
		switch t.(type) {
		case lake.DateType:
			return x.Unix() / 86400, true
		case lake.TimestampType, lake.TimestampTzType:
			return x.UnixMicro(), true
		case lake.TimestampNsType, lake.TimestampTzNsType:
			return x.UnixNano(), true
		}
	}
	return nil, false
}

// keyFileStats decodes what may prune a data file of a primary-key table:
// the statistics of the columns that every record of a key shares, so
// that a filter those rule out rules out every version of every key the
// file holds, on both sides of a merge diff. They are the trimmed primary
// key columns (key statistics, else value statistics) and the partition
// columns (the entry's partition value). Value columns are left unknown:
// a file may hold an older version of a key whose newer version another
// file holds, and skipping it would change what the merge returns. A null
// partition value is unknown too: the engine keeps a delete whose filter is
// unknown on its before-image, so a file may be skipped only when the
// filter is false, not unknown, on every row it holds (the key columns are
// never null).
func keyFileStats(ctx context.Context, t *Table, end *Schema, e *ManifestEntry) (*fileStats, error) {
	vs, err := valueStats(ctx, t, end, e)
	if err != nil {
		return nil, err
	}
	fs, err := t.Schema(ctx, e.File.SchemaID)
	if err != nil {
		return nil, err
	}
	st := &fileStats{rows: e.File.RowCount, cols: map[int]colStats{}}
	keys := fs.TrimmedPrimaryKeys()
	ks := e.File.KeyStats
	byKey := ks.Min.Arity() == len(keys) && ks.Max.Arity() == len(keys)
	for i, k := range keys {
		if _, ok := end.Field(k.ID); !ok {
			continue
		}
		cs, ok := vs.cols[k.ID]
		if byKey {
			cs = colStats{nulls: -1}
			if i < len(ks.NullCounts) {
				cs.nulls = ks.NullCounts[i]
			}
			cs.lo, _ = ks.Min.Value(i, k.Type)
			cs.hi, _ = ks.Max.Value(i, k.Type)
		} else if !ok {
			continue
		}
		st.cols[k.ID] = cs
	}
	vals, err := PartitionValues(end, e.Partition)
	if err != nil {
		return nil, err
	}
	for i, f := range end.PartitionFields() {
		if vals[i] != nil {
			st.cols[f.ID] = colStats{lo: vals[i], hi: vals[i], nulls: 0}
		}
	}
	return st, nil
}
