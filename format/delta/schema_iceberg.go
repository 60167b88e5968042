package delta

import (
	"github.com/apache/iceberg-go"

	icebergformat "github.com/sluicefeed/sluice/format/iceberg"
)

// Column is what a reader needs to find a top-level column in data files.
type Column struct {
	// Name is the column's display name, the name in ToLake's schema.
	Name string
	// PhysicalName names the column in data files (name mode), partition
	// values and statistics.
	PhysicalName string
	// FieldID is the column's id in ToLake's schema; in id mode it is
	// also the Parquet field_id that data files carry.
	FieldID int
	// Type is the column's Delta type.
	Type     DataType
	Nullable bool
	// TypeChanges is the column's type widening history, oldest first.
	TypeChanges []TypeChange
}

// Columns returns the top-level columns of st, in order, with the ids
// ToLake gives them.
func Columns(st *StructType, mode ColumnMappingMode) ([]Column, error) {
	sc, err := ToLake(st, mode)
	if err != nil {
		return nil, err
	}
	cols := make([]Column, len(st.Fields))
	for i, f := range st.Fields {
		cols[i] = Column{
			Name: f.Name, PhysicalName: f.PhysicalName(mode), FieldID: sc.Fields[i].ID,
			Type: f.Type, Nullable: f.Nullable, TypeChanges: f.TypeChanges,
		}
	}
	return cols, nil
}

// ToIceberg converts a Delta schema to the engine's logical schema in
// iceberg-go's model: ToLake's schema (its ids, types and docs), as
// format/iceberg converts it.
func ToIceberg(st *StructType, mode ColumnMappingMode) (*iceberg.Schema, error) {
	sc, err := ToLake(st, mode)
	if err != nil {
		return nil, err
	}
	return icebergformat.ToIceberg(sc), nil
}
