package feed

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluicefeed/sluice/lake"
)

// Change operations, the values of the op column.
const (
	OpInsert       = "insert"
	OpDelete       = "delete"
	OpUpdateBefore = "update_before"
	OpUpdateAfter  = "update_after"
	OpUpdate       = "update"
)

// Names of the output columns.
const (
	ColOp       = "op"
	ColBefore   = "before"
	ColAfter    = "after"
	ColSnapshot = "snapshot"
	ColTs       = "ts"
)

// changeSchema builds the renderable change row for the given columns of
// the end schema: op utf8 not null; before and after, the same struct of the
// projected columns (every field nullable); snapshot int64; ts
// timestamp[us, UTC].
func changeSchema(end *lake.Schema, columns []string) (*arrow.Schema, error) {
	sub, err := end.Select(columns...)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnknownColumn, err)
	}
	converted := sub.ToArrow()
	fields := make([]arrow.Field, len(columns))
	for i, c := range columns {
		idx := converted.FieldIndices(c)
		if len(idx) != 1 {
			return nil, fmt.Errorf("%w: %q", ErrUnknownColumn, c)
		}
		f := converted.Field(idx[0])
		fields[i] = arrow.Field{Name: f.Name, Type: f.Type, Nullable: true}
	}
	image := arrow.StructOf(fields...)
	return arrow.NewSchema([]arrow.Field{
		{Name: ColOp, Type: arrow.BinaryTypes.String, Nullable: false},
		{Name: ColBefore, Type: image, Nullable: true},
		{Name: ColAfter, Type: image, Nullable: true},
		{Name: ColSnapshot, Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: ColTs, Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
	}, nil), nil
}

// imageType returns the struct type of the images of a change schema.
func imageType(s *arrow.Schema) *arrow.StructType {
	return s.Field(1).Type.(*arrow.StructType)
}
